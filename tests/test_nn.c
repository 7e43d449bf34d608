/* nn: convolution against a direct reference, BN statistics, dropout's split
 * independence, seeded initialisation, a training smoke test, the built-in models,
 * FLOP counts, freezing, replicas on threads, the summary and builder errors. */
#include "tests/t.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_models.h"

static void fill_uniform(float *p, size_t n, uint64_t seed, float lo, float hi)
{
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        p[i] = rng_uniform(&r, lo, hi);
}

static float *alloc_uniform(size_t n, uint64_t seed, float lo, float hi)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    fill_uniform(p, n, seed, lo, hi);
    return p;
}

/* ---- convolution against the definition ---- */

typedef struct cfg {
    int n, h, w, cin, cout, k, stride, pad, groups, bias;
} cfg;

/* TensorFlow's rule for "same", written out independently of the library. */
static void geometry(const cfg *c, int *oh, int *ow, int *pt, int *pl)
{
    if (c->pad == NN_PAD_SAME) {
        *oh = (c->h + c->stride - 1) / c->stride;
        *ow = (c->w + c->stride - 1) / c->stride;
        int th = (*oh - 1) * c->stride + c->k - c->h, tw = (*ow - 1) * c->stride + c->k - c->w;
        *pt = th > 0 ? th / 2 : 0;
        *pl = tw > 0 ? tw / 2 : 0;
    } else {
        int p = c->pad == NN_PAD_VALID ? 0 : c->pad;
        *oh = (c->h + 2 * p - c->k) / c->stride + 1;
        *ow = (c->w + 2 * p - c->k) / c->stride + 1;
        *pt = *pl = p;
    }
}

/* y (double), and when dy is given dx and dw, by the definition of the convolution. */
static void direct_conv(const cfg *c, const float *x, const float *wt, const float *b,
                        double *y, const float *dy, double *dx, double *dw)
{
    int oh, ow, pt, pl;
    geometry(c, &oh, &ow, &pt, &pl);
    const int cig = c->cin / c->groups, cog = c->cout / c->groups;
    for (int img = 0; img < c->n; img++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++)
                for (int co = 0; co < c->cout; co++) {
                    const size_t o = (((size_t)img * oh + oy) * ow + ox) * c->cout + co;
                    const int g = co / cog;
                    double acc = b ? b[co] : 0.0;
                    for (int ky = 0; ky < c->k; ky++)
                        for (int kx = 0; kx < c->k; kx++) {
                            int iy = oy * c->stride - pt + ky, ix = ox * c->stride - pl + kx;
                            if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w)
                                continue;
                            for (int ci = 0; ci < cig; ci++) {
                                size_t xi = (((size_t)img * c->h + iy) * c->w + ix) * c->cin +
                                            (size_t)(g * cig + ci);
                                size_t wi = ((size_t)(ky * c->k + kx) * cig + ci) * c->cout + co;
                                acc += (double)x[xi] * wt[wi];
                                if (dy) {
                                    dx[xi] += (double)dy[o] * wt[wi];
                                    dw[wi] += (double)dy[o] * x[xi];
                                }
                            }
                        }
                    y[o] = acc;
                }
}

static double max_rel(const float *a, const double *ref, size_t n)
{
    double scale = 1e-6, err = 0.0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(ref[i]));
    for (size_t i = 0; i < n; i++)
        err = fmax(err, fabs((double)a[i] - ref[i]) / scale);
    return err;
}

/* Runs conv config c through the library (forward, and backward with a random dy
 * when check_backward) and compares with direct_conv. */
static void conv_vs_direct(const char *name, const cfg *c, int check_backward)
{
    nn_model *m = nn_model_new(c->h, c->w, c->cin);
    int out = nn_conv2d(m, nn_input(m), c->cout, c->k, c->k, c->stride, c->pad, c->groups,
                        c->bias);
    pt_err e;
    if (nn_model_finalize(m, out, &e) != PT_OK) {
        t_fail(__FILE__, __LINE__, "%s: %s", name, e.msg);
        nn_model_free(m);
        return;
    }
    nn_model_set_input_grad(m, 1);
    nn_model_init_params(m, 3);
    float *P = nn_params(m);
    nn_node_info ni;
    nn_node_get(m, out, &ni);
    if (c->bias)
        fill_uniform(P + ni.weight_count, ni.bias_count, 4, -1.0f, 1.0f);
    int oh, ow, pt, pl;
    geometry(c, &oh, &ow, &pt, &pl);
    T_EQ_INT(ni.h, oh);
    T_EQ_INT(ni.w, ow);
    const size_t in_len = (size_t)c->n * c->h * c->w * c->cin;
    const size_t out_len = (size_t)c->n * oh * ow * c->cout;
    float *x = alloc_uniform(in_len, 5, -1.0f, 1.0f);
    float *dy = alloc_uniform(out_len, 6, -1.0f, 1.0f);
    double *y = calloc(out_len, sizeof *y), *dx = calloc(in_len, sizeof *dx);
    double *dw = calloc(ni.weight_count, sizeof *dw);
    direct_conv(c, x, P, c->bias ? P + ni.weight_count : NULL, y, check_backward ? dy : NULL, dx,
                dw);
    nn_ctx *ctx = nn_ctx_new(m, c->n, NULL);
    const float *got = nn_forward(ctx, x, c->n, 1, 0, 0);
    double ef = max_rel(got, y, out_len);
    T_CHECKF(ef < 1e-5, "%s: forward differs from the direct convolution by %.3g", name, ef);
    if (check_backward) {
        nn_zero_grads(ctx);
        T_REQUIRE(nn_backward(ctx, dy) == PT_OK);
        double ex = max_rel(nn_ctx_input_grad(ctx), dx, in_len);
        double ew = max_rel(nn_grads(ctx), dw, ni.weight_count);
        T_CHECKF(ex < 1e-5 && ew < 1e-5, "%s: backward differs: dx %.3g, dw %.3g", name, ex, ew);
    }
    nn_ctx_free(ctx);
    free(x);
    free(dy);
    free(y);
    free(dx);
    free(dw);
    nn_model_free(m);
}

TEST(nn_conv_matches_direct_reference)
{
    static const struct {
        const char *name;
        cfg c;
    } cases[] = {
        {"3x3/1 same, 3 -> 32 (first layer)", {2, 9, 11, 3, 32, 3, 1, NN_PAD_SAME, 1, 0}},
        {"3x3/2 same, even size", {2, 10, 8, 8, 16, 3, 2, NN_PAD_SAME, 1, 1}},
        {"3x3/2 same, odd size", {1, 9, 7, 5, 7, 3, 2, NN_PAD_SAME, 1, 0}},
        {"5x5/2 pad 1", {2, 11, 9, 4, 6, 5, 2, 1, 1, 1}},
        {"3x3 valid", {1, 8, 8, 6, 5, 3, 1, NN_PAD_VALID, 1, 0}},
        {"depthwise 3x3/1", {2, 8, 9, 24, 24, 3, 1, NN_PAD_SAME, 24, 0}},
        {"depthwise 3x3/2", {2, 9, 8, 16, 16, 3, 2, NN_PAD_SAME, 16, 1}},
        {"depthwise 3x3/1, 13 channels (8 + 4 + 1)", {2, 6, 7, 13, 13, 3, 1, NN_PAD_SAME, 13, 0}},
        {"depthwise 5x5/2", {2, 9, 9, 12, 12, 5, 2, NN_PAD_SAME, 12, 0}},
        {"depthwise 9x9/1 pad 3", {1, 10, 10, 8, 8, 9, 1, 3, 8, 1}},
        {"grouped 3x3/1, 4 groups", {2, 7, 7, 8, 12, 3, 1, NN_PAD_SAME, 4, 0}},
        {"1x1/1", {2, 6, 7, 24, 40, 1, 1, 0, 1, 1}},
        {"1x1/1 grouped", {2, 5, 5, 12, 8, 1, 1, 0, 2, 0}},
        {"1x1/2", {2, 7, 7, 8, 8, 1, 2, NN_PAD_SAME, 1, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        conv_vs_direct(cases[i].name, &cases[i].c, 1);
    /* Large enough that im2col runs in several row chunks, forward and backward. */
    cfg big = {3, 40, 40, 32, 16, 3, 1, NN_PAD_SAME, 1, 0};
    if (t_slow_mode())
        big.h = big.w = 30;
    conv_vs_direct("3x3/1, several column chunks", &big, 1);
}

/* ---- batch norm ---- */

TEST(nn_bn_inference_uses_running_stats)
{
    nn_model *m = nn_model_new(2, 3, 4);
    int out = nn_batchnorm(m, nn_input(m));
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    float *P = nn_params(m), *B = nn_buffers(m);
    T_EQ_INT(nn_param_count(m), 8);
    T_EQ_INT(nn_buffer_count(m), 8);
    for (int j = 0; j < 4; j++) {
        P[j] = 0.5f + (float)j;          /* gamma */
        P[4 + j] = 0.1f * (float)j;      /* beta */
        B[j] = -0.2f + 0.3f * (float)j;  /* running mean */
        B[4 + j] = 0.5f + (float)j;      /* running var */
    }
    float x[2 * 6 * 4];
    fill_uniform(x, 48, 1, -2.0f, 2.0f);
    nn_ctx *c = nn_ctx_new(m, 2, NULL);
    const float *y = nn_forward(c, x, 2, 0, 0, 0);
    double err = 0.0;
    for (int i = 0; i < 48; i++) {
        int j = i % 4;
        double ref = (x[i] - B[j]) / sqrt((double)B[4 + j] + 1e-3) * P[j] + P[4 + j];
        err = fmax(err, fabs(y[i] - ref));
    }
    T_CHECKF(err < 1e-5, "inference BN differs from the running-stat formula by %g", err);
    /* Inference records nothing: an update changes nothing. */
    float before[8];
    memcpy(before, B, sizeof before);
    nn_ctx *cs[1] = {c};
    nn_model_update_bn(m, cs, 1, 0);
    T_CHECK(memcmp(before, B, sizeof before) == 0);
    /* Training normalises with the batch: each channel comes out with mean beta and
     * (biased) variance gamma^2 * var / (var + eps). */
    y = nn_forward(c, x, 2, 1, 0, 0);
    for (int j = 0; j < 4; j++) {
        double s = 0.0, s2 = 0.0;
        for (int r = 0; r < 12; r++)
            s += y[r * 4 + j];
        s /= 12.0;
        for (int r = 0; r < 12; r++)
            s2 += (y[r * 4 + j] - s) * (y[r * 4 + j] - s);
        T_NEAR(s, P[4 + j], 1e-5);
        T_NEAR(sqrt(s2 / 12.0), P[j], 0.01 * P[j]);
    }
    nn_ctx_free(c);
    nn_model_free(m);
}

TEST(nn_bn_update_averages_two_contexts)
{
    enum { N = 4, H = 2, W = 3, C = 5 };
    nn_model *m = nn_model_new(H, W, C);
    int out = nn_batchnorm(m, nn_input(m));
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    float *B = nn_buffers(m);
    for (int j = 0; j < C; j++) {
        B[j] = 0.5f;
        B[C + j] = 2.0f;
    }
    float x1[N * H * W * C], x2[N * H * W * C];
    fill_uniform(x1, sizeof x1 / sizeof x1[0], 1, -1.0f, 3.0f);
    fill_uniform(x2, sizeof x2 / sizeof x2[0], 2, -4.0f, 1.0f);
    nn_ctx *c1 = nn_ctx_new(m, N, NULL), *c2 = nn_ctx_new(m, N, NULL);
    nn_forward(c1, x1, N, 1, 0, 0);
    nn_forward(c2, x2, N, 1, 0, N);
    nn_ctx *cs[2] = {c1, c2};
    nn_model_update_bn(m, cs, 2, 0);
    const int R = N * H * W;
    for (int j = 0; j < C; j++) {
        double mean[2], var[2];
        for (int k = 0; k < 2; k++) {
            const float *x = k ? x2 : x1;
            double s = 0.0, s2 = 0.0;
            for (int r = 0; r < R; r++)
                s += x[r * C + j];
            s /= R;
            for (int r = 0; r < R; r++)
                s2 += (x[r * C + j] - s) * (x[r * C + j] - s);
            mean[k] = s;
            var[k] = s2 / (R - 1); /* unbiased, as Keras and PyTorch keep it */
        }
        T_NEAR(B[j], 0.99 * 0.5 + 0.01 * (mean[0] + mean[1]) / 2, 1e-6);
        T_NEAR(B[C + j], 0.99 * 2.0 + 0.01 * (var[0] + var[1]) / 2, 1e-5);
    }
    /* The records were cleared: a second update without forwards is a no-op. */
    float before[2 * C];
    memcpy(before, B, sizeof before);
    nn_model_update_bn(m, cs, 2, 0);
    T_CHECK(memcmp(before, B, sizeof before) == 0);
    /* Two forwards in one context (gradient accumulation) average the same way. */
    nn_forward(c1, x1, N, 1, 0, 0);
    nn_forward(c1, x1, N, 1, 0, 0);
    nn_model_update_bn(m, cs, 1, 0);
    double s = 0.0;
    for (int r = 0; r < R; r++)
        s += x1[r * C];
    T_NEAR(B[0], 0.99 * before[0] + 0.01 * s / R, 1e-6);
    /* --bn-momentum 0.9 moves them ten times as far. */
    T_CHECK(nn_model_set_bn_momentum(m, 1.0f) == PT_EUSAGE);
    T_REQUIRE(nn_model_set_bn_momentum(m, 0.9f) == PT_OK);
    memcpy(before, B, sizeof before);
    nn_forward(c1, x1, N, 1, 0, 0);
    nn_model_update_bn(m, cs, 1, 0);
    T_NEAR(B[0], 0.9 * before[0] + 0.1 * s / R, 1e-6);

    /* Fresh statistics (after nn_model_init_params): update 1 takes the batch's, update
     * 2 averages two batches, update 1000 uses the momentum; off, update 1 does too. */
    double s2 = 0.0;
    for (int r = 0; r < R; r++)
        s2 += x2[r * C];
    nn_model_init_params(m, 3);
    nn_forward(c1, x1, N, 1, 0, 0);
    nn_model_update_bn(m, cs, 1, 1);
    T_NEAR(B[0], s / R, 1e-6);
    nn_forward(c1, x2, N, 1, 0, 0);
    nn_model_update_bn(m, cs, 1, 2);
    T_NEAR(B[0], (s + s2) / (2 * R), 1e-6);
    memcpy(before, B, sizeof before);
    nn_forward(c1, x1, N, 1, 0, 0);
    nn_model_update_bn(m, cs, 1, 1000);
    T_NEAR(B[0], 0.9 * before[0] + 0.1 * s / R, 1e-6);
    nn_model_set_bn_warm_start(m, 0);
    memcpy(before, B, sizeof before);
    nn_forward(c1, x2, N, 1, 0, 0);
    nn_model_update_bn(m, cs, 1, 1);
    T_NEAR(B[0], 0.9 * before[0] + 0.1 * s2 / R, 1e-6);
    nn_ctx_free(c1);
    nn_ctx_free(c2);
    nn_model_free(m);
}

/* ---- dropout ---- */

TEST(nn_dropout_independent_of_split)
{
    enum { H = 4, W = 4, C = 6, K = 5 };
    nn_model *m = nn_model_new(H, W, C);
    int x = nn_conv2d(m, nn_input(m), 16, 3, 3, 1, NN_PAD_SAME, 1, 1);
    x = nn_relu(m, x);
    int drop = nn_dropout(m, x, 0.5f);
    int out = nn_dense(m, nn_gap(m, drop), K);
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    const size_t per = (size_t)H * W * C, dl = (size_t)H * W * 16;
    float *in = alloc_uniform(8 * per, 3, 0.0f, 1.0f);
    nn_ctx *whole = nn_ctx_new(m, 8, NULL), *a = nn_ctx_new(m, 4, NULL), *b = nn_ctx_new(m, 4, NULL);
    const uint64_t seed = 777;
    /* The global batch starts at example 1000 of the epoch. */
    const float *y8 = nn_forward(whole, in, 8, 1, seed, 1000);
    const float *ya = nn_forward(a, in, 4, 1, seed, 1000);
    const float *yb = nn_forward(b, in + 4 * per, 4, 1, seed, 1004);
    const float *d8 = nn_ctx_output(whole, drop), *da = nn_ctx_output(a, drop),
                *db = nn_ctx_output(b, drop);
    /* The same elements dropped; the kept ones equal up to sgemm rounding (a BLAS may
     * block a 4-image product differently from an 8-image one). */
    size_t zeros = 0, mismatch = 0;
    double dmax = 0.0;
    for (size_t i = 0; i < 4 * dl; i++) {
        mismatch += (d8[i] == 0.0f) != (da[i] == 0.0f);
        mismatch += (d8[4 * dl + i] == 0.0f) != (db[i] == 0.0f);
        dmax = fmax(dmax, fmax(fabs(d8[i] - da[i]), fabs(d8[4 * dl + i] - db[i])));
        zeros += (d8[i] == 0.0f) + (d8[4 * dl + i] == 0.0f);
    }
    T_EQ_INT(mismatch, 0);
    T_CHECKF(dmax < 1e-5, "dropout outputs differ by %g", dmax);
    /* Inverted dropout: a kept value is its input scaled by 1 / (1 - 0.5). */
    const float *relu8 = nn_ctx_output(whole, drop - 1);
    size_t bad_scale = 0;
    for (size_t i = 0; i < 8 * dl; i++)
        bad_scale += d8[i] != 0.0f && d8[i] != 2.0f * relu8[i];
    T_EQ_INT(bad_scale, 0);
    double err = 0.0;
    for (int i = 0; i < 4 * K; i++)
        err = fmax(err, fmax(fabs(y8[i] - ya[i]), fabs(y8[4 * K + i] - yb[i])));
    T_CHECKF(err < 1e-5, "logits differ by %g between one context and two", err);
    /* About half dropped (the ReLU zeroes some more). */
    T_CHECKF(zeros > dl * 8 / 4 && zeros < dl * 8 * 9 / 10, "%zu zeros of %zu", zeros, dl * 8);
    /* Another seed, another mask; inference is the identity. */
    nn_forward(a, in, 4, 1, seed + 1, 1000);
    mismatch = 0;
    for (size_t i = 0; i < 4 * dl; i++)
        mismatch += d8[i] != nn_ctx_output(a, drop)[i];
    T_CHECK(mismatch > 0);
    nn_forward(a, in, 4, 0, seed, 1000);
    T_CHECK(nn_ctx_output(a, drop) == nn_ctx_output(a, drop - 1));
    nn_ctx_free(whole);
    nn_ctx_free(a);
    nn_ctx_free(b);
    free(in);
    nn_model_free(m);
}

/* ---- initialisation ---- */

TEST(nn_init_is_seeded)
{
    nn_model *m1 = nn_build_small(32, 32, 5, 0.2f, NULL), *m2 = nn_build_small(32, 32, 5, 0.2f, NULL);
    T_REQUIRE(m1 && m2);
    const size_t np = nn_param_count(m1);
    T_EQ_INT(nn_param_count(m2), np);
    nn_model_init_params(m1, 42);
    nn_model_init_params(m2, 42);
    T_CHECK(memcmp(nn_params(m1), nn_params(m2), np * sizeof(float)) == 0);
    T_CHECK(memcmp(nn_buffers(m1), nn_buffers(m2), nn_buffer_count(m1) * sizeof(float)) == 0);
    nn_model_init_params(m2, 43);
    size_t same = 0;
    for (size_t i = 0; i < np; i++)
        same += nn_params(m1)[i] == nn_params(m2)[i];
    /* Only the constants (biases, gamma, beta) agree. */
    T_CHECKF(same < np / 50, "%zu of %zu parameters equal across seeds", same, np);

    /* The distributions: He normal (conv), Glorot uniform (dense), constants. */
    const float *P = nn_params(m1), *B = nn_buffers(m1);
    for (int i = 0; i < nn_node_count(m1); i++) {
        nn_node_info ni;
        nn_node_get(m1, i, &ni);
        const float *w = P + ni.param_offset;
        if (ni.op == NN_OP_CONV) {
            double fan_in = (double)ni.weight_count / ni.c, s2 = 0.0, mx = 0.0;
            for (size_t j = 0; j < ni.weight_count; j++) {
                s2 += (double)w[j] * w[j];
                mx = fmax(mx, fabs(w[j]));
            }
            double sd = sqrt(s2 / (double)ni.weight_count), want = sqrt(2.0 / fan_in);
            T_CHECKF(fabs(sd - want) < 0.1 * want, "node %d: std %g, He wants %g", i, sd, want);
            T_CHECKF(mx <= 2.0 * want / 0.8796 + 1e-6, "node %d: %g beyond the truncation", i, mx);
        } else if (ni.op == NN_OP_DENSE) {
            double lim = sqrt(6.0 / ((double)ni.weight_count / ni.c + ni.c)), mx = 0.0;
            for (size_t j = 0; j < ni.weight_count; j++)
                mx = fmax(mx, fabs(w[j]));
            T_CHECK(mx <= lim && mx > 0.9 * lim);
            for (size_t j = 0; j < ni.bias_count; j++)
                T_CHECK(w[ni.weight_count + j] == 0.0f);
        } else if (ni.op == NN_OP_BN) {
            for (int j = 0; j < ni.c; j++) {
                T_CHECK(w[j] == 1.0f && w[ni.c + j] == 0.0f);
                T_CHECK(B[ni.buffer_offset + (size_t)j] == 0.0f);
                T_CHECK(B[ni.buffer_offset + (size_t)(ni.c + j)] == 1.0f);
            }
        }
    }
    nn_model_free(m1);
    nn_model_free(m2);
}

/* --init torch: PyTorch's Conv2d / Linear defaults, weights and biases uniform in
 * +-1 / sqrt(fan_in) (std 1 / sqrt(3 fan_in)); BN as under every kind. A grouped conv's
 * fan_in counts its group's input channels only. */
TEST(nn_init_torch_matches_pytorch_defaults)
{
    nn_model *m = nn_model_new(16, 16, 3);
    T_REQUIRE(m);
    int x = nn_conv2d(m, nn_input(m), 64, 3, 3, 1, NN_PAD_SAME, 1, 1);
    x = nn_batchnorm(m, x);
    x = nn_conv2d(m, x, 64, 3, 3, 1, NN_PAD_SAME, 4, 0);  /* grouped: fan_in 9 x 16 */
    x = nn_conv2d(m, x, 64, 3, 3, 1, NN_PAD_SAME, 64, 1); /* depthwise: fan_in 9 */
    x = nn_dense(m, nn_gap(m, x), 10);
    T_REQUIRE(nn_model_finalize(m, x, NULL) == PT_OK);
    nn_model_set_init(m, NN_INIT_TORCH);
    nn_model_init_params(m, 7);
    const float *P = nn_params(m);
    const double fan[] = { 27, 9 * 16, 9, 64 };
    int k = 0;
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni;
        nn_node_get(m, i, &ni);
        if (ni.op != NN_OP_CONV && ni.op != NN_OP_DENSE)
            continue;
        const float *w = P + ni.param_offset;
        double lim = 1.0 / sqrt(fan[k++]), s2 = 0.0, mx = 0.0;
        for (size_t j = 0; j < ni.weight_count; j++) {
            s2 += (double)w[j] * w[j];
            mx = fmax(mx, fabs(w[j]));
        }
        double sd = sqrt(s2 / (double)ni.weight_count);
        T_CHECKF(fabs(sd - lim / sqrt(3.0)) < 0.1 * lim / sqrt(3.0), "node %d: std %g, want %g",
                 i, sd, lim / sqrt(3.0));
        T_CHECKF(mx <= lim && mx > 0.9 * lim, "node %d: largest %g, bound %g", i, mx, lim);
        double bmx = 0.0;
        for (size_t j = 0; j < ni.bias_count; j++)
            bmx = fmax(bmx, fabs(w[ni.weight_count + j]));
        T_CHECKF(ni.bias_count == 0 || (bmx <= lim && bmx > 0.5 * lim),
                 "node %d: bias up to %g, bound %g", i, bmx, lim);
    }
    T_EQ_INT(k, 4);
    /* He's std is sqrt(6) times PyTorch's: the same conv drawn both ways. */
    nn_node_info c1;
    nn_node_get(m, 1, &c1);
    T_REQUIRE(c1.op == NN_OP_CONV);
    double s_torch = 0.0, s_he = 0.0;
    for (size_t j = 0; j < c1.weight_count; j++)
        s_torch += (double)P[c1.param_offset + j] * P[c1.param_offset + j];
    nn_model_set_init(m, NN_INIT_HE_NORMAL);
    nn_model_init_params(m, 7);
    for (size_t j = 0; j < c1.weight_count; j++)
        s_he += (double)P[c1.param_offset + j] * P[c1.param_offset + j];
    T_CHECKF(fabs(sqrt(s_he / s_torch) - sqrt(6.0)) < 0.25, "He / torch std %g",
             sqrt(s_he / s_torch));
    T_CHECK(P[c1.param_offset + c1.weight_count] == 0.0f); /* He: biases 0 */
    nn_model_free(m);
}

/* --widths: the blocks it names, and the parameter count PyTorch's copy of the net
 * has (bench/torch_scratch.py prints 980,517 for 32,64,128,256,256 and 5 classes:
 * 3x3 convs without bias, BN gamma and beta, a dense head). */
TEST(nn_small_widths_builds_the_net_it_names)
{
    const int five[] = { 32, 64, 128, 256, 256 };
    pt_err e;
    nn_model *m = nn_build_small_widths(64, 64, 5, 0.2f, five, NULL, 5, 1, &e);
    T_REQUIRE(m);
    size_t want = 0;
    int cin = 3;
    for (int b = 0; b < 5; b++) {
        want += (size_t)9 * cin * five[b] + 2 * (size_t)five[b];
        cin = five[b];
    }
    want += (size_t)cin * 5 + 5;
    T_EQ_INT((long long)nn_param_count(m), (long long)want);
    T_EQ_INT((long long)want, 980517);
    int convs = 0, pools = 0;
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni;
        nn_node_get(m, i, &ni);
        convs += ni.op == NN_OP_CONV;
        pools += ni.op == NN_OP_MAXPOOL;
        if (ni.op == NN_OP_MAXPOOL && pools == 5)
            T_CHECK(ni.h == 2 && ni.w == 2 && ni.c == 256);
    }
    T_EQ_INT(convs, 5);
    T_EQ_INT(pools, 5);
    nn_model_free(m);
    /* The four default widths are nn_build_small's net. */
    const int four[] = { 32, 64, 128, 256 };
    nn_model *a = nn_build_small_widths(32, 32, 5, 0.2f, four, NULL, 4, 1, NULL), *b = nn_build_small(32, 32, 5, 0.2f, NULL);
    T_REQUIRE(a && b);
    T_EQ_INT((long long)nn_param_count(a), (long long)nn_param_count(b));
    T_CHECK(memcmp(nn_params(a), nn_params(b), nn_param_count(a) * sizeof(float)) == 0);
    nn_model_free(a);
    nn_model_free(b);
    /* Five halvings need 32x32; the error says how much. */
    T_CHECK(nn_build_small_widths(16, 16, 5, 0.2f, five, NULL, 5, 1, &e) == NULL);
    T_CHECK(e.code == PT_EUSAGE && strstr(e.msg, "at least 32x32"));
    const int zero[] = { 32, 0 };
    T_CHECK(nn_build_small_widths(64, 64, 5, 0.2f, zero, NULL, 2, 1, &e) == NULL && e.code == PT_EUSAGE);
    T_CHECK(nn_build_small_widths(64, 64, 5, 0.2f, five, NULL, 0, 1, &e) == NULL && e.code == PT_EUSAGE);
}

/* --residual yes: each block ResNet's basic block, with the parameter count PyTorch's
 * copy of the net has (bench/torch_scratch.py --residual prints 2,399,237 for
 * a,32,64,128,256,256 and 5 classes), two 3x3 convs and an add a block, a 1x1 conv on
 * each shortcut whose channels change and none on the one that keeps 256. */
TEST(nn_small_residual_builds_basic_blocks)
{
    const int widths[] = { 0, 32, 64, 128, 256, 256 };
    const int kinds[] = { NN_BLOCK_AVGPOOL, 0, 0, 0, 0, 0 };
    pt_err e;
    nn_model *m = nn_build_small_widths(128, 128, 5, 0.2f, widths, kinds, 6, NN_SMALL_RESIDUAL,
                                        &e);
    T_REQUIRE(m);
    T_EQ_INT((long long)nn_param_count(m), 2399237);
    int k3 = 0, k1 = 0, adds = 0, pools = 0, relus = 0, relus_after_add = 0;
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni, in;
        nn_node_get(m, i, &ni);
        k3 += ni.op == NN_OP_CONV && ni.kh == 3;
        k1 += ni.op == NN_OP_CONV && ni.kh == 1;
        adds += ni.op == NN_OP_ADD;
        pools += ni.op == NN_OP_MAXPOOL;
        relus += ni.op == NN_OP_RELU;
        /* Each block's last ReLU after its add; the add's operands the residual branch's
         * BN and the shortcut's: a BN, or the previous block's max-pool itself. */
        if (ni.op == NN_OP_RELU && nn_node_get(m, ni.in[0], &in) == PT_OK && in.op == NN_OP_ADD) {
            nn_node_info a, b;
            nn_node_get(m, in.in[0], &a);
            nn_node_get(m, in.in[1], &b);
            T_CHECK(b.op == NN_OP_BN && (a.op == NN_OP_BN || a.op == NN_OP_MAXPOOL));
            relus_after_add++;
        }
    }
    T_EQ_INT(k3, 10);
    T_EQ_INT(k1, 4);
    T_EQ_INT(adds, 5);
    T_EQ_INT(pools, 5);
    T_EQ_INT(relus, 10);
    T_EQ_INT(relus_after_add, 5);
    nn_model_free(m);
    T_CHECK(nn_build_small_widths(64, 64, 5, 0.2f, widths + 1, NULL, 5, NN_SMALL_RESIDUAL + 1,
                                  &e) == NULL && e.code == PT_EUSAGE);
}

/* A strided block (--widths 16s,...): a stride-2 convolution in place of its max-pool,
 * with Keras's "same" padding (the extra row and column at the bottom and right). */
TEST(nn_small_strided_block_halves_with_its_convolution)
{
    const int widths[] = { 16, 32, 64 };
    const int strided[] = { 1, 0, 0 };
    pt_err e;
    nn_model *m = nn_build_small_widths(32, 32, 5, 0.0f, widths, strided, 3, 1, &e);
    T_REQUIRE(m);
    int convs = 0, pools = 0;
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni;
        nn_node_get(m, i, &ni);
        if (ni.op == NN_OP_CONV && convs++ == 0)
            T_CHECK(ni.h == 16 && ni.w == 16 && ni.c == 16);
        pools += ni.op == NN_OP_MAXPOOL;
    }
    T_EQ_INT(convs, 3);
    T_EQ_INT(pools, 2);
    T_EQ_INT((long long)nn_param_count(m),
             (long long)(9 * 3 * 16 + 32 + 9 * 16 * 32 + 64 + 9 * 32 * 64 + 128 + 64 * 5 + 5));
    /* The first output pixel is the 3x3 window at rows and columns 0..2 of the input
     * (no padding at the top and left): an input that is 1 there and 0 elsewhere, and
     * one that is 0 there, give different first pixels; one that differs only in the
     * last row and column (the padding's side) does not change it. */
    nn_ctx *c = nn_ctx_new(m, 1, &e);
    T_REQUIRE(c);
    float *x = calloc(32 * 32 * 3, sizeof *x);
    T_REQUIRE(x);
    int first = -1;
    for (int i = 0; i < nn_node_count(m) && first < 0; i++) {
        nn_node_info ni;
        nn_node_get(m, i, &ni);
        if (ni.op == NN_OP_CONV)
            first = i;
    }
    T_REQUIRE(first >= 0);
    float base[16], other[16];
    T_REQUIRE(nn_forward(c, x, 1, 0, 0, 0) != NULL);
    memcpy(base, nn_ctx_output(c, first), sizeof base);
    for (int k = 0; k < 32; k++) {
        for (int ch = 0; ch < 3; ch++) {
            x[((size_t)31 * 32 + k) * 3 + ch] = 1.0f;
            x[((size_t)k * 32 + 31) * 3 + ch] = 1.0f;
        }
    }
    T_REQUIRE(nn_forward(c, x, 1, 0, 0, 0) != NULL);
    memcpy(other, nn_ctx_output(c, first), sizeof other);
    T_CHECK(memcmp(base, other, sizeof base) == 0);
    memset(x, 0, 32 * 32 * 3 * sizeof *x);
    x[(2 * 32 + 2) * 3] = 1.0f;
    T_REQUIRE(nn_forward(c, x, 1, 0, 0, 0) != NULL);
    memcpy(other, nn_ctx_output(c, first), sizeof other);
    T_CHECK(memcmp(base, other, sizeof base) != 0);
    free(x);
    nn_ctx_free(c);
    nn_model_free(m);
}

/* An average-pool block (--widths a,..., what auto starts with from 32 px): a 2x2
 * average pool and nothing else, so a,32,64,128,256,256 at 128 px is the five-block
 * net at 64 px on the 2x2-averaged image: the same parameters (980,517, the count
 * PyTorch's copy has in bench/torch_scratch.py), the same logits, in inference and in
 * training (batch statistics), and the same gradients. */
TEST(nn_small_avgpool_block_is_the_half_side_net_on_the_averaged_image)
{
    const int widths[] = { 0, 32, 64, 128, 256, 256 };
    const int kinds[] = { NN_BLOCK_AVGPOOL, 0, 0, 0, 0, 0 };
    pt_err e;
    nn_model *a = nn_build_small_widths(128, 128, 5, 0.0f, widths, kinds, 6, 1, &e);
    nn_model *b = nn_build_small_widths(64, 64, 5, 0.0f, widths + 1, NULL, 5, 1, &e);
    T_REQUIRE(a && b);
    T_EQ_INT((long long)nn_param_count(a), 980517);
    T_EQ_INT((long long)nn_param_count(b), 980517);
    T_EQ_INT((long long)nn_buffer_count(a), (long long)nn_buffer_count(b));
    int convs = 0, avg = -1;
    for (int i = 0; i < nn_node_count(a); i++) {
        nn_node_info ni;
        nn_node_get(a, i, &ni);
        if (ni.op == NN_OP_AVGPOOL) {
            T_CHECK(avg < 0 && convs == 0 && ni.h == 64 && ni.w == 64 && ni.c == 3);
            avg = i;
        }
        if (ni.op == NN_OP_CONV && convs++ == 0)
            T_CHECK(ni.h == 64 && ni.w == 64 && ni.c == 32);
    }
    T_CHECK(avg >= 0);
    T_EQ_INT(convs, 5);
    /* b takes a's weights (a fresh net's differ: the seeds draw in node order). */
    memcpy(nn_params(b), nn_params(a), nn_param_count(a) * sizeof(float));
    memcpy(nn_buffers(b), nn_buffers(a), nn_buffer_count(a) * sizeof(float));
    enum { N = 2 };
    float *x = malloc(sizeof(float) * N * 128 * 128 * 3), *half = malloc(sizeof(float) * N * 64 * 64 * 3);
    T_REQUIRE(x && half);
    rng r;
    rng_seed(&r, 7);
    for (size_t i = 0; i < (size_t)N * 128 * 128 * 3; i++)
        x[i] = rng_uniform(&r, 0.0f, 1.0f);
    for (int n = 0; n < N; n++)
        for (int y = 0; y < 64; y++)
            for (int xx = 0; xx < 64; xx++)
                for (int ch = 0; ch < 3; ch++) {
                    const float *p = x + (((size_t)n * 128 + 2 * y) * 128 + 2 * xx) * 3 + ch;
                    half[(((size_t)n * 64 + y) * 64 + xx) * 3 + ch] =
                        (p[0] + p[3] + p[128 * 3] + p[128 * 3 + 3]) * 0.25f;
                }
    nn_ctx *ca = nn_ctx_new(a, N, &e), *cb = nn_ctx_new(b, N, &e);
    T_REQUIRE(ca && cb);
    for (int training = 0; training <= 1; training++) {
        const float *la = nn_forward(ca, x, N, training, 1, 0);
        const float *lb = nn_forward(cb, half, N, training, 1, 0);
        T_REQUIRE(la && lb);
        float worst = 0.0f, mag = 0.0f;
        for (int k = 0; k < N * 5; k++) {
            worst = fmaxf(worst, fabsf(la[k] - lb[k]));
            mag = fmaxf(mag, fabsf(lb[k]));
        }
        T_CHECKF(mag > 1e-3f && worst <= 1e-4f * (1.0f + mag), "training %d: logits differ by %g (of %g)",
                 training, (double)worst, (double)mag);
    }
    /* The last forward trained: the same loss gradient gives the same weight gradients. */
    float dl[N * 5];
    for (int k = 0; k < N * 5; k++)
        dl[k] = (float)(k % 5) * 0.1f - 0.2f;
    nn_zero_grads(ca);
    nn_zero_grads(cb);
    T_EQ_INT(nn_backward(ca, dl), PT_OK);
    T_EQ_INT(nn_backward(cb, dl), PT_OK);
    const float *ga = nn_grads(ca), *gb = nn_grads(cb);
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < nn_param_count(a); i++) {
        num += ((double)ga[i] - gb[i]) * ((double)ga[i] - gb[i]);
        den += (double)gb[i] * gb[i];
    }
    T_CHECKF(den > 0.0 && num <= 1e-8 * den, "gradients differ: relative %g", sqrt(num / den));
    free(x);
    free(half);
    nn_ctx_free(ca);
    nn_ctx_free(cb);
    nn_model_free(a);
    nn_model_free(b);
    /* Its width is not read; a kind past the three is refused. */
    const int bad[] = { 3, 0 };
    const int two[] = { 0, 32 };
    T_CHECK(nn_build_small_widths(64, 64, 5, 0.2f, two, bad, 2, 1, &e) == NULL && e.code == PT_EUSAGE);
}

/* ---- training smoke test ---- */

/* 3 classes of 12x12 images: a bright 4x4 square in a class-specific place and
 * colour, on noise. */
static void synth(float *x, int32_t *lab, int n, rng *r)
{
    for (int i = 0; i < n; i++) {
        int k = rng_int(r, 0, 3);
        lab[i] = k;
        float *xi = x + (size_t)i * 12 * 12 * 3;
        for (int p = 0; p < 12 * 12 * 3; p++)
            xi[p] = rng_uniform(r, 0.0f, 0.5f);
        int y0 = rng_int(r, 0, 3) + (k == 1 ? 6 : 0), x0 = rng_int(r, 0, 3) + (k == 2 ? 6 : 0);
        for (int yy = y0; yy < y0 + 4; yy++)
            for (int xx = x0; xx < x0 + 4; xx++)
                xi[(yy * 12 + xx) * 3 + k] = 1.0f;
    }
}

TEST(nn_training_smoke_sgd_two_replicas)
{
    /* Two replicas of 8, gradients summed, one SGD step, BN stats averaged. */
    nn_model *m = nn_model_new(12, 12, 3);
    int x = nn_add_input_normalization(m, nn_input(m));
    x = nn_relu(m, nn_batchnorm(m, nn_conv2d(m, x, 8, 3, 3, 1, NN_PAD_SAME, 1, 0)));
    x = nn_maxpool(m, x, 2, 2, 0);
    x = nn_relu(m, nn_batchnorm(m, nn_conv2d(m, x, 16, 3, 3, 1, NN_PAD_SAME, 1, 0)));
    int out = nn_add_head(m, x, 3, 0.1f);
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    nn_model_init_params(m, 5);
    enum { R = 2, B = 8, STEPS = 40 };
    nn_ctx *ctx[R];
    for (int k = 0; k < R; k++)
        ctx[k] = nn_ctx_new(m, B, NULL);
    const size_t np = nn_param_count(m);
    float *xs = malloc((size_t)R * B * 12 * 12 * 3 * sizeof *xs);
    int32_t lab[R * B];
    float dl[B * 3];
    rng r;
    rng_seed(&r, 9);
    double first = 0.0, last = 0.0;
    for (int step = 0; step < STEPS; step++) {
        synth(xs, lab, R * B, &r);
        double loss = 0.0;
        for (int k = 0; k < R; k++) {
            nn_zero_grads(ctx[k]);
            const float *z = nn_forward(ctx[k], xs + (size_t)k * B * 432, B, 1, 1, step * R * B + k * B);
            double l;
            T_REQUIRE(nn_softmax_ce(z, B, 3, lab + k * B, NULL, NULL, 1.0f / (R * B), &l, dl, NULL,
                                    NULL) == PT_OK);
            loss += l;
            T_REQUIRE(nn_backward(ctx[k], dl) == PT_OK);
        }
        float *P = nn_params(m);
        for (size_t i = 0; i < np; i++)
            P[i] -= 0.3f * (nn_grads(ctx[0])[i] + nn_grads(ctx[1])[i]);
        nn_model_update_bn(m, ctx, R, 0);
        loss /= R * B;
        if (step < 5)
            first += loss / 5;
        if (step >= STEPS - 5)
            last += loss / 5;
    }
    T_CHECKF(first > 0.9 && last < 0.4 * first, "mean loss %.3f over the first steps, %.3f over the last",
             first, last);
    /* Inference with the running statistics classifies fresh examples. */
    synth(xs, lab, B, &r);
    const float *z = nn_forward(ctx[0], xs, B, 0, 0, 0);
    int32_t pred[B];
    nn_softmax_ce(z, B, 3, lab, NULL, NULL, 1.0f, NULL, NULL, pred, NULL);
    int right = 0;
    for (int i = 0; i < B; i++)
        right += pred[i] == lab[i];
    T_CHECKF(right >= 6, "%d of %d right in inference mode", right, B);
    for (int k = 0; k < R; k++)
        nn_ctx_free(ctx[k]);
    free(xs);
    nn_model_free(m);
}

TEST(nn_backward_accumulates)
{
    nn_model *m = nn_build_small(16, 16, 4, 0.0f, NULL);
    T_REQUIRE(m != NULL);
    nn_ctx *c = nn_ctx_new(m, 2, NULL);
    float *x = alloc_uniform(2 * 16 * 16 * 3, 1, 0.0f, 1.0f);
    float dl[8] = {0.1f, -0.2f, 0.3f, -0.2f, 0.0f, 0.5f, -0.25f, -0.25f};
    const size_t np = nn_param_count(m);
    float *g1 = malloc(np * sizeof *g1);
    nn_zero_grads(c);
    nn_forward(c, x, 2, 1, 0, 0);
    T_REQUIRE(nn_backward(c, dl) == PT_OK);
    memcpy(g1, nn_grads(c), np * sizeof *g1);
    nn_forward(c, x, 2, 1, 0, 0);
    T_REQUIRE(nn_backward(c, dl) == PT_OK);
    size_t bad = 0, nonzero = 0;
    for (size_t i = 0; i < np; i++) {
        bad += fabsf(nn_grads(c)[i] - 2.0f * g1[i]) > 1e-6f * (1.0f + fabsf(g1[i]));
        nonzero += g1[i] != 0.0f;
    }
    T_EQ_INT(bad, 0);
    T_CHECK(nonzero > np / 2);
    nn_zero_grads(c);
    for (size_t i = 0; i < np; i++)
        bad += nn_grads(c)[i] != 0.0f;
    T_EQ_INT(bad, 0);
    /* No backward after an inference forward, nor for a batch beyond the context. */
    nn_forward(c, x, 2, 0, 0, 0);
    T_EQ_INT(nn_backward(c, dl), PT_EUSAGE);
    T_CHECK(nn_forward(c, x, 3, 1, 0, 0) == NULL);
    T_CHECK(nn_forward(c, x, 0, 1, 0, 0) == NULL);
    free(g1);
    free(x);
    nn_ctx_free(c);
    nn_model_free(m);
}

/* ---- models ---- */

/* Builds (which fixes the logits' shape), then runs forward (training and inference)
 * and backward on a batch of 2, unless run is 0 (used under valgrind, where the big
 * ones would take minutes). */
static void run_model(const char *name, nn_model *m, int h, int w, int classes, int run)
{
    T_CHECKF(m != NULL, "%s did not build", name);
    if (!m)
        return;
    T_EQ_INT(nn_model_classes(m), classes);
    nn_node_info ni;
    nn_node_get(m, nn_output_node(m), &ni);
    T_CHECK(ni.op == NN_OP_DENSE && ni.h == 1 && ni.w == 1 && ni.c == classes);
    if (!run) {
        nn_model_free(m);
        return;
    }
    const int n = 2;
    nn_ctx *c = nn_ctx_new(m, n, NULL);
    T_REQUIRE(c != NULL);
    float *x = alloc_uniform((size_t)n * h * w * 3, 2, 0.0f, 1.0f);
    const float *z = nn_forward(c, x, n, 1, 0, 0);
    T_REQUIRE(z != NULL);
    int finite = 1;
    for (int i = 0; i < n * classes; i++)
        finite &= isfinite(z[i]);
    T_CHECKF(finite, "%s: logits not finite", name);
    float *dl = alloc_uniform((size_t)n * classes, 3, -0.1f, 0.1f);
    nn_zero_grads(c);
    T_CHECK(nn_backward(c, dl) == PT_OK);
    z = nn_forward(c, x, n, 0, 0, 0);
    finite = 1;
    for (int i = 0; i < n * classes; i++)
        finite &= isfinite(z[i]);
    T_CHECKF(finite, "%s: inference logits not finite", name);
    free(dl);
    free(x);
    nn_ctx_free(c);
    nn_model_free(m);
}

TEST(nn_models_build_and_run)
{
    const int sizes[2] = {64, 128}, all = !t_slow_mode();
    for (int s = 0; s < 2; s++) {
        int hw = sizes[s], small_size = hw == 64;
        char name[64];
        snprintf(name, sizeof name, "small %d", hw);
        run_model(name, nn_build_small(hw, hw, 104, 0.2f, NULL), hw, hw, 104, all || small_size);
        snprintf(name, sizeof name, "small 2 convs/block %d", hw);
        run_model(name, nn_build_small_ex(hw, hw, 5, 0.2f, 2, NULL), hw, hw, 5, all);
        snprintf(name, sizeof name, "mobilenetv2 1.0 %d", hw);
        run_model(name, nn_build_mobilenetv2(hw, hw, 104, 1.0f, 0.2f, NULL), hw, hw, 104, all);
        snprintf(name, sizeof name, "mobilenetv2 0.5 %d", hw);
        run_model(name, nn_build_mobilenetv2(hw, hw, 5, 0.5f, 0.2f, NULL), hw, hw, 5,
                  all || small_size);
    }
    /* Non-square input works too. */
    run_model("small 48x80", nn_build_small(48, 80, 3, 0.0f, NULL), 48, 80, 3, 1);
    pt_err e;
    T_CHECK(nn_build_small(8, 8, 3, 0.0f, &e) == NULL && e.code == PT_EUSAGE);
    T_CHECK(nn_build_mobilenetv2(64, 64, 3, 0.0f, 0.0f, &e) == NULL);
}

TEST(nn_mobilenetv2_matches_keras_parameter_counts)
{
    /* keras.applications.MobileNetV2(alpha=1.0, weights=None, classes=1000):
     * 3,504,872 trainable and 34,112 non-trainable parameters. The counts do not
     * depend on the input size. */
    nn_model *m = nn_build_mobilenetv2(224, 224, 1000, 1.0f, 0.0f, NULL);
    T_REQUIRE(m != NULL);
    T_EQ_INT(nn_param_count(m), 3504872);
    T_EQ_INT(nn_buffer_count(m), 34112);
    int out = nn_output_node(m);
    nn_node_info ni;
    nn_node_get(m, out - 3, &ni); /* the last conv's ReLU6, before GAP and dropout */
    T_EQ_INT(ni.h, 7);
    T_EQ_INT(ni.c, 1280);
    nn_model_free(m);
    /* Paper's figure: about 300 M multiply-adds at 224x224. */
    m = nn_build_mobilenetv2(224, 224, 1000, 1.0f, 0.0f, NULL);
    double madds = nn_flops(m, 1, 0) / 2;
    T_CHECKF(madds > 290e6 && madds < 310e6, "%.1f M multiply-adds", madds * 1e-6);
    nn_model_free(m);
}

TEST(nn_small_flops_match_hand_count)
{
    const int sizes[2] = {64, 128};
    for (int s = 0; s < 2; s++) {
        int hw = sizes[s];
        nn_model *m = nn_build_small(hw, hw, 10, 0.2f, NULL);
        T_REQUIRE(m != NULL);
        /* 3x3 convs 3->32 at hw, 32->64 at hw/2, 64->128 at hw/4, 128->256 at hw/8,
         * then dense 256 -> 10; a multiply-add is 2 FLOPs. */
        double conv[4] = {
            2.0 * hw * hw * 32 * 27,
            2.0 * (hw / 2) * (hw / 2) * 64 * 288,
            2.0 * (hw / 4) * (hw / 4) * 128 * 576,
            2.0 * (hw / 8) * (hw / 8) * 256 * 1152,
        };
        double dense = 2.0 * 256 * 10;
        double fwd = conv[0] + conv[1] + conv[2] + conv[3] + dense;
        /* Backward: weight and input gradients everywhere except the first conv's input. */
        double fb = fwd + 2.0 * (conv[0] + conv[1] + conv[2] + conv[3] + dense) - conv[0];
        T_NEAR(nn_flops(m, 1, 0), fwd, 0.5);
        T_NEAR(nn_flops(m, 32, 0), 32 * fwd, 16.0);
        T_NEAR(nn_flops(m, 1, 1), fb, 0.5);
        /* Frozen: the forward, plus the head's weight gradient only. */
        nn_model_freeze_backbone(m);
        T_NEAR(nn_flops(m, 1, 1), fwd + dense, 0.5);
        nn_model_free(m);
    }
}

TEST(nn_freeze_backbone_trains_only_the_head)
{
    nn_model *m = nn_build_small(16, 16, 4, 0.0f, NULL);
    T_REQUIRE(m != NULL);
    T_REQUIRE(nn_model_freeze_backbone(m) == PT_OK);
    const int head = nn_output_node(m);
    nn_node_info hi;
    nn_node_get(m, head, &hi);
    T_EQ_INT(hi.op, NN_OP_DENSE);
    const size_t np = nn_param_count(m);
    T_EQ_INT(nn_trainable_count(m), hi.weight_count + hi.bias_count);
    nn_ctx *c = nn_ctx_new(m, 2, NULL);
    float *x = alloc_uniform(2 * 16 * 16 * 3, 1, 0.0f, 1.0f);
    float dl[8] = {0.1f, -0.2f, 0.3f, -0.2f, 0.0f, 0.5f, -0.25f, -0.25f};
    nn_zero_grads(c);
    nn_forward(c, x, 2, 1, 0, 0);
    T_REQUIRE(nn_backward(c, dl) == PT_OK);
    size_t frozen_nonzero = 0, head_nonzero = 0;
    for (size_t i = 0; i < np; i++) {
        int in_head = i >= hi.param_offset;
        T_EQ_INT(nn_param_trainable(m, i), in_head);
        if (in_head)
            head_nonzero += nn_grads(c)[i] != 0.0f;
        else
            frozen_nonzero += nn_grads(c)[i] != 0.0f;
    }
    T_EQ_INT(frozen_nonzero, 0);
    T_CHECK(head_nonzero > (hi.weight_count + hi.bias_count) / 2);
    /* Frozen BN layers record no statistics. */
    float *before = malloc(nn_buffer_count(m) * sizeof *before);
    memcpy(before, nn_buffers(m), nn_buffer_count(m) * sizeof *before);
    nn_ctx *cs[1] = {c};
    nn_model_update_bn(m, cs, 1, 0);
    T_CHECK(memcmp(before, nn_buffers(m), nn_buffer_count(m) * sizeof *before) == 0);
    /* Unfreezing brings the gradients back. */
    nn_model_unfreeze(m);
    T_EQ_INT(nn_trainable_count(m), np);
    nn_zero_grads(c);
    nn_forward(c, x, 2, 1, 0, 0);
    nn_backward(c, dl);
    frozen_nonzero = 0;
    for (size_t i = 0; i < hi.param_offset; i++)
        frozen_nonzero += nn_grads(c)[i] != 0.0f;
    T_CHECK(frozen_nonzero > hi.param_offset / 2);
    free(before);
    free(x);
    nn_ctx_free(c);
    nn_model_free(m);
}

/* ---- replicas on threads ---- */

typedef struct job {
    nn_ctx *c;
    const float *x;
    const float *dl;
    int n, reps;
} job;

static void *replica(void *arg)
{
    job *j = arg;
    nn_zero_grads(j->c);
    for (int r = 0; r < j->reps; r++) {
        nn_forward(j->c, j->x, j->n, 1, 5, 0);
        nn_backward(j->c, j->dl);
    }
    return NULL;
}

TEST(nn_replicas_on_threads_match_sequential)
{
    nn_init();
    nn_model *m = nn_build_mobilenetv2(32, 32, 5, 0.35f, 0.3f, NULL);
    T_REQUIRE(m != NULL);
    enum { N = 3 };
    const size_t in = (size_t)N * 32 * 32 * 3, np = nn_param_count(m);
    float *x[2], *dl = alloc_uniform(N * 5, 9, -0.2f, 0.2f), *ref[2];
    nn_ctx *c[2];
    job jobs[2];
    for (int k = 0; k < 2; k++) {
        x[k] = alloc_uniform(in, 10 + (uint64_t)k, 0.0f, 1.0f);
        c[k] = nn_ctx_new(m, N, NULL);
        jobs[k] = (job){c[k], x[k], dl, N, t_slow_mode() ? 1 : 3};
        replica(&jobs[k]);
        ref[k] = malloc(np * sizeof(float));
        memcpy(ref[k], nn_grads(c[k]), np * sizeof(float));
    }
    pthread_t th[2];
    for (int k = 0; k < 2; k++)
        pthread_create(&th[k], NULL, replica, &jobs[k]);
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);
    for (int k = 0; k < 2; k++) {
        T_CHECK(memcmp(ref[k], nn_grads(c[k]), np * sizeof(float)) == 0);
        free(ref[k]);
        free(x[k]);
        nn_ctx_free(c[k]);
    }
    free(dl);
    nn_model_free(m);
}

/* ---- description and errors ---- */

TEST(nn_summary_and_builder_errors)
{
    nn_model *m = nn_build_small(64, 64, 104, 0.2f, NULL);
    T_REQUIRE(m != NULL);
    size_t need = nn_model_summary(m, NULL, 0);
    char *buf = malloc(need + 1);
    T_EQ_INT(nn_model_summary(m, buf, need + 1), need);
    T_EQ_INT(strlen(buf), need);
    T_CHECK(strstr(buf, "conv 3x3/1") != NULL);
    T_CHECK(strstr(buf, "8x8x256") != NULL);
    T_CHECK(strstr(buf, "dense") != NULL);
    char small[40];
    T_EQ_INT(nn_model_summary(m, small, sizeof small), need);
    T_EQ_INT(strlen(small), sizeof small - 1);
    free(buf);
    nn_model_free(m);

    /* The first builder error sticks and finalize reports it. */
    m = nn_model_new(8, 8, 3);
    int x = nn_input(m);
    int bad = nn_conv2d(m, x, 10, 3, 3, 1, NN_PAD_SAME, 4, 0); /* 4 does not divide 3 */
    T_CHECK(bad < 0);
    T_CHECK(nn_relu(m, bad) < 0);
    T_CHECK(nn_add(m, x, x) < 0);
    pt_err e;
    T_EQ_INT(nn_model_finalize(m, x, &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "groups") != NULL, "message: %s", e.msg);
    nn_model_free(m);

    m = nn_model_new(8, 8, 3);
    x = nn_input(m);
    int a = nn_conv2d(m, x, 4, 3, 3, 2, NN_PAD_SAME, 1, 0);
    T_CHECK(nn_add(m, x, a) < 0); /* 8x8x3 + 4x4x4 */
    T_EQ_INT(nn_model_finalize(m, a, &e), PT_EUSAGE);
    nn_model_free(m);

    m = nn_model_new(4, 4, 3);
    x = nn_input(m);
    T_CHECK(nn_conv2d(m, x, 4, 5, 5, 1, NN_PAD_VALID, 1, 0) < 0); /* window too big */
    nn_model_free(m);
}

/* ---- backward progress: what is reported final is final ---- */

typedef struct progress_log {
    const nn_ctx *ctx;
    size_t n_params;
    int reports;
    size_t from[64];
    float *seen[64];        /* the gradients [from, n_params) when reported */
} progress_log;

static void log_progress(void *arg, size_t final_from)
{
    progress_log *l = arg;
    if (l->reports >= 64)
        return;
    size_t k = l->n_params - final_from;
    l->from[l->reports] = final_from;
    l->seen[l->reports] = malloc((k ? k : 1) * sizeof(float));
    memcpy(l->seen[l->reports], nn_grads((nn_ctx *)l->ctx) + final_from, k * sizeof(float));
    l->reports++;
}

TEST(nn_backward_progress_reports_only_final_gradients)
{
    /* Convs with biases whose ReLU is fused (the next conv's backward writes the
     * producer's bias gradient: through_producer), a residual add (a node with two
     * readers), BN, dense: every gradient reported final must equal what the whole
     * backward leaves, bit for bit, and the reports must fall to 0. */
    nn_model *m = nn_model_new(8, 8, 3);
    int x = nn_input(m);
    int a = nn_relu(m, nn_conv2d(m, x, 8, 3, 3, 1, NN_PAD_SAME, 1, 1));
    int b = nn_relu(m, nn_conv2d(m, a, 8, 3, 3, 1, NN_PAD_SAME, 1, 1));
    int c = nn_conv2d(m, b, 8, 3, 3, 1, NN_PAD_SAME, 1, 1);
    int s = nn_relu(m, nn_batchnorm(m, nn_add(m, c, a)));
    int d = nn_relu(m, nn_conv2d(m, s, 16, 3, 3, 2, NN_PAD_SAME, 1, 1));
    int out = nn_dense(m, nn_gap(m, d), 5);
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    nn_model_init_params(m, 3);
    enum { N = 3 };
    float *in = alloc_uniform((size_t)N * 8 * 8 * 3, 4, -1.0f, 1.0f);
    float *dl = alloc_uniform((size_t)N * 5, 5, -1.0f, 1.0f);
    nn_ctx *ctx = nn_ctx_new(m, N, NULL);
    T_REQUIRE(ctx);
    progress_log l = { .ctx = ctx, .n_params = nn_param_count(m) };
    nn_zero_grads(ctx);
    T_REQUIRE(nn_forward(ctx, in, N, 1, 9, 0));
    nn_ctx_on_backward_progress(ctx, log_progress, &l);
    T_EQ_INT(nn_backward(ctx, dl), PT_OK);
    nn_ctx_on_backward_progress(ctx, NULL, NULL);
    T_CHECKF(l.reports >= 5, "%d reports", l.reports);
    T_CHECK(l.reports > 0 && l.from[l.reports - 1] == 0);
    const float *g = nn_grads(ctx);
    size_t nonzero = 0;
    for (int k = 0; k < l.reports; k++) {
        T_CHECKF(k == 0 || l.from[k] < l.from[k - 1], "report %d: %zu after %zu", k, l.from[k],
                 k ? l.from[k - 1] : 0);
        size_t bad = 0;
        for (size_t i = l.from[k]; i < l.n_params; i++) {
            float v = l.seen[k][i - l.from[k]];
            bad += memcmp(&v, &g[i], sizeof v) != 0;
            nonzero += k == l.reports - 1 && v != 0.0f;
        }
        T_CHECKF(bad == 0, "report %d (from %zu): %zu gradients changed after it", k, l.from[k],
                 bad);
        free(l.seen[k]);
    }
    /* Not a vacuous comparison: the gradients are mostly nonzero. */
    T_CHECKF(nonzero > l.n_params / 2, "%zu of %zu gradients nonzero", nonzero, l.n_params);
    nn_ctx_free(ctx);
    nn_model_free(m);
    free(in);
    free(dl);
}
