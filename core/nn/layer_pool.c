/* layer_pool — the three pools, a table entry each: NN_OP_MAXPOOL and NN_OP_AVGPOOL
 * (square windows, one stride, padding that never wins a max nor counts in an
 * average) and NN_OP_GAP (global average pooling, h x w x c -> 1 x 1 x c). No
 * parameters.
 *
 * Pools: input n x h x w x c, window k, stride, top/left padding, output oh x ow.
 * Max-pool backward finds each window's winner again from its input x and output y
 * (the first element equal to the max, the one forward kept), so forward stores no
 * indices.
 */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "nn/nn_import_impl.h"
#include "nn/nn_layer.h"

/* ---- builders ---- */

int nn_maxpool(nn_model *m, int in, int k, int stride, int pad)
{
    return nn_build_window(m, NN_OP_MAXPOOL, in, k, k, stride, pad, "maxpool");
}

int nn_avgpool(nn_model *m, int in, int k, int stride, int pad)
{
    return nn_build_window(m, NN_OP_AVGPOOL, in, k, k, stride, pad, "avgpool");
}

int nn_maxpool_ex(nn_model *m, int in, int kh, int kw, int stride_h, int stride_w, int pad_t,
                  int pad_l, int pad_b, int pad_r)
{
    const int pads[4] = {pad_t, pad_l, pad_b, pad_r};
    return nn_build_window_ex(m, NN_OP_MAXPOOL, in, kh, kw, stride_h, stride_w, pads, "maxpool");
}

int nn_avgpool_ex(nn_model *m, int in, int kh, int kw, int stride_h, int stride_w, int pad_t,
                  int pad_l, int pad_b, int pad_r)
{
    const int pads[4] = {pad_t, pad_l, pad_b, pad_r};
    return nn_build_window_ex(m, NN_OP_AVGPOOL, in, kh, kw, stride_h, stride_w, pads, "avgpool");
}

int nn_gap(nn_model *m, int in)
{
    int id = nn_build_unary(m, NN_OP_GAP, in, "gap");
    if (id >= 0) {
        nn_node *nd = &m->nodes[id];
        nd->h = nd->w = 1;
        nn_node_set_len(nd);
    }
    return id;
}

/* ---- kernels ---- */

static int is_2x2(int k, int stride, int pt, int pl)
{
    return k == 2 && stride == 2 && pt == 0 && pl == 0;
}

/* The common 2x2/2 max-pool: four rows of c channels in, one out. */
static void max4(int c, const float *restrict a, const float *restrict b, const float *restrict d,
                 const float *restrict e, float *restrict y)
{
    for (int j = 0; j < c; j++) {
        float u = b[j] > a[j] ? b[j] : a[j];
        float v = e[j] > d[j] ? e[j] : d[j];
        y[j] = v > u ? v : u;
    }
}

/* Output rows [r0, r1), a row being (image, oy): r = image * oh + oy. */
static void nn_maxpool_fwd(long r0, long r1, int h, int w, int c, int k, int stride, int pt,
                           int pl, int oh, int ow, const float *x, float *y)
{
    const size_t row = (size_t)w * c;
    for (long r = r0; r < r1; r++) {
        const int img = (int)(r / oh), oy = (int)(r % oh);
        const float *xi = x + (size_t)img * h * row;
        for (int ox = 0; ox < ow; ox++) {
            float *restrict yo = y + (((size_t)img * oh + oy) * ow + ox) * c;
            if (is_2x2(k, stride, pt, pl)) {
                const float *p = xi + (size_t)(2 * oy) * row + (size_t)(2 * ox) * c;
                max4(c, p, p + c, p + row, p + row + c, yo);
                continue;
            }
            for (int j = 0; j < c; j++)
                yo[j] = -FLT_MAX;
            for (int ky = 0; ky < k; ky++) {
                const int iy = oy * stride - pt + ky;
                if (iy < 0 || iy >= h)
                    continue;
                for (int kx = 0; kx < k; kx++) {
                    const int ix = ox * stride - pl + kx;
                    if (ix < 0 || ix >= w)
                        continue;
                    const float *restrict xp = xi + (size_t)iy * row + (size_t)ix * c;
                    for (int j = 0; j < c; j++)
                        yo[j] = xp[j] > yo[j] ? xp[j] : yo[j];
                }
            }
        }
    }
}

/* 2x2/2 backward: the gradient goes to the first of the four inputs a, b, d, e equal
 * to the max (the fourth when none of the first three is); every input element is
 * written, so dx needs no clearing. */
static void max4_bwd(int c, const float *restrict a, const float *restrict b,
                     const float *restrict d, const float *restrict y,
                     const float *restrict g, float *restrict ga, float *restrict gb,
                     float *restrict gd, float *restrict ge, int accum)
{
    for (int j = 0; j < c; j++) {
        float ta = a[j] == y[j] ? 1.0f : 0.0f;
        float tb = (1.0f - ta) * (b[j] == y[j] ? 1.0f : 0.0f);
        float td = (1.0f - ta - tb) * (d[j] == y[j] ? 1.0f : 0.0f);
        float te = 1.0f - ta - tb - td;
        if (accum) {
            ga[j] += ta * g[j];
            gb[j] += tb * g[j];
            gd[j] += td * g[j];
            ge[j] += te * g[j];
        } else {
            ga[j] = ta * g[j];
            gb[j] = tb * g[j];
            gd[j] = td * g[j];
            ge[j] = te * g[j];
        }
    }
}

static void nn_maxpool_bwd(int n, int h, int w, int c, int k, int stride, int pt, int pl, int oh,
                           int ow, const float *x, const float *y, const float *dy, float *dx,
                           int accum)
{
    const size_t row = (size_t)w * c;
    if (is_2x2(k, stride, pt, pl)) {
        for (int img = 0; img < n; img++) {
            const float *xi = x + (size_t)img * h * row;
            float *di = dx + (size_t)img * h * row;
            for (int oy = 0; oy < oh; oy++) {
                for (int ox = 0; ox < ow; ox++) {
                    const size_t o = (((size_t)img * oh + oy) * ow + ox) * c;
                    const size_t at = (size_t)(2 * oy) * row + (size_t)(2 * ox) * c;
                    max4_bwd(c, xi + at, xi + at + c, xi + at + row, y + o,
                             dy + o, di + at, di + at + c, di + at + row, di + at + row + c,
                             accum);
                }
                /* An odd width leaves a column no window reads. */
                if (!accum && w > 2 * ow)
                    for (int yy = 2 * oy; yy < 2 * oy + 2; yy++)
                        memset(di + (size_t)yy * row + (size_t)(2 * ow) * c, 0,
                               (size_t)(w - 2 * ow) * c * sizeof *dx);
            }
            if (!accum && h > 2 * oh)
                memset(di + (size_t)(2 * oh) * row, 0, (size_t)(h - 2 * oh) * row * sizeof *dx);
        }
        return;
    }
    /* General windows (possibly overlapping): scatter-add to the first winner. */
    if (!accum)
        memset(dx, 0, (size_t)n * h * row * sizeof *dx);
    for (int img = 0; img < n; img++) {
        const float *xi = x + (size_t)img * h * row;
        float *di = dx + (size_t)img * h * row;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                const size_t o = (((size_t)img * oh + oy) * ow + ox) * c;
                for (int j = 0; j < c; j++) {
                    int done = 0;
                    for (int ky = 0; ky < k && !done; ky++) {
                        const int iy = oy * stride - pt + ky;
                        if (iy < 0 || iy >= h)
                            continue;
                        for (int kx = 0; kx < k && !done; kx++) {
                            const int ix = ox * stride - pl + kx;
                            if (ix < 0 || ix >= w)
                                continue;
                            const size_t at = (size_t)iy * row + (size_t)ix * c + (size_t)j;
                            if (xi[at] == y[o + j]) {
                                di[at] += dy[o + j];
                                done = 1;
                            }
                        }
                    }
                }
            }
    }
}

/* Window bounds clipped to the image; the count excludes padding. */
static int window(int o, int stride, int pad, int k, int size, int *lo, int *hi)
{
    *lo = o * stride - pad;
    *hi = *lo + k;
    if (*lo < 0)
        *lo = 0;
    if (*hi > size)
        *hi = size;
    return *hi - *lo;
}

/* The 2x2 / 2 pool without padding (`small`'s first block, on the RGB input): the
 * generic loop's sums in the same order, without its per-pixel window arithmetic,
 * which cost more than the sums at 3 channels (1.4 ms of a 37 ms step in bf16). */
static inline void avgpool2_rows(long r0, long r1, int h, int w, int c, int oh, int ow,
                                 const float *x, float *y)
{
    const size_t row = (size_t)w * c;
    for (long r = r0; r < r1; r++) {
        const int img = (int)(r / oh), oy = (int)(r % oh);
        const float *ra = x + ((size_t)img * h + 2 * (size_t)oy) * row, *rb = ra + row;
        float *restrict yo = y + ((size_t)img * oh + oy) * (size_t)ow * c;
        for (int ox = 0; ox < ow; ox++) {
            const size_t a = 2 * (size_t)ox * c, b = a + (size_t)c;
            for (int j = 0; j < c; j++)
                yo[(size_t)ox * c + j] =
                    ((((0.0f + ra[a + j]) + ra[b + j]) + rb[a + j]) + rb[b + j]) * 0.25f;
        }
    }
}

static void avgpool2_fwd(long r0, long r1, int h, int w, int c, int oh, int ow, const float *x,
                         float *y)
{
    /* RGB (a stem that pools the input first): channels a constant, as affine's. */
    if (c == 3)
        avgpool2_rows(r0, r1, h, w, 3, oh, ow, x, y);
    else
        avgpool2_rows(r0, r1, h, w, c, oh, ow, x, y);
}

/* Output rows [r0, r1) as nn_maxpool_fwd's. */
static void nn_avgpool_fwd(long r0, long r1, int h, int w, int c, int k, int stride, int pt,
                           int pl, int oh, int ow, const float *x, float *y)
{
    if (k == 2 && stride == 2 && pt == 0 && pl == 0 && 2 * oh <= h && 2 * ow <= w) {
        avgpool2_fwd(r0, r1, h, w, c, oh, ow, x, y);
        return;
    }
    for (long r = r0; r < r1; r++) {
        const int img = (int)(r / oh), oy = (int)(r % oh);
        const float *xi = x + (size_t)img * h * w * c;
        for (int ox = 0; ox < ow; ox++) {
            float *restrict yo = y + (((size_t)img * oh + oy) * ow + ox) * c;
            int y0, y1, x0, x1;
            int cnt = window(oy, stride, pt, k, h, &y0, &y1) *
                      window(ox, stride, pl, k, w, &x0, &x1);
            for (int j = 0; j < c; j++)
                yo[j] = 0.0f;
            for (int iy = y0; iy < y1; iy++)
                for (int ix = x0; ix < x1; ix++) {
                    const float *restrict xp = xi + ((size_t)iy * w + ix) * c;
                    for (int j = 0; j < c; j++)
                        yo[j] += xp[j];
                }
            const float inv = cnt > 0 ? 1.0f / (float)cnt : 0.0f;
            for (int j = 0; j < c; j++)
                yo[j] *= inv;
        }
    }
}

static void nn_avgpool_bwd(int n, int h, int w, int c, int k, int stride, int pt, int pl, int oh,
                           int ow, const float *dy, float *dx, int accum)
{
    if (!accum)
        memset(dx, 0, (size_t)n * h * w * c * sizeof *dx);
    for (int img = 0; img < n; img++) {
        float *dxi = dx + (size_t)img * h * w * c;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                const float *restrict g = dy + (((size_t)img * oh + oy) * ow + ox) * c;
                int y0, y1, x0, x1;
                int cnt = window(oy, stride, pt, k, h, &y0, &y1) *
                          window(ox, stride, pl, k, w, &x0, &x1);
                const float inv = cnt > 0 ? 1.0f / (float)cnt : 0.0f;
                for (int iy = y0; iy < y1; iy++)
                    for (int ix = x0; ix < x1; ix++) {
                        float *restrict d = dxi + ((size_t)iy * w + ix) * c;
                        for (int j = 0; j < c; j++)
                            d[j] += g[j] * inv;
                    }
            }
    }
}

static void nn_gap_fwd(int n, int hw, int c, const float *x, float *y)
{
    const float inv = 1.0f / (float)hw;
    for (int img = 0; img < n; img++) {
        float *restrict yo = y + (size_t)img * c;
        const float *xi = x + (size_t)img * hw * c;
        for (int j = 0; j < c; j++)
            yo[j] = 0.0f;
        for (int p = 0; p < hw; p++) {
            const float *restrict xp = xi + (size_t)p * c;
            for (int j = 0; j < c; j++)
                yo[j] += xp[j];
        }
        for (int j = 0; j < c; j++)
            yo[j] *= inv;
    }
}

static void nn_gap_bwd(int n, int hw, int c, const float *dy, float *dx, int accum)
{
    const float inv = 1.0f / (float)hw;
    for (int img = 0; img < n; img++) {
        const float *restrict g = dy + (size_t)img * c;
        float *dxi = dx + (size_t)img * hw * c;
        for (int p = 0; p < hw; p++) {
            float *restrict d = dxi + (size_t)p * c;
            if (accum)
                for (int j = 0; j < c; j++)
                    d[j] += g[j] * inv;
            else
                for (int j = 0; j < c; j++)
                    d[j] = g[j] * inv;
        }
    }
}

/* ---- forward and backward ---- */

/* A pool's output rows [r0, r1) (nn_par_units' slices of a team's forward). */
static void maxpool_rows(void *arg, long r0, long r1, int part)
{
    const nn_fwd *f = arg;
    const nn_node *nd = f->nd, *src = f->src;
    (void)part;
    nn_maxpool_fwd(r0, r1, src->h, src->w, nd->c, nd->kh, nd->stride, nd->pad_t, nd->pad_l,
                   nd->h, nd->w, f->x, f->y);
}

static void avgpool_rows(void *arg, long r0, long r1, int part)
{
    const nn_fwd *f = arg;
    const nn_node *nd = f->nd, *src = f->src;
    (void)part;
    nn_avgpool_fwd(r0, r1, src->h, src->w, nd->c, nd->kh, nd->stride, nd->pad_t, nd->pad_l,
                   nd->h, nd->w, f->x, f->y);
}

/* Rows a part must have: a few thousand values, what a hand-over costs. */
static long pool_min_rows(const nn_node *nd)
{
    return NN_PAR_MIN_VALUES / ((long)nd->w * nd->c) + 1;
}

static void maxpool_forward(const nn_fwd *f)
{
    nn_par_units(f->c, (long)f->n * f->nd->h, pool_min_rows(f->nd), 1, maxpool_rows,
                 (void *)f);
}

static void maxpool_backward(const nn_bwd *b)
{
    const nn_node *nd = b->nd, *src = b->src;
    if (b->dx)
        nn_maxpool_bwd(b->n, src->h, src->w, nd->c, nd->kh, nd->stride, nd->pad_t, nd->pad_l,
                       nd->h, nd->w, b->x, b->y, b->dy, b->dx, b->acc);
}

static void avgpool_forward(const nn_fwd *f)
{
    nn_par_units(f->c, (long)f->n * f->nd->h, pool_min_rows(f->nd), 1, avgpool_rows,
                 (void *)f);
}

static void avgpool_backward(const nn_bwd *b)
{
    const nn_node *nd = b->nd, *src = b->src;
    if (b->dx)
        nn_avgpool_bwd(b->n, src->h, src->w, nd->c, nd->kh, nd->stride, nd->pad_t, nd->pad_l,
                       nd->h, nd->w, b->dy, b->dx, b->acc);
}

static void gap_forward(const nn_fwd *f)
{
    nn_gap_fwd(f->n, f->src->h * f->src->w, f->nd->c, f->x, f->y);
}

static void gap_backward(const nn_bwd *b)
{
    if (b->dx)
        nn_gap_bwd(b->n, b->src->h * b->src->w, b->nd->c, b->dy, b->dx, b->acc);
}

static void pool_describe(const nn_model *m, const nn_node *nd, char *buf, size_t size)
{
    (void)m;
    snprintf(buf, size, "%s %d/%d", nd->op == NN_OP_MAXPOOL ? "maxpool" : "avgpool", nd->kh,
             nd->stride);
}

/* ---- the table entries ---- */

/* 3x3/2 "same" on an odd size: overlapping windows, padding on one side. */
static int maxpool_grad_graph(nn_model *m, int in)
{
    return nn_maxpool(m, in, 3, 2, NN_PAD_SAME);
}

static int avgpool_grad_graph(nn_model *m, int in)
{
    return nn_avgpool(m, in, 3, 2, 1);
}

static int gap_grad_graph(nn_model *m, int in)
{
    return nn_gap(m, in);
}

static const nn_grad_case maxpool_grad = {2, 5, 7, 2, NN_GRAD_DISTINCT, maxpool_grad_graph};
static const nn_grad_case avgpool_grad = {2, 5, 5, 2, NN_GRAD_UNIFORM, avgpool_grad_graph};
static const nn_grad_case gap_grad = {2, 3, 4, 5, NN_GRAD_UNIFORM, gap_grad_graph};

/* ---- ONNX ---- */

/* MaxPool / AveragePool with the four pads; ONNX's count_include_pad = 0 is the
 * kernels' average over real pixels only. */
static int pool_onnx(struct nn_onnx_writer *w, const nn_model *m, int i, const char *op)
{
    const nn_node *nd = &m->nodes[i];
    const char *in[1] = { nn_onnx_in(w, i, 0, 1) };
    nn_onnx_op(w, op, 1, in, nn_onnx_out(w, i, 4));
    const int64_t k[2] = { nd->kh, nd->kw }, s[2] = { nd->stride, nd->stride };
    const int64_t p[4] = { nd->pad_t, nd->pad_l, nd->pad_b, nd->pad_r };
    nn_onnx_attr_ints(w, "kernel_shape", 2, k);
    nn_onnx_attr_ints(w, "strides", 2, s);
    nn_onnx_attr_ints(w, "pads", 4, p);
    if (nd->op == NN_OP_AVGPOOL)
        nn_onnx_attr_int(w, "count_include_pad", 0);
    return nn_onnx_status(w);
}

static int maxpool_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    return pool_onnx(w, m, i, "MaxPool");
}

static int avgpool_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    return pool_onnx(w, m, i, "AveragePool");
}

static int gap_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    (void)m;
    const char *in[1] = { nn_onnx_in(w, i, 0, 1) };
    return nn_onnx_op(w, "GlobalAveragePool", 1, in, nn_onnx_out(w, i, 4));
}

/* ---- ONNX import ---- */

/* MaxPool and AveragePool (2-D, no ceil_mode). */
static int pool_import(struct imp *I, const onnx_node *n, int max)
{
    int in, rc = nn_imp_in_node(I, n, 0, 0, &in);
    if (rc)
        return rc;
    int64_t k[2] = { 0, 0 }, s[2] = { 1, 1 }, p[4] = { 0, 0, 0, 0 };
    if ((rc = nn_imp_window(I, n, in, k, s, p)) != PT_OK)
        return rc;
    /* Without padding every window counts k x k pixels either way. */
    if (!max && onnx_attr_int(n, "count_include_pad", 0) != 0 && (p[0] || p[1] || p[2] || p[3]))
        return nn_imp_err(I, n, "count_include_pad = 1 with padding is not supported");
    int kh = (int)k[0], kw = (int)k[1];
    int id = max ? nn_maxpool_ex(I->m, in, kh, kw, (int)s[0], (int)s[1], (int)p[0], (int)p[1],
                                 (int)p[2], (int)p[3])
                 : nn_avgpool_ex(I->m, in, kh, kw, (int)s[0], (int)s[1], (int)p[0], (int)p[1],
                                 (int)p[2], (int)p[3]);
    if ((id = nn_imp_built(I, n, id)) < 0)
        return id;
    return nn_imp_out_node(I, n, id, 0);
}

static int maxpool_import(struct imp *I, const onnx_node *n)
{
    return pool_import(I, n, 1);
}

static int avgpool_import(struct imp *I, const onnx_node *n)
{
    return pool_import(I, n, 0);
}

/* GlobalAveragePool, and its quantized form (values stay float). A ReduceMean over H
 * and W is one too: the importer's NHWC forms (nn_import_layout.c). */
static int gap_import(struct imp *I, const onnx_node *n)
{
    int in, rc = nn_imp_in_node(I, n, 0, 0, &in);
    if (rc)
        return rc;
    if (n->op_type[0] == 'Q' && onnx_attr_int(n, "channels_last", 0) != 0)
        return nn_imp_err(I, n, "channels_last = 1 is not supported");
    int id = nn_imp_built(I, n, nn_gap(I->m, in));
    return id < 0 ? id : nn_imp_out_node(I, n, id, 0);
}

static const char *const maxpool_ops[] = { "MaxPool", NULL };
static const char *const avgpool_ops[] = { "AveragePool", NULL };
static const char *const gap_ops[] = { "GlobalAveragePool", "QLinearGlobalAveragePool", NULL };

const nn_layer nn_layer_maxpool = {
    .forward = maxpool_forward,
    .backward = maxpool_backward,
    .describe = pool_describe,
    .grad = &maxpool_grad,
    .onnx_write = maxpool_onnx,
    .onnx_ops = maxpool_ops,
    .onnx_import = maxpool_import,
};

const nn_layer nn_layer_avgpool = {
    .flags = NN_LAYER_BWD_NO_INPUT,
    .reads_output = nn_reads_no_output,
    .forward = avgpool_forward,
    .backward = avgpool_backward,
    .describe = pool_describe,
    .grad = &avgpool_grad,
    .onnx_write = avgpool_onnx,
    .onnx_ops = avgpool_ops,
    .onnx_import = avgpool_import,
};

const nn_layer nn_layer_gap = {
    .flags = NN_LAYER_BWD_NO_INPUT,
    .reads_output = nn_reads_no_output,
    .forward = gap_forward,
    .backward = gap_backward,
    .grad = &gap_grad,
    .onnx_write = gap_onnx,
    .onnx_ops = gap_ops,
    .onnx_import = gap_import,
};
