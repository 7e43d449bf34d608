/* nn in bf16 (nn_ctx_set_precision): on the built-in nets, a training step's logits,
 * parameter gradients and input gradient in bf16 lie within bf16's rounding of the
 * float32 ones; the portable engine and the AVX512_BF16 one give the same bits for the
 * whole step (skipped where the CPU lacks it); two contexts give the same bits (a run
 * is deterministic in bf16 too); and a context set back to fp32 gives float32's bits. */
#include "tests/t.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_bf16.h"
#include "nn/nn_impl.h"
#include "nn/nn_models.h"

static void fill(float *p, size_t n, uint64_t seed, float lo, float hi)
{
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        p[i] = rng_uniform(&r, lo, hi);
}

/* What one training step gives: logits, parameter gradients, input gradient. */
typedef struct step_out {
    float *y, *g, *gx;
    size_t ny, ng, ngx;
} step_out;

static void step_free(step_out *s)
{
    free(s->y), free(s->g), free(s->gx);
    memset(s, 0, sizeof *s);
}

/* A training forward and backward of batch n in precision p, with each input value
 * times 1 + u * jitter (u uniform in [-1, 1]); 0 on a failure. */
static int run_step_j(nn_model *m, int n, nn_precision p, float jitter, step_out *o)
{
    int h, w, ch;
    nn_model_input_shape(m, &h, &w, &ch);
    const int k = nn_model_classes(m);
    o->ny = (size_t)n * k, o->ng = nn_param_count(m), o->ngx = (size_t)n * h * w * ch;
    float *x = malloc(o->ngx * sizeof *x), *dl = malloc(o->ny * sizeof *dl);
    nn_ctx *c = nn_ctx_new(m, n, NULL);
    o->y = malloc(o->ny * sizeof(float)), o->g = malloc(o->ng * sizeof(float));
    o->gx = malloc(o->ngx * sizeof(float));
    int ok = x && dl && c && o->y && o->g && o->gx && nn_ctx_set_precision(c, p, NULL) == PT_OK;
    if (ok) {
        fill(x, o->ngx, 11, -2.0f, 2.0f);
        fill(dl, o->ny, 12, -0.5f, 0.5f);
        rng r;
        rng_seed(&r, 13);
        for (size_t i = 0; i < o->ngx && jitter > 0.0f; i++)
            x[i] *= 1.0f + rng_uniform(&r, -jitter, jitter);
        nn_zero_grads(c);
        const float *y = nn_forward(c, x, n, 1, 5, 100);
        ok = y && nn_backward(c, dl) == PT_OK && nn_ctx_input_grad(c);
        if (ok) {
            memcpy(o->y, y, o->ny * sizeof *y);
            memcpy(o->g, nn_grads(c), o->ng * sizeof(float));
            memcpy(o->gx, nn_ctx_input_grad(c), o->ngx * sizeof(float));
        }
    }
    nn_ctx_free(c);
    free(x), free(dl);
    return ok;
}

static int run_step(nn_model *m, int n, nn_precision p, step_out *o)
{
    return run_step_j(m, n, p, 0.0f, o);
}

/* |a - b| / |b| over the whole vector (2-norms), and the cosine of the two. */
static void compare(const float *a, const float *b, size_t n, double *rel, double *cosv)
{
    double d = 0, nb = 0, na = 0, dot = 0;
    for (size_t i = 0; i < n; i++) {
        d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        nb += (double)b[i] * b[i];
        na += (double)a[i] * a[i];
        dot += (double)a[i] * b[i];
    }
    *rel = sqrt(d / (nb > 0 ? nb : 1));
    *cosv = dot / sqrt((na > 0 ? na : 1) * (nb > 0 ? nb : 1));
}

static nn_model *small_net(int side)
{
    int widths[NN_SMALL_MAX_BLOCKS], strided[NN_SMALL_MAX_BLOCKS];
    const int nb = nn_parse_widths("auto", side, widths, strided, NULL);
    nn_model *m = nb > 0 ? nn_build_small_widths(side, side, 5, 0.0f, widths, strided, nb,
                                                 NN_SMALL_CONVS_PER_BLOCK, NULL)
                         : NULL;
    if (m) {
        nn_model_init_params(m, 3);
        nn_model_set_input_grad(m, 1);
    }
    return m;
}

/* bf16 against float32 on a whole net at its initial weights: each layer's bf16
 * error (checked tightly, layer by layer, below) grows through a deep net's batch
 * norms, which at these initial weights and batches amplify any change (a 0.4% jitter
 * of the input alone moves `small`'s gradients by a cosine of 0.995). So: the logits
 * within 3%, the gradients' cosines at least 0.98 (0.97 the input's), or, for a net as chaotic at its initial weights as MobileNetV2
 * (deep, batch norm over a handful of values), at least what float32 itself gives
 * when each input value moves by 0.4% (two bf16 roundings): bf16 moves the step no
 * more than that jitter does. */
static void check_near_fp32(nn_model *m, int n, const char *name, int against_jitter)
{
    step_out f = { 0 }, b = { 0 }, j = { 0 };
    T_REQUIRE(run_step(m, n, NN_FP32, &f));
    T_REQUIRE(run_step(m, n, NN_BF16, &b));
    double rel, cosv, relj = 0.03, cosj = 0.98, cosjx = 0.97;
    if (against_jitter) {
        T_REQUIRE(run_step_j(m, n, NN_FP32, 0.004f, &j));
        compare(j.y, f.y, f.ny, &relj, &cosv);
        compare(j.g, f.g, f.ng, &rel, &cosj);
        compare(j.gx, f.gx, f.ngx, &rel, &cosjx);
    }
    compare(b.y, f.y, f.ny, &rel, &cosv);
    T_CHECKF(rel <= relj && rel > 0.0, "%s logits: relative difference %.4f (bound %.4f)", name,
             rel, relj);
    compare(b.g, f.g, f.ng, &rel, &cosv);
    T_CHECKF(cosv >= cosj && rel > 0.0, "%s parameter gradients: cosine %.5f (bound %.5f)", name,
             cosv, cosj);
    compare(b.gx, f.gx, f.ngx, &rel, &cosv);
    if (getenv("PT_TEST_VERBOSE"))
        fprintf(stderr, "%s: jitter %.4f %.5f %.5f\n", name, relj, cosj, cosjx);
    T_CHECKF(cosv >= cosjx, "%s input gradient: cosine %.5f (bound %.5f)", name, cosv, cosjx);
    step_free(&f), step_free(&b), step_free(&j);
}

TEST(nn_bf16_step_is_within_bf16_rounding_of_fp32)
{
    const int side = t_slow_mode() ? 32 : 64;
    nn_model *m = small_net(side);
    T_REQUIRE(m);
    check_near_fp32(m, t_slow_mode() ? 2 : 4, "small", 0);
    nn_model_free(m);
    if (t_slow_mode())
        return;
    m = nn_build_mobilenetv2(64, 64, 5, 0.35f, 0.0f, NULL);
    T_REQUIRE(m);
    nn_model_init_params(m, 4);
    nn_model_set_input_grad(m, 1);
    check_near_fp32(m, 4, "mobilenetv2", 1);
    nn_model_free(m);
}

static int same(const step_out *a, const step_out *b)
{
    return memcmp(a->y, b->y, a->ny * sizeof(float)) == 0 &&
           memcmp(a->g, b->g, a->ng * sizeof(float)) == 0 &&
           memcmp(a->gx, b->gx, a->ngx * sizeof(float)) == 0;
}

TEST(nn_bf16_step_is_deterministic_and_fp32_again_after)
{
    nn_model *m = small_net(32);
    T_REQUIRE(m);
    step_out a = { 0 }, b = { 0 }, f1 = { 0 }, f2 = { 0 };
    T_REQUIRE(run_step(m, 2, NN_BF16, &a) && run_step(m, 2, NN_BF16, &b));
    T_CHECK(same(&a, &b));
    T_REQUIRE(run_step(m, 2, NN_FP32, &f1));
    T_CHECK(!same(&a, &f1));
    /* A context set to bf16 and back is float32 again. */
    nn_ctx *c = nn_ctx_new(m, 2, NULL);
    T_REQUIRE(c);
    T_CHECK(nn_ctx_set_precision(c, NN_BF16, NULL) == PT_OK);
    T_CHECK(nn_ctx_precision(c) == NN_BF16);
    T_CHECK(nn_ctx_set_precision(c, NN_FP32, NULL) == PT_OK);
    T_CHECK(nn_ctx_precision(c) == NN_FP32);
    nn_ctx_free(c);
    T_REQUIRE(run_step(m, 2, NN_FP32, &f2));
    T_CHECK(same(&f1, &f2));
    step_free(&a), step_free(&b), step_free(&f1), step_free(&f2);
    nn_model_free(m);
}

TEST(nn_bf16_avx512_step_gives_the_portable_bits)
{
    if (!nn_bf16_have(NN_BF16_AVX512)) {
        t_skip("no AVX512_BF16 on this CPU");
        return;
    }
    nn_model *nets[2] = { small_net(64), nn_build_mobilenetv2(64, 64, 5, 0.35f, 0.0f, NULL) };
    for (int i = 0; i < 2; i++) {
        T_REQUIRE(nets[i]);
        nn_model_init_params(nets[i], 5);
        nn_model_set_input_grad(nets[i], 1);
        step_out p = { 0 }, v = { 0 };
        nn_bf16_force(NN_BF16_PORTABLE);
        const int okp = run_step(nets[i], 3, NN_BF16, &p);
        nn_bf16_force(NN_BF16_AVX512);
        const int okv = run_step(nets[i], 3, NN_BF16, &v);
        nn_bf16_force(-1);
        T_REQUIRE(okp && okv);
        T_CHECKF(same(&p, &v), "net %d: the engines differ", i);
        step_free(&p), step_free(&v);
        nn_model_free(nets[i]);
    }
}

/* One conv through nn_conv_fwd and nn_conv_bwd in float32 and in bf16: every path the
 * bf16 products take (im2col at strides 1 and 2, the 1x1 path with its fused
 * activation, the input gradient through the producer's activation, added into dx)
 * within bf16's rounding of float32: a relative difference of at most 1% and more
 * than none (bf16 ran). */
typedef struct ccase {
    int h, cin, cout, k, stride, act, xa, accum;
} ccase;

static double rel_diff(const float *a, const float *b, size_t n)
{
    double r, c;
    compare(a, b, n, &r, &c);
    return r;
}

static void conv_case(const ccase *k)
{
    const int n = 2, pad = k->k / 2;
    const int oh = (k->h + 2 * pad - k->k) / k->stride + 1;
    nn_conv_shape s = { n, k->h, k->h, k->cin, oh, oh, k->cout, k->k, k->k, k->stride,
                        pad, pad, 1, NULL };
    const size_t nx = (size_t)n * k->h * k->h * k->cin, ny = (size_t)n * oh * oh * k->cout;
    const size_t nw = (size_t)k->k * k->k * k->cin * k->cout;
    const size_t wsf = nn_conv_ws_floats(&s) + nn_conv_ws_floats_xf(&s) + 64;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)k->cout * 4);
    float *y[2], *dy[2], *dx[2], *dw[2], *db[2], *dbx[2];
    float *ws = malloc(wsf * 4), *g = malloc(ny * 4);
    nn_bf16_area area = { NULL, nn_conv_bf16_bytes(&s) };
    area.p = malloc(area.bytes);
    T_REQUIRE(x && w && b && ws && g && area.p);
    fill(x, nx, 1, -1.0f, 2.0f);       /* as a ReLU's output might be, some below 0 */
    fill(w, nw, 2, -0.3f, 0.3f);
    fill(b, (size_t)k->cout, 3, -0.5f, 0.5f);
    fill(g, ny, 4, -1.0f, 1.0f);
    for (int v = 0; v < 2; v++) {
        s.bf16 = v ? &area : NULL;
        y[v] = malloc(ny * 4), dy[v] = malloc(ny * 4), dx[v] = malloc(nx * 4);
        dw[v] = calloc(nw, 4), db[v] = calloc((size_t)k->cout, 4), dbx[v] = calloc((size_t)k->cin, 4);
        T_REQUIRE(y[v] && dy[v] && dx[v] && dw[v] && db[v] && dbx[v]);
        fill(dx[v], nx, 5, -1.0f, 1.0f);
        nn_conv_fwd(&s, x, w, b, k->act, y[v], ws);
        memcpy(dy[v], g, ny * 4);
        const nn_dx_act xa = { NN_ACT_RELU, x, dbx[v] };
        /* Both backwards read float32's output: the activation's mask is then the same
         * (bf16's output moves a few values across 0, which changes their gradient
         * whole), and what differs is the products' rounding. */
        nn_conv_bwd(&s, x, w, y[0], dy[v], k->act, 0, dx[v], k->accum, dw[v], db[v], ws,
                    k->xa ? &xa : NULL, NULL);
    }
    const double ry = rel_diff(y[1], y[0], ny), rx = rel_diff(dx[1], dx[0], nx);
    const double rw = rel_diff(dw[1], dw[0], nw), rb = rel_diff(db[1], db[0], (size_t)k->cout);
    const double rbx = k->xa ? rel_diff(dbx[1], dbx[0], (size_t)k->cin) : 0.005;
    T_CHECKF(ry > 0 && ry < 0.01 && rx > 0 && rx < 0.01 && rw > 0 && rw < 0.01 && rb < 0.01 &&
             rbx < 0.01,
             "conv %dx%d %d->%d /%d act %d xa %d accum %d: y %.5f dx %.5f dw %.5f db %.5f "
             "dbx %.5f", k->k, k->k, k->cin, k->cout, k->stride, k->act, k->xa, k->accum, ry,
             rx, rw, rb, rbx);
    for (int v = 0; v < 2; v++)
        free(y[v]), free(dy[v]), free(dx[v]), free(dw[v]), free(db[v]), free(dbx[v]);
    free(x), free(w), free(b), free(ws), free(g), free(area.p);
}

TEST(nn_bf16_conv_paths_are_within_bf16_rounding_of_fp32)
{
    static const ccase cases[] = {
        { 12, 32, 48, 3, 1, NN_ACT_RELU, 0, 0 },
        { 13, 24, 40, 3, 2, NN_ACT_NONE, 1, 0 },
        { 9, 4, 32, 3, 1, NN_ACT_RELU6, 0, 1 },   /* K = 36 */
        { 8, 40, 64, 1, 1, NN_ACT_RELU, 1, 0 },   /* the 1x1 path */
        { 7, 64, 32, 1, 1, NN_ACT_RELU6, 0, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        conv_case(&cases[i]);
}
