/* nn_dw — the depthwise convolution kernels (groups == cin == cout), NHWC, weights
 * [kh][kw][C]: forward with the bias and an activation applied before the store,
 * the input gradient (optionally taken on through the activation of the layer that
 * produced the input, nn_dx_act) and the weight gradient.
 *
 * NHWC puts a pixel's C channels side by side, so every kernel runs down the
 * channels in vectors: an output pixel is a sum over its window's taps of input *
 * weight, each tap a contiguous run of C floats in both. A tap list (offsets of
 * the data and of the weights) is built once per pixel and used for all channels;
 * pixels whose window lies inside the image (most of them) share one list made once
 * per call, offset by the pixel's position.
 *
 * Each kernel has two builds: AVX2 + FMA intrinsics, on x86-64 under GCC or clang,
 * chosen at run time when the CPU has both (the Makefile targets baseline x86-64,
 * so __AVX2__ is normally undefined; when it is defined the check is constant),
 * and portable C whose channel loops the compiler vectorises for the target. The
 * AVX2 dot keeps four or eight vectors (32 or 64 channels) of sums in flight: a
 * single chain of 9 dependent FMAs per vector would wait on the FMA latency, which
 * is what made the earlier 4-float kernels run at a tenth of the sgemm rate. It
 * loads the weights for every pixel (two loads per FMA, where loads are the limit);
 * keeping a 3x3 kernel's nine weight vectors in registers and sweeping 8 channels
 * along a row measured slower, as each sweep touches a row's cache lines 32 bytes
 * at a time and the three rows of 192+ channels no longer fit L1.
 */
#include <stddef.h>
#include <string.h>

#include "nn/nn_impl.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define DW_X86 1
#include <immintrin.h>
#define TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define DW_X86 0
#endif

#define DW_MAX_TAPS (NN_MAX_KERNEL * NN_MAX_KERNEL)
/* The weight-gradient sweep keeps kw partial sums per channel vector in registers. */
#define DW_MAX_KW 7
/* Channels per block in the portable kernels (sums in a stack array). */
#define DW_BLOCK 64

/* Offsets (in floats) of each tap into the data and into the weights. */
typedef struct taps {
    int n;
    ptrdiff_t d[DW_MAX_TAPS];
    ptrdiff_t w[DW_MAX_TAPS];
} taps;

/* How a dot finishes its sums before the store. */
typedef struct fin {
    int act;                /* forward: the activation (accum is 0 then) */
    int accum;              /* input gradient: added to what out holds */
    const float *mk;        /* then, or NULL: times act'(mk[c]) with mact (nn_dx_act) */
    int mact;
    float *msum;            /* with mk, or NULL: += the results, per channel */
} fin;

/* out[c] = the sum over taps of d[tap.d + c] * w[tap.w + c], from init[c] (NULL: 0),
 * finished as f says, for c < C. */
typedef void (*dot_fn)(int C, const taps *t, const float *d, const float *w,
                       const float *init, const fin *f, float *out);

static inline float act1(float v, int act)
{
    if (act) {
        v = v > 0.0f ? v : 0.0f;
        if (act == NN_ACT_RELU6)
            v = v < 6.0f ? v : 6.0f;
    }
    return v;
}

/* ---- portable dot ---- */

static inline float fin1(float v, float o, const fin *f, int c)
{
    v = f->accum ? o + v : act1(v, f->act);
    if (f->mk) {
        const float y = f->mk[c];
        v *= (y > 0.0f ? 1.0f : 0.0f) * (f->mact != NN_ACT_RELU6 || y < 6.0f ? 1.0f : 0.0f);
        if (f->msum)
            f->msum[c] += v;
    }
    return v;
}

static void dot_c(int C, const taps *t, const float *d, const float *w, const float *init,
                  const fin *f, float *out)
{
    for (int c0 = 0; c0 < C; c0 += DW_BLOCK) {
        const int cb = C - c0 < DW_BLOCK ? C - c0 : DW_BLOCK;
        float acc[DW_BLOCK];
        for (int j = 0; j < cb; j++)
            acc[j] = init ? init[c0 + j] : 0.0f;
        for (int i = 0; i < t->n; i++) {
            const float *restrict dp = d + t->d[i] + c0, *restrict wp = w + t->w[i] + c0;
            for (int j = 0; j < cb; j++)
                acc[j] += dp[j] * wp[j];
        }
        float *restrict o = out + c0;
        if (f->accum && !f->mk)
            for (int j = 0; j < cb; j++)
                o[j] += acc[j];
        else if (!f->mk)
            for (int j = 0; j < cb; j++)
                o[j] = act1(acc[j], f->act);
        else
            for (int j = 0; j < cb; j++)
                o[j] = fin1(acc[j], o[j], f, c0 + j);
    }
}

/* ---- AVX2 dot ---- */

#if DW_X86
TARGET_AVX2 static inline __m256 act8(__m256 v, int act)
{
    /* max(v, 0) returns its second operand for a NaN v: 0, as act1's compare does. */
    if (act)
        v = _mm256_max_ps(v, _mm256_setzero_ps());
    if (act == NN_ACT_RELU6)
        v = _mm256_min_ps(v, _mm256_set1_ps(6.0f));
    return v;
}

/* Channels [c, c + 8) of a dot's result v into out, finished as f says. */
TARGET_AVX2 static inline void put8(float *out, int c, __m256 v, const fin *f)
{
    float *o = out + c;
    v = f->accum ? _mm256_add_ps(_mm256_loadu_ps(o), v) : act8(v, f->act);
    if (f->mk) {
        /* Times 1 or 0, as nn_act_bwd multiplies (a NaN stays a NaN). */
        const __m256 y = _mm256_loadu_ps(f->mk + c);
        __m256 pass = _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_GT_OQ);
        if (f->mact == NN_ACT_RELU6)
            pass = _mm256_and_ps(pass, _mm256_cmp_ps(y, _mm256_set1_ps(6.0f), _CMP_LT_OQ));
        v = _mm256_mul_ps(v, _mm256_and_ps(pass, _mm256_set1_ps(1.0f)));
        if (f->msum)
            _mm256_storeu_ps(f->msum + c, _mm256_add_ps(_mm256_loadu_ps(f->msum + c), v));
    }
    _mm256_storeu_ps(o, v);
}

TARGET_AVX2 static void dot_avx2(int C, const taps *t, const float *d, const float *w,
                                 const float *init, const fin *f, float *out)
{
    int c0 = 0;
    for (; c0 + 64 <= C; c0 += 64) {
        __m256 a0, a1, a2, a3, a4, a5, a6, a7;
        if (init) {
            a0 = _mm256_loadu_ps(init + c0);
            a1 = _mm256_loadu_ps(init + c0 + 8);
            a2 = _mm256_loadu_ps(init + c0 + 16);
            a3 = _mm256_loadu_ps(init + c0 + 24);
            a4 = _mm256_loadu_ps(init + c0 + 32);
            a5 = _mm256_loadu_ps(init + c0 + 40);
            a6 = _mm256_loadu_ps(init + c0 + 48);
            a7 = _mm256_loadu_ps(init + c0 + 56);
        } else {
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = _mm256_setzero_ps();
        }
        for (int i = 0; i < t->n; i++) {
            const float *dp = d + t->d[i] + c0, *wp = w + t->w[i] + c0;
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(dp), _mm256_loadu_ps(wp), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(dp + 8), _mm256_loadu_ps(wp + 8), a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(dp + 16), _mm256_loadu_ps(wp + 16), a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(dp + 24), _mm256_loadu_ps(wp + 24), a3);
            a4 = _mm256_fmadd_ps(_mm256_loadu_ps(dp + 32), _mm256_loadu_ps(wp + 32), a4);
            a5 = _mm256_fmadd_ps(_mm256_loadu_ps(dp + 40), _mm256_loadu_ps(wp + 40), a5);
            a6 = _mm256_fmadd_ps(_mm256_loadu_ps(dp + 48), _mm256_loadu_ps(wp + 48), a6);
            a7 = _mm256_fmadd_ps(_mm256_loadu_ps(dp + 56), _mm256_loadu_ps(wp + 56), a7);
        }
        put8(out, c0, a0, f);
        put8(out, c0 + 8, a1, f);
        put8(out, c0 + 16, a2, f);
        put8(out, c0 + 24, a3, f);
        put8(out, c0 + 32, a4, f);
        put8(out, c0 + 40, a5, f);
        put8(out, c0 + 48, a6, f);
        put8(out, c0 + 56, a7, f);
    }
    for (; c0 + 32 <= C; c0 += 32) {
        __m256 a0, a1, a2, a3;
        if (init) {
            a0 = _mm256_loadu_ps(init + c0);
            a1 = _mm256_loadu_ps(init + c0 + 8);
            a2 = _mm256_loadu_ps(init + c0 + 16);
            a3 = _mm256_loadu_ps(init + c0 + 24);
        } else {
            a0 = a1 = a2 = a3 = _mm256_setzero_ps();
        }
        for (int i = 0; i < t->n; i++) {
            const float *dp = d + t->d[i] + c0, *wp = w + t->w[i] + c0;
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(dp), _mm256_loadu_ps(wp), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(dp + 8), _mm256_loadu_ps(wp + 8), a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(dp + 16), _mm256_loadu_ps(wp + 16), a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(dp + 24), _mm256_loadu_ps(wp + 24), a3);
        }
        put8(out, c0, a0, f);
        put8(out, c0 + 8, a1, f);
        put8(out, c0 + 16, a2, f);
        put8(out, c0 + 24, a3, f);
    }
    for (; c0 + 8 <= C; c0 += 8) {
        __m256 a = init ? _mm256_loadu_ps(init + c0) : _mm256_setzero_ps();
        for (int i = 0; i < t->n; i++)
            a = _mm256_fmadd_ps(_mm256_loadu_ps(d + t->d[i] + c0),
                                _mm256_loadu_ps(w + t->w[i] + c0), a);
        put8(out, c0, a, f);
    }
    for (; c0 < C; c0++) {
        float a = init ? init[c0] : 0.0f;
        for (int i = 0; i < t->n; i++)
            a += d[t->d[i] + c0] * w[t->w[i] + c0];
        out[c0] = fin1(a, out[c0], f, c0);
    }
}
#endif

/* ---- AVX-512F forward dot ----
 * The AVX2 dot's scheme on 16-float vectors: per load twice the channels, which is
 * what the loads-bound kernel is short of. Whole vectors are stored plainly: masked
 * stores of every lane are still slow on AMD's AVX-512 (Zen 4 and 5), so only a last
 * partial vector takes its mask. Forward only (f: an activation, no accum or mask);
 * the same chain per lane as dot_avx2, so the same bits. */

#if DW_X86
#define TARGET_512 __attribute__((target("avx512f")))

TARGET_512 static inline __m512 act16(__m512 v, int act)
{
    if (act)
        v = _mm512_max_ps(v, _mm512_setzero_ps());
    if (act == NN_ACT_RELU6)
        v = _mm512_min_ps(v, _mm512_set1_ps(6.0f));
    return v;
}

TARGET_512 static void dot_512(int C, const taps *t, const float *d, const float *w,
                               const float *init, const fin *f, float *out)
{
    int c0 = 0;
    for (; c0 + 64 <= C; c0 += 64) {
        __m512 a0, a1, a2, a3;
        if (init) {
            a0 = _mm512_loadu_ps(init + c0);
            a1 = _mm512_loadu_ps(init + c0 + 16);
            a2 = _mm512_loadu_ps(init + c0 + 32);
            a3 = _mm512_loadu_ps(init + c0 + 48);
        } else {
            a0 = a1 = a2 = a3 = _mm512_setzero_ps();
        }
        for (int i = 0; i < t->n; i++) {
            const float *dp = d + t->d[i] + c0, *wp = w + t->w[i] + c0;
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(dp), _mm512_loadu_ps(wp), a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(dp + 16), _mm512_loadu_ps(wp + 16), a1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(dp + 32), _mm512_loadu_ps(wp + 32), a2);
            a3 = _mm512_fmadd_ps(_mm512_loadu_ps(dp + 48), _mm512_loadu_ps(wp + 48), a3);
        }
        _mm512_storeu_ps(out + c0, act16(a0, f->act));
        _mm512_storeu_ps(out + c0 + 16, act16(a1, f->act));
        _mm512_storeu_ps(out + c0 + 32, act16(a2, f->act));
        _mm512_storeu_ps(out + c0 + 48, act16(a3, f->act));
    }
    for (; c0 < C; c0 += 16) {
        const __mmask16 m = C - c0 >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (C - c0)) - 1u);
        __m512 a = init ? _mm512_maskz_loadu_ps(m, init + c0) : _mm512_setzero_ps();
        for (int i = 0; i < t->n; i++)
            a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, d + t->d[i] + c0),
                                _mm512_maskz_loadu_ps(m, w + t->w[i] + c0), a);
        if (m == 0xFFFF)
            _mm512_storeu_ps(out + c0, act16(a, f->act));
        else
            _mm512_mask_storeu_ps(out + c0, m, act16(a, f->act));
    }
}
#endif

/* ---- forward ---- */

/* y = act(conv(x) + bias) for output rows [r0, r1) (r = image * oh + oy). */
static inline void fwd_loop(const nn_conv_shape *s, const float *x, const float *wt,
                            const float *bias, int act, float *y, long r0, long r1, dot_fn dot)
{
    const int C = s->cin;
    const fin f = { act, 0, NULL, 0, NULL };
    /* The window of an inside pixel, relative to its top-left input pixel. */
    taps in, t;
    in.n = 0;
    for (int ky = 0; ky < s->kh; ky++)
        for (int kx = 0; kx < s->kw; kx++) {
            in.d[in.n] = ((ptrdiff_t)ky * s->w + kx) * C;
            in.w[in.n++] = (ptrdiff_t)(ky * s->kw + kx) * C;
        }
    for (long r = r0; r < r1; r++) {
        const int img = (int)(r / s->oh), oy = (int)(r % s->oh);
        const float *xi = x + (size_t)img * s->h * s->w * C;
        const int iy0 = oy * s->stride - s->pt;
        const int rows_in = iy0 >= 0 && iy0 + s->kh <= s->h;
        float *yr = y + ((size_t)img * s->oh + oy) * s->ow * C;
        for (int ox = 0; ox < s->ow; ox++) {
            const int ix0 = ox * s->stride - s->pl;
            if (rows_in && ix0 >= 0 && ix0 + s->kw <= s->w) {
                dot(C, &in, xi + ((ptrdiff_t)iy0 * s->w + ix0) * C, wt, bias, &f,
                    yr + (size_t)ox * C);
                continue;
            }
            t.n = 0;
            for (int ky = 0; ky < s->kh; ky++) {
                const int iy = iy0 + ky;
                if (iy < 0 || iy >= s->h)
                    continue;
                for (int kx = 0; kx < s->kw; kx++) {
                    const int ix = ix0 + kx;
                    if (ix < 0 || ix >= s->w)
                        continue;
                    t.d[t.n] = ((ptrdiff_t)iy * s->w + ix) * C;
                    t.w[t.n++] = (ptrdiff_t)(ky * s->kw + kx) * C;
                }
            }
            dot(C, &t, xi, wt, bias, &f, yr + (size_t)ox * C);
        }
    }
}

#if DW_X86
TARGET_AVX2 static void fwd_avx2(const nn_conv_shape *s, const float *x, const float *wt,
                                 const float *bias, int act, float *y, long r0, long r1)
{
    fwd_loop(s, x, wt, bias, act, y, r0, r1, dot_avx2);
}

TARGET_512 static void fwd_512(const nn_conv_shape *s, const float *x, const float *wt,
                               const float *bias, int act, float *y, long r0, long r1)
{
    fwd_loop(s, x, wt, bias, act, y, r0, r1, dot_512);
}
#endif

void nn_dw_fwd_rows(const nn_conv_shape *s, const float *x, const float *wt,
                    const float *bias, int act, float *y, long r0, long r1)
{
#if DW_X86
    /* nn_gemm512_ok: AVX-512F, not turned off (PT_GEMM_AVX2, tests). */
    if (nn_gemm512_ok()) {
        fwd_512(s, x, wt, bias, act, y, r0, r1);
        return;
    }
    if (nn_simd_avx2()) {
        fwd_avx2(s, x, wt, bias, act, y, r0, r1);
        return;
    }
#endif
    fwd_loop(s, x, wt, bias, act, y, r0, r1, dot_c);
}

void nn_dw_fwd(const nn_conv_shape *s, const float *x, const float *wt, const float *bias,
               int act, float *y)
{
    nn_dw_fwd_rows(s, x, wt, bias, act, y, 0, (long)s->n * s->oh);
}

/* ---- input gradient ----
 *
 * Input pixel (iy, ix) receives dz from the outputs whose windows cover it: tap ky
 * when (iy + pt - ky) is a multiple of the stride, from output row (iy + pt - ky) /
 * stride (likewise across). With phase py = (iy + pt) % stride the taps are ky = py,
 * py + stride, ... reading output rows oy0, oy0 - 1, ... (oy0 = (iy + pt) / stride),
 * so inside the image every pixel of one phase shares a tap list relative to its
 * (oy0, ox0). Those lists are built for strides up to DX_FAST_STRIDE. */

#define DX_FAST_STRIDE 2

/* The taps of phase (py, px), relative to output pixel (oy0, ox0). */
static void dx_phase_taps(const nn_conv_shape *s, int py, int px, taps *t)
{
    const int C = s->cin;
    t->n = 0;
    for (int ky = py, j = 0; ky < s->kh; ky += s->stride, j++)
        for (int kx = px, i = 0; kx < s->kw; kx += s->stride, i++) {
            t->d[t->n] = (-(ptrdiff_t)j * s->ow - i) * C;
            t->w[t->n++] = (ptrdiff_t)(ky * s->kw + kx) * C;
        }
}

/* The taps of input pixel (iy, ix), checked against the output's edges. */
static void dx_taps(const nn_conv_shape *s, int iy, int ix, taps *t)
{
    const int C = s->cin;
    t->n = 0;
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
            t->d[t->n] = ((ptrdiff_t)oy * s->ow + ox) * C;
            t->w[t->n++] = (ptrdiff_t)(ky * s->kw + kx) * C;
        }
    }
}

static inline void dx_loop(const nn_conv_shape *s, const float *dz, const float *wt, float *dx,
                           int accum, const nn_dx_act *xa, dot_fn dot)
{
    const int C = s->cin, st = s->stride;
    const int fast = st <= DX_FAST_STRIDE;
    taps ph[DX_FAST_STRIDE * DX_FAST_STRIDE], t;
    if (fast)
        for (int py = 0; py < st; py++)
            for (int px = 0; px < st; px++)
                dx_phase_taps(s, py, px, &ph[py * st + px]);
    fin f = { 0, accum, NULL, xa ? xa->act : 0, xa ? xa->db : NULL };
    for (int img = 0; img < s->n; img++) {
        const size_t in = (size_t)img * s->h * s->w * C;
        const float *gi = dz + (size_t)img * s->oh * s->ow * C;
        for (int iy = 0; iy < s->h; iy++) {
            const int py = (iy + s->pt) % st, oy0 = (iy + s->pt) / st;
            /* Inside: every tap's output row exists (the last tap reads the lowest). */
            const int rows_in = fast && oy0 < s->oh && oy0 - (s->kh - 1 - py) / st >= 0;
            for (int ix = 0; ix < s->w; ix++) {
                const int px = (ix + s->pl) % st, ox0 = (ix + s->pl) / st;
                const size_t at = in + ((size_t)iy * s->w + ix) * C;
                f.mk = xa ? xa->x + at : NULL;
                if (rows_in && ox0 < s->ow && ox0 - (s->kw - 1 - px) / st >= 0) {
                    dot(C, &ph[py * st + px], gi + ((ptrdiff_t)oy0 * s->ow + ox0) * C, wt, NULL,
                        &f, dx + at);
                    continue;
                }
                dx_taps(s, iy, ix, &t);
                dot(C, &t, gi, wt, NULL, &f, dx + at);
            }
        }
    }
}

#if DW_X86
TARGET_AVX2 static void dx_avx2(const nn_conv_shape *s, const float *dz, const float *wt,
                                float *dx, int accum, const nn_dx_act *xa)
{
    dx_loop(s, dz, wt, dx, accum, xa, dot_avx2);
}
#endif

void nn_dw_bwd_dx(const nn_conv_shape *s, const float *dz, const float *wt, float *dx,
                  int accum, const nn_dx_act *xa)
{
#if DW_X86
    if (nn_simd_avx2()) {
        dx_avx2(s, dz, wt, dx, accum, xa);
        return;
    }
#endif
    dx_loop(s, dz, wt, dx, accum, xa, dot_c);
}

/* ---- weight gradient ----
 *
 * dw[ky][kx][c] += sum over output pixels of x[iy][ix][c] * dz[oy][ox][c]. For one
 * output row and one kernel row ky, a sweep along the row keeps the kw partial sums
 * of a channel block in registers, and adds them into dw once at the end. */

/* The sweep for channels [c0, c0 + cb), portable: sums in a stack array. */
static void dw_row_c(const nn_conv_shape *s, const float *xrow, const float *grow, int c0,
                     int cb, float *dwrow)
{
    const int C = s->cin;
    float acc[DW_MAX_KW][DW_BLOCK];
    for (int kx = 0; kx < s->kw; kx++)
        for (int j = 0; j < cb; j++)
            acc[kx][j] = 0.0f;
    for (int ox = 0; ox < s->ow; ox++) {
        const float *restrict g = grow + (size_t)ox * C + c0;
        for (int kx = 0; kx < s->kw; kx++) {
            const int ix = ox * s->stride - s->pl + kx;
            if (ix < 0 || ix >= s->w)
                continue;
            const float *restrict xp = xrow + (size_t)ix * C + c0;
            float *restrict a = acc[kx];
            for (int j = 0; j < cb; j++)
                a[j] += xp[j] * g[j];
        }
    }
    for (int kx = 0; kx < s->kw; kx++) {
        float *restrict d = dwrow + (size_t)kx * C + c0;
        for (int j = 0; j < cb; j++)
            d[j] += acc[kx][j];
    }
}

static void dw_rows_c(const nn_conv_shape *s, const float *xrow, const float *grow, float *dwrow)
{
    for (int c0 = 0; c0 < s->cin; c0 += DW_BLOCK)
        dw_row_c(s, xrow, grow, c0, s->cin - c0 < DW_BLOCK ? s->cin - c0 : DW_BLOCK, dwrow);
}

#if DW_X86
/* kw == 3, 16 channels: six sums, the row's edges checked per pixel. */
TARGET_AVX2 static void dw_row3x16_avx2(const nn_conv_shape *s, const float *xrow,
                                        const float *grow, int c0, float *dwrow)
{
    const int C = s->cin;
    __m256 p0 = _mm256_setzero_ps(), p1 = p0, q0 = p0, q1 = p0, r0 = p0, r1 = p0;
    for (int ox = 0; ox < s->ow; ox++) {
        const float *g = grow + (size_t)ox * C + c0;
        const __m256 g0 = _mm256_loadu_ps(g), g1 = _mm256_loadu_ps(g + 8);
        const int ix = ox * s->stride - s->pl;
        const float *xp = xrow + (ptrdiff_t)ix * C + c0;
        if (ix >= 0 && ix + 2 < s->w) {
            p0 = _mm256_fmadd_ps(_mm256_loadu_ps(xp), g0, p0);
            p1 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 8), g1, p1);
            q0 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + C), g0, q0);
            q1 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + C + 8), g1, q1);
            r0 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 2 * C), g0, r0);
            r1 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 2 * C + 8), g1, r1);
            continue;
        }
        if (ix >= 0 && ix < s->w) {
            p0 = _mm256_fmadd_ps(_mm256_loadu_ps(xp), g0, p0);
            p1 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 8), g1, p1);
        }
        if (ix + 1 >= 0 && ix + 1 < s->w) {
            q0 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + C), g0, q0);
            q1 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + C + 8), g1, q1);
        }
        if (ix + 2 >= 0 && ix + 2 < s->w) {
            r0 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 2 * C), g0, r0);
            r1 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 2 * C + 8), g1, r1);
        }
    }
    float *d = dwrow + c0;
    _mm256_storeu_ps(d, _mm256_add_ps(_mm256_loadu_ps(d), p0));
    _mm256_storeu_ps(d + 8, _mm256_add_ps(_mm256_loadu_ps(d + 8), p1));
    _mm256_storeu_ps(d + C, _mm256_add_ps(_mm256_loadu_ps(d + C), q0));
    _mm256_storeu_ps(d + C + 8, _mm256_add_ps(_mm256_loadu_ps(d + C + 8), q1));
    _mm256_storeu_ps(d + 2 * C, _mm256_add_ps(_mm256_loadu_ps(d + 2 * C), r0));
    _mm256_storeu_ps(d + 2 * C + 8, _mm256_add_ps(_mm256_loadu_ps(d + 2 * C + 8), r1));
}

/* Any kw <= DW_MAX_KW, 8 channels. */
TARGET_AVX2 static void dw_row_x8_avx2(const nn_conv_shape *s, const float *xrow,
                                       const float *grow, int c0, float *dwrow)
{
    const int C = s->cin;
    __m256 a[DW_MAX_KW];
    for (int kx = 0; kx < s->kw; kx++)
        a[kx] = _mm256_setzero_ps();
    for (int ox = 0; ox < s->ow; ox++) {
        const __m256 g = _mm256_loadu_ps(grow + (size_t)ox * C + c0);
        for (int kx = 0; kx < s->kw; kx++) {
            const int ix = ox * s->stride - s->pl + kx;
            if (ix >= 0 && ix < s->w)
                a[kx] = _mm256_fmadd_ps(_mm256_loadu_ps(xrow + (size_t)ix * C + c0), g, a[kx]);
        }
    }
    for (int kx = 0; kx < s->kw; kx++) {
        float *d = dwrow + (size_t)kx * C + c0;
        _mm256_storeu_ps(d, _mm256_add_ps(_mm256_loadu_ps(d), a[kx]));
    }
}

TARGET_AVX2 static void dw_rows_avx2(const nn_conv_shape *s, const float *xrow,
                                     const float *grow, float *dwrow)
{
    const int C = s->cin;
    int c0 = 0;
    if (s->kw == 3)
        for (; c0 + 16 <= C; c0 += 16)
            dw_row3x16_avx2(s, xrow, grow, c0, dwrow);
    for (; c0 + 8 <= C; c0 += 8)
        dw_row_x8_avx2(s, xrow, grow, c0, dwrow);
    if (c0 < C)
        dw_row_c(s, xrow, grow, c0, C - c0, dwrow);
}
#endif

/* Kernels wider than DW_MAX_KW: every tap straight into dw. */
static void dw_wide(const nn_conv_shape *s, const float *xi, const float *gi, float *dw)
{
    const int C = s->cin;
    for (int oy = 0; oy < s->oh; oy++)
        for (int ox = 0; ox < s->ow; ox++) {
            const float *restrict g = gi + ((size_t)oy * s->ow + ox) * C;
            for (int ky = 0; ky < s->kh; ky++) {
                const int iy = oy * s->stride - s->pt + ky;
                if (iy < 0 || iy >= s->h)
                    continue;
                for (int kx = 0; kx < s->kw; kx++) {
                    const int ix = ox * s->stride - s->pl + kx;
                    if (ix < 0 || ix >= s->w)
                        continue;
                    const float *restrict xp = xi + ((size_t)iy * s->w + ix) * C;
                    float *restrict d = dw + (size_t)(ky * s->kw + kx) * C;
                    for (int c = 0; c < C; c++)
                        d[c] += xp[c] * g[c];
                }
            }
        }
}

void nn_dw_bwd_dw(const nn_conv_shape *s, const float *x, const float *dz, float *dw)
{
    const int C = s->cin;
    const int avx2 = nn_simd_avx2();
    for (int img = 0; img < s->n; img++) {
        const float *xi = x + (size_t)img * s->h * s->w * C;
        const float *gi = dz + (size_t)img * s->oh * s->ow * C;
        if (s->kw > DW_MAX_KW) {
            dw_wide(s, xi, gi, dw);
            continue;
        }
        for (int oy = 0; oy < s->oh; oy++)
            for (int ky = 0; ky < s->kh; ky++) {
                const int iy = oy * s->stride - s->pt + ky;
                if (iy < 0 || iy >= s->h)
                    continue;
                const float *xrow = xi + (size_t)iy * s->w * C;
                const float *grow = gi + (size_t)oy * s->ow * C;
                float *dwrow = dw + (size_t)ky * s->kw * C;
#if DW_X86
                if (avx2) {
                    dw_rows_avx2(s, xrow, grow, dwrow);
                    continue;
                }
#endif
                (void)avx2;
                dw_rows_c(s, xrow, grow, dwrow);
            }
    }
}

/* ---- an input given as an nn_xform ----
 *
 * The input rows a band of output rows reads are computed into the workspace
 * (nn_scale_shift_act) and the kernels above run on the band as on an image of
 * those rows, its top padding what is left of the image's: every output sums the
 * same taps in the same order, and the weight gradient adds the same rows in the same
 * order, so the bits are those of the input whole. A band's rows are about
 * DW_BAND_FLOATS (512 KiB), so the kernel reads them from L2 rather than memory. */

#define DW_BAND_FLOATS (128L * 1024)

/* Output rows per band. */
static int band_rows(const nn_conv_shape *s)
{
    const long in_rows = DW_BAND_FLOATS / ((long)s->w * s->cin);
    const long ob = in_rows > s->kh ? (in_rows - s->kh) / s->stride + 1 : 1;
    return ob < s->oh ? (int)ob : s->oh;
}

size_t nn_dw_xf_floats(const nn_conv_shape *s)
{
    long rows = (long)(band_rows(s) - 1) * s->stride + s->kh;
    if (rows > s->h)
        rows = s->h;
    return (size_t)rows * (size_t)s->w * (size_t)s->cin;
}

/* Computes the input rows of output rows [oy0, oy1) of image img into ws, and *b the
 * shape that runs the kernels on them. */
static void band(const nn_conv_shape *s, const nn_xform *t, int img, int oy0, int oy1,
                 float *ws, nn_conv_shape *b)
{
    int r0 = oy0 * s->stride - s->pt, r1 = (oy1 - 1) * s->stride - s->pt + s->kh;
    r0 = r0 < 0 ? 0 : r0;
    r1 = r1 > s->h ? s->h : r1;
    r1 = r1 < r0 ? r0 : r1;
    *b = *s;
    b->n = 1;
    b->h = r1 - r0;
    b->pt = s->pt + r0 - oy0 * s->stride;
    b->oh = oy1 - oy0;
    const size_t row = (size_t)s->w * (size_t)s->cin;
    nn_scale_shift_act((long)(r1 - r0) * s->w, s->cin, t->x + ((size_t)img * s->h + r0) * row,
                       t->a, t->b, t->act, ws);
}

/* What runs on each band: the forward into y, or the weight gradient of dz into dw. */
typedef struct band_job {
    const float *wt, *bias;
    int act;
    float *y;
    const float *dz;
    float *dw;
} band_job;

static void run_bands(const nn_conv_shape *s, const nn_xform *t, float *ws, const band_job *j)
{
    const int ob = band_rows(s);
    const size_t orow = (size_t)s->ow * (size_t)s->cout;
    for (int img = 0; img < s->n; img++)
        for (int oy0 = 0; oy0 < s->oh; oy0 += ob) {
            const int oy1 = s->oh - oy0 < ob ? s->oh : oy0 + ob;
            const size_t at = ((size_t)img * s->oh + oy0) * orow;
            nn_conv_shape b;
            band(s, t, img, oy0, oy1, ws, &b);
            if (j->y)
                nn_dw_fwd(&b, ws, j->wt, j->bias, j->act, j->y + at);
            else
                nn_dw_bwd_dw(&b, ws, j->dz + at, j->dw);
        }
}

void nn_dw_fwd_xf(const nn_conv_shape *s, const nn_xform *t, const float *wt,
                  const float *bias, int act, float *y, float *ws)
{
    const band_job j = { wt, bias, act, y, NULL, NULL };
    run_bands(s, t, ws, &j);
}

void nn_dw_bwd_dw_xf(const nn_conv_shape *s, const nn_xform *t, const float *dz, float *dw,
                     float *ws)
{
    const band_job j = { NULL, NULL, 0, NULL, dz, dw };
    run_bands(s, t, ws, &j);
}
