/* nn: every layer's backward against central finite differences, for the gradient of
 * the input and of every parameter, on small shapes.
 *
 * The scalar checked is L = sum(output * R) for a fixed random R, so backward is run
 * with dlogits = R. Forward runs in float, L is summed in double. A coordinate whose
 * two differences disagree in slope (a ReLU or max switching inside +-h) is skipped
 * and counted; a check fails when more than a few are skipped. The error of one
 * coordinate is |analytic - numeric| / max(|analytic|, |numeric|, 2% of the largest
 * gradient of that tensor); one that is off by more than 1% is measured again with a
 * 3x wider step (see compare()). Single layers are held to 1%; whole networks to 5%, as
 * float rounding through many layers leaves about 1e-4 of noise in the differences. */
#include "tests/t.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_layer.h"
#include "nn/nn_models.h"

#define FD_H 1e-3
#define FD_MAX_COORDS 300

static void fill_uniform(float *p, size_t n, uint64_t seed, float lo, float hi)
{
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        p[i] = rng_uniform(&r, lo, hi);
}

/* Values with |v| >= 0.05 (ReLU kinks stay out of reach of +-FD_H). */
static void fill_away_from_zero(float *p, size_t n, uint64_t seed, float lo, float hi)
{
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        float v;
        do
            v = rng_uniform(&r, lo, hi);
        while (fabsf(v) < 0.05f || fabsf(v - 6.0f) < 0.05f);
        p[i] = v;
    }
}

/* Values in [lo, hi] at least 0.05 from +-at (clip bounds stay out of reach of +-FD_H). */
static void fill_away_from(float *p, size_t n, uint64_t seed, float lo, float hi, float at)
{
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        float v;
        do
            v = rng_uniform(&r, lo, hi);
        while (fabsf(fabsf(v) - at) < 0.05f);
        p[i] = v;
    }
}

/* Distinct values 0.02 apart in random order (maxpool winners cannot change). */
static void fill_distinct(float *p, size_t n, uint64_t seed)
{
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        p[i] = -1.0f + 0.02f * (float)i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)rng_below(&r, i);
        float t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
}

/* Non-trivial values for what initialisation sets to constants: biases, BN gamma and
 * beta, BN running statistics. */
static void randomize_constants(nn_model *m, uint64_t seed)
{
    rng r;
    rng_seed(&r, seed);
    float *P = nn_params(m), *B = nn_buffers(m);
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni;
        nn_node_get(m, i, &ni);
        if (ni.op == NN_OP_BN) {
            for (size_t j = 0; j < ni.weight_count; j++) {
                P[ni.param_offset + j] = rng_uniform(&r, 0.5f, 1.5f);
                P[ni.param_offset + ni.weight_count + j] = rng_uniform(&r, -0.5f, 0.5f);
            }
            for (int j = 0; j < ni.c; j++) {
                B[ni.buffer_offset + (size_t)j] = rng_uniform(&r, -0.3f, 0.3f);
                B[ni.buffer_offset + (size_t)ni.c + (size_t)j] = rng_uniform(&r, 0.5f, 2.0f);
            }
        } else {
            for (size_t j = 0; j < ni.bias_count; j++)
                P[ni.param_offset + ni.weight_count + j] = rng_uniform(&r, -0.3f, 0.3f);
        }
    }
}

typedef struct fd {
    nn_ctx *c;
    const float *x;
    int n, training;
    const float *R;
    size_t nout;
    /* Optional second replica: it runs the next n2 examples of x (in_per floats each)
     * and its outputs are weighted by R + nout; L is the sum over both. */
    nn_ctx *c2;
    int n2;
    size_t in_per, nout2;
} fd;

static double loss_at(const fd *f)
{
    const float *y = nn_forward(f->c, f->x, f->n, f->training, 1234, 0);
    double L = 0.0;
    for (size_t j = 0; j < f->nout; j++)
        L += (double)y[j] * (double)f->R[j];
    if (f->c2) {
        y = nn_forward(f->c2, f->x + (size_t)f->n * f->in_per, f->n2, f->training, 1234, f->n);
        for (size_t j = 0; j < f->nout2; j++)
            L += (double)y[j] * (double)f->R[f->nout + j];
    }
    return L;
}

typedef struct fd_result {
    double max_err;
    size_t worst;
    double worst_a, worst_n;
    int checked, skipped;
} fd_result;

/* The central difference of L in v[i] with step h (L0: L at v). 0 when a kink lies
 * inside +-h: it shows up as different one-sided slopes. */
static int central(const fd *f, float *v, size_t i, double h, double L0, double floor_,
                   double *num)
{
    const float keep = v[i];
    v[i] = (float)(keep + h);
    double hp = (double)v[i] - keep;
    double Lp = loss_at(f);
    v[i] = (float)(keep - h);
    double hm = keep - (double)v[i];
    double Lm = loss_at(f);
    v[i] = keep;
    double sp = (Lp - L0) / hp, sm = (L0 - Lm) / hm;
    if (fabs(sp - sm) > 0.05 * fmax(fabs(sp), fabs(sm)) + 0.02 * floor_ + 1e-3)
        return 0;
    *num = (Lp - Lm) / (hp + hm);
    return 1;
}

/* Central differences of L over (a sample of) the n values at v, against g; only
 * where mask (when given) is 1. */
static fd_result compare(const fd *f, float *v, size_t n, const float *g, const uint8_t *mask,
                         double L0)
{
    fd_result r = {0};
    double gmax = 0.0;
    for (size_t i = 0; i < n; i++)
        gmax = fmax(gmax, fabs((double)g[i]));
    const double floor_ = 0.02 * gmax + 1e-4;
    size_t step = n > FD_MAX_COORDS ? n / FD_MAX_COORDS : 1;
    for (size_t i = 0; i < n; i += step) {
        if (mask && !mask[i])
            continue;
        double num, num3, a = g[i];
        if (!central(f, v, i, FD_H, L0, floor_, &num)) {
            r.skipped++;
            continue;
        }
        double err = fabs(a - num) / fmax(fmax(fabs(a), fabs(num)), floor_);
        /* The forward's float rounding leaves noise of about 1e-7 |L| / h in a
         * difference, a few % of a gradient near the floor, and how much depends on
         * the order of each sum (FMA kernels or not). A 3x wider step divides that
         * noise by 3 and keeps the truncation error near 1e-5, so it settles a
         * coordinate that looks off, while a wrong gradient stays wrong at any step;
         * unless a kink lies within the wider step. */
        if (err > 1e-2 && central(f, v, i, 3 * FD_H, L0, floor_, &num3)) {
            double err3 = fabs(a - num3) / fmax(fmax(fabs(a), fabs(num3)), floor_);
            if (err3 < err) {
                err = err3;
                num = num3;
            }
        }
        r.checked++;
        if (err > r.max_err) {
            r.max_err = err;
            r.worst = i;
            r.worst_a = a;
            r.worst_n = num;
        }
    }
    return r;
}

/* Checks the input and parameter gradients of model m (finalized) on input x of n
 * examples, within tol. */
static void gradcheck(const char *what, nn_model *m, int n, int training, float *x, double tol)
{
    nn_model_set_input_grad(m, 1);
    nn_ctx *c = nn_ctx_new(m, n, NULL);
    T_REQUIRE(c != NULL);
    int h, w, ch;
    nn_model_input_shape(m, &h, &w, &ch);
    const size_t in_len = (size_t)n * h * w * ch;
    const size_t nout = (size_t)n * (size_t)nn_model_classes(m);
    const size_t np = nn_param_count(m);
    float *R = malloc(nout * sizeof *R);
    float *G = malloc((np ? np : 1) * sizeof *G);
    float *GX = malloc(in_len * sizeof *GX);
    fill_uniform(R, nout, 99, -1.0f, 1.0f);
    fd f = {c, x, n, training, R, nout, NULL, 0, 0, 0};

    nn_zero_grads(c);
    T_REQUIRE(nn_forward(c, x, n, training, 1234, 0) != NULL);
    T_REQUIRE(nn_backward(c, R) == PT_OK);
    memcpy(G, nn_grads(c), np * sizeof *G);
    const float *gx = nn_ctx_input_grad(c);
    T_REQUIRE(gx != NULL);
    memcpy(GX, gx, in_len * sizeof *GX);
    double L0 = loss_at(&f);

    fd_result ri = compare(&f, x, in_len, GX, NULL, L0);
    T_CHECKF(ri.max_err <= tol && ri.skipped * 10 <= ri.checked,
             "%s: input gradient: max rel err %.3g at %zu (analytic %.6g numeric %.6g), "
             "%d checked, %d skipped at kinks",
             what, ri.max_err, ri.worst, ri.worst_a, ri.worst_n, ri.checked, ri.skipped);
    if (np) {
        /* Frozen parameters get exactly nothing; the others match differences. */
        const uint8_t *mask = nn_param_mask(m);
        size_t nonzero_frozen = 0;
        for (size_t i = 0; i < np; i++)
            nonzero_frozen += !mask[i] && G[i] != 0.0f;
        T_CHECKF(nonzero_frozen == 0, "%s: %zu frozen parameters got a gradient", what,
                 nonzero_frozen);
        fd_result rp = compare(&f, nn_params(m), np, G, mask, L0);
        T_CHECKF(rp.max_err <= tol && rp.skipped * 10 <= rp.checked,
                 "%s: parameter gradient: max rel err %.3g at %zu (analytic %.6g numeric %.6g), "
                 "%d checked, %d skipped at kinks",
                 what, rp.max_err, rp.worst, rp.worst_a, rp.worst_n, rp.checked, rp.skipped);
    }
    free(R);
    free(G);
    free(GX);
    nn_ctx_free(c);
}

/* input (h x w x cin) -> one layer built by the callback -> output. */
typedef int (*layer_fn)(nn_model *m, int in, const void *arg);

static void check_layer(const char *what, int n, int h, int w, int cin, layer_fn fn,
                        const void *arg, int training, int input_kind, double tol)
{
    nn_model *m = nn_model_new(h, w, cin);
    int out = fn(m, nn_input(m), arg);
    pt_err e;
    if (nn_model_finalize(m, out, &e) != PT_OK) {
        t_fail(__FILE__, __LINE__, "%s: %s", what, e.msg);
        nn_model_free(m);
        return;
    }
    nn_model_init_params(m, 7);
    randomize_constants(m, 8);
    size_t len = (size_t)n * h * w * cin;
    float *x = malloc(len * sizeof *x);
    if (input_kind == 1)
        fill_away_from_zero(x, len, 5, -1.0f, 1.0f);
    else if (input_kind == 2)
        fill_distinct(x, len, 5);
    else if (input_kind == 3)
        fill_away_from_zero(x, len, 5, -1.0f, 7.0f);
    else if (input_kind == 4)
        fill_away_from(x, len, 5, -1.0f, 1.0f, 0.5f);
    else if (input_kind == 5)
        fill_uniform(x, len, 5, -6.0f, 6.0f);
    else
        fill_uniform(x, len, 5, -1.0f, 1.0f);
    gradcheck(what, m, n, training, x, tol);
    free(x);
    nn_model_free(m);
}

/* ---- every layer kind, driven from the layer table (nn_layer.h) ---- */

/* check_layer's input kinds are enum nn_grad_input's values. */
_Static_assert(NN_GRAD_UNIFORM == 0 && NN_GRAD_AWAY_FROM_0 == 1 && NN_GRAD_DISTINCT == 2 &&
                   NN_GRAD_AWAY_FROM_0_6 == 3 && NN_GRAD_AWAY_FROM_HALF == 4 && NN_GRAD_WIDE == 5,
               "nn_grad_input values are check_layer's input kinds");

typedef struct table_arg {
    int kind;
    const nn_grad_case *g;
} table_arg;

/* The kind's own graph; it fails the build (and so the check) when the graph does not
 * use the kind. */
static int mk_table_case(nn_model *m, int in, const void *arg)
{
    const table_arg *a = arg;
    int out = a->g->build(m, in);
    nn_node_info ni;
    for (int i = 0; i < nn_node_count(m); i++)
        if (nn_node_get(m, i, &ni) == PT_OK && (int)ni.op == a->kind)
            return out;
    return PT_EUSAGE;
}

TEST(nn_grad_every_layer_kind_from_the_table)
{
    for (int k = 0; k < NN_OP_COUNT; k++) {
        const nn_layer *L = nn_layers[k];
        if (L->flags & NN_LAYER_INFER_ONLY) {
            /* No backward to check (nn_layer.h); tests/test_quant.c checks that a
             * training context refuses it. */
            T_CHECKF(!L->grad && !L->backward, "layer kind %s: inference only, but it has a "
                     "grad case or a backward", nn_op_name((nn_op)k));
            continue;
        }
        if (!L->grad) {
            t_fail(__FILE__, __LINE__,
                   "layer kind %s: its table entry has no grad case (nn_layer.h: grad)", nn_op_name((nn_op)k));
            continue;
        }
        const table_arg a = {k, L->grad};
        char what[96];
        snprintf(what, sizeof what, "%s (its table grad case)", nn_op_name((nn_op)k));
        check_layer(what, a.g->n, a.g->h, a.g->w, a.g->c, mk_table_case, &a, 1, a.g->input, 1e-2);
    }
}

typedef struct conv_arg {
    int cout, kh, kw, stride, pad, groups, bias;
} conv_arg;

static int mk_conv(nn_model *m, int in, const void *arg)
{
    const conv_arg *a = arg;
    return nn_conv2d(m, in, a->cout, a->kh, a->kw, a->stride, a->pad, a->groups, a->bias);
}

TEST(nn_grad_conv)
{
    static const struct {
        const char *name;
        int h, w, cin;
        conv_arg a;
    } cases[] = {
        {"3x3/1 same, bias", 5, 6, 3, {4, 3, 3, 1, NN_PAD_SAME, 1, 1}},
        {"3x3/2 same (asymmetric pad)", 6, 7, 4, {5, 3, 3, 2, NN_PAD_SAME, 1, 0}},
        {"3x3/1 valid", 6, 5, 2, {3, 3, 3, 1, NN_PAD_VALID, 1, 1}},
        {"2x3/2 pad 1", 7, 6, 3, {4, 2, 3, 2, 1, 1, 1}},
        {"5x5/1 pad 2", 6, 6, 2, {3, 5, 5, 1, 2, 1, 0}},
        {"3x3/1 groups 2", 5, 5, 4, {6, 3, 3, 1, 1, 2, 1}},
        {"3x3/2 groups 3", 6, 6, 6, {3, 3, 3, 2, NN_PAD_SAME, 3, 0}},
        {"depthwise 3x3/1 same", 5, 6, 5, {5, 3, 3, 1, NN_PAD_SAME, 5, 0}},
        {"depthwise 3x3/2 same, bias", 7, 6, 4, {4, 3, 3, 2, NN_PAD_SAME, 4, 1}},
        {"1x1/1", 4, 5, 6, {7, 1, 1, 1, 0, 1, 1}},
        {"1x1/1 groups 2", 4, 4, 6, {4, 1, 1, 1, 0, 2, 0}},
        {"1x1/2", 5, 5, 3, {4, 1, 1, 2, 0, 1, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[96];
        snprintf(what, sizeof what, "conv %s", cases[i].name);
        check_layer(what, 2, cases[i].h, cases[i].w, cases[i].cin, mk_conv, &cases[i].a, 1, 0,
                    1e-2);
    }
}

/* A conv whose only reader is a ReLU/ReLU6: the conv applies it (fused), and its
 * backward takes the gradient through it. */
typedef struct conv_act_arg {
    conv_arg c;
    int act;
} conv_act_arg;

static int mk_conv_act(nn_model *m, int in, const void *arg)
{
    const conv_act_arg *a = arg;
    int x = mk_conv(m, in, &a->c);
    return a->act == NN_OP_RELU6 ? nn_relu6(m, x) : nn_relu(m, x);
}

TEST(nn_grad_conv_fused_act)
{
    static const struct {
        const char *name;
        int h, w, cin;
        conv_act_arg a;
    } cases[] = {
        {"1x1 + relu6, bias", 4, 5, 8, {{16, 1, 1, 1, 0, 1, 1}, NN_OP_RELU6}},
        {"1x1 + relu", 4, 4, 16, {{8, 1, 1, 1, 0, 1, 0}, NN_OP_RELU}},
        {"depthwise 3x3/1 + relu6, bias", 5, 6, 12, {{12, 3, 3, 1, NN_PAD_SAME, 12, 1}, NN_OP_RELU6}},
        {"depthwise 3x3/2 + relu", 7, 6, 9, {{9, 3, 3, 2, NN_PAD_SAME, 9, 1}, NN_OP_RELU}},
        {"3x3/2 + relu6, bias", 6, 7, 3, {{8, 3, 3, 2, NN_PAD_SAME, 1, 1}, NN_OP_RELU6}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[96];
        snprintf(what, sizeof what, "conv %s", cases[i].name);
        /* Inputs in [-6, 6]: with He weights the pre-activations cross 0 and 6. */
        check_layer(what, 2, cases[i].h, cases[i].w, cases[i].cin, mk_conv_act, &cases[i].a, 1,
                    5, 1e-2);
    }
}

/* MobileNetV2's block as the ONNX zoo's graph has it (BN folded into conv biases):
 * 1x1 expand + ReLU6 -> depthwise 3x3 + ReLU6 -> 1x1 project -> + input. Each conv's
 * input gradient goes on through the activation of the conv before it in one pass. */
static int mk_inverted_residual(nn_model *m, int in, const void *arg)
{
    (void)arg;
    int x = nn_relu6(m, nn_conv2d(m, in, 16, 1, 1, 1, 0, 1, 1));
    x = nn_relu6(m, nn_conv2d(m, x, 16, 3, 3, 1, NN_PAD_SAME, 16, 1));
    x = nn_conv2d(m, x, 8, 1, 1, 1, 0, 1, 1);
    return nn_add(m, x, in);
}

TEST(nn_grad_inverted_residual_block)
{
    check_layer("inverted residual block (1x1, depthwise, 1x1, add)", 2, 5, 5, 8,
                mk_inverted_residual, NULL, 1, 5, 5e-2);
}

static int mk_bn(nn_model *m, int in, const void *arg)
{
    (void)arg;
    return nn_batchnorm(m, in);
}

static int mk_bn_act(nn_model *m, int in, const void *arg)
{
    int x = nn_batchnorm(m, in);
    return *(const int *)arg == NN_OP_RELU6 ? nn_relu6(m, x) : nn_relu(m, x);
}

TEST(nn_grad_batchnorm_training)
{
    check_layer("batchnorm (training)", 3, 3, 4, 5, mk_bn, NULL, 1, 0, 1e-2);
    int relu = NN_OP_RELU, relu6 = NN_OP_RELU6;
    check_layer("batchnorm + fused relu (training)", 3, 3, 4, 5, mk_bn_act, &relu, 1, 0, 1e-2);
    check_layer("batchnorm + fused relu6 (training)", 3, 3, 4, 5, mk_bn_act, &relu6, 1, 0, 1e-2);
}

TEST(nn_grad_batchnorm_frozen)
{
    /* A frozen BN normalises with its running statistics even in a training forward;
     * the input gradient goes through that affine map (and the fused ReLU). */
    nn_model *m = nn_model_new(3, 3, 4);
    int x = nn_relu(m, nn_batchnorm(m, nn_input(m)));
    int out = nn_dense(m, x, 3);
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    nn_model_init_params(m, 1);
    randomize_constants(m, 2);
    T_REQUIRE(nn_model_freeze_backbone(m) == PT_OK);
    float in[2 * 3 * 3 * 4];
    fill_uniform(in, sizeof in / sizeof in[0], 3, -1.0f, 1.0f);
    gradcheck("frozen batchnorm + relu", m, 2, 1, in, 1e-2);
    nn_model_free(m);
}

static int mk_relu(nn_model *m, int in, const void *arg)
{
    return *(const int *)arg == NN_OP_RELU6 ? nn_relu6(m, in) : nn_relu(m, in);
}

TEST(nn_grad_relu_relu6)
{
    int relu = NN_OP_RELU, relu6 = NN_OP_RELU6;
    check_layer("relu", 2, 3, 3, 4, mk_relu, &relu, 1, 1, 1e-2);
    check_layer("relu6", 2, 3, 3, 4, mk_relu, &relu6, 1, 3, 1e-2);
}

typedef struct pool_arg {
    int max, k, stride, pad;
} pool_arg;

static int mk_pool(nn_model *m, int in, const void *arg)
{
    const pool_arg *a = arg;
    return a->max ? nn_maxpool(m, in, a->k, a->stride, a->pad)
                  : nn_avgpool(m, in, a->k, a->stride, a->pad);
}

TEST(nn_grad_pools)
{
    pool_arg max22 = {1, 2, 2, 0}, max32s = {1, 3, 2, NN_PAD_SAME}, max31p = {1, 3, 1, 1};
    pool_arg avg22 = {0, 2, 2, 0}, avg31s = {0, 3, 1, NN_PAD_SAME}, avg32p = {0, 3, 2, 1};
    check_layer("maxpool 2/2", 2, 4, 6, 3, mk_pool, &max22, 1, 2, 1e-2);
    check_layer("maxpool 3/2 same (odd size)", 2, 5, 7, 2, mk_pool, &max32s, 1, 2, 1e-2);
    check_layer("maxpool 3/1 pad 1 (overlapping)", 1, 4, 5, 3, mk_pool, &max31p, 1, 2, 1e-2);
    check_layer("avgpool 2/2", 2, 4, 6, 3, mk_pool, &avg22, 1, 0, 1e-2);
    check_layer("avgpool 3/1 same", 2, 4, 5, 3, mk_pool, &avg31s, 1, 0, 1e-2);
    check_layer("avgpool 3/2 pad 1", 1, 5, 5, 2, mk_pool, &avg32p, 1, 0, 1e-2);
}

static int mk_gap(nn_model *m, int in, const void *arg)
{
    (void)arg;
    return nn_gap(m, in);
}

static int mk_dense(nn_model *m, int in, const void *arg)
{
    return nn_dense(m, in, *(const int *)arg);
}

static int mk_dropout(nn_model *m, int in, const void *arg)
{
    return nn_dropout(m, in, *(const float *)arg);
}

static int mk_affine(nn_model *m, int in, const void *arg)
{
    (void)arg;
    float s[3] = {2.0f, -0.5f, 1.5f}, b[3] = {-1.0f, 0.25f, 0.0f};
    return nn_affine(m, in, s, b);
}

TEST(nn_grad_gap_dense_dropout_affine)
{
    int five = 5;
    float rate = 0.4f;
    check_layer("gap", 2, 3, 4, 5, mk_gap, NULL, 1, 0, 1e-2);
    check_layer("dense (flattening a 2x2x3 input)", 3, 2, 2, 3, mk_dense, &five, 1, 0, 1e-2);
    check_layer("dropout 0.4 (fixed seed)", 2, 3, 3, 4, mk_dropout, &rate, 1, 0, 1e-2);
    check_layer("affine", 2, 3, 3, 3, mk_affine, NULL, 1, 0, 1e-2);
}

static int mk_add(nn_model *m, int in, const void *arg)
{
    (void)arg;
    int a = nn_conv2d(m, in, 4, 3, 3, 1, NN_PAD_SAME, 1, 1);
    int b = nn_conv2d(m, in, 4, 1, 1, 1, 0, 1, 0);
    int s = nn_add(m, a, b);
    /* x + x: the same gradient reaches one node twice and must add up. */
    return nn_add(m, s, s);
}

TEST(nn_grad_add)
{
    check_layer("add (two branches, and x + x)", 2, 4, 4, 3, mk_add, NULL, 1, 0, 1e-2);
}

/* ---- explicit (asymmetric) padding ---- */

typedef struct ex_arg {
    nn_op op;
    int cout, kh, kw, stride, pt, pl, pb, pr, groups;
} ex_arg;

static int mk_ex(nn_model *m, int in, const void *arg)
{
    const ex_arg *a = arg;
    if (a->op == NN_OP_CONV)
        return nn_conv2d_ex(m, in, a->cout, a->kh, a->kw, a->stride, a->stride, a->pt, a->pl,
                            a->pb, a->pr, a->groups, 1);
    if (a->op == NN_OP_MAXPOOL)
        return nn_maxpool_ex(m, in, a->kh, a->kw, a->stride, a->stride, a->pt, a->pl, a->pb,
                             a->pr);
    return nn_avgpool_ex(m, in, a->kh, a->kw, a->stride, a->stride, a->pt, a->pl, a->pb, a->pr);
}

TEST(nn_grad_asymmetric_padding)
{
    static const struct {
        const char *name;
        int h, w, cin, input_kind;
        ex_arg a;
    } cases[] = {
        /* TF "same" of a stride-2 conv on an even size, as ONNX exports spell it out. */
        {"conv 3x3/2 pads 0,0,1,1", 6, 6, 3, 0, {NN_OP_CONV, 4, 3, 3, 2, 0, 0, 1, 1, 1}},
        {"conv 2x3/1 pads 1,2,0,1", 5, 4, 2, 0, {NN_OP_CONV, 3, 2, 3, 1, 1, 2, 0, 1, 1}},
        {"conv 1x3/1 pads 0,1,0,1", 4, 5, 3, 0, {NN_OP_CONV, 4, 1, 3, 1, 0, 1, 0, 1, 1}},
        {"conv 3x1/2 pads 2,0,1,0", 7, 4, 2, 0, {NN_OP_CONV, 3, 3, 1, 2, 2, 0, 1, 0, 1}},
        {"depthwise 3x3/2 pads 0,0,1,1", 6, 6, 4, 0, {NN_OP_CONV, 4, 3, 3, 2, 0, 0, 1, 1, 4}},
        {"depthwise 5x5/2 pads 1,2,2,1", 7, 8, 4, 0, {NN_OP_CONV, 4, 5, 5, 2, 1, 2, 2, 1, 4}},
        {"maxpool 3x3/2 pads 0,0,1,1", 6, 6, 2, 2, {NN_OP_MAXPOOL, 0, 3, 3, 2, 0, 0, 1, 1, 1}},
        {"maxpool 2x2/1 pads 1,0,0,1", 4, 5, 2, 2, {NN_OP_MAXPOOL, 0, 2, 2, 1, 1, 0, 0, 1, 1}},
        {"avgpool 3x3/2 pads 0,1,2,0", 6, 5, 2, 0, {NN_OP_AVGPOOL, 0, 3, 3, 2, 0, 1, 2, 0, 1}},
        {"avgpool 2x2/1 pads 0,0,1,1", 3, 4, 3, 0, {NN_OP_AVGPOOL, 0, 2, 2, 1, 0, 0, 1, 1, 1}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_layer(cases[i].name, 2, cases[i].h, cases[i].w, cases[i].cin, mk_ex, &cases[i].a,
                    1, cases[i].input_kind, 1e-2);
}

/* ---- layers for imported graphs ---- */

static int mk_sigmoid(nn_model *m, int in, const void *arg)
{
    /* arg: put a conv in front (its parameters' gradients go through the sigmoid). */
    if (arg)
        in = nn_conv2d(m, in, 4, 3, 3, 1, NN_PAD_SAME, 1, 1);
    return nn_sigmoid(m, in);
}

TEST(nn_grad_sigmoid)
{
    int conv = 1;
    check_layer("sigmoid", 2, 3, 3, 4, mk_sigmoid, NULL, 1, 0, 1e-2);
    /* Inputs out to +-6, where the slope is down to 0.0025. */
    check_layer("sigmoid (wide inputs)", 2, 3, 3, 4, mk_sigmoid, NULL, 1, 5, 1e-2);
    check_layer("conv + sigmoid", 2, 4, 4, 3, mk_sigmoid, &conv, 1, 0, 1e-2);
}

/* The operand forms nn_mul accepts, each checked for both operands' gradients: an
 * operand computed by a conv gets its gradient checked through the conv's weights. */
enum mul_case {
    MUL_BRANCHES,      /* conv3x3(x) * conv1x1(x) */
    MUL_SQUARE,        /* x * x: a == b */
    MUL_SILU,          /* c * sigmoid(c), c = conv(x): b computed from a */
    MUL_SE,            /* a * sigmoid(conv(conv(gap(a)))): squeeze-and-excitation */
    MUL_SE_SWAPPED,    /* the same with the 1x1xC operand first */
    MUL_CHAN_OF_INPUT, /* x * gap(x) straight on the input */
};

static int mk_mul(nn_model *m, int in, const void *arg)
{
    switch (*(const enum mul_case *)arg) {
    case MUL_BRANCHES:
        return nn_mul(m, nn_conv2d(m, in, 4, 3, 3, 1, NN_PAD_SAME, 1, 1),
                      nn_conv2d(m, in, 4, 1, 1, 1, 0, 1, 1));
    case MUL_SQUARE:
        return nn_mul(m, in, in);
    case MUL_SILU: {
        int c = nn_conv2d(m, in, 4, 3, 3, 1, NN_PAD_SAME, 1, 1);
        return nn_mul(m, c, nn_sigmoid(m, c));
    }
    case MUL_SE:
    case MUL_SE_SWAPPED: {
        int a = nn_conv2d(m, in, 4, 3, 3, 1, NN_PAD_SAME, 1, 1);
        int s = nn_conv2d(m, nn_gap(m, a), 2, 1, 1, 1, 0, 1, 1);
        s = nn_sigmoid(m, nn_conv2d(m, s, 4, 1, 1, 1, 0, 1, 1));
        return *(const enum mul_case *)arg == MUL_SE ? nn_mul(m, a, s) : nn_mul(m, s, a);
    }
    case MUL_CHAN_OF_INPUT:
        return nn_mul(m, in, nn_gap(m, in));
    }
    return PT_EUSAGE;
}

TEST(nn_grad_mul)
{
    static const struct {
        const char *name;
        enum mul_case k;
    } cases[] = {
        {"mul of two branches", MUL_BRANCHES},
        {"mul x * x (one node twice)", MUL_SQUARE},
        {"mul SiLU c * sigmoid(c)", MUL_SILU},
        {"mul per channel (squeeze-and-excitation)", MUL_SE},
        {"mul per channel, 1x1xC operand first", MUL_SE_SWAPPED},
        {"mul per channel x * gap(x)", MUL_CHAN_OF_INPUT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_layer(cases[i].name, 2, 4, 3, 3, mk_mul, &cases[i].k, 1, 0, 1e-2);
}

static int mk_concat(nn_model *m, int in, const void *arg)
{
    switch (*(const int *)arg) {
    case 0: /* two branches of different widths */
        return nn_concat(m, nn_conv2d(m, in, 3, 3, 3, 1, NN_PAD_SAME, 1, 1),
                         nn_conv2d(m, in, 5, 1, 1, 1, 0, 1, 1));
    case 1: /* x with x: one node's gradient from two slices */
        return nn_concat(m, in, in);
    default: { /* DenseNet: a block's input, then its features, chained */
        int f1 = nn_conv2d(m, in, 2, 3, 3, 1, NN_PAD_SAME, 1, 0);
        int x = nn_concat(m, in, f1);
        int f2 = nn_conv2d(m, x, 2, 3, 3, 1, NN_PAD_SAME, 1, 0);
        return nn_concat(m, x, f2);
    }
    }
}

TEST(nn_grad_concat)
{
    int branches = 0, same = 1, dense = 2;
    check_layer("concat of two branches (3 + 5 channels)", 2, 4, 3, 3, mk_concat, &branches, 1, 0,
                1e-2);
    check_layer("concat x with x", 2, 3, 3, 2, mk_concat, &same, 1, 0, 1e-2);
    check_layer("concat chained (dense block)", 2, 4, 4, 3, mk_concat, &dense, 1, 0, 1e-2);
}

static int mk_clip(nn_model *m, int in, const void *arg)
{
    const float *b = arg;
    return nn_clip(m, in, b[0], b[1]);
}

TEST(nn_grad_clip)
{
    /* About half the inputs clipped, none within 0.05 of a bound. */
    float both[2] = {-0.5f, 0.5f}, low[2] = {-0.5f, INFINITY};
    check_layer("clip [-0.5, 0.5]", 2, 3, 3, 4, mk_clip, both, 1, 4, 1e-2);
    check_layer("clip [-0.5, inf)", 2, 3, 3, 4, mk_clip, low, 1, 4, 1e-2);
}

/* A small residual network through every plumbing path: fused BN activations, a BN
 * followed by an add (not fused), a ReLU after an add (not fused), shared gradient
 * storage, pooling and the head. */
static int mk_resnet(nn_model *m, int in, const void *arg)
{
    (void)arg;
    int x = nn_conv2d(m, in, 6, 3, 3, 1, NN_PAD_SAME, 1, 0);
    x = nn_relu(m, nn_batchnorm(m, x));
    int y = nn_conv2d(m, x, 6, 3, 3, 1, NN_PAD_SAME, 6, 0);
    y = nn_relu6(m, nn_batchnorm(m, y));
    y = nn_conv2d(m, y, 6, 1, 1, 1, 0, 1, 0);
    y = nn_batchnorm(m, y);
    x = nn_relu(m, nn_add(m, x, y));
    x = nn_maxpool(m, x, 2, 2, 0);
    x = nn_conv2d(m, x, 8, 3, 3, 2, NN_PAD_SAME, 1, 1);
    x = nn_gap(m, x);
    x = nn_dropout(m, x, 0.25f);
    return nn_dense(m, x, 3);
}

TEST(nn_grad_residual_network)
{
    check_layer("residual network (training)", 3, 6, 6, 3, mk_resnet, NULL, 1, 0, 5e-2);
}

TEST(nn_grad_frozen_backbone_input_gradient)
{
    /* With the backbone frozen, BN runs on running statistics; the input gradient still
     * flows through every frozen layer when asked for. */
    nn_model *m = nn_model_new(6, 6, 3);
    int out = mk_resnet(m, nn_input(m), NULL);
    T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
    nn_model_init_params(m, 3);
    randomize_constants(m, 4);
    T_REQUIRE(nn_model_freeze_backbone(m) == PT_OK);
    float x[3 * 6 * 6 * 3];
    fill_uniform(x, sizeof x / sizeof x[0], 11, -1.0f, 1.0f);
    gradcheck("frozen residual network", m, 3, 1, x, 5e-2);
    nn_model_free(m);
}

/* Every layer for imported graphs in one model: conv -> SiLU (mul by its own sigmoid)
 * -> squeeze-and-excitation (mul by a per-channel scale computed from its GAP) ->
 * concat with the conv's output -> clip -> GAP -> dense. */
static int mk_imported(nn_model *m, int in)
{
    int c = nn_conv2d(m, in, 5, 3, 3, 1, NN_PAD_SAME, 1, 1);
    int x = nn_mul(m, c, nn_sigmoid(m, c));
    int s = nn_sigmoid(m, nn_conv2d(m, nn_gap(m, x), 5, 1, 1, 1, 0, 1, 1));
    x = nn_mul(m, x, s);
    x = nn_clip(m, nn_concat(m, x, c), -0.4f, 0.4f);
    return nn_dense(m, nn_gap(m, x), 3);
}

TEST(nn_grad_imported_layers_two_replicas)
{
    /* Two contexts take 3 examples each, as the trainer's replicas do; their summed
     * gradients must match finite differences of the loss over all 6, and equal what
     * one context computes for the whole batch. */
    enum { H = 6, W = 5, C = 3, N1 = 3, N2 = 3, K = 3 };
    nn_model *m = nn_model_new(H, W, C);
    int out = mk_imported(m, nn_input(m));
    pt_err e;
    T_REQUIRE(nn_model_finalize(m, out, &e) == PT_OK);
    nn_model_init_params(m, 21);
    randomize_constants(m, 22);
    nn_model_set_input_grad(m, 1);
    const size_t per = (size_t)H * W * C, np = nn_param_count(m);
    float x[(N1 + N2) * H * W * C], R[(N1 + N2) * K];
    fill_uniform(x, sizeof x / sizeof x[0], 23, -1.0f, 1.0f);
    fill_uniform(R, sizeof R / sizeof R[0], 24, -1.0f, 1.0f);
    nn_ctx *c1 = nn_ctx_new(m, N1, NULL), *c2 = nn_ctx_new(m, N2, NULL);
    nn_ctx *all = nn_ctx_new(m, N1 + N2, NULL);
    T_REQUIRE(c1 && c2 && all);
    float *G = malloc(np * sizeof *G), GX[(N1 + N2) * H * W * C];
    nn_zero_grads(c1);
    nn_zero_grads(c2);
    T_REQUIRE(nn_forward(c1, x, N1, 1, 1234, 0) && nn_forward(c2, x + N1 * per, N2, 1, 1234, N1));
    T_REQUIRE(nn_backward(c1, R) == PT_OK && nn_backward(c2, R + N1 * K) == PT_OK);
    for (size_t i = 0; i < np; i++)
        G[i] = nn_grads(c1)[i] + nn_grads(c2)[i];
    memcpy(GX, nn_ctx_input_grad(c1), N1 * per * sizeof *GX);
    memcpy(GX + N1 * per, nn_ctx_input_grad(c2), N2 * per * sizeof *GX);

    /* One context, the whole batch: the same sums up to rounding. */
    nn_zero_grads(all);
    T_REQUIRE(nn_forward(all, x, N1 + N2, 1, 1234, 0) != NULL);
    T_REQUIRE(nn_backward(all, R) == PT_OK);
    double gmax = 0.0, diff = 0.0, xdiff = 0.0;
    for (size_t i = 0; i < np; i++) {
        gmax = fmax(gmax, fabs(G[i]));
        diff = fmax(diff, fabs(G[i] - nn_grads(all)[i]));
    }
    for (size_t i = 0; i < (N1 + N2) * per; i++)
        xdiff = fmax(xdiff, fabs(GX[i] - nn_ctx_input_grad(all)[i]));
    T_CHECKF(diff <= 1e-5 * gmax && xdiff <= 1e-5,
             "two replicas vs one context: parameter gradients differ by %g (largest %g), "
             "input gradients by %g", diff, gmax, xdiff);

    fd f = {c1, x, N1, 1, R, N1 * K, c2, N2, per, N2 * K};
    double L0 = loss_at(&f);
    fd_result ri = compare(&f, x, (N1 + N2) * per, GX, NULL, L0);
    T_CHECKF(ri.max_err <= 5e-2 && ri.skipped * 10 <= ri.checked,
             "input gradient: max rel err %.3g at %zu (analytic %.6g numeric %.6g), %d checked, "
             "%d skipped at kinks", ri.max_err, ri.worst, ri.worst_a, ri.worst_n, ri.checked,
             ri.skipped);
    fd_result rp = compare(&f, nn_params(m), np, G, NULL, L0);
    T_CHECKF(rp.max_err <= 5e-2 && rp.skipped * 10 <= rp.checked,
             "parameter gradient: max rel err %.3g at %zu (analytic %.6g numeric %.6g), "
             "%d checked, %d skipped at kinks", rp.max_err, rp.worst, rp.worst_a, rp.worst_n,
             rp.checked, rp.skipped);
    /* The clip does clip: some of its outputs sit on a bound. */
    const float *y = nn_ctx_output(all, out - 2);
    size_t on_bound = 0, total = (size_t)(N1 + N2) * H * W * 10;
    for (size_t i = 0; i < total; i++)
        on_bound += y[i] == -0.4f || y[i] == 0.4f;
    T_CHECKF(on_bound > total / 20 && on_bound < total * 19 / 20, "%zu of %zu clipped",
             on_bound, total);
    free(G);
    nn_ctx_free(c1);
    nn_ctx_free(c2);
    nn_ctx_free(all);
    nn_model_free(m);
}

TEST(nn_grad_softmax_ce_hard_and_soft)
{
    enum { N = 4, K = 5 };
    float z[N * K], d[N * K];
    fill_uniform(z, N * K, 3, -3.0f, 3.0f);
    int32_t a[N] = {0, 4, 2, 2}, b[N] = {3, 4, 1, 2};
    float mix[N] = {0.7f, 1.0f, 0.25f, 1.0f};
    /* Hard and two-label targets, each plain and label-smoothed. */
    for (int mode = 0; mode < 4; mode++) {
        const int soft = mode & 1;
        const float sm = mode & 2 ? 0.1f : 0.0f;
        const int32_t *bb = soft ? b : NULL;
        const float *mm = soft ? mix : NULL;
        const float scale = 0.25f;
        double L;
        int32_t pred[N];
        T_REQUIRE(nn_softmax_ce_smooth(z, N, K, a, bb, mm, sm, scale, &L, d, pred, NULL) ==
                  PT_OK);
        /* The loss itself, straight from the definition: the sum over classes of
         * target x -log(softmax). */
        double ref = 0.0;
        for (int i = 0; i < N; i++) {
            double s = 0.0;
            int best = 0;
            for (int j = 0; j < K; j++) {
                s += exp((double)z[i * K + j]);
                if (z[i * K + j] > z[i * K + best])
                    best = j;
            }
            double wa = soft ? mix[i] : 1.0;
            for (int j = 0; j < K; j++) {
                double t = sm / K + (1.0 - sm) * ((j == a[i]) * wa + (soft && j == b[i]) * (1.0 - wa));
                if (!soft && j == a[i])
                    t = sm / K + (1.0 - sm);
                ref += t * -log(exp((double)z[i * K + j]) / s);
            }
            T_EQ_INT(pred[i], best);
        }
        T_NEAR(L, ref, 1e-5 * fabs(ref));
        double max_err = 0.0;
        for (int i = 0; i < N * K; i++) {
            const float keep = z[i];
            double Lp, Lm;
            z[i] = keep + 1e-3f;
            double hp = (double)z[i] - keep;
            nn_softmax_ce_smooth(z, N, K, a, bb, mm, sm, 1.0f, &Lp, NULL, NULL, NULL);
            z[i] = keep - 1e-3f;
            double hm = keep - (double)z[i];
            nn_softmax_ce_smooth(z, N, K, a, bb, mm, sm, 1.0f, &Lm, NULL, NULL, NULL);
            z[i] = keep;
            double num = scale * (Lp - Lm) / (hp + hm);
            max_err = fmax(max_err, fabs(num - d[i]) / fmax(fabs(num), 1e-3));
        }
        T_CHECKF(max_err < 1e-3, "softmax-ce (%s targets, smoothing %g): max rel err %.3g",
                 soft ? "soft" : "hard", sm, max_err);
        /* Without smoothing it is nn_softmax_ce, bit for bit. */
        if (sm == 0.0f) {
            float d0[N * K];
            double L0;
            T_REQUIRE(nn_softmax_ce(z, N, K, a, bb, mm, scale, &L0, d0, NULL, NULL) == PT_OK);
            T_CHECK(L0 == L && memcmp(d0, d, sizeof d) == 0);
        }
    }
    /* Huge logits stay finite (log-sum-exp). */
    float big[2] = {1000.0f, -1000.0f};
    double L;
    int32_t lab = 1;
    T_REQUIRE(nn_softmax_ce(big, 1, 2, &lab, NULL, NULL, 1.0f, &L, d, NULL, NULL) == PT_OK);
    T_NEAR(L, 2000.0, 1e-3);
    T_CHECK(isfinite(d[0]) && isfinite(d[1]));
    /* A label out of range is an error and writes nothing. */
    lab = 2;
    pt_err e;
    d[0] = 42.0f;
    T_EQ_INT(nn_softmax_ce(big, 1, 2, &lab, NULL, NULL, 1.0f, &L, d, NULL, &e), PT_ECLASS);
    T_CHECK(d[0] == 42.0f);
}
