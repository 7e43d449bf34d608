/* layer_act — the pointwise activations, four kinds with a table entry each:
 * NN_OP_RELU and NN_OP_RELU6 (which a BN or conv reading into them alone applies
 * itself: the node then only shares that layer's output, see nn_model_finalize),
 * NN_OP_SIGMOID and NN_OP_CLIP. No parameters. ONNX: Relu, Sigmoid and Clip both ways
 * (ReLU6 is Clip(0, 6)). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/nn_import_impl.h"
#include "nn/nn_layer.h"

/* ---- builders ---- */

int nn_relu(nn_model *m, int in)
{
    return nn_build_unary(m, NN_OP_RELU, in, "relu");
}

int nn_relu6(nn_model *m, int in)
{
    return nn_build_unary(m, NN_OP_RELU6, in, "relu6");
}

int nn_sigmoid(nn_model *m, int in)
{
    return nn_build_unary(m, NN_OP_SIGMOID, in, "sigmoid");
}

int nn_clip(nn_model *m, int in, float lo, float hi)
{
    int rc = nn_build_check_in(m, in, "clip");
    if (rc)
        return rc;
    /* Written so that a NaN bound fails too. */
    if (!(lo <= hi))
        return nn_build_fail(m, PT_EUSAGE, "clip: bounds [%g, %g] are not an interval",
                             (double)lo, (double)hi);
    int id = nn_build_unary(m, NN_OP_CLIP, in, "clip");
    if (id >= 0) {
        m->nodes[id].lo = lo;
        m->nodes[id].hi = hi;
    }
    return id;
}

/* ---- ReLU and ReLU6 ---- */

static void nn_act_fwd(size_t len, int act, const float *x, float *y)
{
    const float *restrict xs = x;
    float *restrict ys = y;
    if (act == NN_ACT_RELU) {
        for (size_t i = 0; i < len; i++)
            ys[i] = xs[i] > 0.0f ? xs[i] : 0.0f;
    } else {
        for (size_t i = 0; i < len; i++) {
            float v = xs[i] > 0.0f ? xs[i] : 0.0f;
            ys[i] = v < 6.0f ? v : 6.0f;
        }
    }
}

static void nn_act_bwd(size_t len, int act, const float *y, const float *dy, float *dx, int accum)
{
    const float *restrict ys = y, *restrict g = dy;
    float *restrict d = dx;
    if (act == NN_ACT_RELU) {
        if (accum)
            for (size_t i = 0; i < len; i++)
                d[i] += g[i] * (ys[i] > 0.0f ? 1.0f : 0.0f);
        else
            for (size_t i = 0; i < len; i++)
                d[i] = g[i] * (ys[i] > 0.0f ? 1.0f : 0.0f);
    } else {
        if (accum)
            for (size_t i = 0; i < len; i++)
                d[i] += g[i] * (ys[i] > 0.0f ? 1.0f : 0.0f) * (ys[i] < 6.0f ? 1.0f : 0.0f);
        else
            for (size_t i = 0; i < len; i++)
                d[i] = g[i] * (ys[i] > 0.0f ? 1.0f : 0.0f) * (ys[i] < 6.0f ? 1.0f : 0.0f);
    }
}

static void act_forward(const nn_fwd *f, int act)
{
    if (f->nd->alias >= 0)
        f->c->outp[f->i] = f->c->outp[f->nd->alias];
    else
        nn_act_fwd((size_t)f->n * f->nd->len, act, f->x, f->y);
}

static void relu_forward(const nn_fwd *f)
{
    act_forward(f, NN_ACT_RELU);
}

static void relu6_forward(const nn_fwd *f)
{
    act_forward(f, NN_ACT_RELU6);
}

/* A fused one never runs its backward: its gradient sits in its BN's or conv's
 * storage, and that layer's backward takes it through the activation. */
static void relu_backward(const nn_bwd *b)
{
    if (b->dx)
        nn_act_bwd(b->len, NN_ACT_RELU, b->y, b->dy, b->dx, b->acc);
}

static void relu6_backward(const nn_bwd *b)
{
    if (b->dx)
        nn_act_bwd(b->len, NN_ACT_RELU6, b->y, b->dy, b->dx, b->acc);
}

/* ---- sigmoid ---- */

static void nn_sigmoid_fwd(size_t len, const float *x, float *y)
{
    const float *restrict xs = x;
    float *restrict ys = y;
    /* With e = exp(-|x|) <= 1 nothing overflows: sigmoid(x) = 1 / (1 + e) for x >= 0
     * and e / (1 + e) for x < 0, which keeps the small values' relative accuracy
     * (1 - 1 / (1 + exp(x)) would cancel to 0 long before the true value underflows). */
    for (size_t i = 0; i < len; i++) {
        const float e = expf(-fabsf(xs[i]));
        const float s = 1.0f / (1.0f + e);
        ys[i] = xs[i] >= 0.0f ? s : e * s;
    }
}

/* From the output alone: dx = dy * y * (1 - y). */
static void nn_sigmoid_bwd(size_t len, const float *y, const float *dy, float *dx, int accum)
{
    const float *restrict ys = y, *restrict g = dy;
    float *restrict d = dx;
    if (accum)
        for (size_t i = 0; i < len; i++)
            d[i] += g[i] * ys[i] * (1.0f - ys[i]);
    else
        for (size_t i = 0; i < len; i++)
            d[i] = g[i] * ys[i] * (1.0f - ys[i]);
}

static void sigmoid_forward(const nn_fwd *f)
{
    nn_sigmoid_fwd((size_t)f->n * f->nd->len, f->x, f->y);
}

static void sigmoid_backward(const nn_bwd *b)
{
    if (b->dx)
        nn_sigmoid_bwd(b->len, b->y, b->dy, b->dx, b->acc);
}

/* ---- clip ---- */

static void nn_clip_fwd(size_t len, float lo, float hi, const float *x, float *y)
{
    const float *restrict xs = x;
    float *restrict ys = y;
    /* Compares that are false for NaN, so a NaN input stays NaN (as torch.clamp). */
    for (size_t i = 0; i < len; i++) {
        float v = xs[i] < lo ? lo : xs[i];
        ys[i] = v > hi ? hi : v;
    }
}

/* From the input: dx = dy where lo <= x <= hi, else 0. */
static void nn_clip_bwd(size_t len, float lo, float hi, const float *x, const float *dy, float *dx,
                        int accum)
{
    /* torch.clamp's subgradient: 1 on the closed interval [lo, hi]. It needs the input,
     * not the output: y == lo cannot tell x == lo (passes) from x < lo (does not). The
     * mask is a product of selects so the loop vectorises. */
    const float *restrict xs = x, *restrict g = dy;
    float *restrict d = dx;
    if (accum)
        for (size_t i = 0; i < len; i++)
            d[i] += g[i] * (xs[i] >= lo ? 1.0f : 0.0f) * (xs[i] <= hi ? 1.0f : 0.0f);
    else
        for (size_t i = 0; i < len; i++)
            d[i] = g[i] * (xs[i] >= lo ? 1.0f : 0.0f) * (xs[i] <= hi ? 1.0f : 0.0f);
}

static void clip_forward(const nn_fwd *f)
{
    nn_clip_fwd((size_t)f->n * f->nd->len, f->nd->lo, f->nd->hi, f->x, f->y);
}

static void clip_backward(const nn_bwd *b)
{
    if (b->dx)
        nn_clip_bwd(b->len, b->nd->lo, b->nd->hi, b->x, b->dy, b->dx, b->acc);
}

static void clip_describe(const nn_model *m, const nn_node *nd, char *buf, size_t size)
{
    (void)m;
    snprintf(buf, size, "clip %g,%g", (double)nd->lo, (double)nd->hi);
}

/* ---- the table entries ---- */

static int relu_grad_graph(nn_model *m, int in)
{
    return nn_relu(m, in);
}

static int relu6_grad_graph(nn_model *m, int in)
{
    return nn_relu6(m, in);
}

/* A conv in front: its parameters' gradients go through the sigmoid. */
static int sigmoid_grad_graph(nn_model *m, int in)
{
    return nn_sigmoid(m, nn_conv2d(m, in, 4, 3, 3, 1, NN_PAD_SAME, 1, 1));
}

/* About half the inputs clipped, none within 0.05 of a bound. */
static int clip_grad_graph(nn_model *m, int in)
{
    return nn_clip(m, in, -0.5f, 0.5f);
}

static const nn_grad_case relu_grad = {2, 3, 3, 4, NN_GRAD_AWAY_FROM_0, relu_grad_graph};
static const nn_grad_case relu6_grad = {2, 3, 3, 4, NN_GRAD_AWAY_FROM_0_6, relu6_grad_graph};
static const nn_grad_case sigmoid_grad = {2, 4, 4, 3, NN_GRAD_UNIFORM, sigmoid_grad_graph};
static const nn_grad_case clip_grad = {2, 3, 3, 4, NN_GRAD_AWAY_FROM_HALF, clip_grad_graph};

/* ---- ONNX ---- */

static int relu_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    (void)m;
    return nn_onnx_simple(w, i, "Relu", 1);
}

static int sigmoid_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    (void)m;
    return nn_onnx_simple(w, i, "Sigmoid", 1);
}

/* Clip with its bounds as scalar inputs (opset 11 on); an infinite bound is left out
 * (""), which is what Clip does without one. */
static int clip_bounds_onnx(struct nn_onnx_writer *w, int i, float lo, float hi)
{
    int r = nn_onnx_in_rank(w, i, 0);
    const char *in[3] = { nn_onnx_in(w, i, 0, 0), "", "" };
    int n = 1;
    if (!isinf(lo) || lo > 0.0f)
        in[1] = nn_onnx_const(w, i, "min", 0, NULL, &lo);
    if (!isinf(hi) || hi < 0.0f)
        in[2] = nn_onnx_const(w, i, "max", 0, NULL, &hi);
    if (in[1][0])
        n = 2;
    if (in[2][0])
        n = 3;
    return nn_onnx_op(w, "Clip", n, in, nn_onnx_out(w, i, r));
}

static int relu6_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    (void)m;
    return clip_bounds_onnx(w, i, 0.0f, 6.0f);
}

static int clip_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    return clip_bounds_onnx(w, i, m->nodes[i].lo, m->nodes[i].hi);
}

/* ---- ONNX import ---- */

/* Clip's bounds: scalar inputs (opset 11 on) or attributes (before), absent ones
 * infinite. */
static int clip_bounds(struct imp *I, const onnx_node *n, float *lo, float *hi)
{
    int rc = nn_imp_const_scalar(I, n, 1, "min", -INFINITY, lo);
    return rc ? rc : nn_imp_const_scalar(I, n, 2, "max", INFINITY, hi);
}

/* Relu, and a Clip to [0, inf). (Each Clip's input is checked before its bounds, as
 * the errors have always come.) */
static int relu_import(struct imp *I, const onnx_node *n)
{
    int in, rc = nn_imp_in_node(I, n, 0, 0, &in);
    if (rc)
        return rc;
    if (!strcmp(n->op_type, "Clip")) {
        float lo, hi;
        if ((rc = clip_bounds(I, n, &lo, &hi)) != PT_OK)
            return rc;
        if (!(lo == 0.0f && isinf(hi)))
            return NN_IMP_DECLINE;
    }
    int id = nn_imp_built(I, n, nn_relu(I->m, in));
    return id < 0 ? id : nn_imp_out_node(I, n, id, 0);
}

/* A Clip to [0, 6]. */
static int relu6_import(struct imp *I, const onnx_node *n)
{
    float lo, hi;
    int in, rc = nn_imp_in_node(I, n, 0, 0, &in);
    if (rc || (rc = clip_bounds(I, n, &lo, &hi)) != PT_OK)
        return rc;
    if (!(lo == 0.0f && hi == 6.0f))
        return NN_IMP_DECLINE;
    int id = nn_imp_built(I, n, nn_relu6(I->m, in));
    return id < 0 ? id : nn_imp_out_node(I, n, id, 0);
}

static int sigmoid_import(struct imp *I, const onnx_node *n)
{
    int in, rc = nn_imp_in_node(I, n, 0, 0, &in);
    if (rc)
        return rc;
    int id = nn_imp_built(I, n, nn_sigmoid(I->m, in));
    return id < 0 ? id : nn_imp_out_node(I, n, id, 0);
}

/* Any other Clip (relu and relu6, earlier in the table, take theirs). */
static int clip_import(struct imp *I, const onnx_node *n)
{
    float lo, hi;
    int in, rc = nn_imp_in_node(I, n, 0, 0, &in);
    if (rc || (rc = clip_bounds(I, n, &lo, &hi)) != PT_OK)
        return rc;
    int id = nn_imp_built(I, n, nn_clip(I->m, in, lo, hi));
    return id < 0 ? id : nn_imp_out_node(I, n, id, 0);
}

static const char *const relu_ops[] = { "Relu", "Clip", NULL };
static const char *const clip_ops[] = { "Clip", NULL };
static const char *const sigmoid_ops[] = { "Sigmoid", NULL };

const nn_layer nn_layer_relu = {
    .act = NN_ACT_RELU,
    .forward = relu_forward,
    .backward = relu_backward,
    .grad = &relu_grad,
    .onnx_write = relu_onnx,
    .onnx_ops = relu_ops,
    .onnx_import = relu_import,
};

const nn_layer nn_layer_relu6 = {
    .act = NN_ACT_RELU6,
    .forward = relu6_forward,
    .backward = relu6_backward,
    .grad = &relu6_grad,
    .onnx_write = relu6_onnx,
    .onnx_ops = clip_ops,
    .onnx_import = relu6_import,
};

const nn_layer nn_layer_sigmoid = {
    .forward = sigmoid_forward,
    .backward = sigmoid_backward,
    .grad = &sigmoid_grad,
    .onnx_write = sigmoid_onnx,
    .onnx_ops = sigmoid_ops,
    .onnx_import = sigmoid_import,
};

const nn_layer nn_layer_clip = {
    .forward = clip_forward,
    .backward = clip_backward,
    .describe = clip_describe,
    .grad = &clip_grad,
    .onnx_write = clip_onnx,
    .onnx_ops = clip_ops,
    .onnx_import = clip_import,
};
