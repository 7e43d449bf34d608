/* layer_dense — NN_OP_DENSE: a fully connected layer that flattens its input,
 * h*w*c -> cout. Weights [h*w*c][cout] row-major, then cout biases; the products are
 * sgemm's. */
#include <cblas.h>
/* cblas.h may bring complex.h, whose I is the importers' name for their state. */
#undef I
#include <math.h>
#include <string.h>

#include "nn/nn_bf16.h"
#include "nn/nn_import_impl.h"
#include "nn/nn_layer.h"

int nn_dense(nn_model *m, int in, int cout)
{
    int rc = nn_build_check_in(m, in, "dense");
    if (rc)
        return rc;
    if (cout < 1)
        return nn_build_fail(m, PT_EUSAGE, "dense: %d outputs", cout);
    size_t cin = m->nodes[in].len;
    int id = nn_build_push(m, NN_OP_DENSE, in, -1);
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    nd->h = nd->w = 1;
    nd->c = cout;
    nn_node_set_len(nd);
    nd->w_len = cin * (size_t)cout;
    nd->b_len = (size_t)cout;
    return id;
}

static void nn_dense_fwd(int n, int cin, int cout, const float *x, const float *wt, const float *b,
                         float *y)
{
    for (int i = 0; i < n; i++)
        memcpy(y + (size_t)i * cout, b, (size_t)cout * sizeof *y);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, cout, cin, 1.0f, x, cin, wt, cout,
                1.0f, y, cout);
}

static void nn_dense_bwd(int n, int cin, int cout, const float *x, const float *wt, const float *dy,
                         float *dx, int accum, float *dw, float *db)
{
    if (dw) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cin, cout, n, 1.0f, x, cin, dy,
                    cout, 1.0f, dw, cout);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < cout; j++)
                db[j] += dy[(size_t)i * cout + j];
    }
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, cin, cout, 1.0f, dy, cout, wt,
                    cout, accum ? 1.0f : 0.0f, dx, cin);
}

/* In bf16 (nn_ctx_set_precision) a product takes bf16 operands where nn_bf16_pays
 * (a few-class head's forward and input gradient do not). */
static int dense_bf16(const nn_ctx *c, long depth, long width)
{
    return c->bf16 && nn_bf16_pays(depth, width);
}

static void dense_forward(const nn_fwd *f)
{
    const nn_node *nd = f->nd;
    const int cin = (int)f->src->len, cout = nd->c;
    if (dense_bf16(f->c, cin, cout)) {
        const nn_gemm_out o = { 0, f->P + nd->w_len, 0, NULL, 0, NULL };
        const nn_bf16_ws w = { f->c->bws.p, f->c->bws.bytes };
        nn_bf16_nn(f->n, cout, cin, f->x, cin, f->P, cout, f->y, cout, &o, w);
        return;
    }
    nn_dense_fwd(f->n, cin, cout, f->x, f->P, f->P + nd->w_len, f->y);
}

static void dense_backward(const nn_bwd *b)
{
    const nn_node *nd = b->nd;
    const int cin = (int)b->src->len, cout = nd->c, n = b->n;
    const nn_bf16_ws w = { b->c->bws.p, b->c->bws.bytes };
    float *dw = b->G, *db = b->G ? b->G + nd->w_len : NULL;
    const int bf_dw = dw && dense_bf16(b->c, n, cin < cout ? cin : cout);
    const int bf_dx = b->dx && dense_bf16(b->c, cout, cin);
    if (bf_dw) {
        nn_bf16_tn(n, cout, cin, b->x, cin, b->dy, cout, dw, cout, w);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < cout; j++)
                db[j] += b->dy[(size_t)i * cout + j];
    }
    if (bf_dx) {
        const nn_gemm_out o = { b->acc, NULL, 0, NULL, 0, NULL };
        nn_bf16_nt(n, cin, cout, b->dy, cout, b->P, cout, b->dx, cin, &o, w);
    }
    nn_dense_bwd(n, cin, cout, b->x, b->P, b->dy, bf_dx ? NULL : b->dx, b->acc,
                 bf_dw ? NULL : dw, bf_dw ? NULL : db);
}

static size_t dense_bf16_bytes(const nn_model *m, const nn_node *nd, int max_batch)
{
    const long cin = (long)m->nodes[nd->in[0]].len, cout = nd->c;
    const size_t f = nn_bf16_ws_bytes(cin, cout), g = nn_bf16_ws_bytes(max_batch, cout);
    const size_t x = nn_bf16_ws_bytes(cout, cin);
    return f > g ? (f > x ? f : x) : (g > x ? g : x);
}

/* Glorot uniform (PyTorch's +-1 / sqrt(fan_in) under NN_INIT_TORCH), biases as
 * nn_init_bias draws them. */
static void dense_init(const nn_model *m, const nn_node *nd, float *p, float *buf, rng *r)
{
    (void)buf;
    const double fan_in = nn_init_fan_in(nd);
    const float torch_lim = (float)(1.0 / sqrt(fan_in));
    float lim = m->init == NN_INIT_TORCH ? torch_lim : (float)sqrt(6.0 / (fan_in + (double)nd->c));
    for (size_t j = 0; j < nd->w_len; j++)
        p[j] = rng_uniform(r, -lim, lim);
    nn_init_bias(m, nd, p, r);
}

static double dense_macs(const nn_node *nd)
{
    return (double)nd->len * (double)nd->w_len / (double)nd->c;
}

/* Flattening a 2x2x3 input. */
static int dense_grad_graph(nn_model *m, int in)
{
    return nn_dense(m, in, 5);
}

static const nn_grad_case dense_grad = {3, 2, 2, 3, NN_GRAD_UNIFORM, dense_grad_graph};

/* Flatten (when its input is 4-D) and Gemm with B = the weights transposed, [cout][cin]
 * (transB = 1). Reading a map larger than 1x1, the rows go from NHWC's flattening
 * order, (y, x, ch), to NCHW's, (ch, y, x), which is what Flatten gives. */
static int dense_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    const nn_node *nd = &m->nodes[i], *src = &m->nodes[nd->in[0]];
    int hw = src->h * src->w, c = src->c, co = nd->c;
    size_t cin = (size_t)hw * c;
    const float *W = m->params + nd->p_off;
    float *bt = nn_onnx_scratch(w, cin * (size_t)co);
    if (!bt)
        return nn_onnx_status(w);
    for (int p = 0; p < hw; p++)
        for (int ch = 0; ch < c; ch++)
            for (int o = 0; o < co; o++)
                bt[(size_t)o * cin + (size_t)ch * hw + p] = W[((size_t)p * c + ch) * co + o];
    const char *x = nn_onnx_in(w, i, 0, 0);
    if (nn_onnx_in_rank(w, i, 0) == 4) {
        const char *flat = nn_onnx_tmp(w, i, "flat");
        const char *fin[1] = { x };
        nn_onnx_op(w, "Flatten", 1, fin, flat);
        nn_onnx_attr_int(w, "axis", 1);
        x = nn_onnx_qdq(w, i, 0, flat);
    }
    const int64_t bd[2] = { co, (int64_t)cin };
    const char *wt = nn_onnx_weight(w, i, "weight", 2, bd, bt);
    const char *in[3] = { x, wt, nn_onnx_bias(w, i, "bias", co, W + nd->w_len, x, wt) };
    nn_onnx_op(w, "Gemm", 3, in, nn_onnx_out(w, i, 2));
    nn_onnx_attr_int(w, "transB", 1);
    return nn_onnx_status(w);
}

/* ---- ONNX import ---- */

/* Gemm (A, B, C), MatMul (A, B) and QLinearMatMul (a, a_s, a_zp, b, b_s, b_zp, y_s,
 * y_zp) after a flattened map or a vector; the weights are converted after the model
 * is laid out (nn_imp_fill_dense). */
static int dense_import_gemm(struct imp *I, const onnx_node *n)
{
    int kind = !strcmp(n->op_type, "Gemm") ? 0 : !strcmp(n->op_type, "MatMul") ? 1 : 2;
    int in, rc = nn_imp_in_node(I, n, 0, 1, &in);
    if (rc)
        return rc;
    const val *v = nn_imp_find_val(I, n->inputs[0]);
    const onnx_tensor *b = nn_imp_const(I, n, kind == 2 ? 3 : 1);
    if (!b || b->rank != 2)
        return nn_imp_err(I, n, "the weights must be a constant 2-D tensor");
    int trans_b = kind == 0 && onnx_attr_int(n, "transB", 0) != 0;
    if (kind == 0 && onnx_attr_int(n, "transA", 0) != 0)
        return nn_imp_err(I, n, "transA = 1 is not supported");
    nn_node_info ni = nn_imp_info(I, in);
    int64_t cin = trans_b ? b->dims[1] : b->dims[0], cout = trans_b ? b->dims[0] : b->dims[1];
    if (cin != (int64_t)ni.h * ni.w * ni.c)
        return nn_imp_err(I, n, "weights for %lld inputs after a map of %dx%dx%d (%d values)",
                        (long long)cin, ni.h, ni.w, ni.c, ni.h * ni.w * ni.c);
    int id = nn_imp_built(I, n, nn_dense(I->m, in, (int)cout));
    if (id < 0)
        return id;
    fill *f = nn_imp_add_fill(I, F_DENSE, id, n);
    if (!f)
        return PT_ENOMEM;
    f->trans_b = trans_b;
    f->quant = kind == 2;
    if (kind == 0) {
        f->alpha = onnx_attr_float(n, "alpha", 1.0f);
        f->beta = onnx_attr_float(n, "beta", 1.0f);
        if (nn_imp_const(I, n, 2)) {
            f->bias_src = n;
            f->bias_slot = 2;
        }
    }
    if (v && v->flat == FLAT_NCHW) { /* FLAT_NHWC is the library's own order */
        f->flat_h = ni.h;
        f->flat_w = ni.w;
        f->flat_c = ni.c;
    }
    if (kind == 2)
        I->quantized = 1;
    return nn_imp_out_node(I, n, id, 0);
}

/* The fill of the dense layer input slot k of n is, when that layer has no bias yet. */
static fill *bias_target(struct imp *I, const onnx_node *n, size_t k)
{
    const val *v = k < n->n_inputs ? nn_imp_find_val(I, n->inputs[k]) : NULL;
    for (size_t i = 0; v && v->kind == V_NODE && i < I->nf; i++)
        if (I->f[i].node == v->node && I->f[i].kind == F_DENSE && !I->f[i].bias_src)
            return &I->f[i];
    return NULL;
}

/* An Add (or QLinearAdd) of a constant to a dense layer's output is that layer's
 * bias: note where it comes from on the layer's fill, and let the Add's output
 * name the layer. */
static int fold_bias(struct imp *I, const onnx_node *n, size_t const_slot, size_t other_slot)
{
    int other;
    int rc = nn_imp_in_node(I, n, other_slot, 1, &other);
    if (rc)
        return rc;
    fill *f = bias_target(I, n, other_slot);
    if (!f)
        return nn_imp_err(I, n, "adding a constant is supported only as the bias of a Gemm or "
                          "MatMul");
    f->bias_src = n;
    f->bias_slot = (int)const_slot;
    const val *v = nn_imp_find_val(I, n->inputs[other_slot]);
    return nn_imp_out_node(I, n, other, v ? v->flat : 0);
}

/* Gemm, MatMul, QLinearMatMul; and an Add of a constant to a dense layer without a
 * bias (an Add of a constant to anything else is not dense's), a QLinearAdd of a
 * constant (to nothing but a dense layer). */
static int dense_import(struct imp *I, const onnx_node *n)
{
    if (!strcmp(n->op_type, "QLinearAdd")) {
        /* a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp */
        I->quantized = 1;
        if (nn_imp_const(I, n, 0))
            return fold_bias(I, n, 0, 3);
        if (nn_imp_const(I, n, 3))
            return fold_bias(I, n, 3, 0);
        return NN_IMP_DECLINE;
    }
    if (!strcmp(n->op_type, "Add")) {
        int ck = nn_imp_const(I, n, 0) ? 0 : nn_imp_const(I, n, 1) ? 1 : -1;
        if (ck < 0 || !bias_target(I, n, (size_t)(1 - ck)))
            return NN_IMP_DECLINE;
        return fold_bias(I, n, (size_t)ck, (size_t)(1 - ck));
    }
    return dense_import_gemm(I, n);
}

static const char *const dense_ops[] = { "Gemm", "MatMul", "QLinearMatMul", "Add", "QLinearAdd",
                                         NULL };

const nn_layer nn_layer_dense = {
    .forward = dense_forward,
    .backward = dense_backward,
    .init = dense_init,
    .macs = dense_macs,
    .bf16_bytes = dense_bf16_bytes,
    .grad = &dense_grad,
    .onnx_write = dense_onnx,
    .onnx_ops = dense_ops,
    .onnx_import = dense_import,
};
