/* nn: the layers for imported graphs (sigmoid, mul, concat, clip) against values
 * worked out by hand, their builder errors, and how the model describes them. Their
 * gradients against finite differences are in test_nn_grad.c. */
#include "tests/t.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>

#include "nn/nn.h"

/* Runs the finalized model on x (n examples) in training mode, then backward from dy
 * (NULL: skip). Returns the context (the caller frees it). */
static nn_ctx *run(nn_model *m, const float *x, int n, const float *dy)
{
    nn_model_set_input_grad(m, 1);
    nn_ctx *c = nn_ctx_new(m, n, NULL);
    if (!c || !nn_forward(c, x, n, 1, 0, 0)) {
        nn_ctx_free(c);
        return NULL;
    }
    if (dy) {
        nn_zero_grads(c);
        if (nn_backward(c, dy) != PT_OK) {
            nn_ctx_free(c);
            return NULL;
        }
    }
    return c;
}

TEST(nn_sigmoid_values_and_saturation)
{
    static const float x[] = {0.0f, 1.0f, -1.0f, 4.5f, -4.5f, 20.0f, -20.0f, 80.0f,
                              -80.0f, 100.0f, -100.0f, 1000.0f, -1000.0f, FLT_MAX, -FLT_MAX,
                              1e-30f};
    enum { N = sizeof x / sizeof x[0] };
    nn_model *m = nn_model_new(1, 1, N);
    int out = nn_sigmoid(m, nn_input(m));
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    float dy[N];
    for (int i = 0; i < N; i++)
        dy[i] = 1.0f;
    nn_ctx *c = run(m, x, 1, dy);
    T_REQUIRE(c != NULL);
    const float *y = nn_ctx_output(c, out), *dx = nn_ctx_input_grad(c);
    for (int i = 0; i < N; i++) {
        const double want = 1.0 / (1.0 + exp(-(double)x[i]));
        T_CHECKF(isfinite(y[i]) && isfinite(dx[i]) && y[i] >= 0.0f && y[i] <= 1.0f,
                 "sigmoid(%g) = %g, slope %g", (double)x[i], (double)y[i], (double)dx[i]);
        /* Relative accuracy down to the smallest normal floats (x = -80 gives 1.8e-35),
         * which 1 - sigmoid(-x) would lose entirely. */
        if (want > FLT_MIN)
            T_CHECKF(fabs(y[i] - want) <= 1e-6 * want, "sigmoid(%g) = %.9g, want %.9g",
                     (double)x[i], (double)y[i], want);
    }
    T_CHECK(y[0] == 0.5f && dx[0] == 0.25f);
    T_CHECK(y[11] == 1.0f && y[12] == 0.0f && y[13] == 1.0f && y[14] == 0.0f);
    T_CHECK(dx[11] == 0.0f && dx[12] == 0.0f);
    /* Slope y * (1 - y): 0.19661193 at +-1. */
    T_NEAR(dx[1], 0.19661193, 1e-6);
    T_NEAR(dx[2], 0.19661193, 1e-6);
    nn_ctx_free(c);
    nn_model_free(m);
}

TEST(nn_mul_values_by_hand)
{
    /* One 2x2x2 example, x = 1..8: pixel p has channels (2p + 1, 2p + 2). */
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float ones[8];
    for (int i = 0; i < 8; i++)
        ones[i] = 1.0f;

    /* x * x: y = x^2, and the one node's gradient adds up from both operands: 2x. */
    nn_model *m = nn_model_new(2, 2, 2);
    int in = nn_input(m);
    int out = nn_mul(m, in, in);
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    nn_ctx *c = run(m, x, 1, ones);
    T_REQUIRE(c != NULL);
    for (int i = 0; i < 8; i++) {
        T_CHECK(nn_ctx_output(c, out)[i] == x[i] * x[i]);
        T_CHECK(nn_ctx_input_grad(c)[i] == 2.0f * x[i]);
    }
    nn_ctx_free(c);
    nn_model_free(m);

    /* x * gap(x): the channel means are 4 and 5, so y = (4, 10, 12, 20, 20, 30, 28, 40).
     * With dy = 1: dx = mean (the direct term) + sum_q x_q / 4 (through the GAP) =
     * 2 * mean = (8, 10) at every pixel. */
    m = nn_model_new(2, 2, 2);
    in = nn_input(m);
    int g = nn_gap(m, in);
    out = nn_mul(m, in, g);
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    nn_node_info ni;
    nn_node_get(m, out, &ni);
    T_CHECK(ni.op == NN_OP_MUL && ni.in[0] == in && ni.in[1] == g);
    T_CHECK(ni.h == 2 && ni.w == 2 && ni.c == 2);
    c = run(m, x, 1, ones);
    T_REQUIRE(c != NULL);
    const float want[8] = {4, 10, 12, 20, 20, 30, 28, 40};
    for (int i = 0; i < 8; i++) {
        T_NEAR(nn_ctx_output(c, out)[i], want[i], 1e-6);
        T_NEAR(nn_ctx_input_grad(c)[i], i % 2 ? 10.0 : 8.0, 1e-5);
    }
    nn_ctx_free(c);
    nn_model_free(m);

    /* The 1x1xC operand first: same values, and the node lists the full-size input
     * first. */
    m = nn_model_new(2, 2, 2);
    in = nn_input(m);
    g = nn_gap(m, in);
    out = nn_mul(m, g, in);
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    nn_node_get(m, out, &ni);
    T_CHECK(ni.in[0] == in && ni.in[1] == g && ni.h == 2 && ni.w == 2 && ni.c == 2);
    c = run(m, x, 1, NULL);
    T_REQUIRE(c != NULL);
    for (int i = 0; i < 8; i++)
        T_NEAR(nn_ctx_output(c, out)[i], want[i], 1e-6);
    nn_ctx_free(c);
    nn_model_free(m);
}

TEST(nn_concat_values_by_hand)
{
    /* concat(x, 2x + 1) of a 1x2x2 input: per pixel (x0, x1, 2x0 + 1, 2x1 + 1). */
    const float x[2 * 4] = {1, 2, 3, 4, -1, -2, -3, -4}; /* two examples */
    const float s[2] = {2, 2}, b[2] = {1, 1};
    nn_model *m = nn_model_new(1, 2, 2);
    int in = nn_input(m);
    int out = nn_concat(m, in, nn_affine(m, in, s, b));
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    nn_node_info ni;
    nn_node_get(m, out, &ni);
    T_CHECK(ni.h == 1 && ni.w == 2 && ni.c == 4);
    float dy[2 * 8];
    for (int i = 0; i < 16; i++)
        dy[i] = (float)(i + 1);
    nn_ctx *c = run(m, x, 2, dy);
    T_REQUIRE(c != NULL);
    const float *y = nn_ctx_output(c, out), *dx = nn_ctx_input_grad(c);
    for (int p = 0; p < 4; p++) /* pixels of both examples */
        for (int j = 0; j < 2; j++) {
            T_CHECK(y[p * 4 + j] == x[p * 2 + j]);
            T_CHECK(y[p * 4 + 2 + j] == 2.0f * x[p * 2 + j] + 1.0f);
            /* The first slice's gradient plus the second's through the affine's 2. */
            T_CHECK(dx[p * 2 + j] == dy[p * 4 + j] + 2.0f * dy[p * 4 + 2 + j]);
        }
    nn_ctx_free(c);
    nn_model_free(m);
}

TEST(nn_clip_values_and_boundary_gradient)
{
    /* The gradient passes on the closed interval [lo, hi], as torch.clamp's does:
     * x == lo and x == hi pass it, x outside does not, NaN stays NaN and passes none. */
    const float x[8] = {-2.0f, -1.0f, -0.5f, 0.0f, 1.0f, 1.5f, -INFINITY, NAN};
    const float want_y[8] = {-1.0f, -1.0f, -0.5f, 0.0f, 1.0f, 1.0f, -1.0f, NAN};
    const float want_g[8] = {0, 1, 1, 1, 1, 0, 0, 0};
    float dy[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    nn_model *m = nn_model_new(1, 1, 8);
    int out = nn_clip(m, nn_input(m), -1.0f, 1.0f);
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    nn_ctx *c = run(m, x, 1, dy);
    T_REQUIRE(c != NULL);
    const float *y = nn_ctx_output(c, out), *dx = nn_ctx_input_grad(c);
    for (int i = 0; i < 7; i++) {
        T_CHECKF(y[i] == want_y[i], "clip(%g) = %g", (double)x[i], (double)y[i]);
        T_CHECKF(dx[i] == want_g[i], "clip'(%g) = %g", (double)x[i], (double)dx[i]);
    }
    T_CHECK(isnan(y[7]) && dx[7] == 0.0f);
    nn_ctx_free(c);
    nn_model_free(m);

    /* relu6 keeps hardtanh's rule (no gradient at 0 and 6), which clip does not
     * replace: clip(0, 6) passes it at both. */
    const float b[3] = {0.0f, 3.0f, 6.0f};
    for (int k = 0; k < 2; k++) {
        m = nn_model_new(1, 1, 3);
        int in = nn_input(m);
        out = k ? nn_clip(m, in, 0.0f, 6.0f) : nn_relu6(m, in);
        T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
        c = run(m, b, 1, dy);
        T_REQUIRE(c != NULL);
        dx = nn_ctx_input_grad(c);
        T_CHECKF(dx[0] == (float)k && dx[1] == 1.0f && dx[2] == (float)k,
                 "%s: gradient at 0, 3, 6: %g %g %g", k ? "clip" : "relu6", (double)dx[0],
                 (double)dx[1], (double)dx[2]);
        nn_ctx_free(c);
        nn_model_free(m);
    }

    /* One-sided: an infinite bound clips nothing on its side. */
    m = nn_model_new(1, 1, 3);
    out = nn_clip(m, nn_input(m), -INFINITY, 0.5f);
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    const float v[3] = {-1e30f, 0.25f, 7.0f};
    c = run(m, v, 1, dy);
    T_REQUIRE(c != NULL);
    y = nn_ctx_output(c, out);
    dx = nn_ctx_input_grad(c);
    T_CHECK(y[0] == -1e30f && y[1] == 0.25f && y[2] == 0.5f);
    T_CHECK(dx[0] == 1.0f && dx[1] == 1.0f && dx[2] == 0.0f);
    nn_node_info ni;
    nn_node_get(m, out, &ni);
    T_CHECK(ni.op == NN_OP_CLIP && isinf(ni.lo) && ni.lo < 0.0f && ni.hi == 0.5f);
    nn_ctx_free(c);
    nn_model_free(m);
}

/* An 8x8x4 input, two 1x1 convs giving ha x ha x ca and hb x hb x cb (ha, hb: 8, 4, 2
 * or 1, through the stride), and op applied to them. Returns the finalize code, and
 * the message in msg. */
static int try_binary(int (*op)(nn_model *, int, int), int ha, int ca, int hb, int cb,
                      char *msg, size_t size)
{
    nn_model *m = nn_model_new(8, 8, 4);
    int in = nn_input(m);
    int a = nn_conv2d(m, in, ca, 1, 1, 8 / ha, 0, 1, 0);
    int b = nn_conv2d(m, in, cb, 1, 1, 8 / hb, 0, 1, 0);
    int out = op(m, a, b);
    pt_err e;
    int rc = nn_model_finalize(m, out < 0 ? a : out, &e);
    snprintf(msg, size, "%.*s", (int)size - 1, rc ? e.msg : "");
    nn_model_free(m);
    return rc;
}

TEST(nn_mul_concat_clip_refuse_bad_shapes)
{
    char msg[256];
    /* mul: equal shapes, or 1x1xC against HxWxC (either side). */
    T_EQ_INT(try_binary(nn_mul, 8, 3, 8, 3, msg, sizeof msg), PT_OK);
    T_EQ_INT(try_binary(nn_mul, 8, 3, 1, 3, msg, sizeof msg), PT_OK);
    T_EQ_INT(try_binary(nn_mul, 1, 3, 8, 3, msg, sizeof msg), PT_OK);
    T_EQ_INT(try_binary(nn_mul, 8, 3, 8, 2, msg, sizeof msg), PT_EUSAGE);
    T_CHECKF(strstr(msg, "mul") && strstr(msg, "8x8x3") && strstr(msg, "8x8x2"), "%s", msg);
    T_EQ_INT(try_binary(nn_mul, 8, 3, 1, 2, msg, sizeof msg), PT_EUSAGE);
    T_CHECKF(strstr(msg, "mul") && strstr(msg, "1x1x2"), "%s", msg);
    T_EQ_INT(try_binary(nn_mul, 8, 3, 2, 3, msg, sizeof msg), PT_EUSAGE);
    T_CHECKF(strstr(msg, "broadcast") != NULL, "%s", msg);
    /* concat: equal H and W, any channels. */
    T_EQ_INT(try_binary(nn_concat, 4, 3, 4, 5, msg, sizeof msg), PT_OK);
    T_EQ_INT(try_binary(nn_concat, 4, 3, 2, 3, msg, sizeof msg), PT_EUSAGE);
    T_CHECKF(strstr(msg, "concat") && strstr(msg, "4x4") && strstr(msg, "2x2"), "%s", msg);

    /* clip: lo <= hi, no NaN. */
    const float bad[3][2] = {{1.0f, -1.0f}, {NAN, 1.0f}, {0.0f, NAN}};
    for (int k = 0; k < 3; k++) {
        nn_model *m = nn_model_new(2, 2, 1);
        int in = nn_input(m);
        T_CHECK(nn_clip(m, in, bad[k][0], bad[k][1]) < 0);
        pt_err e;
        T_EQ_INT(nn_model_finalize(m, in, &e), PT_EUSAGE);
        T_CHECKF(strstr(e.msg, "clip") != NULL, "%s", e.msg);
        nn_model_free(m);
    }
    /* lo == hi is a (constant) clip. */
    nn_model *m = nn_model_new(2, 2, 1);
    T_CHECK(nn_clip(m, nn_input(m), 0.5f, 0.5f) >= 0);
    nn_model_free(m);
    /* A failed input passes its error on. */
    m = nn_model_new(2, 2, 1);
    int in = nn_input(m);
    T_CHECK(nn_sigmoid(m, -1) < 0);
    T_CHECK(nn_concat(m, in, in) < 0);
    nn_model_free(m);
}

TEST(nn_new_layers_summary_names_and_flops)
{
    nn_model *m = nn_model_new(8, 8, 3);
    int c = nn_conv2d(m, nn_input(m), 4, 3, 3, 1, NN_PAD_SAME, 1, 0);
    int s = nn_sigmoid(m, c);
    int x = nn_mul(m, c, s);
    int se = nn_mul(m, x, nn_gap(m, x));
    int cat = nn_concat(m, se, c);
    int cl = nn_clip(m, cat, -1.0f, 2.5f);
    int out = nn_dense(m, nn_gap(m, cl), 3);
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    T_EQ_STR(nn_op_name(NN_OP_SIGMOID), "sigmoid");
    T_EQ_STR(nn_op_name(NN_OP_MUL), "mul");
    T_EQ_STR(nn_op_name(NN_OP_CONCAT), "concat");
    T_EQ_STR(nn_op_name(NN_OP_CLIP), "clip");
    nn_node_info ni;
    nn_node_get(m, cat, &ni);
    T_CHECK(ni.op == NN_OP_CONCAT && ni.c == 8 && ni.weight_count == 0 && !ni.trainable);
    /* Elementwise layers count no FLOPs: the total is the conv's and the dense's. */
    const int news[4] = {s, x, cat, cl};
    for (int k = 0; k < 4; k++) {
        T_CHECK(nn_node_flops(m, news[k], 1, 0) == 0.0);
        T_CHECK(nn_node_flops(m, news[k], 1, 1) == 0.0);
    }
    T_NEAR(nn_flops(m, 1, 0), 2.0 * 8 * 8 * 4 * 27 + 2.0 * 8 * 3, 0.5);
    size_t need = nn_model_summary(m, NULL, 0);
    char *buf = malloc(need + 1);
    nn_model_summary(m, buf, need + 1);
    T_CHECKF(strstr(buf, "sigmoid") && strstr(buf, "mul channels") && strstr(buf, "concat") &&
                 strstr(buf, "8x8x8") && strstr(buf, "clip -1,2.5"),
             "%s", buf);
    free(buf);
    nn_model_free(m);
}
