/* layer_dense — NN_OP_DENSE: a fully connected layer that flattens its input,
 * h*w*c -> cout. Weights [h*w*c][cout] row-major, then cout biases; the products are
 * sgemm's. */
#include <cblas.h>
#include <math.h>
#include <string.h>

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

static void dense_forward(const nn_fwd *f)
{
    const nn_node *nd = f->nd;
    nn_dense_fwd(f->n, (int)f->src->len, nd->c, f->x, f->P, f->P + nd->w_len, f->y);
}

static void dense_backward(const nn_bwd *b)
{
    const nn_node *nd = b->nd;
    nn_dense_bwd(b->n, (int)b->src->len, nd->c, b->x, b->P, b->dy, b->dx, b->acc, b->G,
                 b->G ? b->G + nd->w_len : NULL);
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
        x = flat;
    }
    const int64_t bd[2] = { co, (int64_t)cin }, cd[1] = { co };
    const char *in[3] = { x, nn_onnx_const(w, i, "weight", 2, bd, bt),
                          nn_onnx_const(w, i, "bias", 1, cd, W + nd->w_len) };
    nn_onnx_op(w, "Gemm", 3, in, nn_onnx_out(w, i, 2));
    nn_onnx_attr_int(w, "transB", 1);
    return nn_onnx_status(w);
}

const nn_layer nn_layer_dense = {
    .forward = dense_forward,
    .backward = dense_backward,
    .init = dense_init,
    .macs = dense_macs,
    .grad = &dense_grad,
    .onnx_write = dense_onnx,
};
