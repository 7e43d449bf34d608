/* layer_affine — NN_OP_AFFINE: a fixed per-channel y = x * scale + shift (the input
 * normalisation), no parameters; the node owns its scale and shift (nd->aff). */
#include <stdlib.h>
#include <string.h>

#include "nn/nn_layer.h"

int nn_affine(nn_model *m, int in, const float *scale, const float *shift)
{
    int rc = nn_build_check_in(m, in, "affine");
    if (rc)
        return rc;
    if (!scale || !shift)
        return nn_build_fail(m, PT_EUSAGE, "affine: scale and shift are required");
    int id = nn_build_push(m, NN_OP_AFFINE, in, -1);
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    nn_node_set_len(nd);
    nd->aff = malloc(2 * (size_t)nd->c * sizeof *nd->aff);
    if (!nd->aff)
        return nn_build_fail(m, PT_ENOMEM, "out of memory");
    memcpy(nd->aff, scale, (size_t)nd->c * sizeof *nd->aff);
    memcpy(nd->aff + nd->c, shift, (size_t)nd->c * sizeof *nd->aff);
    return id;
}

static void affine_rows(long rows, int c, const float *x, const float *scale,
                               const float *shift, float *y)
{
    for (long r = 0; r < rows; r++) {
        const float *restrict xr = x + r * c;
        float *restrict yr = y + r * c;
        for (int j = 0; j < c; j++)
            yr[j] = xr[j] * scale[j] + shift[j];
    }
}

static void nn_affine_fwd(long rows, int c, const float *x, const float *scale, const float *shift,
                          float *y)
{
    /* Few channels (the RGB input, an import's normalisation): a loop of 3 does not
     * vectorise, so 16 pixels at a time run as one flat block against the constants
     * repeated 16 times (the same arithmetic per value), several times faster. */
    enum { PIX = 16 };
    if (c < PIX && rows >= PIX) {
        float sc[PIX * PIX], sh[PIX * PIX];
        const int L = c * PIX;
        for (int i = 0; i < L; i++) {
            sc[i] = scale[i % c];
            sh[i] = shift[i % c];
        }
        const long blocks = rows / PIX;
        for (long b = 0; b < blocks; b++) {
            const float *restrict xb = x + b * L;
            float *restrict yb = y + b * L;
            for (int i = 0; i < L; i++)
                yb[i] = xb[i] * sc[i] + sh[i];
        }
        affine_rows(rows - blocks * PIX, c, x + blocks * L, scale, shift, y + blocks * L);
        return;
    }
    affine_rows(rows, c, x, scale, shift, y);
}

static void nn_affine_bwd(long rows, int c, const float *dy, const float *scale, float *dx,
                          int accum)
{
    for (long r = 0; r < rows; r++) {
        const float *restrict g = dy + r * c;
        float *restrict d = dx + r * c;
        if (accum)
            for (int j = 0; j < c; j++)
                d[j] += g[j] * scale[j];
        else
            for (int j = 0; j < c; j++)
                d[j] = g[j] * scale[j];
    }
}

static void affine_part(void *arg, long r0, long r1, int part)
{
    const nn_fwd *f = arg;
    const nn_node *nd = f->nd;
    (void)part;
    nn_affine_fwd(r1 - r0, nd->c, f->x + r0 * nd->c, nd->aff, nd->aff + nd->c, f->y + r0 * nd->c);
}

static void affine_forward(const nn_fwd *f)
{
    nn_par_units(f->c, f->rows, NN_PAR_MIN_VALUES / f->nd->c + 1, 16, affine_part, (void *)f);
}

static void affine_backward(const nn_bwd *b)
{
    if (b->dx)
        nn_affine_bwd(b->rows, b->nd->c, b->dy, b->nd->aff, b->dx, b->acc);
}

static int affine_grad_graph(nn_model *m, int in)
{
    const float s[3] = {2.0f, -0.5f, 1.5f}, t[3] = {-1.0f, 0.25f, 0.0f};
    return nn_affine(m, in, s, t);
}

static const nn_grad_case affine_grad = {2, 3, 3, 3, NN_GRAD_UNIFORM, affine_grad_graph};

/* Mul then Add by per-channel constants; nothing when folded into the front. No
 * import hook: any Mul, Add, Sub or Div by constants that no kind takes is read back
 * by the importer's per-channel constants (nn_import_front.c), which also merge a
 * chain of them, the front's, into one affine layer. */
static int affine_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    const nn_node *nd = &m->nodes[i];
    int p = nn_onnx_fold_prev(w, i);
    if (p >= 0) {
        nn_onnx_same(w, i, p);
        return nn_onnx_status(w);
    }
    int r = nn_onnx_in_rank(w, i, 0);
    const int64_t dims[4] = { 1, nd->c, 1, 1 };
    const char *mul[2] = { nn_onnx_in(w, i, 0, 0), nn_onnx_const(w, i, "scale", r, dims, nd->aff) };
    const char *scaled = nn_onnx_tmp(w, i, "scaled");
    nn_onnx_op(w, "Mul", 2, mul, scaled);
    const char *add[2] = { scaled, nn_onnx_const(w, i, "shift", r, dims, nd->aff + nd->c) };
    return nn_onnx_op(w, "Add", 2, add, nn_onnx_out(w, i, r));
}

const nn_layer nn_layer_affine = {
    .flags = NN_LAYER_BWD_NO_INPUT,
    .reads_output = nn_reads_no_output,
    .forward = affine_forward,
    .backward = affine_backward,
    .grad = &affine_grad,
    .onnx_write = affine_onnx,
};
