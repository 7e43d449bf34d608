/* layer_mul — NN_OP_MUL: the elementwise product of two tensors of one shape
 * (nn_mul_fwd / nn_mul_bwd, nn_elem.c, once per operand, the other standing in for
 * the mask), or of an H x W x C tensor by a 1 x 1 x C one, per channel
 * (squeeze-and-excitation; kernels below). The builder puts the full-size operand
 * first. No parameters.
 *
 * Tensors are NHWC, so a per-channel operand lines up with the innermost, contiguous
 * loop.
 */
#include <stdio.h>

#include "nn/nn_import_impl.h"
#include "nn/nn_layer.h"

int nn_mul(nn_model *m, int a, int b)
{
    int rc = nn_build_check_in(m, a, "mul");
    if (!rc)
        rc = nn_build_check_in(m, b, "mul");
    if (rc)
        return rc;
    const nn_node *na = &m->nodes[a], *nb = &m->nodes[b];
    const int same = na->h == nb->h && na->w == nb->w && na->c == nb->c;
    const int b_chan = nb->h == 1 && nb->w == 1 && nb->c == na->c;
    const int a_chan = na->h == 1 && na->w == 1 && na->c == nb->c;
    if (!same && !b_chan && !a_chan)
        return nn_build_fail(m, PT_EUSAGE,
                             "mul: shapes %dx%dx%d (node %d) and %dx%dx%d (node %d) neither "
                             "match nor broadcast (one may be 1x1xC against HxWxC)",
                             na->h, na->w, na->c, a, nb->h, nb->w, nb->c, b);
    /* The full-size operand goes first: it fixes the output shape, and forward and
     * backward then need only one broadcast form. */
    int id = !same && a_chan ? nn_build_push(m, NN_OP_MUL, b, a)
                             : nn_build_push(m, NN_OP_MUL, a, b);
    if (id >= 0)
        nn_node_set_len(&m->nodes[id]);
    return id;
}

/* a: n x hw x c, s: n x c; y = a * s per channel. */
static void nn_mul_chan_fwd(int n, int hw, int c, const float *a, const float *s, float *y)
{
    for (int img = 0; img < n; img++) {
        const float *restrict si = s + (size_t)img * c;
        for (int p = 0; p < hw; p++) {
            const size_t o = ((size_t)img * hw + (size_t)p) * (size_t)c;
            const float *restrict ap = a + o;
            float *restrict yp = y + o;
            for (int j = 0; j < c; j++)
                yp[j] = ap[j] * si[j];
        }
    }
}

/* da (n x hw x c) and ds (n x c, the sum over the hw pixels); either may be NULL. Each
 * is overwritten, or added to when its accum flag is set. */
static void nn_mul_chan_bwd(int n, int hw, int c, const float *a, const float *s, const float *dy,
                            float *da, int accum_a, float *ds, int accum_s)
{
    for (int img = 0; img < n; img++) {
        const size_t o = (size_t)img * hw * (size_t)c;
        const float *restrict si = s + (size_t)img * c;
        if (da)
            for (int p = 0; p < hw; p++) {
                const float *restrict g = dy + o + (size_t)p * c;
                float *restrict d = da + o + (size_t)p * c;
                if (accum_a)
                    for (int j = 0; j < c; j++)
                        d[j] += g[j] * si[j];
                else
                    for (int j = 0; j < c; j++)
                        d[j] = g[j] * si[j];
            }
        if (ds) {
            /* Summed in float over the pixels, as nn_gap_fwd does. */
            float *restrict d = ds + (size_t)img * c;
            if (!accum_s)
                for (int j = 0; j < c; j++)
                    d[j] = 0.0f;
            for (int p = 0; p < hw; p++) {
                const float *restrict g = dy + o + (size_t)p * c;
                const float *restrict ap = a + o + (size_t)p * c;
                for (int j = 0; j < c; j++)
                    d[j] += g[j] * ap[j];
            }
        }
    }
}

static void mul_forward(const nn_fwd *f)
{
    const nn_node *nd = f->nd;
    /* The builder puts the full-size operand first; the second matches it or is
     * one value per channel. */
    if (f->m->nodes[nd->in[1]].len == nd->len)
        nn_mul_fwd((size_t)f->n * nd->len, f->x, f->c->outp[nd->in[1]], f->y);
    else
        nn_mul_chan_fwd(f->n, nd->h * nd->w, nd->c, f->x, f->c->outp[nd->in[1]], f->y);
}

static void mul_backward(const nn_bwd *b)
{
    const nn_node *nd = b->nd;
    int acc1 = 0;
    /* dx is written in full before the second target is asked for: with a == b the
     * two targets are one buffer, and the second call then says to add. */
    const float *xb = b->c->outp[nd->in[1]];
    const int chan = b->m->nodes[nd->in[1]].len != nd->len;
    if (b->dx && chan)
        nn_mul_chan_bwd(b->n, nd->h * nd->w, nd->c, b->x, xb, b->dy, b->dx, b->acc, NULL, 0);
    else if (b->dx)
        nn_mul_bwd(b->len, b->dy, xb, b->dx, b->acc);
    float *dx1 = nn_grad_target(b->c, b->i, 1, &acc1);
    if (dx1 && chan)
        nn_mul_chan_bwd(b->n, nd->h * nd->w, nd->c, b->x, xb, b->dy, NULL, 0, dx1, acc1);
    else if (dx1)
        nn_mul_bwd(b->len, b->dy, b->x, dx1, acc1);
}

static void mul_describe(const nn_model *m, const nn_node *nd, char *buf, size_t size)
{
    snprintf(buf, size, "%s", m->nodes[nd->in[1]].len != nd->len ? "mul channels" : "mul");
}

/* Both forms, both operands one node: x * x, then per channel by gap(x). */
static int mul_grad_graph(nn_model *m, int in)
{
    return nn_mul(m, nn_mul(m, in, in), nn_gap(m, in));
}

static const nn_grad_case mul_grad = {2, 4, 3, 3, NN_GRAD_UNIFORM, mul_grad_graph};

/* ONNX's Mul broadcasts the 1x1xC operand ([N, C, 1, 1]) as the kernel does. */
static int mul_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    (void)m;
    return nn_onnx_simple(w, i, "Mul", 2);
}

/* Mul of two maps (or of a map and a 1x1xC one). With a constant operand it is the
 * importer's per-channel constants (nn_import_front.c). */
static int mul_import(struct imp *I, const onnx_node *n)
{
    if (nn_imp_const(I, n, 0) || nn_imp_const(I, n, 1))
        return NN_IMP_DECLINE;
    int a, b, rc;
    if ((rc = nn_imp_in_node(I, n, 0, 0, &a)) || (rc = nn_imp_in_node(I, n, 1, 0, &b)))
        return rc;
    int id = nn_imp_built(I, n, nn_mul(I->m, a, b));
    return id < 0 ? id : nn_imp_out_node(I, n, id, 0);
}

static const char *const mul_ops[] = { "Mul", NULL };

const nn_layer nn_layer_mul = {
    .forward = mul_forward,
    .backward = mul_backward,
    .describe = mul_describe,
    .grad = &mul_grad,
    .onnx_write = mul_onnx,
    .onnx_ops = mul_ops,
    .onnx_import = mul_import,
};
