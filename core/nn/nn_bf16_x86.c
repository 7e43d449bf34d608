/* nn_bf16_x86 — the AVX512_BF16 engine of nn_bf16.h: VCVTNE2PS2BF16 / VCVTNEPS2BF16 to
 * pack, VDPBF16PS to sum. The kernel holds 8 rows x 32 columns of sums in 16 zmm
 * registers; per pair of depth it loads the panel's two vectors and broadcasts each
 * row's pair from the packed block (an embedded broadcast), 16 VDPBF16PS. Every sum is
 * the portable kernel's chain (nn_bf16.c), so the two engines give the same bits.
 *
 * Built on x86-64 with GCC or clang (target attributes: the rest of the program is
 * compiled for the baseline and this file's functions run only where nn_bf16_have
 * says the CPU has the instructions). Nothing is allocated. */
#include <string.h>

#include "nn/nn_bf16.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

int nn_bf16_x86_built(void)
{
    return 1;
}

/* 16 floats as bf16 in the low halves of 16 dwords. */
TARGET_BF16 static inline __m512i low16(__m512 v)
{
    return _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(v));
}

/* Pairs (lo[j], hi[j]) of 16 floats each, masked to m (the rest 0). */
TARGET_BF16 static inline __m512i pairs16(const float *lo, const float *hi, __mmask16 m)
{
    const __m512i l = low16(_mm512_maskz_loadu_ps(m, lo));
    if (!hi)
        return l;
    const __m512i h = low16(_mm512_maskz_loadu_ps(m, hi));
    return _mm512_or_si512(l, _mm512_slli_epi32(h, 16));
}

TARGET_BF16 static inline __m256i pairs8(const float *lo, const float *hi, __mmask8 m)
{
    const __m256i l = _mm256_cvtepu16_epi32((__m128i)_mm256_cvtneps_pbh(_mm256_maskz_loadu_ps(m, lo)));
    if (!hi)
        return l;
    const __m256i h = _mm256_cvtepu16_epi32((__m128i)_mm256_cvtneps_pbh(_mm256_maskz_loadu_ps(m, hi)));
    return _mm256_or_si256(l, _mm256_slli_epi32(h, 16));
}

static __mmask16 mask16(long n)
{
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1u);
}

/* B's columns along memory (B(p, j) = b[j * bcs + p]: a weight matrix read
 * transposed, for the input gradient): each column's pairs converted 16 at a time,
 * then laid across the panel. */
TARGET_BF16 static void pack_b_across(long K, long N, long kp, const float *b, long bcs,
                                      uint32_t *dst)
{
    uint32_t tmp[NN_BF16_NR][16] __attribute__((aligned(64)));
    for (long j0 = 0; j0 < N; j0 += NN_BF16_NR) {
        uint32_t *d = dst + j0 * kp;
        for (long q0 = 0; q0 < kp; q0 += 16) {
            const long p0 = 2 * q0;
            const __mmask16 m0 = mask16(K - p0), m1 = mask16(K - p0 - 16);
            for (int j = 0; j < NN_BF16_NR; j++) {
                if (j0 + j >= N) {
                    memset(tmp[j], 0, sizeof tmp[j]);
                    continue;
                }
                const float *col = b + (j0 + j) * bcs + p0;
                const __m512 lo = _mm512_maskz_loadu_ps(m0, col);
                const __m512 hi = _mm512_maskz_loadu_ps(m1, col + 16);
                _mm512_store_si512(tmp[j], (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
            }
            const long nq = kp - q0 < 16 ? kp - q0 : 16;
            for (long qq = 0; qq < nq; qq++)
                for (int j = 0; j < NN_BF16_NR; j++)
                    d[(q0 + qq) * NN_BF16_NR + j] = tmp[j][qq];
        }
    }
}

TARGET_BF16 void nn_bf16_pack_b_x86(long K, long N, long kp, const float *b, long brs,
                                    long bcs, uint32_t *dst)
{
    if (bcs != 1 && brs == 1) {
        pack_b_across(K, N, kp, b, bcs, dst);
        return;
    }
    if (bcs != 1) {
        nn_bf16_pack_b_c(K, N, kp, b, brs, bcs, dst);
        return;
    }
    for (long j0 = 0; j0 < N; j0 += NN_BF16_NR) {
        uint32_t *d = dst + j0 * kp;
        const __mmask16 m0 = mask16(N - j0), m1 = mask16(N - j0 - 16);
        for (long q = 0; q < kp; q++) {
            __m512i v0 = _mm512_setzero_si512(), v1 = v0;
            if (2 * q < K) {
                const float *lo = b + 2 * q * brs + j0;
                const float *hi = 2 * q + 1 < K ? lo + brs : NULL;
                v0 = pairs16(lo, hi, m0);
                v1 = pairs16(lo + 16, hi ? hi + 16 : NULL, m1);
            }
            _mm512_storeu_si512(d + q * NN_BF16_NR, v0);
            _mm512_storeu_si512(d + q * NN_BF16_NR + 16, v1);
        }
    }
}

TARGET_BF16 void nn_bf16_convert_x86(const float *x, long n, uint16_t *out)
{
    for (long i = 0; i < n; i += 16) {
        const __mmask16 m = mask16(n - i);
        const __m256i v = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i));
        _mm256_mask_storeu_epi16(out + i, m, v);
    }
}

TARGET_BF16 void nn_bf16_pack_a_x86(int layout, long rows, long K, const float *a, long ars,
                                    long aps, uint32_t *dst)
{
    const long kp = (K + 1) / 2;
    if (layout == NN_BF16_PAIRS && ars == 1) {
        /* Rows of A side by side in memory (X^T): two depths' rows interleaved. */
        for (long g = 0; g < rows; g += NN_BF16_MR) {
            uint32_t *d = dst + g * kp;
            const long left = rows - g;
            const __mmask8 m = left >= 8 ? (__mmask8)0xff : (__mmask8)((1u << left) - 1u);
            for (long q = 0; q < kp; q++) {
                const float *lo = a + g + 2 * q * aps;
                const float *hi = 2 * q + 1 < K ? lo + aps : NULL;
                _mm256_storeu_si256((__m256i *)(d + q * NN_BF16_MR), pairs8(lo, hi, m));
            }
        }
        return;
    }
    if (layout != NN_BF16_ROWS || aps != 1) {
        nn_bf16_pack_a_c(layout, rows, K, kp, a, ars, aps, dst);
        return;
    }
    /* Depth contiguous: each row converted 16 pairs at a time; rows padded to 16. */
    const long rp = (rows + 15) / 16 * 16;
    for (long i = 0; i < rp; i++) {
        uint32_t *d = dst + i * kp;
        for (long q0 = 0; q0 < kp; q0 += 16) {
            const long p0 = 2 * q0;
            const __mmask16 keep = mask16(kp - q0);
            __m512i v = _mm512_setzero_si512();
            if (i < rows) {
                const float *ar = a + i * ars + p0;
                const __m512 lo = _mm512_maskz_loadu_ps(mask16(K - p0), ar);
                const __m512 hi = _mm512_maskz_loadu_ps(mask16(K - p0 - 16), ar + 16);
                v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
            }
            _mm512_mask_storeu_epi32(d + q0, keep, v);
        }
    }
}

/* 8 x 32 sums of kp pairs into t; A's row r, pair q at a[r * ars + q * aqs]. Inlined
 * with the strides of each layout. */
TARGET_BF16 static inline void kernel(long kp, const uint32_t *a, long ars, long aqs,
                                      const uint32_t *b, float *t)
{
    __m512 c[NN_BF16_MR][2];
#pragma GCC unroll 8
    for (int r = 0; r < NN_BF16_MR; r++)
        c[r][0] = c[r][1] = _mm512_setzero_ps();
    for (long q = 0; q < kp; q++) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + q * NN_BF16_NR);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + q * NN_BF16_NR + 16);
        const uint32_t *aq = a + q * aqs;
#pragma GCC unroll 8
        for (int r = 0; r < NN_BF16_MR; r++) {
            const __m512bh av = (__m512bh)_mm512_set1_epi32((int)aq[r * ars]);
            c[r][0] = _mm512_dpbf16_ps(c[r][0], av, b0);
            c[r][1] = _mm512_dpbf16_ps(c[r][1], av, b1);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NN_BF16_MR; r++) {
        _mm512_store_ps(t + r * NN_BF16_NR, c[r][0]);
        _mm512_store_ps(t + r * NN_BF16_NR + 16, c[r][1]);
    }
}

TARGET_BF16 static void kernel_rows(long kp, const uint32_t *a, const uint32_t *b, float *t)
{
    kernel(kp, a, kp, 1, b, t);
}

TARGET_BF16 static void kernel_pairs(long kp, const uint32_t *a, const uint32_t *b, float *t)
{
    kernel(kp, a, 1, NN_BF16_MR, b, t);
}

/* 16 results of the output pass (nn_bf16_finish_c's steps, the same IEEE operations
 * lane by lane, so the same bits). */
TARGET_BF16 static inline __m512 out16(__m512 v, const float *cr, const float *bias,
                                       const float *mk, __mmask16 m, const nn_gemm_out *o)
{
    if (o->accum)
        v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, cr), v);
    if (bias)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias));
    /* max returns its second operand for a NaN: 0, as v > 0 ? v : 0 does. */
    if (o->act)
        v = _mm512_max_ps(v, _mm512_setzero_ps());
    if (o->act == NN_ACT_RELU6)
        v = _mm512_min_ps(v, _mm512_set1_ps(6.0f));
    if (mk) {
        const __m512 y = _mm512_maskz_loadu_ps(m, mk);
        __mmask16 pass = _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ);
        if (o->mask_act == NN_ACT_RELU6)
            pass &= _mm512_cmp_ps_mask(y, _mm512_set1_ps(6.0f), _CMP_LT_OQ);
        v = _mm512_mul_ps(v, _mm512_mask_blend_ps(pass, _mm512_setzero_ps(), _mm512_set1_ps(1.0f)));
    }
    return v;
}

TARGET_BF16 void nn_bf16_finish_x86(const float *t, long i0, long rows, long j0, long cols,
                                    float *c, long ldc, const nn_gemm_out *o)
{
    const __mmask16 m[2] = { mask16(cols), mask16(cols - 16) };
    for (long r = 0; r < rows; r++) {
        const float *tr = t + r * NN_BF16_NR;
        float *cr = c + (i0 + r) * ldc + j0;
        for (int h = 0; h < 2 && h * 16 < cols; h++) {
            __m512 v = _mm512_load_ps(tr + 16 * h);
            if (o) {
                const float *mk = o->mask ? o->mask + (i0 + r) * ldc + j0 + 16 * h : NULL;
                v = out16(v, cr + 16 * h, o->bias ? o->bias + j0 + 16 * h : NULL, mk, m[h], o);
                if (mk && o->mask_sum) {
                    float *s = o->mask_sum + j0 + 16 * h;
                    _mm512_mask_storeu_ps(s, m[h], _mm512_add_ps(_mm512_maskz_loadu_ps(m[h], s), v));
                }
            }
            _mm512_mask_storeu_ps(cr + 16 * h, m[h], v);
        }
    }
}

TARGET_BF16 void nn_bf16_block_x86(const nn_bf16_block *k)
{
    float t[NN_BF16_MR * NN_BF16_NR] __attribute__((aligned(64)));
    const long N = k->B->N, kp = k->kp;
    for (long j0 = 0; j0 < N; j0 += NN_BF16_NR) {
        const long nc = N - j0 < NN_BF16_NR ? N - j0 : NN_BF16_NR;
        const uint32_t *bp = k->B->p + j0 * kp;
        for (long g = 0; g < k->mc; g += NN_BF16_MR) {
            const long rows = k->mc - g < NN_BF16_MR ? k->mc - g : NN_BF16_MR;
            if (k->layout == NN_BF16_ROWS)
                kernel_rows(kp, k->a + g * kp, bp, t);
            else
                kernel_pairs(kp, k->a + g * kp, bp, t);
            nn_bf16_finish_x86(t, k->i0 + g, rows, j0, nc, k->c, k->ldc, k->o);
        }
    }
}

#else

int nn_bf16_x86_built(void)
{
    return 0;
}

void nn_bf16_pack_b_x86(long K, long N, long kp, const float *b, long brs, long bcs,
                        uint32_t *dst)
{
    nn_bf16_pack_b_c(K, N, kp, b, brs, bcs, dst);
}

void nn_bf16_pack_a_x86(int layout, long rows, long K, const float *a, long ars, long aps,
                        uint32_t *dst)
{
    nn_bf16_pack_a_c(layout, rows, K, (K + 1) / 2, a, ars, aps, dst);
}

void nn_bf16_block_x86(const nn_bf16_block *k)
{
    nn_bf16_block_c(k);
}

void nn_bf16_convert_x86(const float *x, long n, uint16_t *out)
{
    for (long i = 0; i < n; i++)
        out[i] = nn_bf16_from_f32(x[i]);
}

void nn_bf16_finish_x86(const float *t, long i, long rows, long j0, long cols, float *c,
                        long ldc, const nn_gemm_out *o)
{
    nn_bf16_finish_c(t, i, rows, j0, cols, c, ldc, o);
}

#endif
