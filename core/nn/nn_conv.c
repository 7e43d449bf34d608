/* nn_conv — 2-D convolution, NHWC, weights HWIO ([kh][kw][cin/groups][cout]).
 *
 * Three paths:
 *   - stride-1 1x1 without padding: the NHWC tensor already is the [N*H*W, Cin] matrix,
 *     so forward and both gradients are single matrix products on it: nn_gemm.c's
 *     (no packing, the bias and activation in registers) where it takes the shape,
 *     sgemm per group otherwise;
 *   - depthwise (groups == cin == cout): direct kernels vectorised over channels
 *     (nn_dw.c); as an sgemm it would be K = kh*kw, N = 1 per group, which no BLAS
 *     runs well;
 *   - everything else: im2col into a row-major [rows, kh*kw*cin/groups] matrix, one
 *     product against the weights (nn_gemm.c's when it takes the shape, as for the
 *     RGB stem's K = 27, else sgemm), the output rows landing directly in NHWC. The rows
 *     are processed in chunks so the column matrix stays in cache between im2col and
 *     sgemm (and memory stays bounded); backward recomputes it rather than keeping it.
 *
 * The bias and an activation fused into the conv (nn_model_finalize: a ReLU/ReLU6
 * that is the conv's only reader) are applied to each chunk of output rows right
 * after the sgemm that wrote it, while it is in cache, and by the depthwise kernel
 * before its store: no separate pass over the output. Backward mirrors it: one pass
 * per chunk takes dy through the activation (in place) and sums the bias gradient,
 * then the chunk's products read it from cache. When the conv after this one did
 * that already (nn_dx_act: its input gradient left its kernel masked by this conv's
 * activation, bias gradient summed), there is no such pass at all.
 */
#include <cblas.h>
#include <string.h>

#include "nn/nn_bf16.h"
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

/* Rows per chunk of the 1x1 path's backward (and per sgemm where it falls back to
 * OpenBLAS). Its shapes are often skinny (MobileNet's K or N of 16..32), and there
 * OpenBLAS runs 20-70% faster on 2048-row slices than on the whole batch (bench_nn's
 * skinny shapes; e.g. dx of a 144 -> 24 projection 47 -> 80 GFLOP/s). nn_gemm blocks
 * its rows itself; for it the chunk only keeps dz in cache from the activation pass
 * to the two products (1024 to 4096 rows measured alike, within the noise). */
#define PW_CHUNK_ROWS 2048L

int nn_conv_is_depthwise(const nn_conv_shape *s)
{
    return s->groups > 1 && s->groups == s->cin && s->groups == s->cout;
}

int nn_conv_is_pointwise(const nn_conv_shape *s)
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
    s->bf16 = NULL;
}

/* The 1x1 path's input gradient through nn_gemm needs the weights transposed. */
static int pw_gemm_dx(const nn_conv_shape *s)
{
    return s->groups == 1 && nn_gemm_ok(s->cout, s->cin);
}

size_t nn_conv_ws_floats(const nn_conv_shape *s)
{
    if (nn_conv_is_depthwise(s))
        return 0;
    if (nn_conv_is_pointwise(s))
        return s->groups == 1 && (long)s->cin * s->cout <= NN_GEMM_MAX_KN
                   ? (size_t)s->cin * (size_t)s->cout
                   : 0;
    return (size_t)chunk_rows(s) * (size_t)s->kh * (size_t)s->kw * (size_t)(s->cin / s->groups);
}

static void transpose(int rows, int cols, const float *restrict a, float *restrict t)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            t[(size_t)j * rows + i] = a[(size_t)i * cols + j];
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

/* Where im2col writes: float32 rows of K, or (bf16 != NULL) bfloat16 rows of
 * row_len (K rounded up to the engine's pairs, the tail zero), packed as the bf16
 * kernels read A (nn_bf16.h's NN_BF16_ROWS), so the forward skips a float32 pass. */
typedef struct col_out {
    float *f;
    uint16_t *bf16;
    long row_len;
} col_out;

static inline void col_put(const col_out *o, long at, const float *src, int n)
{
    if (o->bf16)
        nn_bf16_convert(src, n, o->bf16 + at);
    else if (n == 9) /* an RGB 3x3 run: a constant-size copy the compiler turns into moves */
        memcpy(o->f + at, src, 9 * sizeof *o->f);
    else
        copy_f(o->f + at, src, n);
}

static inline void col_zero(const col_out *o, long at, int n)
{
    if (o->bf16)
        memset(o->bf16 + at, 0, (size_t)n * sizeof *o->bf16);
    else
        zero_f(o->f + at, n);
}

/* Rows [m0, m1) of the column matrix of channel group [c0, c0 + cg): row m is output
 * pixel m (image, oy, ox) in NHWC order, columns are (ky, kx, channel). */
static void im2col_to(const nn_conv_shape *s, const float *x, int c0, long m0, long m1,
                      const col_out *o)
{
    const int cg = s->cin / s->groups, K = s->kh * s->kw * cg;
    const long plane = (long)s->oh * s->ow;
    long img = m0 / plane;
    int oy = (int)((m0 % plane) / s->ow), ox = (int)((m0 % plane) % s->ow);
    const int whole = cg == s->cin;
    for (long m = m0; m < m1; m++) {
        long at = (m - m0) * o->row_len;
        const float *xi = x + (size_t)img * s->h * s->w * s->cin;
        const int iy0 = oy * s->stride - s->pt, ix0 = ox * s->stride - s->pl;
        const int inside_x = ix0 >= 0 && ix0 + s->kw <= s->w;
        for (int ky = 0; ky < s->kh; ky++) {
            const int iy = iy0 + ky;
            if (iy < 0 || iy >= s->h) {
                col_zero(o, at, s->kw * cg);
                at += s->kw * cg;
                continue;
            }
            const float *row = xi + (size_t)iy * s->w * s->cin;
            if (whole && inside_x) {
                /* The kw pixels are adjacent in NHWC: one contiguous run. */
                col_put(o, at, row + (size_t)ix0 * s->cin, s->kw * cg);
                at += s->kw * cg;
                continue;
            }
            for (int kx = 0; kx < s->kw; kx++) {
                const int ix = ix0 + kx;
                if (ix < 0 || ix >= s->w)
                    col_zero(o, at, cg);
                else
                    col_put(o, at, row + (size_t)ix * s->cin + c0, cg);
                at += cg;
            }
        }
        if (o->row_len > K)
            col_zero(o, at, (int)(o->row_len - K));
        if (++ox == s->ow) {
            ox = 0;
            if (++oy == s->oh) {
                oy = 0;
                img++;
            }
        }
    }
}

static void im2col(const nn_conv_shape *s, const float *x, int c0, long m0, long m1, float *col)
{
    const col_out o = { col, NULL, (long)s->kh * s->kw * (s->cin / s->groups) };
    im2col_to(s, x, c0, m0, m1, &o);
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

/* The output pass, on rows still in cache from the sgemm that wrote them:
 * y = act(y + bias) (bias may be NULL; act an enum nn_act). */
static void bias_act_rows(long rows, int c, const float *restrict b, int act, float *restrict y)
{
    if (!b && !act)
        return;
    for (long r = 0; r < rows; r++) {
        float *restrict yr = y + r * c;
        if (b && act == NN_ACT_RELU6)
            for (int j = 0; j < c; j++) {
                float v = yr[j] + b[j];
                v = v > 0.0f ? v : 0.0f;
                yr[j] = v < 6.0f ? v : 6.0f;
            }
        else if (b && act == NN_ACT_RELU)
            for (int j = 0; j < c; j++) {
                float v = yr[j] + b[j];
                yr[j] = v > 0.0f ? v : 0.0f;
            }
        else if (b)
            for (int j = 0; j < c; j++)
                yr[j] += b[j];
        else
            for (int j = 0; j < c; j++) {
                float v = yr[j] > 0.0f ? yr[j] : 0.0f;
                yr[j] = act == NN_ACT_RELU6 && v > 6.0f ? 6.0f : v;
            }
    }
}

/* The first pass of backward, once over dy: through a fused activation (dy becomes
 * dz = dy * act'(y) in place, act' from the output as nn_act_bwd has it), and the
 * bias gradient db += column sums of dz (db may be NULL). Sums run in float over the
 * rows given (a chunk), in blocks of channels that stay in registers or L1. */
#define SUM_BLOCK 256
static void act_bias_grad_rows(long rows, int c, int act, const float *restrict y,
                               float *restrict g, float *restrict db)
{
    if (!act && !db)
        return;
    float acc[SUM_BLOCK];
    for (int c0 = 0; c0 < c; c0 += SUM_BLOCK) {
        const int cn = c - c0 < SUM_BLOCK ? c - c0 : SUM_BLOCK;
        for (int j = 0; j < cn; j++)
            acc[j] = 0.0f;
        for (long r = 0; r < rows; r++) {
            const float *restrict yr = y + r * c + c0;
            float *restrict gr = g + r * c + c0;
            if (act == NN_ACT_RELU6)
                for (int j = 0; j < cn; j++)
                    gr[j] *= (yr[j] > 0.0f ? 1.0f : 0.0f) * (yr[j] < 6.0f ? 1.0f : 0.0f);
            else if (act == NN_ACT_RELU)
                for (int j = 0; j < cn; j++)
                    gr[j] *= yr[j] > 0.0f ? 1.0f : 0.0f;
            for (int j = 0; j < cn; j++)
                acc[j] += gr[j];
        }
        if (db)
            for (int j = 0; j < cn; j++)
                db[c0 + j] += acc[j];
    }
}

/* Where the 1x1 path's backward computes an xform input's chunk: after the
 * transposed weights. */
static size_t pw_xf_at(const nn_conv_shape *s)
{
    return ((size_t)s->cin * (size_t)s->cout + 15) & ~(size_t)15;
}

size_t nn_conv_ws_floats_xf(const nn_conv_shape *s)
{
    if (nn_conv_is_depthwise(s))
        return nn_dw_xf_floats(s);
    const long M = (long)s->n * s->oh * s->ow;
    return pw_xf_at(s) + (size_t)(M < PW_CHUNK_ROWS ? M : PW_CHUNK_ROWS) * (size_t)s->cin;
}

/* ---- bf16 products (nn_bf16.h) ----
 * Convolutions without groups whose product nn_bf16_pays; the rest stay float32. The
 * weights are packed once per call, ahead of the row chunks. */

/* Whether the shape's products run in bf16 when the context asks for it. */
static int bf16_shape(const nn_conv_shape *s)
{
    return s->groups == 1 && nn_bf16_pays((long)s->kh * s->kw * s->cin, s->cout);
}

static long bf16_rows(const nn_conv_shape *s)
{
    const long M = (long)s->n * s->oh * s->ow;
    const long rows = nn_conv_is_pointwise(s) ? PW_CHUNK_ROWS : chunk_rows(s);
    return rows < M ? rows : M;
}

static size_t up64(size_t n)
{
    return (n + 63u) & ~(size_t)63u;
}

/* The workspace's parts, as offsets from its first 64-byte boundary: the weights
 * packed (either way round), a chunk's gradient packed (the weight gradient's B), A's
 * block, the forward's bf16 column matrix (a chunk's rows, padded to 16, of K in
 * pairs with AMX's padding, the most any engine takes); off[4] is the end. */
static void bf16_layout(const nn_conv_shape *s, size_t off[5])
{
    const long K = (long)s->kh * s->kw * s->cin, N = s->cout, rows = bf16_rows(s);
    const size_t w1 = nn_bf16_b_bytes(K, N), w2 = nn_bf16_b_bytes(N, K);
    long depth = K > rows ? K : rows;
    depth = depth > N ? depth : N;
    const size_t col = (size_t)((rows + 15) / 16 * 16) * (size_t)((K + 1) / 2 + 15) * 4u;
    off[0] = 0;
    off[1] = off[0] + up64(w1 > w2 ? w1 : w2);
    off[2] = off[1] + up64(nn_bf16_b_bytes(rows, N));
    off[3] = off[2] + up64(nn_bf16_a_bytes(depth));
    off[4] = off[3] + col;
}

size_t nn_conv_bf16_bytes(const nn_conv_shape *s)
{
    if (!bf16_shape(s))
        return 0;
    size_t off[5];
    bf16_layout(s, off);
    return off[4] + 64; /* and the alignment of the start */
}

/* Part k of the workspace (bf16_layout's order). */
static uint8_t *bf16_part(const nn_conv_shape *s, int k)
{
    size_t off[5];
    bf16_layout(s, off);
    return (uint8_t *)(((uintptr_t)s->bf16->p + 63u) & ~(uintptr_t)63u) + off[k];
}

static int bf16_fwd(const nn_conv_shape *s, const float *x, const float *wt,
                    const nn_gemm_out *out, float *y)
{
    const long M = (long)s->n * s->oh * s->ow, K = (long)s->kh * s->kw * s->cin;
    if (!s->bf16 || !bf16_shape(s))
        return 0;
    const nn_bf16_b B = nn_bf16_pack_b(K, s->cout, wt, s->cout, 1, bf16_part(s, 0));
    if (nn_conv_is_pointwise(s)) {
        nn_bf16_mm(M, x, s->cin, 1, &B, bf16_part(s, 2), y, s->cout, out);
        return 1;
    }
    /* im2col straight into bf16 rows, as the kernels read them. */
    uint8_t *cp = bf16_part(s, 3);
    const long rows = chunk_rows(s), kp = nn_bf16_row_pairs(K);
    const col_out o = { NULL, (uint16_t *)cp, 2 * kp };
    for (long m0 = 0; m0 < M; m0 += rows) {
        const long mr = M - m0 < rows ? M - m0 : rows, padded = (mr + 15) / 16 * 16;
        im2col_to(s, x, 0, m0, m0 + mr, &o);
        memset(o.bf16 + mr * o.row_len, 0, (size_t)((padded - mr) * o.row_len) * 2u);
        nn_bf16_mm_rows(mr, (const uint32_t *)cp, &B, y + m0 * s->cout, s->cout, out);
    }
    return 1;
}

/* The backward of a conv without groups in bf16, as nn_conv_bwd's float32 paths
 * (the same chunks, output passes and xform handling). 0 when it does not apply. */
static int bf16_bwd(const nn_conv_shape *s, const float *x, const float *wt, const float *y,
                    float *dy, int act, float *dx, int dx_accum, float *dw, float *db,
                    float *ws, const nn_dx_act *xa, const nn_xform *xf)
{
    const long M = (long)s->n * s->oh * s->ow, K = (long)s->kh * s->kw * s->cin;
    const long rows = bf16_rows(s);
    if (!s->bf16 || !bf16_shape(s))
        return 0;
    const int pw = nn_conv_is_pointwise(s);
    uint8_t *wp = bf16_part(s, 0), *gp = bf16_part(s, 1), *ap = bf16_part(s, 2);
    /* dx = dz W^T: B(p = output channel, j = column of K) = wt[j * cout + p]. */
    nn_bf16_b Wt = { NULL, 0, 0 };
    if (dx)
        Wt = nn_bf16_pack_b(s->cout, K, wt, 1, s->cout, wp);
    if (dx && !dx_accum && !pw)
        memset(dx, 0, (size_t)s->n * s->h * s->w * s->cin * sizeof *dx);
    const nn_gemm_out acc = { 1, NULL, 0, NULL, 0, NULL };
    for (long m0 = 0; m0 < M; m0 += rows) {
        const long mr = M - m0 < rows ? M - m0 : rows;
        float *gc = dy + m0 * s->cout;
        act_bias_grad_rows(mr, s->cout, act, y + m0 * s->cout, gc, db);
        /* A 1x1's input is x's rows (or computed from its xform), else im2col's. */
        const float *xc = ws;
        if (pw && xf && dw) {
            nn_scale_shift_act(mr, s->cin, xf->x + m0 * s->cin, xf->a, xf->b, xf->act,
                               ws + pw_xf_at(s));
            xc = ws + pw_xf_at(s);
        } else if (pw && x) {
            xc = x + m0 * s->cin;
        }
        if (dw) {
            if (!pw)
                im2col(s, x, 0, m0, m0 + mr, ws);
            /* dW (K x cout) += A^T G: A(i = k, p = m) read across the rows. */
            const nn_bf16_b G = nn_bf16_pack_b(mr, s->cout, gc, s->cout, 1, gp);
            nn_bf16_mm(K, xc, 1, K, &G, ap, dw, s->cout, &acc);
        }
        if (dx && pw) {
            const nn_gemm_out o = { dx_accum, NULL, 0, xa ? xc : NULL, xa ? xa->act : 0,
                                    xa ? xa->db : NULL };
            nn_bf16_mm(mr, gc, s->cout, 1, &Wt, ap, dx + m0 * s->cin, s->cin, &o);
        } else if (dx) {
            nn_bf16_mm(mr, gc, s->cout, 1, &Wt, ap, ws, K, NULL);
            col2im(s, ws, 0, m0, m0 + mr, dx);
        }
    }
    if (xa && !pw)
        act_bias_grad_rows((long)s->n * s->h * s->w, s->cin, xa->act, x, dx, xa->db);
    return 1;
}

/* ---- entry points ---- */

void nn_conv_fwd(const nn_conv_shape *s, const float *x, const float *wt, const float *bias,
                 int act, float *y, float *ws)
{
    const nn_gemm_out out = { 0, bias, act, NULL, 0, NULL };
    if (!nn_conv_is_depthwise(s) && bf16_fwd(s, x, wt, &out, y))
        return;
    nn_conv_fwd_rows(s, x, wt, NULL, bias, act, y, ws, 0, (long)s->n * s->oh * s->ow);
}

int nn_conv_fwd_cols_ok(const nn_conv_shape *s)
{
    const int K = s->kh * s->kw * s->cin;
    return s->groups == 1 && nn_gemm_fwd_ok(K, s->cout);
}

/* C = A B of a forward product: B the weights in place, or packed ahead (wpk, the
 * columns from n0 on: nn_gemm512_pack). */
static void fwd_product(long M, int N, int K, const float *A, const float *wt, long ldb,
                        const float *wpk, float *C, long ldc, const nn_gemm_out *out)
{
    if (wpk)
        nn_gemm512_nn_packed(M, N, K, A, K, wpk, C, ldc, out);
    else
        nn_gemm_nn(M, N, K, A, K, wt, ldb, C, ldc, out);
}

void nn_conv_fwd_cols(const nn_conv_shape *s, const float *x, const float *wt,
                      const float *wpk, const float *bias, int act, float *y, float *ws,
                      int n0, int n1)
{
    const long M = (long)s->n * s->oh * s->ow;
    const int K = s->kh * s->kw * s->cin;
    const nn_gemm_out out = { 0, bias ? bias + n0 : NULL, act, NULL, 0, NULL };
    const float *pk = wpk ? wpk + (size_t)n0 * (size_t)K : NULL;
    if (nn_conv_is_pointwise(s)) {
        fwd_product(M, n1 - n0, K, x, wt + n0, s->cout, pk, y + n0, s->cout, &out);
        return;
    }
    const long rows = chunk_rows(s);
    for (long r0 = 0; r0 < M; r0 += rows) {
        const long mr = M - r0 < rows ? M - r0 : rows;
        im2col(s, x, 0, r0, r0 + mr, ws);
        fwd_product(mr, n1 - n0, K, ws, wt + n0, s->cout, pk, y + r0 * s->cout + n0, s->cout,
                    &out);
    }
}

void nn_conv_fwd_rows(const nn_conv_shape *s, const float *x, const float *wt,
                      const float *wpk, const float *bias, int act, float *y, float *ws,
                      long m0, long m1)
{
    const int cig = s->cin / s->groups, cog = s->cout / s->groups;
    if (nn_conv_is_depthwise(s)) {
        nn_dw_fwd_rows(s, x, wt, bias, act, y, m0 / s->ow, m1 / s->ow);
        return;
    }
    const nn_gemm_out out = { 0, bias, act, NULL, 0, NULL };
    if (nn_conv_is_pointwise(s) && s->groups == 1 && nn_gemm_fwd_ok(s->cin, s->cout)) {
        fwd_product(m1 - m0, s->cout, s->cin, x + m0 * s->cin, wt, s->cout, wpk,
                    y + m0 * s->cout, s->cout, &out);
        return;
    }
    if (nn_conv_is_pointwise(s)) {
        for (long r0 = m0; r0 < m1; r0 += PW_CHUNK_ROWS) {
            const int mr = (int)(m1 - r0 < PW_CHUNK_ROWS ? m1 - r0 : PW_CHUNK_ROWS);
            for (int g = 0; g < s->groups; g++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mr, cog, cig, 1.0f,
                            x + r0 * s->cin + g * cig, s->cin, wt + g * cog, s->cout, 0.0f,
                            y + r0 * s->cout + g * cog, s->cout);
            bias_act_rows(mr, s->cout, bias, act, y + r0 * s->cout);
        }
        return;
    }
    const int K = s->kh * s->kw * cig;
    const long rows = chunk_rows(s);
    const int fast = s->groups == 1 && nn_gemm_fwd_ok(K, s->cout);
    for (long r0 = m0; r0 < m1; r0 += rows) {
        const long mr = m1 - r0 < rows ? m1 - r0 : rows;
        if (fast) {
            im2col(s, x, 0, r0, r0 + mr, ws);
            fwd_product(mr, s->cout, K, ws, wt, s->cout, wpk, y + r0 * s->cout, s->cout, &out);
            continue;
        }
        for (int g = 0; g < s->groups; g++) {
            im2col(s, x, g * cig, r0, r0 + mr, ws);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mr, cog, K, 1.0f, ws, K,
                        wt + g * cog, s->cout, 0.0f, y + r0 * s->cout + g * cog, s->cout);
        }
        bias_act_rows(mr, s->cout, bias, act, y + r0 * s->cout);
    }
}

void nn_conv_bwd(const nn_conv_shape *s, const float *x, const float *wt, const float *y,
                 float *dy, int act, int dy_done, float *dx, int dx_accum, float *dw, float *db,
                 float *ws, const nn_dx_act *xa, const nn_xform *xf)
{
    const long M = (long)s->n * s->oh * s->ow;
    const int cig = s->cin / s->groups, cog = s->cout / s->groups;
    if (dy_done)
        act = 0, db = NULL;
    if (!dx)
        xa = NULL;
    if (nn_conv_is_depthwise(s)) {
        /* Image by image, so dz is still in cache for the two gradients. */
        nn_conv_shape one = *s;
        one.n = 1;
        const size_t in = (size_t)s->h * s->w * s->cin, out = (size_t)s->oh * s->ow * s->cout;
        for (int img = 0; img < s->n; img++) {
            float *dz = dy + img * out;
            act_bias_grad_rows((long)s->oh * s->ow, s->cout, act, y + img * out, dz, db);
            if (dw && xf) {
                const nn_xform t = { xf->x + img * in, xf->a, xf->b, xf->act };
                nn_dw_bwd_dw_xf(&one, &t, dz, dw, ws);
            } else if (dw) {
                nn_dw_bwd_dw(&one, x + img * in, dz, dw);
            }
            if (dx) {
                const nn_dx_act xi = { xa ? xa->act : 0, xa ? xa->x + img * in : NULL,
                                       xa ? xa->db : NULL };
                nn_dw_bwd_dx(&one, dz, wt, dx + img * in, dx_accum, xa ? &xi : NULL);
            }
        }
        return;
    }
    if (bf16_bwd(s, x, wt, y, dy, act, dx, dx_accum, dw, db, ws, xa, xf))
        return;
    if (dx && !dx_accum && !nn_conv_is_pointwise(s))
        memset(dx, 0, (size_t)s->n * s->h * s->w * s->cin * sizeof *dx);
    if (nn_conv_is_pointwise(s)) {
        /* nn_gemm for what it can do (by the shape of each product), sgemm for the
         * rest. */
        const int g_dw = dw && s->groups == 1 && nn_gemm_ok(s->cin, s->cout);
        const int g_dx = dx && pw_gemm_dx(s);
        if (g_dx)
            transpose(s->cin, s->cout, wt, ws);
        for (long m0 = 0; m0 < M; m0 += PW_CHUNK_ROWS) {
            const int mr = (int)(M - m0 < PW_CHUNK_ROWS ? M - m0 : PW_CHUNK_ROWS);
            const float *xc = xf ? ws + pw_xf_at(s) : x + m0 * s->cin;
            /* Only the weight gradient reads x (xa comes only with a conv producer). */
            if (xf && dw)
                nn_scale_shift_act(mr, s->cin, xf->x + m0 * s->cin, xf->a, xf->b, xf->act,
                                   ws + pw_xf_at(s));
            float *gc = dy + m0 * s->cout, *dxc = dx ? dx + m0 * s->cin : NULL;
            act_bias_grad_rows(mr, s->cout, act, y + m0 * s->cout, gc, db);
            if (g_dw)
                nn_gemm_tn(mr, s->cout, s->cin, xc, s->cin, gc, s->cout, dw, s->cout);
            if (g_dx) {
                const nn_gemm_out o = { dx_accum, NULL, 0, xa ? xc : NULL, xa ? xa->act : 0,
                                        xa ? xa->db : NULL };
                nn_gemm_nn(mr, s->cin, s->cout, gc, s->cout, ws, s->cin, dxc, s->cin, &o);
            }
            for (int g = 0; g < s->groups; g++) {
                if (dw && !g_dw)
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cig, cog, mr, 1.0f,
                                xc + g * cig, s->cin, gc + g * cog, s->cout, 1.0f, dw + g * cog,
                                s->cout);
                if (dx && !g_dx)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mr, cig, cog, 1.0f,
                                gc + g * cog, s->cout, wt + g * cog, s->cout,
                                dx_accum ? 1.0f : 0.0f, dxc + g * cig, s->cin);
            }
            if (xa && !g_dx)
                act_bias_grad_rows(mr, s->cin, xa->act, xc, dxc, xa->db);
        }
        return;
    }
    const int K = s->kh * s->kw * cig;
    const long rows = chunk_rows(s);
    const int g_dw = dw && s->groups == 1 && nn_gemm_ok(K, s->cout);
    for (long m0 = 0; m0 < M; m0 += rows) {
        const long mr = M - m0 < rows ? M - m0 : rows;
        act_bias_grad_rows(mr, s->cout, act, y + m0 * s->cout, dy + m0 * s->cout, db);
        for (int g = 0; g < s->groups; g++) {
            const float *dyg = dy + m0 * s->cout + g * cog;
            if (dw) {
                im2col(s, x, g * cig, m0, m0 + mr, ws);
                if (g_dw)
                    nn_gemm_tn(mr, s->cout, K, ws, K, dyg, s->cout, dw, s->cout);
                else
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, cog, (int)mr, 1.0f,
                                ws, K, dyg, s->cout, 1.0f, dw + g * cog, s->cout);
            }
            if (dx) {
                /* The workspace is free again: it now receives the column gradient. */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mr, K, cog, 1.0f, dyg,
                            s->cout, wt + g * cog, s->cout, 0.0f, ws, K);
                col2im(s, ws, g * cig, m0, m0 + mr, dx);
            }
        }
    }
    /* col2im adds every chunk into dx: only now is it whole. */
    if (xa)
        act_bias_grad_rows((long)s->n * s->h * s->w, s->cin, xa->act, x, dx, xa->db);
}
