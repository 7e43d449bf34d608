/* nn_conv — 2-D convolution, NHWC, weights HWIO ([kh][kw][cin/groups][cout]).
 *
 * Three paths:
 *   - stride-1 1x1 without padding: the NHWC tensor already is the [N*H*W, Cin] matrix,
 *     so forward and both gradients are single sgemms on it (per group);
 *   - depthwise (groups == cin == cout): a direct kernel vectorised over channels; as
 *     an sgemm it would be K = kh*kw, N = 1 per group, which no BLAS runs well;
 *   - everything else: im2col into a row-major [rows, kh*kw*cin/groups] matrix, one
 *     sgemm against the weights, the output rows landing directly in NHWC. The rows
 *     are processed in chunks so the column matrix stays in cache between im2col and
 *     sgemm (and memory stays bounded); backward recomputes it rather than keeping it.
 */
#include <cblas.h>
#include <string.h>

#include "nn/nn_impl.h"

/* Rows per im2col chunk: about 1 MiB of column matrix (the L2 of current x86 cores),
 * so im2col's output is still in cache when sgemm reads it. Measured on the `small`
 * convs (bench_nn): 32K..256K floats all run within a few % of the sgemm peak and
 * beat one whole-batch sgemm; 1M floats is a little slower. The floor keeps the
 * inner dimension of the weight-gradient sgemm long enough. */
#ifndef COL_CHUNK_FLOATS
#define COL_CHUNK_FLOATS (1L << 18)
#endif
#define COL_CHUNK_MIN_ROWS 256L

/* Rows per sgemm in the 1x1 path. Its shapes are often skinny (MobileNet's K or N of
 * 16..32), and there OpenBLAS runs 20-70% faster on 2048-row slices than on the whole
 * batch (bench_nn's skinny shapes; e.g. dx of a 144 -> 24 projection 47 -> 80 GFLOP/s),
 * for the forward and both gradients. */
#define PW_CHUNK_ROWS 2048L

static int is_depthwise(const nn_conv_shape *s)
{
    return s->groups > 1 && s->groups == s->cin && s->groups == s->cout;
}

static int is_pointwise(const nn_conv_shape *s)
{
    return s->kh == 1 && s->kw == 1 && s->stride == 1 && s->pt == 0 && s->pl == 0 &&
           s->oh == s->h && s->ow == s->w;
}

static long chunk_rows(const nn_conv_shape *s)
{
    long k = (long)s->kh * s->kw * (s->cin / s->groups);
    long m = (long)s->n * s->oh * s->ow;
    long rows = COL_CHUNK_FLOATS / k;
    if (rows < COL_CHUNK_MIN_ROWS)
        rows = COL_CHUNK_MIN_ROWS;
    return rows < m ? rows : m;
}

void nn_conv_shape_of(const nn_model *m, const nn_node *nd, int n, nn_conv_shape *s)
{
    const nn_node *in = &m->nodes[nd->in[0]];
    s->n = n;
    s->h = in->h;
    s->w = in->w;
    s->cin = in->c;
    s->oh = nd->h;
    s->ow = nd->w;
    s->cout = nd->c;
    s->kh = nd->kh;
    s->kw = nd->kw;
    s->stride = nd->stride;
    s->pt = nd->pad_t;
    s->pl = nd->pad_l;
    s->groups = nd->groups;
}

size_t nn_conv_ws_floats(const nn_conv_shape *s)
{
    if (is_depthwise(s) || is_pointwise(s))
        return 0;
    return (size_t)chunk_rows(s) * (size_t)s->kh * (size_t)s->kw * (size_t)(s->cin / s->groups);
}

/* Short copies are the common case (3 to a few hundred floats): a plain loop beats a
 * libc call for those. */
static inline void copy_f(float *restrict d, const float *restrict s, int n)
{
    if (n >= 64) {
        memcpy(d, s, (size_t)n * sizeof *d);
        return;
    }
    for (int i = 0; i < n; i++)
        d[i] = s[i];
}

static inline void zero_f(float *d, int n)
{
    for (int i = 0; i < n; i++)
        d[i] = 0.0f;
}

static inline void add_f(float *restrict d, const float *restrict s, int n)
{
    for (int i = 0; i < n; i++)
        d[i] += s[i];
}

/* Rows [m0, m1) of the column matrix of channel group [c0, c0 + cg): row m is output
 * pixel m (image, oy, ox) in NHWC order, columns are (ky, kx, channel). */
static void im2col(const nn_conv_shape *s, const float *x, int c0, long m0, long m1, float *col)
{
    const int cg = s->cin / s->groups, K = s->kh * s->kw * cg;
    const long plane = (long)s->oh * s->ow;
    long img = m0 / plane;
    int oy = (int)((m0 % plane) / s->ow), ox = (int)((m0 % plane) % s->ow);
    const int whole = cg == s->cin;
    for (long m = m0; m < m1; m++) {
        float *dst = col + (m - m0) * K;
        const float *xi = x + (size_t)img * s->h * s->w * s->cin;
        const int iy0 = oy * s->stride - s->pt, ix0 = ox * s->stride - s->pl;
        const int inside_x = ix0 >= 0 && ix0 + s->kw <= s->w;
        for (int ky = 0; ky < s->kh; ky++) {
            const int iy = iy0 + ky;
            if (iy < 0 || iy >= s->h) {
                zero_f(dst, s->kw * cg);
                dst += s->kw * cg;
                continue;
            }
            const float *row = xi + (size_t)iy * s->w * s->cin;
            if (whole && inside_x) {
                /* The kw pixels are adjacent in NHWC: one contiguous run. An RGB 3x3
                 * run (the first layer, where im2col costs as much as its skinny
                 * sgemm) gets a constant-size copy the compiler turns into moves. */
                if (s->kw * cg == 9)
                    memcpy(dst, row + (size_t)ix0 * s->cin, 9 * sizeof *dst);
                else
                    copy_f(dst, row + (size_t)ix0 * s->cin, s->kw * cg);
                dst += s->kw * cg;
                continue;
            }
            for (int kx = 0; kx < s->kw; kx++) {
                const int ix = ix0 + kx;
                if (ix < 0 || ix >= s->w)
                    zero_f(dst, cg);
                else
                    copy_f(dst, row + (size_t)ix * s->cin + c0, cg);
                dst += cg;
            }
        }
        if (++ox == s->ow) {
            ox = 0;
            if (++oy == s->oh) {
                oy = 0;
                img++;
            }
        }
    }
}

/* The adjoint of im2col: adds the column rows [m0, m1) back into dx. */
static void col2im(const nn_conv_shape *s, const float *col, int c0, long m0, long m1, float *dx)
{
    const int cg = s->cin / s->groups, K = s->kh * s->kw * cg;
    const long plane = (long)s->oh * s->ow;
    long img = m0 / plane;
    int oy = (int)((m0 % plane) / s->ow), ox = (int)((m0 % plane) % s->ow);
    const int whole = cg == s->cin;
    for (long m = m0; m < m1; m++) {
        const float *src = col + (m - m0) * K;
        float *xi = dx + (size_t)img * s->h * s->w * s->cin;
        const int iy0 = oy * s->stride - s->pt, ix0 = ox * s->stride - s->pl;
        const int inside_x = ix0 >= 0 && ix0 + s->kw <= s->w;
        for (int ky = 0; ky < s->kh; ky++) {
            const int iy = iy0 + ky;
            if (iy < 0 || iy >= s->h) {
                src += s->kw * cg;
                continue;
            }
            float *row = xi + (size_t)iy * s->w * s->cin;
            if (whole && inside_x) {
                add_f(row + (size_t)ix0 * s->cin, src, s->kw * cg);
                src += s->kw * cg;
                continue;
            }
            for (int kx = 0; kx < s->kw; kx++) {
                const int ix = ix0 + kx;
                if (ix >= 0 && ix < s->w)
                    add_f(row + (size_t)ix * s->cin + c0, src, cg);
                src += cg;
            }
        }
        if (++ox == s->ow) {
            ox = 0;
            if (++oy == s->oh) {
                oy = 0;
                img++;
            }
        }
    }
}

static void add_bias_rows(long rows, int c, const float *restrict b, float *restrict y)
{
    for (long r = 0; r < rows; r++)
        for (int j = 0; j < c; j++)
            y[r * c + j] += b[j];
}

static void sum_rows_into(long rows, int c, const float *restrict dy, float *restrict db)
{
    /* Blocks of rows summed in float, then added once: accurate enough and vectorised. */
    float acc[256];
    for (int c0 = 0; c0 < c; c0 += 256) {
        int cn = c - c0 < 256 ? c - c0 : 256;
        for (int j = 0; j < cn; j++)
            acc[j] = 0.0f;
        for (long r = 0; r < rows; r++) {
            const float *row = dy + r * c + c0;
            for (int j = 0; j < cn; j++)
                acc[j] += row[j];
        }
        for (int j = 0; j < cn; j++)
            db[c0 + j] += acc[j];
    }
}

/* ---- depthwise ----
 *
 * Channels go in blocks of DW_CB (two 4-float vectors, GCC/clang vector extensions)
 * whose accumulators stay in registers across the taps; left-over channels (fewer
 * than 4) take a scalar loop. The vectors are 16 bytes, which every x86-64 (and most
 * other) targets have natively. */

typedef float v4f __attribute__((vector_size(16)));

static inline v4f v4_ld(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void v4_st(float *p, v4f v)
{
    memcpy(p, &v, sizeof v);
}

/* Vector lanes in a block of cb channels starting at c0 (cb = 8 or 4), scalar below. */
static inline int block_of(int C, int c0)
{
    int left = C - c0;
    return left >= 8 ? 8 : left >= 4 ? 4 : left;
}

/* The taps of one pixel: element offsets of the data (input for forward, output
 * gradient for dx) and of the weights, for the window positions inside the image.
 * Built once per pixel, used for every channel block. */
#define DW_MAX_TAPS (NN_MAX_KERNEL * NN_MAX_KERNEL)
typedef struct taps {
    int n;
    size_t data[DW_MAX_TAPS];
    size_t wt[DW_MAX_TAPS];
} taps;

/* sum over the taps of a[data] * b[wt], channels [c0, c0 + cb); stored into out, or
 * added to it when accum. */
static inline void dw_dot(int cb, const taps *t, const float *a, const float *b,
                          const float *init, int c0, float *out, int accum)
{
    v4f a0 = {0, 0, 0, 0}, a1 = a0;
    float sc[4] = {0, 0, 0, 0};
    if (init) {
        if (cb >= 4)
            a0 = v4_ld(init + c0);
        if (cb == 8)
            a1 = v4_ld(init + c0 + 4);
        if (cb < 4)
            for (int k = 0; k < cb; k++)
                sc[k] = init[c0 + k];
    }
    for (int i = 0; i < t->n; i++) {
        const float *xp = a + t->data[i] + c0, *wk = b + t->wt[i] + c0;
        if (cb >= 4)
            a0 += v4_ld(xp) * v4_ld(wk);
        if (cb == 8)
            a1 += v4_ld(xp + 4) * v4_ld(wk + 4);
        if (cb < 4)
            for (int k = 0; k < cb; k++)
                sc[k] += xp[k] * wk[k];
    }
    float *d = out + c0;
    if (accum) {
        if (cb >= 4)
            v4_st(d, v4_ld(d) + a0);
        if (cb == 8)
            v4_st(d + 4, v4_ld(d + 4) + a1);
        if (cb < 4)
            for (int k = 0; k < cb; k++)
                d[k] += sc[k];
    } else {
        if (cb >= 4)
            v4_st(d, a0);
        if (cb == 8)
            v4_st(d + 4, a1);
        if (cb < 4)
            for (int k = 0; k < cb; k++)
                d[k] = sc[k];
    }
}

/* Every channel block of one pixel, with the block size a constant in each call so
 * each is specialised. */
static void dw_dot_all(int C, const taps *t, const float *a, const float *b, const float *init,
                       float *out, int accum)
{
    for (int c0 = 0; c0 < C;) {
        const int cb = block_of(C, c0);
        if (cb == 8)
            dw_dot(8, t, a, b, init, c0, out, accum);
        else if (cb == 4)
            dw_dot(4, t, a, b, init, c0, out, accum);
        else
            dw_dot(cb, t, a, b, init, c0, out, accum);
        c0 += cb;
    }
}

static void dw_fwd(const nn_conv_shape *s, const float *x, const float *wt, const float *bias,
                   float *y)
{
    const int C = s->cin;
    taps t;
    for (int img = 0; img < s->n; img++) {
        const float *xi = x + (size_t)img * s->h * s->w * C;
        for (int oy = 0; oy < s->oh; oy++)
            for (int ox = 0; ox < s->ow; ox++) {
                t.n = 0;
                for (int ky = 0; ky < s->kh; ky++) {
                    const int iy = oy * s->stride - s->pt + ky;
                    if (iy < 0 || iy >= s->h)
                        continue;
                    for (int kx = 0; kx < s->kw; kx++) {
                        const int ix = ox * s->stride - s->pl + kx;
                        if (ix < 0 || ix >= s->w)
                            continue;
                        t.data[t.n] = ((size_t)iy * s->w + ix) * C;
                        t.wt[t.n++] = (size_t)(ky * s->kw + kx) * C;
                    }
                }
                dw_dot_all(C, &t, xi, wt, bias,
                           y + (((size_t)img * s->oh + oy) * s->ow + ox) * C, 0);
            }
    }
}

/* Taps of input pixel (iy, ix) for dx: the outputs whose windows cover it. */
static void dx_taps(const nn_conv_shape *s, int iy, int ix, taps *t)
{
    const int C = s->cin;
    t->n = 0;
    /* ky runs over the rows with (iy + pt - ky) a multiple of the stride. */
    for (int ky = (iy + s->pt) % s->stride; ky < s->kh; ky += s->stride) {
        const int ty = iy + s->pt - ky;
        if (ty < 0)
            break;
        const int oy = ty / s->stride;
        if (oy >= s->oh)
            continue;
        for (int kx = (ix + s->pl) % s->stride; kx < s->kw; kx += s->stride) {
            const int tx = ix + s->pl - kx;
            if (tx < 0)
                break;
            const int ox = tx / s->stride;
            if (ox >= s->ow)
                continue;
            t->data[t->n] = ((size_t)oy * s->ow + ox) * C;
            t->wt[t->n++] = (size_t)(ky * s->kw + kx) * C;
        }
    }
}

/* dw over one output row and one kernel row ky, channels [c0, c0 + cb): the kw
 * partial sums stay in registers across the row, then go into dw once. */
#define DW_MAX_KW 7
static inline void dw_dw_row(int cb, int C, const float *xrow, const float *grow,
                             const nn_conv_shape *s, int ky, int c0, float *dw)
{
    v4f a0[DW_MAX_KW], a1[DW_MAX_KW];
    float sc[DW_MAX_KW][4];
    for (int kx = 0; kx < s->kw; kx++) {
        a0[kx] = a1[kx] = (v4f){0, 0, 0, 0};
        for (int k = 0; k < 4; k++)
            sc[kx][k] = 0.0f;
    }
    for (int ox = 0; ox < s->ow; ox++) {
        const float *g = grow + (size_t)ox * C + c0;
        const v4f g0 = cb >= 4 ? v4_ld(g) : (v4f){0, 0, 0, 0};
        const v4f g1 = cb == 8 ? v4_ld(g + 4) : (v4f){0, 0, 0, 0};
        for (int kx = 0; kx < s->kw; kx++) {
            const int ix = ox * s->stride - s->pl + kx;
            if (ix < 0 || ix >= s->w)
                continue;
            const float *xp = xrow + (size_t)ix * C + c0;
            if (cb >= 4)
                a0[kx] += v4_ld(xp) * g0;
            if (cb == 8)
                a1[kx] += v4_ld(xp + 4) * g1;
            if (cb < 4)
                for (int k = 0; k < cb; k++)
                    sc[kx][k] += xp[k] * g[k];
        }
    }
    for (int kx = 0; kx < s->kw; kx++) {
        float *d = dw + (size_t)(ky * s->kw + kx) * C + c0;
        if (cb >= 4)
            v4_st(d, v4_ld(d) + a0[kx]);
        if (cb == 8)
            v4_st(d + 4, v4_ld(d + 4) + a1[kx]);
        if (cb < 4)
            for (int k = 0; k < cb; k++)
                d[k] += sc[kx][k];
    }
}

/* The same for kw == 3 and a block of 8 channels (MobileNet's case): six named
 * accumulators, which the compiler does keep in registers. */
static void dw_dw_row3x8(int C, const float *xrow, const float *grow, const nn_conv_shape *s,
                         int ky, int c0, float *dw)
{
    const v4f z = {0, 0, 0, 0};
    v4f p0 = z, p1 = z, q0 = z, q1 = z, r0 = z, r1 = z;
    for (int ox = 0; ox < s->ow; ox++) {
        const float *g = grow + (size_t)ox * C + c0;
        const v4f g0 = v4_ld(g), g1 = v4_ld(g + 4);
        const int ix = ox * s->stride - s->pl;
        const float *xp = xrow + (ptrdiff_t)ix * C + c0;
        if (ix >= 0 && ix + 2 < s->w) {
            p0 += v4_ld(xp) * g0;
            p1 += v4_ld(xp + 4) * g1;
            q0 += v4_ld(xp + C) * g0;
            q1 += v4_ld(xp + C + 4) * g1;
            r0 += v4_ld(xp + 2 * C) * g0;
            r1 += v4_ld(xp + 2 * C + 4) * g1;
            continue;
        }
        if (ix >= 0 && ix < s->w) {
            p0 += v4_ld(xp) * g0;
            p1 += v4_ld(xp + 4) * g1;
        }
        if (ix + 1 >= 0 && ix + 1 < s->w) {
            q0 += v4_ld(xp + C) * g0;
            q1 += v4_ld(xp + C + 4) * g1;
        }
        if (ix + 2 >= 0 && ix + 2 < s->w) {
            r0 += v4_ld(xp + 2 * C) * g0;
            r1 += v4_ld(xp + 2 * C + 4) * g1;
        }
    }
    float *d = dw + (size_t)(ky * 3) * C + c0;
    v4_st(d, v4_ld(d) + p0);
    v4_st(d + 4, v4_ld(d + 4) + p1);
    v4_st(d + C, v4_ld(d + C) + q0);
    v4_st(d + C + 4, v4_ld(d + C + 4) + q1);
    v4_st(d + 2 * C, v4_ld(d + 2 * C) + r0);
    v4_st(d + 2 * C + 4, v4_ld(d + 2 * C + 4) + r1);
}

static void dw_bwd(const nn_conv_shape *s, const float *x, const float *wt, const float *dy,
                   float *dx, int accum, float *dw)
{
    const int C = s->cin;
    for (int img = 0; img < s->n; img++) {
        const float *xi = x + (size_t)img * s->h * s->w * C;
        const float *gi = dy + (size_t)img * s->oh * s->ow * C;
        if (dw && s->kw <= DW_MAX_KW) {
            for (int oy = 0; oy < s->oh; oy++)
                for (int ky = 0; ky < s->kh; ky++) {
                    const int iy = oy * s->stride - s->pt + ky;
                    if (iy < 0 || iy >= s->h)
                        continue;
                    const float *xrow = xi + (size_t)iy * s->w * C;
                    const float *grow = gi + (size_t)oy * s->ow * C;
                    for (int c0 = 0; c0 < C;) {
                        const int cb = block_of(C, c0);
                        if (cb == 8 && s->kw == 3)
                            dw_dw_row3x8(C, xrow, grow, s, ky, c0, dw);
                        else if (cb == 8)
                            dw_dw_row(8, C, xrow, grow, s, ky, c0, dw);
                        else if (cb == 4)
                            dw_dw_row(4, C, xrow, grow, s, ky, c0, dw);
                        else
                            dw_dw_row(cb, C, xrow, grow, s, ky, c0, dw);
                        c0 += cb;
                    }
                }
        } else if (dw) {
            /* Wide kernels: plain accumulation straight into dw. */
            for (int oy = 0; oy < s->oh; oy++)
                for (int ox = 0; ox < s->ow; ox++) {
                    const float *g = gi + ((size_t)oy * s->ow + ox) * C;
                    for (int ky = 0; ky < s->kh; ky++) {
                        const int iy = oy * s->stride - s->pt + ky;
                        if (iy < 0 || iy >= s->h)
                            continue;
                        for (int kx = 0; kx < s->kw; kx++) {
                            const int ix = ox * s->stride - s->pl + kx;
                            if (ix < 0 || ix >= s->w)
                                continue;
                            const float *xp = xi + ((size_t)iy * s->w + ix) * C;
                            float *dwk = dw + (size_t)(ky * s->kw + kx) * C;
                            for (int c = 0; c < C; c++)
                                dwk[c] += xp[c] * g[c];
                        }
                    }
                }
        }
        if (dx) {
            float *dxi = dx + (size_t)img * s->h * s->w * C;
            taps t;
            for (int iy = 0; iy < s->h; iy++)
                for (int ix = 0; ix < s->w; ix++) {
                    dx_taps(s, iy, ix, &t);
                    dw_dot_all(C, &t, gi, wt, NULL, dxi + ((size_t)iy * s->w + ix) * C, accum);
                }
        }
    }
}

/* ---- entry points ---- */

void nn_conv_fwd(const nn_conv_shape *s, const float *x, const float *wt, const float *bias,
                 float *y, float *ws)
{
    const long M = (long)s->n * s->oh * s->ow;
    const int cig = s->cin / s->groups, cog = s->cout / s->groups;
    if (is_depthwise(s)) {
        dw_fwd(s, x, wt, bias, y);
        return;
    }
    if (is_pointwise(s)) {
        for (long m0 = 0; m0 < M; m0 += PW_CHUNK_ROWS) {
            const int mr = (int)(M - m0 < PW_CHUNK_ROWS ? M - m0 : PW_CHUNK_ROWS);
            for (int g = 0; g < s->groups; g++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mr, cog, cig, 1.0f,
                            x + m0 * s->cin + g * cig, s->cin, wt + g * cog, s->cout, 0.0f,
                            y + m0 * s->cout + g * cog, s->cout);
        }
        if (bias)
            add_bias_rows(M, s->cout, bias, y);
        return;
    }
    const int K = s->kh * s->kw * cig;
    const long rows = chunk_rows(s);
    for (long m0 = 0; m0 < M; m0 += rows) {
        const long mr = M - m0 < rows ? M - m0 : rows;
        for (int g = 0; g < s->groups; g++) {
            im2col(s, x, g * cig, m0, m0 + mr, ws);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mr, cog, K, 1.0f, ws, K,
                        wt + g * cog, s->cout, 0.0f, y + m0 * s->cout + g * cog, s->cout);
        }
        if (bias)
            add_bias_rows(mr, s->cout, bias, y + m0 * s->cout);
    }
}

void nn_conv_bwd(const nn_conv_shape *s, const float *x, const float *wt, const float *dy,
                 float *dx, int dx_accum, float *dw, float *db, float *ws)
{
    const long M = (long)s->n * s->oh * s->ow;
    const int cig = s->cin / s->groups, cog = s->cout / s->groups;
    if (db)
        sum_rows_into(M, s->cout, dy, db);
    if (is_depthwise(s)) {
        dw_bwd(s, x, wt, dy, dx, dx_accum, dw);
        return;
    }
    if (dx && !dx_accum && !is_pointwise(s))
        memset(dx, 0, (size_t)s->n * s->h * s->w * s->cin * sizeof *dx);
    if (is_pointwise(s)) {
        for (long m0 = 0; m0 < M; m0 += PW_CHUNK_ROWS) {
            const int mr = (int)(M - m0 < PW_CHUNK_ROWS ? M - m0 : PW_CHUNK_ROWS);
            const float *xc = x + m0 * s->cin, *gc = dy + m0 * s->cout;
            for (int g = 0; g < s->groups; g++) {
                if (dw)
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cig, cog, mr, 1.0f,
                                xc + g * cig, s->cin, gc + g * cog, s->cout, 1.0f, dw + g * cog,
                                s->cout);
                if (dx)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mr, cig, cog, 1.0f,
                                gc + g * cog, s->cout, wt + g * cog, s->cout,
                                dx_accum ? 1.0f : 0.0f, dx + m0 * s->cin + g * cig, s->cin);
            }
        }
        return;
    }
    const int K = s->kh * s->kw * cig;
    const long rows = chunk_rows(s);
    for (long m0 = 0; m0 < M; m0 += rows) {
        const long mr = M - m0 < rows ? M - m0 : rows;
        for (int g = 0; g < s->groups; g++) {
            const float *dyg = dy + m0 * s->cout + g * cog;
            if (dw) {
                im2col(s, x, g * cig, m0, m0 + mr, ws);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, cog, (int)mr, 1.0f, ws, K,
                            dyg, s->cout, 1.0f, dw + g * cog, s->cout);
            }
            if (dx) {
                /* The workspace is free again: it now receives the column gradient. */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mr, K, cog, 1.0f, dyg,
                            s->cout, wt + g * cog, s->cout, 0.0f, ws, K);
                col2im(s, ws, g * cig, m0, m0 + mr, dx);
            }
        }
    }
}
