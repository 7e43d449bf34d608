/* nn: the conv's fused and vectorised paths against the definition, in double. A conv
 * whose only reader is a ReLU/ReLU6 applies it itself (nn_model_finalize), forward
 * and backward; its output, its input, weight and bias gradients must equal the
 * unfused computation (conv, then the activation, then their backward) within 1e-5
 * of the largest value, on every path of nn_conv.c: the 1x1 sgemm-free products of
 * nn_gemm.c, the depthwise kernels of nn_dw.c, im2col, and sgemm for what those do
 * not take; with the kernels the CPU has (AVX-512 where there is), the AVX2 ones
 * (nn_gemm_force_avx2) and the portable ones (nn_simd_force_portable).
 * Two such convs in a row: the second takes its input gradient on through the
 * first's activation (and sums the first's bias gradient) in its own pass, on each
 * of those paths, and the result must equal the layer-by-layer computation too.
 * Finite-difference checks of the same layers are in test_nn_grad.c. */
#include "tests/t.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_impl.h"

typedef struct fcfg {
    const char *name;
    int n, h, w, cin, cout, kh, kw, stride, pt, pl, pb, pr, groups, bias;
    int act;        /* NN_OP_RELU or NN_OP_RELU6 */
    int residual;   /* out = act(conv(x)) + x: x's gradient is then added to */
} fcfg;

static void fill(float *p, size_t n, uint64_t seed, float lo, float hi)
{
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        p[i] = rng_uniform(&r, lo, hi);
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

/* A training context that keeps every output: these tests read the convs' outputs,
 * which a depthwise conv's context would otherwise recompute in the backward instead
 * of keeping (test_nn_recompute.c checks that it gives the same bits). */
static nn_ctx *keeping_ctx(const nn_model *m, int n)
{
    int was = nn_set_recompute(0);
    nn_ctx *c = nn_ctx_new(m, n, NULL);
    nn_set_recompute(was);
    return c;
}

static int out_size(int in, int k, int s, int lead, int trail)
{
    return (in + lead + trail - k) / s + 1;
}

/* z = conv(x) + b by the definition (double). */
static void ref_forward(const fcfg *c, const float *x, const float *wt, const float *b,
                        double *z)
{
    const int oh = out_size(c->h, c->kh, c->stride, c->pt, c->pb);
    const int ow = out_size(c->w, c->kw, c->stride, c->pl, c->pr);
    const int cig = c->cin / c->groups, cog = c->cout / c->groups;
    for (int img = 0; img < c->n; img++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++)
                for (int co = 0; co < c->cout; co++) {
                    double acc = b ? b[co] : 0.0;
                    for (int ky = 0; ky < c->kh; ky++)
                        for (int kx = 0; kx < c->kw; kx++) {
                            const int iy = oy * c->stride - c->pt + ky;
                            const int ix = ox * c->stride - c->pl + kx;
                            if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w)
                                continue;
                            for (int ci = 0; ci < cig; ci++)
                                acc += (double)x[(((size_t)img * c->h + iy) * c->w + ix) * c->cin +
                                                 (size_t)(co / cog * cig + ci)] *
                                       wt[((size_t)(ky * c->kw + kx) * cig + ci) * c->cout + co];
                        }
                    z[(((size_t)img * oh + oy) * ow + ox) * c->cout + co] = acc;
                }
}

/* dx, dw, db (added to, double) from dz = dy * act'(y) by the definition. */
static void ref_backward(const fcfg *c, const float *x, const float *wt, const double *dz,
                         double *dx, double *dw, double *db)
{
    const int oh = out_size(c->h, c->kh, c->stride, c->pt, c->pb);
    const int ow = out_size(c->w, c->kw, c->stride, c->pl, c->pr);
    const int cig = c->cin / c->groups, cog = c->cout / c->groups;
    for (int img = 0; img < c->n; img++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++)
                for (int co = 0; co < c->cout; co++) {
                    const double g = dz[(((size_t)img * oh + oy) * ow + ox) * c->cout + co];
                    if (db)
                        db[co] += g;
                    for (int ky = 0; ky < c->kh; ky++)
                        for (int kx = 0; kx < c->kw; kx++) {
                            const int iy = oy * c->stride - c->pt + ky;
                            const int ix = ox * c->stride - c->pl + kx;
                            if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w)
                                continue;
                            for (int ci = 0; ci < cig; ci++) {
                                const size_t xi = (((size_t)img * c->h + iy) * c->w + ix) * c->cin +
                                                  (size_t)(co / cog * cig + ci);
                                const size_t wi =
                                    ((size_t)(ky * c->kw + kx) * cig + ci) * c->cout + co;
                                dx[xi] += g * wt[wi];
                                dw[wi] += g * x[xi];
                            }
                        }
                }
}

static double act_ref(double z, int act)
{
    z = z > 0.0 ? z : 0.0;
    return act == NN_OP_RELU6 && z > 6.0 ? 6.0 : z;
}

/* One case, with the kernels as they are (portable = 0), forced portable (1) or forced
 * to AVX2 (2). */
static void check_case(const fcfg *c, int portable)
{
    nn_simd_force_portable(portable == 1);
    nn_gemm_force_avx2(portable == 2);
    nn_model *m = nn_model_new(c->h, c->w, c->cin);
    const int in = nn_input(m);
    const int conv = nn_conv2d_ex(m, in, c->cout, c->kh, c->kw, c->stride, c->stride, c->pt, c->pl,
                                  c->pb, c->pr, c->groups, c->bias);
    const int a = c->act == NN_OP_RELU6 ? nn_relu6(m, conv) : nn_relu(m, conv);
    const int out = c->residual ? nn_add(m, a, in) : a;
    pt_err e;
    T_REQUIRE(nn_model_finalize(m, out, &e) == PT_OK);
    nn_model_set_input_grad(m, 1);
    /* The activation is the conv's: the summary marks it as applied by the conv. */
    char sum[4096];
    nn_model_summary(m, sum, sizeof sum);
    T_CHECKF(strstr(sum, c->act == NN_OP_RELU6 ? "relu6*" : "relu*") != NULL,
             "%s: the activation was not fused into the conv:\n%s", c->name, sum);

    nn_node_info ni;
    nn_node_get(m, conv, &ni);
    float *P = nn_params(m);
    /* Weights that put pre-activations on both sides of 0 and, for ReLU6, of 6. */
    fill(P, ni.weight_count, 3, -1.0f, 1.0f);
    if (c->bias)
        fill(P + ni.weight_count, ni.bias_count, 4, -1.0f, 3.0f);
    const size_t in_len = (size_t)c->n * c->h * c->w * c->cin;
    const size_t out_len = (size_t)c->n * ni.h * ni.w * c->cout;
    float *x = malloc(in_len * sizeof *x), *dy = malloc(out_len * sizeof *dy);
    fill(x, in_len, 5, -2.0f, 3.0f);
    fill(dy, out_len, 6, -1.0f, 1.0f);
    double *z = calloc(out_len, sizeof *z), *dz = calloc(out_len, sizeof *dz);
    double *dx = calloc(in_len, sizeof *dx), *dw = calloc(ni.weight_count, sizeof *dw);
    double *db = calloc(c->cout, sizeof *db);

    nn_ctx *ctx = keeping_ctx(m, c->n);
    T_REQUIRE(ctx != NULL);
    const float *y = nn_forward(ctx, x, c->n, 1, 0, 0);
    T_REQUIRE(y != NULL);
    const float *ya = nn_ctx_output(ctx, a);
    ref_forward(c, x, P, c->bias ? P + ni.weight_count : NULL, z);
    /* The unfused computation: the activation of z, its gradient masked by the
     * activation's output (as nn_act_bwd has it: 0 at 0 and at 6). */
    for (size_t i = 0; i < out_len; i++) {
        const int pass = ya[i] > 0.0f && (c->act != NN_OP_RELU6 || ya[i] < 6.0f);
        dz[i] = pass ? dy[i] : 0.0;
        z[i] = act_ref(z[i], c->act);
    }
    double ey = max_rel(ya, z, out_len);
    ref_backward(c, x, P, dz, dx, dw, c->bias ? db : NULL);
    if (c->residual)
        for (size_t i = 0; i < in_len; i++)
            dx[i] += dy[i];
    nn_zero_grads(ctx);
    T_REQUIRE(nn_backward(ctx, dy) == PT_OK);
    double ex = max_rel(nn_ctx_input_grad(ctx), dx, in_len);
    double ew = max_rel(nn_grads(ctx) + ni.param_offset, dw, ni.weight_count);
    double eb = c->bias ? max_rel(nn_grads(ctx) + ni.param_offset + ni.weight_count, db, c->cout)
                        : 0.0;
    T_CHECKF(ey < 1e-5 && ex < 1e-5 && ew < 1e-5 && eb < 1e-5,
             "%s (%s kernels): differs from the unfused reference: y %.3g, dx %.3g, dw %.3g, "
             "db %.3g",
             c->name, portable == 1 ? "portable" : portable == 2 ? "avx2" : "default", ey, ex, ew, eb);
    nn_ctx_free(ctx);
    free(x);
    free(dy);
    free(z);
    free(dz);
    free(dx);
    free(dw);
    free(db);
    nn_model_free(m);
    nn_simd_force_portable(0);
    nn_gemm_force_avx2(0);
}

TEST(nn_conv_fused_act_matches_unfused_reference)
{
    static const fcfg cases[] = {
        /* 1x1: N = 40 is a 24- and a 16-wide block; 126 rows end mid-block. */
        {"1x1 24 -> 40, bias, relu6", 2, 7, 9, 24, 40, 1, 1, 1, 0, 0, 0, 0, 1, 1, NN_OP_RELU6, 0},
        {"1x1 40 -> 24, relu", 2, 5, 5, 40, 24, 1, 1, 1, 0, 0, 0, 0, 1, 0, NN_OP_RELU, 0},
        {"1x1 16 -> 8, bias, relu6", 3, 4, 5, 16, 8, 1, 1, 1, 0, 0, 0, 0, 1, 1, NN_OP_RELU6, 0},
        {"1x1 16 -> 12 (sgemm), relu6", 2, 4, 5, 16, 12, 1, 1, 1, 0, 0, 0, 0, 1, 1, NN_OP_RELU6, 0},
        {"1x1 24 -> 24 + x (dx added to)", 2, 6, 5, 24, 24, 1, 1, 1, 0, 0, 0, 0, 1, 1, NN_OP_RELU6,
         1},
        {"1x1 groups 2, relu", 2, 4, 4, 16, 16, 1, 1, 1, 0, 0, 0, 0, 2, 1, NN_OP_RELU, 0},
        /* Depthwise: 40 channels are a 32-block and an 8-block, 13 an 8-block and 5
         * scalar ones; 9 x 10 has inside pixels and every edge. */
        {"depthwise 3x3/1, 40 ch, bias, relu6", 2, 9, 10, 40, 40, 3, 3, 1, 1, 1, 1, 1, 40, 1,
         NN_OP_RELU6, 0},
        {"depthwise 3x3/2 TF-same, 13 ch, relu", 2, 9, 8, 13, 13, 3, 3, 2, 0, 0, 1, 1, 13, 0,
         NN_OP_RELU, 0},
        {"depthwise 3x3/2 pad 1, 48 ch, bias, relu6", 1, 10, 11, 48, 48, 3, 3, 2, 1, 1, 1, 1, 48,
         1, NN_OP_RELU6, 0},
        {"depthwise 5x5/2 pad 2, 16 ch, relu6", 2, 9, 9, 16, 16, 5, 5, 2, 2, 2, 2, 2, 16, 1,
         NN_OP_RELU6, 0},
        {"depthwise 3x3/1 + x (dx added to)", 2, 6, 7, 24, 24, 3, 3, 1, 1, 1, 1, 1, 24, 1,
         NN_OP_RELU6, 1},
        {"depthwise 9x9/1 pad 4 (wide dw), relu", 1, 10, 10, 8, 8, 9, 9, 1, 4, 4, 4, 4, 8, 1,
         NN_OP_RELU, 0},
        /* im2col: the RGB stem (K = 27 through nn_gemm), and grouped (sgemm). */
        {"3x3/2 3 -> 32, bias, relu6", 2, 11, 10, 3, 32, 3, 3, 2, 0, 0, 1, 1, 1, 1, NN_OP_RELU6, 0},
        {"3x3/1 groups 2, relu", 2, 6, 6, 8, 8, 3, 3, 1, 1, 1, 1, 1, 2, 1, NN_OP_RELU, 0},
        /* Weights past NN_GEMM_MAX_KN: the forward through the AVX-512 kernels where the
         * CPU has them (nn_gemm_fwd_ok), OpenBLAS otherwise; the backward OpenBLAS. */
        {"1x1 1024 -> 520 (K*N > max), bias, relu6", 1, 3, 2, 1024, 520, 1, 1, 1, 0, 0, 0, 0, 1,
         1, NN_OP_RELU6, 0},
        {"3x3/1 64 -> 1032 (K*N > max), relu", 1, 3, 3, 64, 1032, 3, 3, 1, 1, 1, 1, 1, 1, 0,
         NN_OP_RELU, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int portable = 0; portable < 3; portable++)
            check_case(&cases[i], portable);
}

/* Two convs in a row, each with its activation: x -> A -> act -> B -> act -> out. B's
 * shape is given without its input size (A's output). */
static void check_chain(const char *name, fcfg a, fcfg b, int portable)
{
    nn_simd_force_portable(portable == 1);
    nn_gemm_force_avx2(portable == 2);
    b.n = a.n;
    b.h = out_size(a.h, a.kh, a.stride, a.pt, a.pb);
    b.w = out_size(a.w, a.kw, a.stride, a.pl, a.pr);
    b.cin = a.cout;
    nn_model *m = nn_model_new(a.h, a.w, a.cin);
    const int ca = nn_conv2d_ex(m, nn_input(m), a.cout, a.kh, a.kw, a.stride, a.stride, a.pt,
                                a.pl, a.pb, a.pr, a.groups, a.bias);
    const int aa = a.act == NN_OP_RELU6 ? nn_relu6(m, ca) : nn_relu(m, ca);
    const int cb = nn_conv2d_ex(m, aa, b.cout, b.kh, b.kw, b.stride, b.stride, b.pt, b.pl, b.pb,
                                b.pr, b.groups, b.bias);
    const int ab = b.act == NN_OP_RELU6 ? nn_relu6(m, cb) : nn_relu(m, cb);
    T_REQUIRE(nn_model_finalize(m, ab, NULL) == PT_OK);
    nn_model_set_input_grad(m, 1);
    nn_node_info na, nb;
    nn_node_get(m, ca, &na);
    nn_node_get(m, cb, &nb);
    float *P = nn_params(m);
    fill(P + na.param_offset, na.weight_count, 3, -1.0f, 1.0f);
    fill(P + na.param_offset + na.weight_count, na.bias_count, 4, -1.0f, 3.0f);
    fill(P + nb.param_offset, nb.weight_count, 13, -0.5f, 0.5f);
    fill(P + nb.param_offset + nb.weight_count, nb.bias_count, 14, -1.0f, 3.0f);
    const float *wa = P + na.param_offset, *wb = P + nb.param_offset;
    const size_t lx = (size_t)a.n * a.h * a.w * a.cin, la = (size_t)a.n * na.h * na.w * na.c,
                 lb = (size_t)a.n * nb.h * nb.w * nb.c;
    float *x = malloc(lx * sizeof *x), *dy = malloc(lb * sizeof *dy), *ya32 = malloc(la * 4);
    fill(x, lx, 5, -2.0f, 3.0f);
    fill(dy, lb, 6, -1.0f, 1.0f);
    double *za = calloc(la, sizeof *za), *zb = calloc(lb, sizeof *zb);
    double *dza = calloc(la, sizeof *dza), *dzb = calloc(lb, sizeof *dzb);
    double *dx = calloc(lx, sizeof *dx), *dwa = calloc(na.weight_count, sizeof *dwa);
    double *dwb = calloc(nb.weight_count, sizeof *dwb);
    double *dba = calloc(na.c, sizeof *dba), *dbb = calloc(nb.c, sizeof *dbb);

    nn_ctx *ctx = keeping_ctx(m, a.n);
    T_REQUIRE(ctx != NULL);
    T_REQUIRE(nn_forward(ctx, x, a.n, 1, 0, 0) != NULL);
    const float *ya = nn_ctx_output(ctx, aa), *yb = nn_ctx_output(ctx, ab);
    /* The reference runs B on the library's A output (float, as B reads it), so the
     * comparison sees B's arithmetic, not A's rounding amplified. */
    memcpy(ya32, ya, la * sizeof *ya32);
    ref_forward(&a, x, wa, a.bias ? wa + na.weight_count : NULL, za);
    ref_forward(&b, ya32, wb, b.bias ? wb + nb.weight_count : NULL, zb);
    for (size_t i = 0; i < la; i++)
        za[i] = act_ref(za[i], a.act);
    for (size_t i = 0; i < lb; i++) {
        const int pass = yb[i] > 0.0f && (b.act != NN_OP_RELU6 || yb[i] < 6.0f);
        dzb[i] = pass ? dy[i] : 0.0;
        zb[i] = act_ref(zb[i], b.act);
    }
    double ey = fmax(max_rel(ya, za, la), max_rel(yb, zb, lb));
    double *dya = calloc(la, sizeof *dya);
    ref_backward(&b, ya32, wb, dzb, dya, dwb, b.bias ? dbb : NULL);
    for (size_t i = 0; i < la; i++) {
        const int pass = ya[i] > 0.0f && (a.act != NN_OP_RELU6 || ya[i] < 6.0f);
        dza[i] = pass ? dya[i] : 0.0;
    }
    ref_backward(&a, x, wa, dza, dx, dwa, a.bias ? dba : NULL);
    nn_zero_grads(ctx);
    T_REQUIRE(nn_backward(ctx, dy) == PT_OK);
    const float *G = nn_grads(ctx);
    double ex = max_rel(nn_ctx_input_grad(ctx), dx, lx);
    double ewa = max_rel(G + na.param_offset, dwa, na.weight_count);
    double ewb = max_rel(G + nb.param_offset, dwb, nb.weight_count);
    double eba = a.bias ? max_rel(G + na.param_offset + na.weight_count, dba, na.c) : 0.0;
    double ebb = b.bias ? max_rel(G + nb.param_offset + nb.weight_count, dbb, nb.c) : 0.0;
    T_CHECKF(ey < 1e-5 && ex < 1e-5 && ewa < 1e-5 && ewb < 1e-5 && eba < 1e-5 && ebb < 1e-5,
             "%s (%s kernels): differs from the layer-by-layer reference: y %.3g, dx %.3g, "
             "dw %.3g %.3g, db %.3g %.3g",
             name, portable == 1 ? "portable" : portable == 2 ? "avx2" : "default", ey, ex, ewa, ewb, eba, ebb);
    nn_ctx_free(ctx);
    free(x);
    free(dy);
    free(ya32);
    free(za);
    free(zb);
    free(dza);
    free(dzb);
    free(dya);
    free(dx);
    free(dwa);
    free(dwb);
    free(dba);
    free(dbb);
    nn_model_free(m);
    nn_simd_force_portable(0);
    nn_gemm_force_avx2(0);
}

TEST(nn_conv_chain_takes_gradient_through_the_producers_activation)
{
    /* A: n h w cin cout kh kw stride pads groups bias act; B: the same from cout on. */
    static const struct {
        const char *name;
        fcfg a, b;
    } cases[] = {
        {"1x1 + relu6 -> depthwise 3x3/1 + relu6",
         {"", 2, 7, 9, 16, 24, 1, 1, 1, 0, 0, 0, 0, 1, 1, NN_OP_RELU6, 0},
         {"", 0, 0, 0, 0, 24, 3, 3, 1, 1, 1, 1, 1, 24, 1, NN_OP_RELU6, 0}},
        {"1x1 + relu -> depthwise 3x3/2 + relu6, 13 ch",
         {"", 2, 9, 8, 8, 13, 1, 1, 1, 0, 0, 0, 0, 1, 1, NN_OP_RELU, 0},
         {"", 0, 0, 0, 0, 13, 3, 3, 2, 0, 0, 1, 1, 13, 1, NN_OP_RELU6, 0}},
        {"depthwise + relu6 -> 1x1 (nn_gemm) + relu",
         {"", 2, 6, 7, 40, 40, 3, 3, 1, 1, 1, 1, 1, 40, 1, NN_OP_RELU6, 0},
         {"", 0, 0, 0, 0, 24, 1, 1, 1, 0, 0, 0, 0, 1, 1, NN_OP_RELU, 0}},
        {"depthwise + relu6 -> 1x1 from 12 ch (sgemm) + relu6",
         {"", 2, 5, 6, 12, 12, 3, 3, 1, 1, 1, 1, 1, 12, 0, NN_OP_RELU6, 0},
         {"", 0, 0, 0, 0, 16, 1, 1, 1, 0, 0, 0, 0, 1, 1, NN_OP_RELU6, 0}},
        {"1x1 + relu6 -> 3x3/2 (im2col) + relu6",
         {"", 2, 8, 7, 8, 16, 1, 1, 1, 0, 0, 0, 0, 1, 1, NN_OP_RELU6, 0},
         {"", 0, 0, 0, 0, 8, 3, 3, 2, 1, 1, 1, 1, 1, 1, NN_OP_RELU6, 0}},
        {"3x3/2 stem + relu6 -> depthwise + relu6",
         {"", 2, 11, 10, 3, 32, 3, 3, 2, 0, 0, 1, 1, 1, 1, NN_OP_RELU6, 0},
         {"", 0, 0, 0, 0, 32, 3, 3, 1, 1, 1, 1, 1, 32, 1, NN_OP_RELU6, 0}},
        {"1x1 without bias + relu6 -> 1x1 + relu6",
         {"", 3, 4, 5, 16, 32, 1, 1, 1, 0, 0, 0, 0, 1, 0, NN_OP_RELU6, 0},
         {"", 0, 0, 0, 0, 16, 1, 1, 1, 0, 0, 0, 0, 1, 1, NN_OP_RELU6, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int portable = 0; portable < 3; portable++)
            check_chain(cases[i].name, cases[i].a, cases[i].b, portable);
}
