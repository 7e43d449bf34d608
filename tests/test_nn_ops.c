/* nn: the layers for imported graphs (sigmoid, mul, concat, clip) against values
 * worked out by hand, their builder errors, and how the model describes them. Their
 * gradients against finite differences are in test_nn_grad.c. */
#include "tests/t.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

/* Runs the finalized model on x (n examples) in training mode, then backward from dy
 * (NULL: skip). Returns the context (the caller frees it). */
static nn_ctx *run(nn_model *m, const float *x, int n, const float *dy)
{
    nn_model_set_input_grad(m, 1);
    /* Keeping every output: the tests read intermediate ones, which a training context
     * otherwise need not keep (test_nn_recompute.c checks that as its own subject). */
    int was = nn_set_recompute(0);
    nn_ctx *c = nn_ctx_new(m, n, NULL);
    nn_set_recompute(was);
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

/* ---- explicit (asymmetric) padding ---- */

/* conv2d_ex on x against a VALID conv (same weights) on x padded with zeros by hand:
 * the definition of padding, independent of how the kernels skip it. */
static void conv_ex_vs_padded(int h, int w, int cin, int cout, int kh, int kw, int stride,
                              int pt, int pl, int pb, int pr, int groups)
{
    enum { N = 2 };
    const int H = h + pt + pb, W = w + pl + pr;
    nn_model *a = nn_model_new(h, w, cin), *b = nn_model_new(H, W, cin);
    int oa = nn_conv2d_ex(a, nn_input(a), cout, kh, kw, stride, stride, pt, pl, pb, pr, groups, 1);
    int ob = nn_conv2d(b, nn_input(b), cout, kh, kw, stride, NN_PAD_VALID, groups, 1);
    pt_err e;
    T_REQUIRE(nn_model_finalize(a, oa, &e) == PT_OK);
    T_REQUIRE(nn_model_finalize(b, ob, &e) == PT_OK);
    T_REQUIRE(nn_param_count(a) == nn_param_count(b));
    nn_model_init_params(a, 4);
    for (size_t i = 0; i < nn_param_count(a); i++)
        nn_params(a)[i] += 0.01f * (float)(i % 7); /* non-zero biases too */
    memcpy(nn_params(b), nn_params(a), nn_param_count(a) * sizeof(float));
    nn_node_info ia, ib;
    nn_node_get(a, oa, &ia);
    nn_node_get(b, ob, &ib);
    T_CHECKF(ia.h == ib.h && ia.w == ib.w, "conv_ex %dx%d/%d pads %d,%d,%d,%d: %dx%d, padded by "
             "hand %dx%d", kh, kw, stride, pt, pl, pb, pr, ia.h, ia.w, ib.h, ib.w);
    T_CHECK(ia.pad_t == pt && ia.pad_l == pl && ia.pad_b == pb && ia.pad_r == pr);
    const size_t in_len = (size_t)N * h * w * cin;
    float *x = malloc(in_len * sizeof *x), *xp = calloc((size_t)N * H * W * cin, sizeof *xp);
    for (size_t i = 0; i < in_len; i++)
        x[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
    for (int n = 0; n < N; n++)
        for (int y = 0; y < h; y++)
            memcpy(xp + (((size_t)n * H + y + pt) * W + pl) * cin,
                   x + (((size_t)n * h + y) * w) * cin, (size_t)w * cin * sizeof *x);
    nn_ctx *ca = nn_ctx_new(a, N, NULL), *cb = nn_ctx_new(b, N, NULL);
    const float *ya = nn_forward(ca, x, N, 0, 0, 0), *yb = nn_forward(cb, xp, N, 0, 0, 0);
    double err = 0.0;
    for (size_t i = 0; i < (size_t)N * ia.h * ia.w * ia.c; i++)
        err = fmax(err, fabs(ya[i] - yb[i]));
    T_CHECKF(err < 1e-5, "conv_ex %dx%d/%d pads %d,%d,%d,%d groups %d: differs from the "
             "hand-padded input by %g", kh, kw, stride, pt, pl, pb, pr, groups, err);
    nn_ctx_free(ca);
    nn_ctx_free(cb);
    free(x);
    free(xp);
    nn_model_free(a);
    nn_model_free(b);
}

TEST(nn_conv2d_ex_matches_padding_by_hand)
{
    conv_ex_vs_padded(8, 8, 3, 5, 3, 3, 2, 0, 0, 1, 1, 1);  /* TF same, stride 2, even */
    conv_ex_vs_padded(7, 9, 4, 6, 3, 3, 2, 1, 0, 0, 2, 2);  /* grouped, lopsided */
    conv_ex_vs_padded(6, 7, 3, 4, 1, 7, 1, 0, 3, 0, 3, 1);  /* Inception's 1x7 */
    conv_ex_vs_padded(7, 6, 3, 4, 7, 1, 1, 3, 0, 3, 0, 1);  /* and 7x1 */
    conv_ex_vs_padded(9, 8, 8, 8, 5, 5, 2, 1, 2, 2, 1, 8);  /* depthwise 5x5/2 */
    conv_ex_vs_padded(8, 8, 8, 8, 3, 3, 2, 0, 0, 1, 1, 8);  /* EfficientNet's (TF export) */
    conv_ex_vs_padded(5, 5, 3, 4, 1, 1, 2, 0, 0, 0, 0, 1);  /* 1x1/2, no padding */
}

TEST(nn_same_padding_is_conv2d_ex_with_its_pads)
{
    /* nn_conv2d / nn_maxpool / nn_avgpool with NN_PAD_SAME report their four pads, and
     * the _ex forms given those pads build the same node and compute the same output. */
    nn_model *m = nn_model_new(8, 7, 4);
    int in = nn_input(m);
    int c1 = nn_conv2d(m, in, 4, 3, 3, 2, NN_PAD_SAME, 1, 1);
    int c2 = nn_conv2d_ex(m, in, 4, 3, 3, 2, 2, 0, 1, 1, 1, 1, 1);
    int p1 = nn_maxpool(m, in, 3, 2, NN_PAD_SAME);
    int p2 = nn_maxpool_ex(m, in, 3, 3, 2, 2, 0, 1, 1, 1);
    int a1 = nn_avgpool(m, in, 2, 2, NN_PAD_SAME);
    int a2 = nn_avgpool_ex(m, in, 2, 2, 2, 2, 0, 0, 0, 1);
    int out = nn_concat(m, nn_concat(m, nn_concat(m, c1, c2), nn_concat(m, p1, p2)),
                        nn_concat(m, a1, a2));
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    const int pairs[3][2] = {{c1, c2}, {p1, p2}, {a1, a2}};
    for (int k = 0; k < 3; k++) {
        nn_node_info u, v;
        nn_node_get(m, pairs[k][0], &u);
        nn_node_get(m, pairs[k][1], &v);
        T_CHECKF(u.h == 4 && u.w == 4 && u.h == v.h && u.w == v.w && u.c == v.c &&
                     u.pad_t == v.pad_t && u.pad_l == v.pad_l && u.pad_b == v.pad_b &&
                     u.pad_r == v.pad_r,
                 "pair %d: %dx%dx%d pads %d,%d,%d,%d vs %dx%dx%d pads %d,%d,%d,%d", k, u.h, u.w,
                 u.c, u.pad_t, u.pad_l, u.pad_b, u.pad_r, v.h, v.w, v.c, v.pad_t, v.pad_l,
                 v.pad_b, v.pad_r);
    }
    /* Same weights in both convs. */
    nn_node_info u, v;
    nn_node_get(m, c1, &u);
    nn_node_get(m, c2, &v);
    memcpy(nn_params(m) + v.param_offset, nn_params(m) + u.param_offset,
           (u.weight_count + u.bias_count) * sizeof(float));
    float x[8 * 7 * 4];
    for (int i = 0; i < 8 * 7 * 4; i++)
        x[i] = (float)((i * 29) % 31) / 15.0f - 1.0f;
    nn_ctx *c = run(m, x, 1, NULL);
    T_REQUIRE(c != NULL);
    for (int k = 0; k < 3; k++)
        T_CHECK(memcmp(nn_ctx_output(c, pairs[k][0]), nn_ctx_output(c, pairs[k][1]),
                       4 * 4 * 4 * sizeof(float)) == 0);
    nn_ctx_free(c);
    nn_model_free(m);
}

TEST(nn_pools_ex_values_by_hand)
{
    /* A 2x2 one-channel input (1 2 / 3 4), 2x2 windows of stride 1 padded at the bottom
     * and right: four windows, the padding neither winning a max nor counting in an
     * average: max (4 4 / 4 4), average (2.5 3 / 3.5 4). Top and left padding
     * instead: max (1 2 / 3 4), average (1 1.5 / 2 2.5). */
    const float x[4] = {1, 2, 3, 4};
    const float want[4][4] = {{4, 4, 4, 4}, {2.5f, 3, 3.5f, 4}, {1, 2, 3, 4}, {1, 1.5f, 2, 2.5f}};
    for (int k = 0; k < 4; k++) {
        nn_model *m = nn_model_new(2, 2, 1);
        int in = nn_input(m), b = k < 2;
        int out = k % 2 ? nn_avgpool_ex(m, in, 2, 2, 1, 1, !b, !b, b, b)
                        : nn_maxpool_ex(m, in, 2, 2, 1, 1, !b, !b, b, b);
        T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
        nn_ctx *c = run(m, x, 1, NULL);
        T_REQUIRE(c != NULL);
        const float *y = nn_ctx_output(c, out);
        T_CHECKF(y[0] == want[k][0] && y[1] == want[k][1] && y[2] == want[k][2] &&
                     y[3] == want[k][3],
                 "case %d: %g %g %g %g", k, (double)y[0], (double)y[1], (double)y[2],
                 (double)y[3]);
        nn_ctx_free(c);
        nn_model_free(m);
    }
}

TEST(nn_ex_builders_refuse_what_the_kernels_lack)
{
    static const struct {
        int op; /* 0 conv, 1 maxpool, 2 avgpool */
        int kh, kw, sh, sw, pt, pl, pb, pr;
        const char *says;
    } bad[] = {
        {0, 3, 3, 2, 1, 1, 1, 1, 1, "strides"},   /* unequal strides */
        {1, 3, 3, 1, 2, 1, 1, 1, 1, "strides"},
        {1, 3, 2, 1, 1, 0, 0, 0, 0, "square"},    /* rectangular pool window */
        {2, 1, 3, 1, 1, 0, 0, 0, 0, "square"},
        {0, 3, 3, 1, 1, 3, 0, 0, 0, "smaller"},   /* a pad as large as the window */
        {0, 1, 1, 1, 1, 0, 0, 0, 1, "smaller"},
        {1, 2, 2, 2, 2, 0, 0, 2, 0, "smaller"},
        {0, 3, 3, 1, 1, -1, 0, 0, 0, "bad window"},
        {2, 3, 3, 0, 0, 0, 0, 0, 0, "bad window"},
        {0, 9, 9, 1, 1, 0, 0, 0, 0, "does not fit"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nn_model *m = nn_model_new(6, 6, 2);
        int in = nn_input(m);
        int r = bad[i].op == 0   ? nn_conv2d_ex(m, in, 2, bad[i].kh, bad[i].kw, bad[i].sh,
                                                bad[i].sw, bad[i].pt, bad[i].pl, bad[i].pb,
                                                bad[i].pr, 1, 0)
                : bad[i].op == 1 ? nn_maxpool_ex(m, in, bad[i].kh, bad[i].kw, bad[i].sh,
                                                 bad[i].sw, bad[i].pt, bad[i].pl, bad[i].pb,
                                                 bad[i].pr)
                                 : nn_avgpool_ex(m, in, bad[i].kh, bad[i].kw, bad[i].sh,
                                                 bad[i].sw, bad[i].pt, bad[i].pl, bad[i].pb,
                                                 bad[i].pr);
        T_CHECKF(r < 0, "case %zu accepted", i);
        pt_err e;
        T_EQ_INT(nn_model_finalize(m, in, &e), PT_EUSAGE);
        T_CHECKF(strstr(e.msg, bad[i].says) != NULL, "case %zu: %s", i, e.msg);
        nn_model_free(m);
    }
    /* Rectangular conv kernels are fine, and so is a rectangular conv with equal
     * strides and lopsided pads. */
    nn_model *m = nn_model_new(6, 6, 2);
    T_CHECK(nn_conv2d_ex(m, nn_input(m), 2, 1, 5, 2, 2, 0, 2, 0, 1, 1, 0) >= 0);
    nn_model_free(m);
}

TEST(nn_batchnorm_uses_each_layers_epsilon_and_momentum)
{
    /* One channel over 4 pixels; gamma 2, beta 0.5; running mean 1, var 0.25. */
    static const float x[] = {0.0f, 1.0f, 2.0f, 5.0f};
    const float eps[2] = {1e-3f, 1e-5f};
    const float mom[2] = {0.99f, 0.9f};
    for (int k = 0; k < 2; k++) {
        nn_model *m = nn_model_new(2, 2, 1);
        int bn = k == 0 ? nn_batchnorm(m, nn_input(m)) : nn_batchnorm_ex(m, nn_input(m), eps[k], mom[k]);
        T_REQUIRE(nn_model_finalize(m, bn, NULL) == PT_OK);
        float *p = nn_params(m), *b = nn_buffers(m);
        p[0] = 2.0f;
        p[1] = 0.5f;
        b[0] = 1.0f;
        b[1] = 0.25f;
        nn_ctx *c = nn_ctx_new(m, 1, NULL);
        T_REQUIRE(c != NULL);
        const float *y = nn_forward(c, x, 1, 0, 0, 0); /* inference: running statistics */
        T_REQUIRE(y != NULL);
        for (int i = 0; i < 4; i++) {
            double want = 2.0 * (x[i] - 1.0) / sqrt(0.25 + (double)eps[k]) + 0.5;
            T_NEAR(y[i], want, 1e-5 * fabs(want) + 1e-6);
        }
        /* Training: the batch mean 2 and unbiased variance 14/3 move the running ones
         * by (1 - momentum). */
        T_REQUIRE(nn_forward(c, x, 1, 1, 0, 0) != NULL);
        nn_model_update_bn(m, &c, 1, 0);
        T_NEAR(b[0], mom[k] * 1.0 + (1.0 - mom[k]) * 2.0, 1e-6);
        T_NEAR(b[1], mom[k] * 0.25 + (1.0 - mom[k]) * (14.0 / 3.0), 1e-5);
        nn_ctx_free(c);
        nn_model_free(m);
    }
    nn_model *m = nn_model_new(2, 2, 1);
    pt_err e;
    int bn = nn_batchnorm_ex(m, nn_input(m), 0.0f, 0.9f);
    T_CHECK(bn < 0);
    T_CHECK(nn_model_finalize(m, bn, &e) != PT_OK);
    T_CHECKF(strstr(e.msg, "epsilon") != NULL, "%s", e.msg);
    nn_model_free(m);
}
