/* layer_conv — NN_OP_CONV: 2-D convolution, grouped and depthwise included, with an
 * optional bias and an optional fused ReLU/ReLU6. This file is the kind's glue; the
 * kernels are nn_conv.c (im2col + sgemm and the dispatch), nn_dw.c (depthwise) and
 * nn_gemm.c (1x1 products). Weights HWIO [kh][kw][cin/groups][cout], then cout biases. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/nn_import_impl.h"
#include "nn/nn_layer.h"

/* ---- builder ---- */

/* The conv's own checks and fields around a placed window; pads NULL: the pad of
 * nn_conv2d, else the explicit pads of nn_conv2d_ex. */
static int conv(nn_model *m, int in, int cout, int kh, int kw, int stride_h, int stride_w,
                int pad, const int *pads, int groups, int bias)
{
    int rc = nn_build_check_in(m, in, "conv2d");
    if (rc)
        return rc;
    int cin = m->nodes[in].c;
    if (cout < 1 || groups < 1 || cin % groups || cout % groups)
        return nn_build_fail(m, PT_EUSAGE, "conv2d: %d groups do not divide %d -> %d channels",
                             groups, cin, cout);
    int id = pads ? nn_build_window_ex(m, NN_OP_CONV, in, kh, kw, stride_h, stride_w, pads,
                                       "conv2d")
                  : nn_build_window(m, NN_OP_CONV, in, kh, kw, stride_h, pad, "conv2d");
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    nd->c = cout;
    nd->groups = groups;
    nd->has_bias = bias != 0;
    nd->w_len = (size_t)kh * kw * (cin / groups) * cout;
    nd->b_len = bias ? (size_t)cout : 0;
    nn_node_set_len(nd);
    return id;
}

int nn_conv2d(nn_model *m, int in, int cout, int kh, int kw, int stride, int pad, int groups,
              int bias)
{
    return conv(m, in, cout, kh, kw, stride, stride, pad, NULL, groups, bias);
}

int nn_conv2d_ex(nn_model *m, int in, int cout, int kh, int kw, int stride_h, int stride_w,
                 int pad_t, int pad_l, int pad_b, int pad_r, int groups, int bias)
{
    const int pads[4] = {pad_t, pad_l, pad_b, pad_r};
    return conv(m, in, cout, kh, kw, stride_h, stride_w, 0, pads, groups, bias);
}

/* ---- forward and backward ---- */

/* A forward split across the context's team: each part computes a slice of the
 * output rows into its own workspace. */
typedef struct conv_part {
    const nn_conv_shape *s;
    const nn_fwd *f;
    const float *bias;
    int cols;               /* the units are output channels, not rows */
} conv_part;

static void conv_part_run(void *arg, long u0, long u1, int part)
{
    const conv_part *j = arg;
    const nn_fwd *f = j->f;
    float *ws = nn_ws_part(f->c, part);
    const float *wpk = f->c->wpk ? f->c->wpk[f->i] : NULL;
    if (j->cols) {
        nn_conv_fwd_cols(j->s, f->x, f->P, wpk, j->bias, f->nd->fused_act, f->y, ws, (int)u0,
                         (int)u1);
        return;
    }
    const long unit = nn_conv_is_depthwise(j->s) ? j->s->ow : 1;
    nn_conv_fwd_rows(j->s, f->x, f->P, wpk, j->bias, f->nd->fused_act, f->y, ws, u0 * unit,
                     u1 * unit);
}

/* A forward splits by output channels where it has fewer output rows (M) than
 * channels (N): a row split has every part read all K x N weights and its M / p rows
 * of input, a channel split all M x K inputs (and their im2col) and N / p columns of
 * weights; the second reads less when M < N (the deep layers at batch 1). */

/* Output rows a part must have for the split to pay: a team's hand-over costs a few
 * microseconds, as much as a few thousand multiply-adds. */
#define CONV_PART_MIN_FLOPS 200000L

static void conv_forward(const nn_fwd *f)
{
    const nn_node *nd = f->nd;
    nn_conv_shape s;
    nn_conv_shape_of(f->m, nd, f->n, &s);
    s.bf16 = f->c->bf16 ? &f->c->bws : NULL;
    const float *bias = nd->has_bias ? f->P + nd->w_len : NULL;
    /* Only a replay gets an xform, and only a depthwise conv is replayed. */
    if (f->xf) {
        nn_dw_fwd_xf(&s, f->xf, f->P, bias, nd->fused_act, f->y, f->c->ws);
        return;
    }
    if (f->c->team && !f->c->bf16) {
        const int dw = nn_conv_is_depthwise(&s);
        const long per_row = 2L * s.kh * s.kw * (s.cin / s.groups) * s.cout;
        const long units = dw ? (long)s.n * s.oh : (long)s.n * s.oh * s.ow;
        const long per_unit = dw ? per_row * s.ow : per_row;
        const int parts = f->c->team->parts;
        if (!dw && units < s.cout && nn_conv_fwd_cols_ok(&s) && s.cout >= 32 * parts) {
            /* Whole 64-column blocks: a part's columns of packed weights start at
             * one. */
            const conv_part j = { &s, f, bias, 1 };
            nn_par_units(f->c, s.cout, 64, 64, conv_part_run, (void *)&j);
            return;
        }
        const conv_part j = { &s, f, bias, 0 };
        /* Whole grains of 16 rows keep the products' row blocks whole. */
        nn_par_units(f->c, units, CONV_PART_MIN_FLOPS / per_unit + 1, dw ? 1 : 16,
                     conv_part_run, (void *)&j);
        return;
    }
    if (f->c->wpk && f->c->wpk[f->i] && !f->c->bf16) {
        nn_conv_fwd_rows(&s, f->x, f->P, f->c->wpk[f->i], bias, nd->fused_act, f->y, f->c->ws,
                         0, (long)s.n * s.oh * s.ow);
        return;
    }
    nn_conv_fwd(&s, f->x, f->P, bias, nd->fused_act, f->y, f->c->ws);
}

/* Whether conv i's input gradient can go on through the activation fused into the
 * conv that produced its input, in the same pass (xa filled in, and that conv marked
 * so its own backward skips the step). Only when i is the activation's one reader:
 * then i writes that gradient whole (acc is 0), nothing adds to it later. */
static int through_producer(nn_ctx *c, int i, int acc, nn_dx_act *xa)
{
    const nn_model *m = c->m;
    const int a = m->nodes[i].in[0], p = nn_owner(m, a);
    const nn_node *pn = &m->nodes[p];
    /* An observer of gradients (nn_ctx_on_node_grad) is told the gradient of the
     * activated output, which this would overwrite before the conv's step. */
    if (acc || p == a || pn->op != NN_OP_CONV || !pn->fused_act || m->nodes[a].consumers != 1 ||
        c->observe_grad)
        return 0;
    xa->act = pn->fused_act;
    xa->x = c->outp[a];
    xa->db = pn->trainable && pn->has_bias ? c->grads + pn->p_off + pn->w_len : NULL;
    c->dy_done[p] = 1;
    return 1;
}

static void conv_backward(const nn_bwd *b)
{
    const nn_node *nd = b->nd;
    nn_conv_shape s;
    nn_conv_shape_of(b->m, nd, b->n, &s);
    s.bf16 = b->c->bf16 ? &b->c->bws : NULL;
    nn_dx_act xa;
    const int through = b->dx && through_producer(b->c, b->i, b->acc, &xa);
    /* b->dy is the conv's own storage (a conv is never an alias): the fused activation
     * may rewrite it in place. */
    if (b->dx || b->G)
        nn_conv_bwd(&s, b->x, b->P, b->y, b->dy, nd->fused_act, b->c->dy_done[b->i], b->dx,
                    b->acc, b->G, b->G && nd->has_bias ? b->G + nd->w_len : NULL, b->c->ws,
                    through ? &xa : NULL, b->xf);
}

static int is_depthwise(const nn_model *m, const nn_node *nd)
{
    nn_conv_shape s;
    nn_conv_shape_of(m, nd, 1, &s);
    return nn_conv_is_depthwise(&s);
}

/* A depthwise conv is kh * kw multiply-adds per value, a small share of a step, and
 * its forward has no side effects: a training context recomputes its output in the
 * backward (conv_forward again) rather than keep it (nn_ctx.c). Only at stride 1: at
 * stride 2 the replay reads four times what it saves (a memory-bound pass; for the
 * built-in MobileNetV2 at 512 px, 3% of the memory, bench/RESULTS.md). */
static int conv_replayable(const nn_model *m, const nn_node *nd)
{
    return is_depthwise(m, nd) && nd->stride == 1;
}

/* The depthwise kernels and the 1x1 path compute an xform input a block of rows at a
 * time (nn_conv.c, nn_dw.c); im2col would need it whole. The shapes are nn_conv.c's
 * own tests, so what takes an xform is what its backward routes to those paths. */
static int conv_takes_xform(const nn_model *m, const nn_node *nd)
{
    nn_conv_shape s;
    nn_conv_shape_of(m, nd, 1, &s);
    return nn_conv_is_depthwise(&s) || nn_conv_is_pointwise(&s);
}

/* Only for the mask of a fused activation. */
static int conv_reads_output(const nn_node *nd)
{
    return nd->fused_act != NN_ACT_NONE;
}

static size_t conv_ws_floats(const nn_model *m, const nn_node *nd, int max_batch)
{
    nn_conv_shape s;
    nn_conv_shape_of(m, nd, max_batch, &s);
    size_t k = nn_conv_ws_floats(&s);
    /* Room for an xform input when the node feeding it could leave it to its readers. */
    const nn_node *p = &m->nodes[nn_owner(m, nd->in[0])];
    if (conv_takes_xform(m, nd) && nn_layers[p->op]->as_xform) {
        size_t x = nn_conv_ws_floats_xf(&s);
        k = x > k ? x : k;
    }
    return k;
}

static size_t conv_bf16_bytes(const nn_model *m, const nn_node *nd, int max_batch)
{
    nn_conv_shape s;
    nn_conv_shape_of(m, nd, max_batch, &s);
    return nn_conv_bf16_bytes(&s);
}

/* ---- initialisation, FLOPs, summary ---- */

/* Keras he_normal: normal truncated at two standard deviations, with the standard
 * deviation corrected so the truncated distribution has the intended one. */
static float trunc_normal(rng *r, double std)
{
    for (;;) {
        double z = rng_normal(r);
        if (z >= -2.0 && z <= 2.0)
            return (float)(z * std / 0.87962566103423978);
    }
}

static void conv_init(const nn_model *m, const nn_node *nd, float *p, float *buf, rng *r)
{
    (void)buf;
    const double fan_in = nn_init_fan_in(nd);
    const float torch_lim = (float)(1.0 / sqrt(fan_in));
    for (size_t j = 0; j < nd->w_len; j++)
        p[j] = m->init == NN_INIT_TORCH        ? rng_uniform(r, -torch_lim, torch_lim)
               : m->init == NN_INIT_HE_UNIFORM ? rng_uniform(r, -1.0f, 1.0f) *
                                                     (float)sqrt(6.0 / fan_in)
                                               : trunc_normal(r, sqrt(2.0 / fan_in));
    nn_init_bias(m, nd, p, r);
}

/* Output elements times weights per output. */
static double conv_macs(const nn_node *nd)
{
    return (double)nd->len * (double)nd->w_len / (double)nd->c;
}

static void conv_describe(const nn_model *m, const nn_node *nd, char *buf, size_t size)
{
    snprintf(buf, size, "%s%dx%d/%d",
             nd->groups > 1 && nd->groups == nd->c && nd->groups == m->nodes[nd->in[0]].c
                 ? "dwconv "
                 : "conv ",
             nd->kh, nd->kw, nd->stride);
}

/* ---- the table entry ---- */

/* A stride-2 "same" conv (asymmetric padding) with a bias. */
static int conv_grad_graph(nn_model *m, int in)
{
    return nn_conv2d(m, in, 4, 3, 3, 2, NN_PAD_SAME, 1, 1);
}

static const nn_grad_case conv_grad = {2, 6, 7, 3, NN_GRAD_UNIFORM, conv_grad_graph};

/* Conv with OIHW weights; a BN folded into it (nn_export.h) scales each output
 * channel's weights and moves its bias, computed in double. */
static int conv_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    const nn_node *nd = &m->nodes[i];
    int cg = m->nodes[nd->in[0]].c / nd->groups, co = nd->c, kh = nd->kh, kw = nd->kw;
    const float *W = m->params + nd->p_off, *B = nd->has_bias ? W + nd->w_len : NULL;
    int bn = nn_onnx_fold_next(w, i);
    float *wt = nn_onnx_scratch(w, nd->w_len), *bias = nn_onnx_scratch(w, (size_t)co);
    if (!wt || !bias)
        return nn_onnx_status(w);
    for (int o = 0; o < co; o++) {
        double a = 1.0, b = B ? B[o] : 0.0;
        if (bn >= 0) {
            const nn_node *bd = &m->nodes[bn];
            const float *g = m->params + bd->p_off, *mu = m->bufs + bd->buf_off;
            a = g[o] / sqrt((double)mu[co + o] + bd->bn_eps);
            b = (b - mu[o]) * a + g[co + o];
        }
        bias[o] = (float)b;
        for (int ci = 0; ci < cg; ci++)
            for (int y = 0; y < kh; y++)
                for (int x = 0; x < kw; x++)
                    wt[(((size_t)o * cg + ci) * kh + y) * kw + x] =
                        (float)(W[(((size_t)y * kw + x) * cg + ci) * co + o] * a);
    }
    const int64_t wd[4] = { co, cg, kh, kw };
    const char *in[3] = { nn_onnx_in(w, i, 0, 1), nn_onnx_weight(w, i, "weight", 4, wd, wt),
                          NULL };
    if (B || bn >= 0)
        in[2] = nn_onnx_bias(w, i, "bias", co, bias, in[0], in[1]);
    nn_onnx_op(w, "Conv", in[2] ? 3 : 2, in, nn_onnx_out(w, i, 4));
    const int64_t k[2] = { kh, kw }, s[2] = { nd->stride, nd->stride };
    const int64_t p[4] = { nd->pad_t, nd->pad_l, nd->pad_b, nd->pad_r };
    nn_onnx_attr_ints(w, "kernel_shape", 2, k);
    nn_onnx_attr_ints(w, "strides", 2, s);
    nn_onnx_attr_ints(w, "pads", 4, p);
    nn_onnx_attr_int(w, "group", nd->groups);
    return nn_onnx_status(w);
}

/* ---- ONNX import ---- */

/* Conv (X, W, B) and QLinearConv (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp,
 * B): the only reader of a Pad's zeros, which it adds to its own padding; on the
 * caffe input (BGR) its weights are read for RGB (nn_imp_fill_conv). */
static int conv_import(struct imp *I, const onnx_node *n)
{
    int quant = !strcmp(n->op_type, "QLinearConv");
    int in, extra[4], bgr, rc = nn_imp_in_node_padded(I, n, 0, &in, extra, &bgr);
    if (rc)
        return rc;
    const onnx_tensor *w = nn_imp_const(I, n, quant ? 3 : 1);
    if (!w || w->rank != 4)
        return nn_imp_err(I, n, "the weights must be a constant 4-D tensor");
    nn_node_info ni = nn_imp_info(I, in);
    int64_t g = onnx_attr_int(n, "group", 1);
    int64_t cout = w->dims[0], cg = w->dims[1], kh = w->dims[2], kw = w->dims[3];
    if (g < 1 || cg * g != ni.c || cout % g != 0)
        return nn_imp_err(I, n, "weights [%lld, %lld, %lld, %lld] with group %lld do not fit %d "
                        "input channels",
                        (long long)cout, (long long)cg, (long long)kh, (long long)kw,
                        (long long)g, ni.c);
    if (bgr && g != 1)
        return nn_imp_err(I, n, "a grouped convolution of the caffe input's BGR order: only "
                          "per-channel constants and convolutions may read it");
    int64_t k[2] = { kh, kw }, s[2] = { 1, 1 }, p[4] = { 0, 0, 0, 0 };
    if ((rc = nn_imp_window(I, n, in, k, s, p)) != PT_OK)
        return rc;
    if (extra[0] || extra[1] || extra[2] || extra[3]) {
        /* A Pad of zeros before it (tf2onnx writes them for TensorFlow's "same"):
         * the same as padding the conv itself, which the kernels do for free. */
        if (strcmp(onnx_attr_string(n, "auto_pad", "NOTSET"), "NOTSET") != 0)
            return nn_imp_err(I, n, "a Pad before a Conv with auto_pad is not supported");
        for (int a = 0; a < 4; a++)
            p[a] += extra[a];
    }
    int bias = quant ? nn_imp_const(I, n, 8) != NULL : nn_imp_const(I, n, 2) != NULL;
    int id = nn_conv2d_ex(I->m, in, (int)cout, (int)kh, (int)kw, (int)s[0], (int)s[1], (int)p[0],
                          (int)p[1], (int)p[2], (int)p[3], (int)g, bias);
    id = nn_imp_built(I, n, id);
    if (id < 0)
        return id;
    fill *f = nn_imp_add_fill(I, quant ? F_QCONV : F_CONV, id, n);
    if (!f)
        return PT_ENOMEM;
    f->rev_cin = bgr; /* the file's BGR input: weights read for RGB (nn_imp_fill_conv) */
    if (quant) {
        I->quantized = 1;
        if ((id = nn_imp_q_act(I, n, id, 6, 7)) < 0)
            return id;
    }
    return nn_imp_out_node(I, n, id, 0);
}

static const char *const conv_ops[] = { "Conv", "QLinearConv", NULL };

const nn_layer nn_layer_conv = {
    .flags = NN_LAYER_FUSES_ACT,
    .forward = conv_forward,
    .backward = conv_backward,
    .init = conv_init,
    .macs = conv_macs,
    .describe = conv_describe,
    .ws_floats = conv_ws_floats,
    .bf16_bytes = conv_bf16_bytes,
    .grad = &conv_grad,
    .onnx_write = conv_onnx,
    .reads_output = conv_reads_output,
    .replayable = conv_replayable,
    .replay = conv_forward,
    .takes_xform = conv_takes_xform,
    .onnx_ops = conv_ops,
    .onnx_import = conv_import,
};
