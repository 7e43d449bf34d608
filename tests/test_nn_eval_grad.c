/* nn_forward_eval_grad and nn_ctx_on_node_grad: the inference forward with a backward
 * (batch norm on its running statistics, dropout off), and the gradient of the
 * backward's start with respect to any node's output, as Grad-CAM reads them. */
#include "tests/t.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

enum { N = 2, S = 8, K = 4 };

typedef struct net {
    nn_model *m;
    int fused;      /* conv with a fused ReLU, read only by a 1x1 conv */
    int one;        /* that 1x1 conv */
    int last;       /* the map the GAP reads */
    int head;       /* the dense layer */
} net;

/* conv - BN - ReLU - dropout - conv+ReLU - 1x1 conv - BN - GAP - dropout - dense,
 * with running statistics and gammas away from identity. */
static int build(net *t)
{
    pt_err e;
    nn_model *m = nn_model_new(S, S, 3);
    if (!m)
        return 0;
    int x = nn_conv2d(m, nn_input(m), 6, 3, 3, 1, 1, 1, 1);
    x = nn_relu(m, nn_batchnorm(m, x));
    x = nn_dropout(m, x, 0.3f);
    t->fused = nn_conv2d(m, x, 5, 3, 3, 2, 1, 1, 1);
    x = nn_relu(m, t->fused);
    t->one = nn_conv2d(m, x, 7, 1, 1, 1, 0, 1, 0);
    t->last = nn_batchnorm(m, t->one);
    x = nn_dropout(m, nn_gap(m, t->last), 0.5f);
    t->head = nn_dense(m, x, K);
    if (nn_model_finalize(m, t->head, &e) != PT_OK) {
        nn_model_free(m);
        return 0;
    }
    nn_model_init_params(m, 11);
    nn_model_set_bn_warm_start(m, 0);
    float *b = nn_buffers(m);
    for (size_t i = 0; i < nn_buffer_count(m); i++)
        b[i] = (i / 3) % 2 ? 0.3f + 0.1f * (float)(i % 5) : -0.2f + 0.05f * (float)(i % 7);
    nn_node_info bn;
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_get(m, i, &bn);
        if (bn.op != NN_OP_BN)
            continue;
        float *P = nn_params(m) + bn.param_offset;
        for (size_t j = 0; j < bn.weight_count; j++) {
            P[j] = 0.7f + 0.1f * (float)j;                 /* gamma */
            P[bn.weight_count + j] = 0.05f * (float)j - 0.1f; /* beta */
        }
    }
    /* Variances must be positive: every second half of a BN's buffers. */
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_get(m, i, &bn);
        if (bn.op == NN_OP_BN)
            for (size_t j = bn.buffer_count / 2; j < bn.buffer_count; j++)
                b[bn.buffer_offset + j] = 0.5f + 0.25f * (float)(j % 3);
    }
    t->m = m;
    return 1;
}

static void fill(float *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        in[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
}

TEST(nn_eval_grad_forward_is_the_inference_forward)
{
    net t;
    T_REQUIRE(build(&t));
    pt_err e;
    float in[N * S * S * 3];
    fill(in, sizeof in / sizeof in[0]);
    nn_ctx *c = nn_ctx_new(t.m, N, &e), *ci = nn_ctx_new_infer(t.m, N, &e);
    T_REQUIRE(c && ci);
    float ref[N * K], got[N * K], train[N * K];
    memcpy(ref, nn_forward(ci, in, N, 0, 0, 0), sizeof ref);
    memcpy(train, nn_forward(c, in, N, 1, 3, 0), sizeof train);
    nn_ctx_clear_bn_records(c);
    const float *y = nn_forward_eval_grad(c, in, N);
    T_REQUIRE(y != NULL);
    memcpy(got, y, sizeof got);
    T_CHECK(memcmp(ref, got, sizeof ref) == 0);
    T_CHECK(memcmp(train, got, sizeof ref) != 0); /* the training forward differs */
    /* nothing recorded: an update leaves the running statistics as they are */
    size_t nb = nn_buffer_count(t.m);
    float before[64];
    T_REQUIRE(nb <= 64);
    memcpy(before, nn_buffers(t.m), nb * sizeof(float));
    nn_model_update_bn(t.m, &c, 1, 3);
    T_CHECK(memcmp(before, nn_buffers(t.m), nb * sizeof(float)) == 0);
    T_CHECK(nn_forward_eval_grad(ci, in, N) == NULL);
    nn_ctx_free(c);
    nn_ctx_free(ci);
    nn_model_free(t.m);
}

/* d(sum_i w_i logits_i)/d(input) by the backward against central differences of the
 * inference forward: the backward is that function's, BN frozen, dropout off. */
TEST(nn_eval_grad_backward_matches_finite_differences)
{
    net t;
    T_REQUIRE(build(&t));
    nn_model_set_input_grad(t.m, 1);
    pt_err e;
    float in[N * S * S * 3];
    fill(in, sizeof in / sizeof in[0]);
    nn_ctx *c = nn_ctx_new(t.m, N, &e), *ci = nn_ctx_new_infer(t.m, N, &e);
    T_REQUIRE(c && ci);
    float dl[N * K];
    for (int i = 0; i < N * K; i++)
        dl[i] = (float)(i % 3) - 0.7f;
    T_REQUIRE(nn_forward_eval_grad(c, in, N) != NULL);
    T_REQUIRE(nn_backward(c, dl) == PT_OK);
    const float *g = nn_ctx_input_grad(c);
    T_REQUIRE(g != NULL);
    int bad = 0, checked = 0;
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i += 7) {
        const float h = 1e-2f, x0 = in[i];
        double f[2];
        for (int s = 0; s < 2; s++) {
            in[i] = x0 + (s ? h : -h);
            const float *y = nn_forward(ci, in, N, 0, 0, 0);
            f[s] = 0;
            for (int j = 0; j < N * K; j++)
                f[s] += (double)dl[j] * y[j];
        }
        in[i] = x0;
        double fd = (f[1] - f[0]) / (2.0 * h);
        checked++;
        if (fabs(fd - g[i]) > 2e-3 + 2e-2 * fabs(fd))
            bad++;
    }
    T_CHECKF(bad <= checked / 20, "%d of %d input gradients off", bad, checked);
    nn_ctx_free(c);
    nn_ctx_free(ci);
    nn_model_free(t.m);
}

typedef struct grab {
    int node;
    float *v;
    size_t count;
    int calls;
} grab;

static void on_grad(void *arg, int node, const float *y, size_t count)
{
    grab *g = arg;
    for (int k = 0; k < 3; k++)
        if (g[k].node == node && (g[k].v = malloc(count * sizeof *y))) {
            memcpy(g[k].v, y, count * sizeof *y);
            g[k].count = count;
            g[k].calls++;
        }
}

/* The gradients told: at the GAP's input, W[j][c] / (h w) (a logit's gradient spread
 * evenly); at a conv with a fused ReLU whose only reader is a 1x1 conv, that conv's
 * dy times its weights transposed, the ReLU's zeros not applied (the gradient of the
 * activated output, not of the pre-activation). */
TEST(nn_node_grad_observer_gives_each_outputs_gradient)
{
    net t;
    T_REQUIRE(build(&t));
    nn_model_set_input_grad(t.m, 1);
    pt_err e;
    float in[N * S * S * 3];
    fill(in, sizeof in / sizeof in[0]);
    nn_ctx *c = nn_ctx_new(t.m, N, &e);
    T_REQUIRE(c != NULL);
    grab g[3] = { { .node = t.last }, { .node = t.fused }, { .node = t.one } };
    grab out[3] = { { .node = t.fused }, { .node = -1 }, { .node = -1 } };
    nn_ctx_on_node_grad(c, on_grad, g);
    nn_ctx_on_node(c, on_grad, out);
    const int cls = 2;
    float dl[N * K] = { 0 };
    for (int i = 0; i < N; i++)
        dl[i * K + cls] = 1.0f;
    T_REQUIRE(nn_forward_eval_grad(c, in, N) != NULL);
    T_REQUIRE(nn_backward(c, dl) == PT_OK);
    for (int k = 0; k < 3; k++)
        T_REQUIRE(g[k].calls == 1 && g[k].v);
    T_REQUIRE(out[0].calls == 1 && out[0].v);
    nn_node_info last, head, fused, one;
    nn_node_get(t.m, t.last, &last);
    nn_node_get(t.m, t.head, &head);
    nn_node_get(t.m, t.fused, &fused);
    nn_node_get(t.m, t.one, &one);
    const float *W = nn_params(t.m) + head.param_offset, *W1 = nn_params(t.m) + one.param_offset;
    double err = 0;
    const int hw = last.h * last.w;
    T_REQUIRE(g[0].count == (size_t)N * hw * last.c);
    for (int i = 0; i < N; i++)
        for (int p = 0; p < hw; p++)
            for (int j = 0; j < last.c; j++)
                err = fmax(err, fabs(g[0].v[((size_t)i * hw + p) * last.c + j] -
                                     W[j * K + cls] / hw));
    T_CHECKF(err < 1e-6, "GAP input's gradient off by %g", err);
    /* the fused conv's activated output has zeros; its gradient there is not zero */
    err = 0;
    int zeros_with_grad = 0;
    const size_t px = (size_t)N * fused.h * fused.w;
    for (size_t p = 0; p < px; p++)
        for (int ci = 0; ci < fused.c; ci++) {
            double s = 0;
            for (int co = 0; co < one.c; co++)
                s += (double)g[2].v[p * one.c + co] * W1[ci * one.c + co];
            err = fmax(err, fabs(s - g[1].v[p * fused.c + ci]));
            zeros_with_grad += out[0].v[p * fused.c + ci] == 0.0f && fabs(s) > 1e-6;
        }
    T_CHECKF(err < 1e-5, "fused conv's gradient off by %g", err);
    T_CHECK(zeros_with_grad > 0);
    for (int k = 0; k < 3; k++)
        free(g[k].v);
    free(out[0].v);
    nn_ctx_free(c);
    nn_model_free(t.m);
}
