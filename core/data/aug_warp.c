/* aug_warp — geometry: 3x3 matrix helpers, resampling an image through an output ->
 * source matrix (aug_warp_matrix, aug_warp) by nearest or bilinear sampling, flips,
 * and the perspective and affine transforms of augment.h. The nearest rows (AVX2), the
 * bilinear blend (SSE2) and the left-right flip (SSSE3) have vector versions beside
 * the portable C, giving the same bytes; the CPU detection that picks among them
 * (aug_simd, aug_vector_paths) lives here and serves aug_color.c too. Turning a chain
 * op's parameters into a random matrix is aug_chain.c's.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "base/cpu.h"
#include "data/aug_impl.h"

#ifdef AUG_X86
#include <immintrin.h>
#endif

/* ===================================================================================
 * 3x3 matrices (row-major, acting on column vectors (x, y, 1))
 * =================================================================================== */

void aug_m3_mul(const double a[9], const double b[9], double out[9])
{
    double t[9];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            t[r * 3 + c] = a[r * 3] * b[c] + a[r * 3 + 1] * b[3 + c] + a[r * 3 + 2] * b[6 + c];
    memcpy(out, t, sizeof t);
}

void aug_m3_identity(double m[9])
{
    static const double id[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    memcpy(m, id, sizeof id);
}

static void m3_translate(double m[9], double tx, double ty)
{
    aug_m3_identity(m);
    m[2] = tx;
    m[5] = ty;
}

/* Inverse by the adjugate; 0 when (nearly) singular. */
static int m3_inv(const double a[9], double out[9])
{
    double c00 = a[4] * a[8] - a[5] * a[7];
    double c01 = a[5] * a[6] - a[3] * a[8];
    double c02 = a[3] * a[7] - a[4] * a[6];
    double det = a[0] * c00 + a[1] * c01 + a[2] * c02;
    double scale = 0;
    for (int i = 0; i < 9; i++)
        scale = fmax(scale, fabs(a[i]));
    if (!(fabs(det) > 1e-12 * scale * scale * scale))
        return 0;
    double t[9] = {c00,
                   a[2] * a[7] - a[1] * a[8],
                   a[1] * a[5] - a[2] * a[4],
                   c01,
                   a[0] * a[8] - a[2] * a[6],
                   a[2] * a[3] - a[0] * a[5],
                   c02,
                   a[1] * a[6] - a[0] * a[7],
                   a[0] * a[4] - a[1] * a[3]};
    for (int i = 0; i < 9; i++)
        out[i] = t[i] / det;
    return 1;
}

/* The notebook's get_transformation_mat_2D: the matrix taking the basis vectors and
 * (1, 1, 1) to the four points (in homogeneous coordinates). */
static int basis_to_points(const aug_point p[4], double m[9])
{
    double a[9] = {p[0].x, p[1].x, p[2].x, p[0].y, p[1].y, p[2].y, 1, 1, 1};
    double ai[9];
    if (!m3_inv(a, ai))
        return 0;
    double s[3], smax = 0;
    for (int r = 0; r < 3; r++) {
        s[r] = ai[r * 3] * p[3].x + ai[r * 3 + 1] * p[3].y + ai[r * 3 + 2];
        smax = fmax(smax, fabs(s[r]));
    }
    /* A zero scale: the fourth point is on a line through two of the others. */
    for (int r = 0; r < 3; r++)
        if (!(fabs(s[r]) > 1e-9 * smax))
            return 0;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            m[r * 3 + c] = a[r * 3 + c] * s[c];
    return 1;
}

/* Output -> source matrix of the 4-point transform (source corners -> tgt). */
int aug_perspective_matrix(int h, int w, const aug_point tgt[4], double m[9])
{
    aug_point src[4] = {{0, 0}, {w, 0}, {w, h}, {0, h}};
    double ms[9], mt[9], mti[9];
    if (!basis_to_points(src, ms) || !basis_to_points(tgt, mt) || !m3_inv(mt, mti))
        return 0;
    aug_m3_mul(ms, mti, m);
    return 1;
}

/* ===================================================================================
 * Resampling kernels
 * =================================================================================== */

/* Copy img into ws->pad with a one-pixel black border, so the kernels need no edge
 * cases: a source point just outside the image reads black. */
static void pad_image(const uint8_t *img, int h, int w, uint8_t *pad)
{
    size_t ps = (size_t)(w + 2) * 3, rb = (size_t)w * 3;
    memset(pad, 0, ps);
    for (int y = 0; y < h; y++) {
        uint8_t *row = pad + (size_t)(y + 1) * ps;
        row[0] = row[1] = row[2] = 0;
        memcpy(row + 3, img + (size_t)y * rb, rb);
        row[3 + rb] = row[4 + rb] = row[5 + rb] = 0;
    }
    memset(pad + (size_t)(h + 1) * ps, 0, ps + AUG_PAD_SLACK);
}

/* The columns of an output row whose source point t = (u/q, v/q) lies in
 * [tlo, thx) x [tlo, thy) and whose q is at least qmin: multiplied out by q > 0,
 * each limit is a + b X >= 0, a per row, b per image. With b > 0 it bounds X from
 * below (X >= -a/b), with b < 0 from above, with b = 0 it holds for every X or
 * none. The b are sorted into those kinds once per image, so the per-row work is
 * a multiply and a min or max per limit, without data-dependent branches. */
typedef struct span_ctx {
    double rb[5];       /* 1 / b */
    int kind[5];        /* 1: lower bound, -1: upper bound, 0: b == 0 */
    double tlo, thx, thy, qmin;
} span_ctx;

static void span_init(span_ctx *c, const double P[9], double tlo, double thx, double thy)
{
    c->tlo = tlo;
    c->thx = thx;
    c->thy = thy;
    /* Points with a tiny homogeneous weight are far beyond the horizon: outside.
     * Keeping q away from 0 also keeps the float division accurate. */
    c->qmin = 1e-2;
    double b[5] = {P[6], P[0] - tlo * P[6], thx * P[6] - P[0], P[3] - tlo * P[6],
                   thy * P[6] - P[3]};
    for (int k = 0; k < 5; k++) {
        c->kind[k] = b[k] > 0 ? 1 : b[k] < 0 ? -1 : 0;
        c->rb[k] = b[k] != 0 ? 1 / b[k] : 0;
    }
}

/* floor of a value already clamped to [-1, 2^30]. */
static inline int floor_small(double r)
{
    return (int)(r + 2.0) - 2;
}

static void span_row(const span_ctx *c, double u0, double v0, double q0, int w, int *lo,
                     int *hi)
{
    double a[5] = {q0 - c->qmin, u0 - c->tlo * q0, c->thx * q0 - u0, v0 - c->tlo * q0,
                   c->thy * q0 - v0};
    int l = 0, h = w;
    for (int k = 0; k < 5; k++) {
        if (c->kind[k] == 0) {
            h = a[k] >= 0 ? h : 0;
            continue;
        }
        double r = -a[k] * c->rb[k];
        /* Clamp first: r may be huge (a NaN, which cannot come from finite
         * matrices, would end up as -1). */
        r = r > -1 ? r : -1;
        r = r < w + 1 ? r : w + 1;
        int f = floor_small(r);
        if (c->kind[k] > 0) {
            int ce = f < r ? f + 1 : f;
            l = ce > l ? ce : l;
        } else {
            h = f + 1 < h ? f + 1 : h;
        }
    }
    l = l < w ? l : w;
    *lo = l;
    *hi = h > l ? h : l;
}

/* Rows of the nearest kernel: one output row's source byte offsets into the padded
 * image, in blocks of 8 so the compiler vectorizes them (fixed trip count), then a
 * gather of 4-byte loads and stores (the 4th byte is overwritten by the next pixel;
 * the last pixel of the row is stored with 3). The caller guarantees that every
 * coordinate in [lo, hi) is inside the padded image; the offset is clamped anyway
 * so that no rounding can ever read outside it. */
#define NB 8

typedef struct near_row_args {
    float u0, du, v0, dv, q0, dq;
    int32_t stride, maxo;
} near_row_args;

/* The fields are copied to locals first: idx could alias *a as far as the compiler
 * knows, and reloading them after every store keeps it from vectorizing. */
#define NEAR_IDX_BODY(PROJ)                                                              \
    do {                                                                                 \
        const float u0 = a->u0, du = a->du, v0 = a->v0, dv = a->dv, q0 = a->q0,          \
                    dq = a->dq;                                                          \
        const int32_t stride = a->stride, maxo = a->maxo;                                \
        int last = hi - 1;                                                               \
        for (int X = lo; X < hi; X += NB) {                                              \
            int32_t *out = idx + (X - lo);                                               \
            for (int j = 0; j < NB; j++) {                                               \
                int xx = X + j < last ? X + j : last;                                    \
                float fx = (float)xx;                                                    \
                float sx = u0 + fx * du, sy = v0 + fx * dv;                              \
                if (PROJ) {                                                              \
                    float r = 1.0f / (q0 + fx * dq);                                     \
                    sx *= r;                                                             \
                    sy *= r;                                                             \
                }                                                                        \
                int32_t o = (int32_t)sy * stride + (int32_t)sx * 3;                      \
                o = o < 0 ? 0 : o;                                                       \
                o = o > maxo ? maxo : o;                                                 \
                out[j] = o;                                                              \
            }                                                                            \
        }                                                                                \
    } while (0)

static void near_idx_affine(int32_t *idx, int lo, int hi, const near_row_args *a)
{
    NEAR_IDX_BODY(0);
}

static void near_idx_proj(int32_t *idx, int lo, int hi, const near_row_args *a)
{
    NEAR_IDX_BODY(1);
}

/* Which vector code may run: 0 portable C only; 1 SSE2 (every x86-64); 2 SSSE3 too;
 * 3 AVX2 too. Every path gives the same bytes; the tests hold them to that. */
static int simd_detected = -1, simd_enabled = 1;
static pthread_once_t simd_once = PTHREAD_ONCE_INIT;

static void simd_init(void)
{
    simd_detected = 0;
#ifdef AUG_X86
    const cpu_features *f = cpu_hw();
    simd_detected = f->avx2 ? 3 : f->ssse3 ? 2 : 1;
#endif
}

int aug_simd(void)
{
    pthread_once(&simd_once, simd_init);
    return simd_enabled ? simd_detected : 0;
}

int aug_vector_paths(int enable)
{
    pthread_once(&simd_once, simd_init);
    int prev = simd_enabled;
    if (enable >= 0)
        simd_enabled = enable != 0;
    return prev;
}

#ifdef AUG_X86
/* One output row of nearest resampling in AVX2: offsets for 8 pixels (the same float
 * operations in the same order as NEAR_IDX_BODY, so the same bytes), a hardware
 * gather of 8 4-byte pixels, and a shuffle packing them to 24 bytes. The last
 * (hi - lo) % 8 pixels go through the portable code. */
__attribute__((target("avx2"))) static void near_row_avx2(const uint8_t *pad, uint8_t *row,
                                                           int lo, int hi, int proj,
                                                           const near_row_args *a)
{
    const __m256 u0 = _mm256_set1_ps(a->u0), du = _mm256_set1_ps(a->du);
    const __m256 v0 = _mm256_set1_ps(a->v0), dv = _mm256_set1_ps(a->dv);
    const __m256 q0 = _mm256_set1_ps(a->q0), dq = _mm256_set1_ps(a->dq);
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256i stride = _mm256_set1_epi32(a->stride), maxo = _mm256_set1_epi32(a->maxo);
    const __m256i zero = _mm256_setzero_si256(), step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i pack = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0,
                                          1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    const __m256i join = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7);
    uint8_t *o = row + (size_t)lo * 3;
    int X = lo;
    for (; X + 8 <= hi; X += 8, o += 24) {
        __m256 fx = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_set1_epi32(X), step));
        __m256 sx = _mm256_add_ps(u0, _mm256_mul_ps(fx, du));
        __m256 sy = _mm256_add_ps(v0, _mm256_mul_ps(fx, dv));
        if (proj) {
            __m256 r = _mm256_div_ps(one, _mm256_add_ps(q0, _mm256_mul_ps(fx, dq)));
            sx = _mm256_mul_ps(sx, r);
            sy = _mm256_mul_ps(sy, r);
        }
        __m256i ix = _mm256_cvttps_epi32(sx), iy = _mm256_cvttps_epi32(sy);
        __m256i off = _mm256_add_epi32(_mm256_mullo_epi32(iy, stride),
                                       _mm256_add_epi32(ix, _mm256_add_epi32(ix, ix)));
        off = _mm256_min_epi32(_mm256_max_epi32(off, zero), maxo);
        __m256i px = _mm256_i32gather_epi32((const int *)(const void *)pad, off, 1);
        px = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(px, pack), join);
        _mm_storeu_si128((__m128i *)(void *)o, _mm256_castsi256_si128(px));
        _mm_storel_epi64((__m128i *)(void *)(o + 16), _mm256_extracti128_si256(px, 1));
    }
    if (X < hi) {
        int32_t idx[NB];
        if (proj)
            near_idx_proj(idx, X, hi, a);
        else
            near_idx_affine(idx, X, hi, a);
        for (int k = 0; k < hi - X; k++)
            memcpy(o + k * 3, pad + idx[k], 3);
    }
}
#endif

static void gather_row(const uint8_t *pad, const int32_t *idx, int n, uint8_t *out)
{
    int k = 0;
    for (; k < n - 1; k++) {
        uint32_t px;
        memcpy(&px, pad + idx[k], 4);
        memcpy(out + (size_t)k * 3, &px, 4);
    }
    if (n > 0)
        memcpy(out + (size_t)k * 3, pad + idx[k], 3);
}

/* Nearest resampling of img through P, which takes an output pixel index (X, Y, 1)
 * to a point of the padded image whose floor is the padded pixel index. */
static void warp_nearest(uint8_t *img, int h, int w, const double P[9], int proj,
                         aug_workspace *ws)
{
    pad_image(img, h, w, ws->pad);
    near_row_args a;
    a.stride = (w + 2) * 3;
    a.maxo = (h + 2) * a.stride - 3;
    a.du = (float)P[0];
    a.dv = (float)P[3];
    a.dq = (float)P[6];
    void (*fn)(int32_t *, int, int, const near_row_args *) =
        proj ? near_idx_proj : near_idx_affine;
    int level = aug_simd();
    (void)level; /* only the x86 kernels read it */
    /* In-range columns, with half a pixel of margin around the exact limits
     * [1, w+1) x [1, h+1): the margin absorbs float rounding and what lies in it
     * reads the black border, which is what the exact limits would give. */
    span_ctx sc;
    span_init(&sc, P, 0.5, w + 1.5, h + 1.5);
    for (int Y = 0; Y < h; Y++) {
        uint8_t *row = img + (size_t)Y * w * 3;
        double u0 = P[1] * Y + P[2], v0 = P[4] * Y + P[5], q0 = P[7] * Y + P[8];
        int lo, hi;
        span_row(&sc, u0, v0, q0, w, &lo, &hi);
        if (lo >= hi) {
            memset(row, 0, (size_t)w * 3);
            continue;
        }
        a.u0 = (float)u0;
        a.v0 = (float)v0;
        a.q0 = (float)q0;
        memset(row, 0, (size_t)lo * 3);
#ifdef AUG_X86
        if (level >= 3)
            near_row_avx2(ws->pad, row, lo, hi, proj, &a);
        else
#endif
        {
            fn(ws->idx, lo, hi, &a);
            gather_row(ws->pad, ws->idx, hi - lo, row + (size_t)lo * 3);
        }
        memset(row + (size_t)hi * 3, 0, (size_t)(w - hi) * 3);
    }
}

/* Bilinear: per block of 8 pixels the offset of the top-left neighbour (clamped so
 * the 2x2 neighbourhood is inside the padded image) and 8-bit weights, vectorized
 * like the nearest offsets; then the blend, 3 channels of 4 taps in integers. */
typedef struct bil_row_args {
    float u0, du, v0, dv, q0, dq;
    int32_t stride, maxx, maxy;
} bil_row_args;

#define BIL_IDX_BODY(PROJ)                                                               \
    do {                                                                                 \
        const float u0 = a->u0, du = a->du, v0 = a->v0, dv = a->dv, q0 = a->q0,          \
                    dq = a->dq;                                                          \
        const int32_t stride = a->stride, maxx = a->maxx, maxy = a->maxy;                \
        int last = hi - 1;                                                               \
        for (int X = lo; X < hi; X += NB) {                                              \
            int32_t *restrict oo = off + (X - lo), *restrict ox = wx + (X - lo);         \
            int32_t *restrict oy = wy + (X - lo);                                        \
            for (int j = 0; j < NB; j++) {                                               \
                int xx = X + j < last ? X + j : last;                                    \
                float fx = (float)xx;                                                    \
                float tx = u0 + fx * du, ty = v0 + fx * dv;                              \
                if (PROJ) {                                                              \
                    float r = 1.0f / (q0 + fx * dq);                                     \
                    tx *= r;                                                             \
                    ty *= r;                                                             \
                }                                                                        \
                int32_t x0 = (int32_t)tx, y0 = (int32_t)ty;                              \
                int32_t kx = (int32_t)((tx - (float)x0) * 128.0f + 0.5f);                \
                int32_t ky = (int32_t)((ty - (float)y0) * 128.0f + 0.5f);                \
                x0 = x0 < 0 ? 0 : x0 > maxx ? maxx : x0;                                 \
                y0 = y0 < 0 ? 0 : y0 > maxy ? maxy : y0;                                 \
                oo[j] = y0 * stride + x0 * 3;                                            \
                ox[j] = kx < 0 ? 0 : kx > 128 ? 128 : kx;                                \
                oy[j] = ky < 0 ? 0 : ky > 128 ? 128 : ky;                                \
            }                                                                            \
        }                                                                                \
    } while (0)

static void bil_idx_affine(int32_t *restrict off, int32_t *restrict wx,
                           int32_t *restrict wy, int lo, int hi, const bil_row_args *a)
{
    BIL_IDX_BODY(0);
}

static void bil_idx_proj(int32_t *restrict off, int32_t *restrict wx,
                         int32_t *restrict wy, int lo, int hi, const bil_row_args *a)
{
    BIL_IDX_BODY(1);
}

/* The blend, in the integer steps the SSE2 version takes: 7-bit weights, the two
 * rows first (v <= 255 * 128 fits int16), then the two columns, each term
 * truncated as pmulhuw does, then rounded. */
static void bil_blend_scalar(const uint8_t *pad, int32_t stride, const int32_t *off,
                             const int32_t *wx, const int32_t *wy, int n, uint8_t *out)
{
    for (int k = 0; k < n; k++, out += 3) {
        const uint8_t *p = pad + off[k], *q = p + stride;
        int fx = wx[k], fy = wy[k], gx = 128 - fx, gy = 128 - fy;
        int v[6];
        for (int c = 0; c < 6; c++)
            v[c] = p[c] * gy + q[c] * fy;
        for (int c = 0; c < 3; c++)
            out[c] = (uint8_t)(((v[c] * gx >> 7) + (v[c + 3] * fx >> 7) + 64) >> 7);
    }
}

#ifdef AUG_X86
static void bil_blend_sse2(const uint8_t *pad, int32_t stride, const int32_t *off,
                           const int32_t *wx, const int32_t *wy, int n, uint8_t *out)
{
    const __m128i z = _mm_setzero_si128(), half = _mm_set1_epi16(64);
    /* 4-byte stores: all but the last pixel (its 4th byte is the next pixel's). */
    int k = 0;
    for (; k < n - 1; k++, out += 3) {
        const uint8_t *p = pad + off[k];
        __m128i a = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)p), z);
        __m128i b =
            _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)(p + stride)), z);
        __m128i v = _mm_add_epi16(_mm_mullo_epi16(a, _mm_set1_epi16((short)(128 - wy[k]))),
                                  _mm_mullo_epi16(b, _mm_set1_epi16((short)wy[k])));
        /* floor(v * g / 128) as the high half of (2v) * (g << 8): both fit 16 bits
         * unsigned, g = 128 included. */
        v = _mm_add_epi16(v, v);
        __m128i l = _mm_mulhi_epu16(v, _mm_set1_epi16((short)((128 - wx[k]) << 8)));
        __m128i r = _mm_mulhi_epu16(_mm_srli_si128(v, 6), _mm_set1_epi16((short)(wx[k] << 8)));
        __m128i o = _mm_srli_epi16(_mm_add_epi16(_mm_add_epi16(l, r), half), 7);
        uint32_t px = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(o, o));
        memcpy(out, &px, 4);
    }
    if (k < n)
        bil_blend_scalar(pad, stride, off + k, wx + k, wy + k, n - k, out);
}
#endif

static void bil_blend_row(const uint8_t *pad, int32_t stride, const int32_t *off,
                          const int32_t *wx, const int32_t *wy, int n, uint8_t *out)
{
#ifdef AUG_X86
    if (aug_simd() >= 1) {
        bil_blend_sse2(pad, stride, off, wx, wy, n, out);
        return;
    }
#endif
    bil_blend_scalar(pad, stride, off, wx, wy, n, out);
}

/* P takes an output pixel index to padded-image pixel-centre coordinates (padded
 * pixel k has its centre at k). */
static void warp_bilinear(uint8_t *img, int h, int w, const double P[9], int proj,
                          aug_workspace *ws)
{
    pad_image(img, h, w, ws->pad);
    bil_row_args a;
    a.stride = (w + 2) * 3;
    a.maxx = w;
    a.maxy = h;
    a.du = (float)P[0];
    a.dv = (float)P[3];
    a.dq = (float)P[6];
    /* Output is non-zero for t in (0, w + 1); within 1/512 of those ends the weight
     * rounds to 0 anyway, and that margin absorbs float rounding. */
    span_ctx sc;
    span_init(&sc, P, 1.0 / 512, w + 1 - 1.0 / 512, h + 1 - 1.0 / 512);
    int32_t *off = ws->idx, *wx = ws->idx + ws->w + 16, *wy = ws->idx + 2 * (ws->w + 16);
    for (int Y = 0; Y < h; Y++) {
        uint8_t *row = img + (size_t)Y * w * 3;
        double u0 = P[1] * Y + P[2], v0 = P[4] * Y + P[5], q0 = P[7] * Y + P[8];
        int lo, hi;
        span_row(&sc, u0, v0, q0, w, &lo, &hi);
        if (lo >= hi) {
            memset(row, 0, (size_t)w * 3);
            continue;
        }
        a.u0 = (float)u0;
        a.v0 = (float)v0;
        a.q0 = (float)q0;
        if (proj)
            bil_idx_proj(off, wx, wy, lo, hi, &a);
        else
            bil_idx_affine(off, wx, wy, lo, hi, &a);
        memset(row, 0, (size_t)lo * 3);
        bil_blend_row(ws->pad, a.stride, off, wx, wy, hi - lo, row + (size_t)lo * 3);
        memset(row + (size_t)hi * 3, 0, (size_t)(w - hi) * 3);
    }
}

static int near_equal(const double a[9], const double b[9])
{
    for (int i = 0; i < 9; i++)
        if (!(fabs(a[i] - b[i]) <= 1e-9 * (1 + fabs(b[i]))))
            return 0;
    return 1;
}

static void flip_lr_scalar(uint8_t *row, int w)
{
    uint8_t *a = row, *b = row + (size_t)(w - 1) * 3;
    for (; a < b; a += 3, b -= 3) {
        uint8_t t0 = a[0], t1 = a[1], t2 = a[2];
        a[0] = b[0];
        a[1] = b[1];
        a[2] = b[2];
        b[0] = t0;
        b[1] = t1;
        b[2] = t2;
    }
}

#ifdef AUG_X86
/* Mirror rows 16 pixels (48 bytes, 3 vectors) at a time: output byte k of a block
 * is input byte 3 * (15 - k / 3) + k % 3, gathered from at most 3 input vectors with
 * pshufb masks built once. Each row goes through a row buffer. */
__attribute__((target("ssse3"))) static void flip_lr_ssse3(uint8_t *img, int h, int w)
{
    uint8_t tmp[4096 * 3];
    __m128i m[3][3];
    for (int ov = 0; ov < 3; ov++)
        for (int iv = 0; iv < 3; iv++) {
            int8_t mk[16];
            for (int j = 0; j < 16; j++) {
                int k = ov * 16 + j, in = 3 * (15 - k / 3) + k % 3;
                mk[j] = (int8_t)(in / 16 == iv ? in % 16 : -128);
            }
            memcpy(&m[ov][iv], mk, 16);
        }
    int blocks = w / 16;
    size_t rb = (size_t)w * 3;
    for (int y = 0; y < h; y++) {
        uint8_t *row = img + (size_t)y * rb;
        /* Source block k (from the left) lands at output pixel w - 16 (k + 1). */
        for (int k = 0; k < blocks; k++) {
            const uint8_t *src = row + (size_t)k * 48;
            __m128i in[3];
            for (int iv = 0; iv < 3; iv++)
                in[iv] = _mm_loadu_si128((const __m128i *)(const void *)(src + 16 * iv));
            uint8_t *dst = tmp + (size_t)(w - 16 * (k + 1)) * 3;
            for (int ov = 0; ov < 3; ov++) {
                __m128i o = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(in[0], m[ov][0]),
                                                      _mm_shuffle_epi8(in[1], m[ov][1])),
                                         _mm_shuffle_epi8(in[2], m[ov][2]));
                _mm_storeu_si128((__m128i *)(void *)(dst + 16 * ov), o);
            }
        }
        for (int x = blocks * 16; x < w; x++)
            memcpy(tmp + (size_t)(w - 1 - x) * 3, row + (size_t)x * 3, 3);
        memcpy(row, tmp, rb);
    }
}
#endif

static void flip_lr(uint8_t *img, int h, int w)
{
#ifdef AUG_X86
    if (aug_simd() >= 2 && w >= 16 && w <= 4096) {
        flip_lr_ssse3(img, h, w);
        return;
    }
#endif
    for (int y = 0; y < h; y++)
        flip_lr_scalar(img + (size_t)y * w * 3, w);
}

static void flip_ud(uint8_t *img, int h, int w)
{
    size_t rb = (size_t)w * 3;
    uint8_t tmp[512];
    for (int y = 0; y < h / 2; y++) {
        uint8_t *a = img + (size_t)y * rb, *b = img + (size_t)(h - 1 - y) * rb;
        for (size_t off = 0; off < rb; off += sizeof tmp) {
            size_t n = rb - off < sizeof tmp ? rb - off : sizeof tmp;
            memcpy(tmp, a + off, n);
            memcpy(a + off, b + off, n);
            memcpy(b + off, tmp, n);
        }
    }
}

void aug_flip(uint8_t *img, int h, int w, int lr, int ud)
{
    if (!img || h <= 0 || w <= 0)
        return;
    if (lr)
        flip_lr(img, h, w);
    if (ud)
        flip_ud(img, h, w);
}

/* Resample through C (output point -> source point, edge coordinates). */
void aug_warp_matrix(uint8_t *img, int h, int w, const double Cin[9], int interp,
                     aug_workspace *ws)
{
    double C[9];
    memcpy(C, Cin, sizeof C);
    /* Scale so the homogeneous weight q at the output centre is 1 (and positive):
     * the kernels treat q below 1% of that as beyond the horizon. Should the centre
     * itself be on the horizon, the corner with the largest |q| sets the scale. */
    double qc = C[6] * w * 0.5 + C[7] * h * 0.5 + C[8];
    if (!(fabs(qc) > 1e-12 * (fabs(C[6]) * w + fabs(C[7]) * h + fabs(C[8])))) {
        qc = 0;
        for (int k = 0; k < 4; k++) {
            double q = C[6] * (k & 1 ? w : 0) + C[7] * (k & 2 ? h : 0) + C[8];
            qc = fabs(q) > fabs(qc) ? q : qc;
        }
        if (qc == 0) {
            memset(img, 0, (size_t)h * w * 3);
            return;
        }
    }
    for (int i = 0; i < 9; i++)
        C[i] /= qc;
    double id[9], lr[9], ud[9], both[9];
    aug_m3_identity(id);
    aug_m3_identity(lr);
    lr[0] = -1;
    lr[2] = w;
    aug_m3_identity(ud);
    ud[4] = -1;
    ud[5] = h;
    aug_m3_mul(lr, ud, both);
    /* Exact pixel permutations skip the resampling (and bilinear's half-pixel blur
     * would not happen for them either: the centres land on centres). */
    if (near_equal(C, id))
        return;
    if (near_equal(C, lr) || near_equal(C, ud) || near_equal(C, both)) {
        aug_flip(img, h, w, C[0] < 0, C[4] < 0);
        return;
    }
    int proj = !(C[6] == 0 && C[7] == 0);
    double pre[9], post[9], P[9];
    /* Output index X -> centre X + 0.5. */
    m3_translate(pre, 0.5, 0.5);
    /* Source point -> padded coordinates: +1 for the border, and for bilinear -0.5
     * to move from edge to centre coordinates. */
    if (interp == AUG_BILINEAR)
        m3_translate(post, 0.5, 0.5);
    else
        m3_translate(post, 1, 1);
    aug_m3_mul(post, C, P);
    aug_m3_mul(P, pre, P);
    if (interp == AUG_BILINEAR)
        warp_bilinear(img, h, w, P, proj, ws);
    else
        warp_nearest(img, h, w, P, proj, ws);
}

int aug_warp(uint8_t *img, int h, int w, const double m[9], int interp, aug_workspace *ws)
{
    if (!img || !m || !aug_ws_fits(ws, h, w) ||
        (interp != AUG_NEAREST && interp != AUG_BILINEAR))
        return PT_EUSAGE;
    for (int i = 0; i < 9; i++)
        if (!isfinite(m[i]))
            return PT_EUSAGE;
    aug_warp_matrix(img, h, w, m, interp, ws);
    return PT_OK;
}

/* ===================================================================================
 * Geometric ops: perspective, affine, crop, flip
 * =================================================================================== */

void aug_perspective_reorder(const aug_point in[4], int shift, int reflection,
                             aug_point out[4])
{
    static const int refl[3][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}};
    aug_point t[4];
    int s = ((shift % 4) + 4) % 4;
    int r = reflection >= 0 && reflection < 3 ? reflection : 0;
    for (int j = 0; j < 4; j++)
        t[j] = in[(j + s) % 4];
    for (int j = 0; j < 4; j++)
        out[j] = t[refl[r][j]];
}

static int draw_offset(rng *r, int s)
{
    return s > 0 ? rng_int(r, -s, s) : 0;
}

void aug_perspective_random(rng *r, int h, int w, double jitter, int rot90, int reflect,
                            aug_point out[4])
{
    int sy = (int)floor(jitter * h), sx = (int)floor(jitter * w);
    /* Draw order of the notebook: y1, x1, y2, x2, y3, x3, y4, x4. */
    aug_point p[4];
    p[0].y = draw_offset(r, sy);
    p[0].x = draw_offset(r, sx);
    p[1].y = draw_offset(r, sy);
    p[1].x = w + draw_offset(r, sx);
    p[2].y = h + draw_offset(r, sy);
    p[2].x = w + draw_offset(r, sx);
    p[3].y = h + draw_offset(r, sy);
    p[3].x = draw_offset(r, sx);
    int shift = rot90 ? rng_int(r, 0, 4) : 0;
    int refl = reflect ? rng_int(r, 0, 3) : 0;
    aug_perspective_reorder(p, shift, refl, out);
}

int aug_perspective_points(uint8_t *img, int h, int w, const aug_point tgt[4], int interp,
                           aug_workspace *ws)
{
    double m[9];
    if (!tgt || !aug_perspective_matrix(h, w, tgt, m))
        return PT_EUSAGE;
    return aug_warp(img, h, w, m, interp, ws);
}

void aug_affine_matrix(int h, int w, const aug_affine_params *p, double m[9])
{
    double cx = w * 0.5, cy = h * 0.5;
    double th = p->rot * AUG_PI / 180, sh = p->shear * AUG_PI / 180;
    double c = cos(th), s = sin(th), t = tan(sh);
    /* Forward map about the centre: translate(centre + shift) . rotate . shear .
     * zoom . translate(-centre). Rotation is counter-clockwise on screen (y down). */
    double f[9], a[9];
    m3_translate(f, -cx, -cy);
    double z[9] = {p->zoom_x, 0, 0, 0, p->zoom_y, 0, 0, 0, 1};
    double shm[9] = {1, t, 0, 0, 1, 0, 0, 0, 1};
    double rot[9] = {c, s, 0, -s, c, 0, 0, 0, 1};
    aug_m3_mul(z, f, f);
    aug_m3_mul(shm, f, f);
    aug_m3_mul(rot, f, f);
    m3_translate(a, cx + p->shift_x, cy + p->shift_y);
    aug_m3_mul(a, f, f);
    if (!m3_inv(f, m))
        aug_m3_identity(m);
}

int aug_affine(uint8_t *img, int h, int w, const aug_affine_params *p, int interp,
               aug_workspace *ws)
{
    if (!p || !(p->zoom_x > 0) || !(p->zoom_y > 0))
        return PT_EUSAGE;
    double m[9];
    aug_affine_matrix(h, w, p, m);
    return aug_warp(img, h, w, m, interp, ws);
}
