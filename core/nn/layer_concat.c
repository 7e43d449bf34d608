/* layer_concat — NN_OP_CONCAT: channel concatenation, H x W x Ca and H x W x Cb ->
 * H x W x (Ca + Cb), a's channels first. NHWC makes it two copies per pixel. No
 * parameters. */
#include <string.h>

#include "nn/nn_import_impl.h"
#include "nn/nn_layer.h"

int nn_concat(nn_model *m, int a, int b)
{
    int rc = nn_build_check_in(m, a, "concat");
    if (!rc)
        rc = nn_build_check_in(m, b, "concat");
    if (rc)
        return rc;
    const nn_node *na = &m->nodes[a], *nb = &m->nodes[b];
    if (na->h != nb->h || na->w != nb->w)
        return nn_build_fail(m, PT_EUSAGE,
                             "concat: spatial sizes %dx%d (node %d) and %dx%d (node %d) differ",
                             na->h, na->w, a, nb->h, nb->w, b);
    int cb = nb->c;
    int id = nn_build_push(m, NN_OP_CONCAT, a, b);
    if (id >= 0) {
        m->nodes[id].c += cb;
        nn_node_set_len(&m->nodes[id]);
    }
    return id;
}

/* rows pixels: y = [a (ca channels), b (cb channels)]. */
static void nn_concat_fwd(long rows, int ca, int cb, const float *a, const float *b, float *y)
{
    const size_t c = (size_t)ca + (size_t)cb;
    for (long r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * c;
        memcpy(yr, a + (size_t)r * (size_t)ca, (size_t)ca * sizeof *y);
        memcpy(yr + ca, b + (size_t)r * (size_t)cb, (size_t)cb * sizeof *y);
    }
}

/* One input's slice [c0, c0 + cs) of every row of dy into d (rows of cs). */
static void slice_grad(long rows, size_t c, int c0, int cs, const float *dy, float *d,
                       int accum)
{
    for (long r = 0; r < rows; r++) {
        const float *restrict g = dy + (size_t)r * c + (size_t)c0;
        float *restrict dr = d + (size_t)r * (size_t)cs;
        if (accum)
            for (int j = 0; j < cs; j++)
                dr[j] += g[j];
        else
            memcpy(dr, g, (size_t)cs * sizeof *dr);
    }
}

/* The slice of dy for each input; da or db may be NULL. da is complete before db is
 * touched, so the two may be one buffer (concat of x with x, db's accum then set). */
static void nn_concat_bwd(long rows, int ca, int cb, const float *dy, float *da, int accum_a,
                          float *db, int accum_b)
{
    const size_t c = (size_t)ca + (size_t)cb;
    /* Two whole passes, not one interleaved: da and db may be the same buffer. */
    if (da)
        slice_grad(rows, c, 0, ca, dy, da, accum_a);
    if (db)
        slice_grad(rows, c, ca, cb, dy, db, accum_b);
}

static void concat_forward(const nn_fwd *f)
{
    const nn_node *nd = f->nd;
    nn_concat_fwd(f->rows, f->src->c, f->m->nodes[nd->in[1]].c, f->x, f->c->outp[nd->in[1]],
                  f->y);
}

static void concat_backward(const nn_bwd *b)
{
    int acc1 = 0;
    float *dx1 = nn_grad_target(b->c, b->i, 1, &acc1);
    nn_concat_bwd(b->rows, b->src->c, b->m->nodes[b->nd->in[1]].c, b->dy, b->dx, b->acc, dx1,
                  acc1);
}

/* Two branches of different widths (3 + 5 channels). */
static int concat_grad_graph(nn_model *m, int in)
{
    return nn_concat(m, nn_conv2d(m, in, 3, 3, 3, 1, NN_PAD_SAME, 1, 1),
                     nn_conv2d(m, in, 5, 1, 1, 1, 0, 1, 1));
}

static const nn_grad_case concat_grad = {2, 4, 3, 3, NN_GRAD_UNIFORM, concat_grad_graph};

static int concat_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    (void)m;
    nn_onnx_simple(w, i, "Concat", 2);
    nn_onnx_attr_int(w, "axis", 1);
    return nn_onnx_status(w);
}

/* Concat along channels of any number of maps: a chain of two-input layers. (A Concat
 * in a Reshape's shape computation is the importer's, nn_import.c.) */
static int concat_import(struct imp *I, const onnx_node *n)
{
    int64_t axis = onnx_attr_int(n, "axis", 1);
    if (axis != 1 && axis != -3)
        return nn_imp_err(I, n, "only concatenation along channels (axis 1) is supported");
    if (n->n_inputs < 1)
        return nn_imp_err(I, n, "has no inputs");
    int acc, rc = nn_imp_in_node(I, n, 0, 0, &acc);
    if (rc)
        return rc;
    for (size_t k = 1; k < n->n_inputs; k++) {
        int b;
        if ((rc = nn_imp_in_node(I, n, k, 0, &b)) != PT_OK)
            return rc;
        if ((acc = nn_imp_built(I, n, nn_concat(I->m, acc, b))) < 0)
            return acc;
    }
    return nn_imp_out_node(I, n, acc, 0);
}

static const char *const concat_ops[] = { "Concat", NULL };

const nn_layer nn_layer_concat = {
    .flags = NN_LAYER_BWD_NO_INPUT,
    .reads_output = nn_reads_no_output,
    .forward = concat_forward,
    .backward = concat_backward,
    .grad = &concat_grad,
    .onnx_write = concat_onnx,
    .onnx_ops = concat_ops,
    .onnx_import = concat_import,
};
