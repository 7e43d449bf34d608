/* nn_gemm512 — the AVX-512F form of nn_gemm_nn (C = A B, finished on the registers)
 * and of nn_gemm_tn (C += X^T G, the weight gradient, at the end of the file):
 * the same scheme as nn_gemm.c's AVX2 kernels (A's rows broadcast, B's rows loaded,
 * the output pass before the store), on zmm registers. Each kernel holds 24 sums: 6 x
 * 64 (four loads of B and six broadcasts per k) for column blocks wider than 48, 12 x
 * 32 for those wider than 16, 24 x 16 for the narrow rest; the last vector of a block
 * is masked when N is not a multiple of 16, so N % 8 == 0 is all they need. 6 x 64
 * beat 12 x 32 on every shape of bench_gemm wider than 48 (best of 3: small's 3x3s
 * 95 -> 118 and 93 -> 112 GFLOP/s, MobileNetV2's 320 -> 1280 74 -> 102). From K =
 * G512_PACK_K, B's column block is first copied into contiguous rows.
 *
 * Every result is the same fused multiply-add chain over k = 0..K-1 as the AVX2
 * kernels', then the same output pass, so the two give the same bits. Only mask_sum
 * (the column sums the input gradient adds into the bias gradient) would be summed
 * in another order, row blocks of 12 or 24 instead of 4, 6 or 8: nn_gemm_nn keeps
 * the AVX2 kernels for those calls, and the backward pass's arithmetic is unchanged.
 *
 * Chosen at run time when the CPU has AVX-512F (GCC or clang on x86-64); the
 * environment variable PT_GEMM_AVX2=1 (read once, by base/cpu.c) or nn_gemm_force_avx2(1) (tests)
 * keeps the AVX2 kernels. No memory is allocated; nothing is freed.
 */
#include <stdlib.h>

#include "nn/nn_impl.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define G512_X86 1
#include <immintrin.h>
#define TARGET_512 __attribute__((target("avx512f")))
#else
#define G512_X86 0
#endif

/* Rows of A per block: the block (rows x K floats) stays in L2 while every column
 * block of B passes over it. */
#define G512_MC 264L

/* From this depth B's column blocks are packed (nn_gemm512_nn). */
#define G512_PACK_K 1024

static int forced_avx2;

void nn_gemm_force_avx2(int on)
{
    forced_avx2 = on != 0;
}

int nn_gemm512_ok(void)
{
#if G512_X86
    /* cpu_usable() has no AVX-512F under PT_GEMM_AVX2. */
    return cpu_usable()->avx512f && !forced_avx2 && nn_simd_avx2();
#else
    return 0;
#endif
}

#if G512_X86

/* The finished value of 16 results at p (lanes in m; mk: the same of the mask, or
 * NULL), stored and returned: what nn_gemm.c's put8 does, lane for lane. */
TARGET_512 static inline __m512 put16(float *p, __m512 v, const nn_gemm_out *o, int col,
                                      const float *mk, __mmask16 m)
{
    if (o->accum)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, p));
    if (o->bias)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, o->bias + col));
    /* max returns its second operand for a NaN: 0, as the scalar act does. */
    if (o->act)
        v = _mm512_max_ps(v, _mm512_setzero_ps());
    if (o->act == NN_ACT_RELU6)
        v = _mm512_min_ps(v, _mm512_set1_ps(6.0f));
    if (mk) {
        /* Times 1 or 0 (a NaN stays a NaN), as put8. */
        const __m512 y = _mm512_maskz_loadu_ps(m, mk);
        __mmask16 pass = _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ);
        if (o->mask_act == NN_ACT_RELU6)
            pass &= _mm512_cmp_ps_mask(y, _mm512_set1_ps(6.0f), _CMP_LT_OQ);
        v = _mm512_mul_ps(v, _mm512_maskz_mov_ps(pass, _mm512_set1_ps(1.0f)));
    }
    _mm512_mask_storeu_ps(p, m, v);
    return v;
}

TARGET_512 static inline void add_sum16(const nn_gemm_out *o, int col, __m512 v, __mmask16 m)
{
    if (o->mask_sum)
        _mm512_mask_storeu_ps(o->mask_sum + col, m,
                              _mm512_add_ps(_mm512_maskz_loadu_ps(m, o->mask_sum + col), v));
}

#define R6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define R12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define R24(X)                                                                     \
    R12(X) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)

/* Rows at or past mr read A's last valid row and are not stored. */
#define A_ROW(r) const float *a##r = a + (long)((r) < mr ? (r) : mr - 1) * lda;
#define Z1(r) __m512 c##r##0 = _mm512_setzero_ps();
#define Z2(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = c##r##0;
#define STEP1(r)                                                                   \
    {                                                                              \
        const __m512 av = _mm512_set1_ps(a##r[k]);                                 \
        c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                \
    }
#define STEP2(r)                                                                   \
    {                                                                              \
        const __m512 av = _mm512_set1_ps(a##r[k]);                                 \
        c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                \
        c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);                                \
    }
#define Z4(r)                                                                      \
    __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = c##r##0, c##r##2 = c##r##0,   \
           c##r##3 = c##r##0;
#define STEP4(r)                                                                   \
    {                                                                              \
        const __m512 av = _mm512_set1_ps(a##r[k]);                                 \
        c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                \
        c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);                                \
        c##r##2 = _mm512_fmadd_ps(av, b2, c##r##2);                                \
        c##r##3 = _mm512_fmadd_ps(av, b3, c##r##3);                                \
    }
#define MK(r, j) (mk ? mk + (r) * ldc + (j) : NULL)
#define PUT1(r)                                                                    \
    if ((r) < mr)                                                                  \
        s0 = _mm512_add_ps(s0, put16(c + (r) * ldc, c##r##0, o, col, MK(r, 0), m0));
#define PUT2(r)                                                                    \
    if ((r) < mr) {                                                                \
        s0 = _mm512_add_ps(s0, put16(c + (r) * ldc, c##r##0, o, col, MK(r, 0), m0)); \
        s1 = _mm512_add_ps(s1, put16(c + (r) * ldc + 16, c##r##1, o, col + 16,     \
                                     MK(r, 16), m1));                              \
    }

#define PUT4(r)                                                                    \
    if ((r) < mr) {                                                                \
        s0 = _mm512_add_ps(s0, put16(c + (r) * ldc, c##r##0, o, col, MK(r, 0), m0)); \
        s1 = _mm512_add_ps(s1, put16(c + (r) * ldc + 16, c##r##1, o, col + 16,     \
                                     MK(r, 16), m0));                              \
        s2 = _mm512_add_ps(s2, put16(c + (r) * ldc + 32, c##r##2, o, col + 32,     \
                                     MK(r, 32), m0));                              \
        s3 = _mm512_add_ps(s3, put16(c + (r) * ldc + 48, c##r##3, o, col + 48,     \
                                     MK(r, 48), m3));                              \
    }

/* Rows [0, 6) x columns [0, 64): the first 48 columns whole, the last 16 in m3. */
TARGET_512 static void k6x64(int K, const float *a, long lda, const float *b, long ldb,
                             float *c, long ldc, int mr, const nn_gemm_out *o, int col,
                             const float *mk, __mmask16 m3)
{
    const __mmask16 m0 = 0xffff;
    R6(A_ROW)
    R6(Z4)
    for (int k = 0; k < K; k++) {
        const float *bk = b + k * ldb;
        const __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16),
                     b2 = _mm512_loadu_ps(bk + 32), b3 = _mm512_maskz_loadu_ps(m3, bk + 48);
        R6(STEP4)
    }
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    R6(PUT4)
    add_sum16(o, col, s0, m0);
    add_sum16(o, col + 16, s1, m0);
    add_sum16(o, col + 32, s2, m0);
    add_sum16(o, col + 48, s3, m3);
}

/* Rows [0, 12) x columns [0, 32) of C: the first 16 columns whole, the second 16 in m1. */
TARGET_512 static void k12x32(int K, const float *a, long lda, const float *b, long ldb,
                              float *c, long ldc, int mr, const nn_gemm_out *o, int col,
                              const float *mk, __mmask16 m1)
{
    const __mmask16 m0 = 0xffff;
    R12(A_ROW)
    R12(Z2)
    for (int k = 0; k < K; k++) {
        const __m512 b0 = _mm512_loadu_ps(b + k * ldb);
        const __m512 b1 = _mm512_maskz_loadu_ps(m1, b + k * ldb + 16);
        R12(STEP2)
    }
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    R12(PUT2)
    add_sum16(o, col, s0, m0);
    add_sum16(o, col + 16, s1, m1);
}

/* Rows [0, 24) x the columns in m0 of [0, 16). */
TARGET_512 static void k24x16(int K, const float *a, long lda, const float *b, long ldb,
                              float *c, long ldc, int mr, const nn_gemm_out *o, int col,
                              const float *mk, __mmask16 m0)
{
    R24(A_ROW)
    R24(Z1)
    for (int k = 0; k < K; k++) {
        const __m512 b0 = _mm512_maskz_loadu_ps(m0, b + k * ldb);
        R24(STEP1)
    }
    __m512 s0 = _mm512_setzero_ps();
    R24(PUT1)
    add_sum16(o, col, s0, m0);
}

TARGET_512 static inline void prefetch_rows(const float *p, long rows, int cols, long ld)
{
    for (long r = 0; r < rows; r++)
        for (int c = 0; c < cols; c += 16)
            _mm_prefetch((const char *)(p + r * ld + c), _MM_HINT_T0);
}

/* The lanes of a 16-column vector that are inside the matrix, n columns of it left. */
static __mmask16 lanes(int n)
{
    return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

/* B's columns [0, n) of its K rows into pk, w floats a row (the columns past n 0). */
static void pack_cols(int K, const float *b, long ldb, int n, int w, float *pk)
{
    for (int k = 0; k < K; k++) {
        for (int j = 0; j < n; j++)
            pk[(long)k * w + j] = b[(long)k * ldb + j];
        for (int j = n; j < w; j++)
            pk[(long)k * w + j] = 0.0f;
    }
}

/* Column block widths, in the order nn_gemm512_nn takes them: 64 while more than 48
 * columns are left, then 32 or 16. */
static int block_width(int left)
{
    return left > 48 ? 64 : left > 16 ? 32 : 16;
}

size_t nn_gemm512_pack_floats(int K, int N)
{
    size_t n = 0;
    for (int n0 = 0; n0 < N; n0 += block_width(N - n0))
        n += (size_t)block_width(N - n0) * (size_t)K;
    return n;
}

void nn_gemm512_pack(int K, int N, const float *B, long ldb, float *pre)
{
    for (int n0 = 0; n0 < N;) {
        const int w = block_width(N - n0), left = N - n0;
        pack_cols(K, B + n0, ldb, left < w ? left : w, w, pre);
        pre += (size_t)w * (size_t)K;
        n0 += w;
    }
}

static void gemm512(long M, int N, int K, const float *A, long lda, const float *B, long ldb,
                    const float *pre, float *C, long ldc, const nn_gemm_out *o);

TARGET_512 void nn_gemm512_nn(long M, int N, int K, const float *A, long lda, const float *B,
                              long ldb, float *C, long ldc, const nn_gemm_out *o)
{
    gemm512(M, N, K, A, lda, B, ldb, NULL, C, ldc, o);
}

void nn_gemm512_nn_packed(long M, int N, int K, const float *A, long lda, const float *pre,
                          float *C, long ldc, const nn_gemm_out *o)
{
    gemm512(M, N, K, A, lda, NULL, 0, pre, C, ldc, o);
}

/* C = A B with B in place (pre NULL) or packed ahead (nn_gemm512_pack; B unused). */
TARGET_512 static void gemm512(long M, int N, int K, const float *A, long lda, const float *B,
                               long ldb, const float *pre, float *C, long ldc,
                               const nn_gemm_out *o)
{
    /* B's column block copied into rows of 32 (16) floats side by side: the kernels
     * then read it as one stream from L1/L2, where B's own rows, N floats apart, fall
     * on few cache sets and run out of L2 when K is large (bench_gemm: small's 2304 x
     * 256 from 52 to 98 GFLOP/s, 1280 x 1024 from 35 to 60; no gain below K = 1024).
     * The same products in the same order: the same bits. Without the memory, B is
     * read in place. Freed here. */
    float *pk = !pre && K >= G512_PACK_K && M >= 48 ? malloc(sizeof(float) * 64 * (size_t)K)
                                                   : NULL;
    for (long m0 = 0; m0 < M; m0 += G512_MC) {
        const long mc = M - m0 < G512_MC ? M - m0 : G512_MC;
        const float *panel = pre;
        for (int n0 = 0; n0 < N;) {
            const int left = N - n0, wide = left > 16, mb = left > 48 ? 6 : wide ? 12 : 24;
            const int width = mb == 6 ? 64 : wide ? 32 : 16;
            const float *bb = pre ? panel : B + n0;
            long ldbb = pre ? width : ldb;
            panel = pre ? panel + (size_t)width * (size_t)K : NULL;
            if (pk) {
                ldbb = width;
                pack_cols(K, B + n0, ldb, left < ldbb ? left : (int)ldbb, (int)ldbb, pk);
                bb = pk;
            }
            for (long i = 0; i < mc; i += mb) {
                const int mr = (int)(mc - i < mb ? mc - i : mb);
                const float *a = A + (m0 + i) * lda;
                /* The first column block reads A from memory: ask for the next rows
                 * ahead (see nn_gemm.c). */
                if (n0 == 0 && m0 + i + 2 * mb <= M)
                    prefetch_rows(a + mb * lda, mb, K, lda);
                float *c = C + (m0 + i) * ldc + n0;
                const float *mk = o->mask ? o->mask + (m0 + i) * ldc + n0 : NULL;
                if (mb == 6)
                    k6x64(K, a, lda, bb, ldbb, c, ldc, mr, o, n0, mk, lanes(left - 48));
                else if (wide)
                    k12x32(K, a, lda, bb, ldbb, c, ldc, mr, o, n0, mk, lanes(left - 16));
                else
                    k24x16(K, a, lda, bb, ldbb, c, ldc, mr, o, n0, mk, lanes(left));
            }
            n0 += width;
        }
    }
    free(pk);
}

/* ---- C += X^T G (the weight gradient), as nn_gemm.c's gemm_tn_avx2 ----
 * Rows [0, MR) of C are columns of X (broadcast), its columns are G's (loaded), summed
 * down m rows; rows at or past mr repeat C's last valid row and are not stored. The
 * same passes of rows (the same mc) and the same chain per pass as the AVX2 kernels:
 * the same bits. */

#define X_COL(r) const float *x##r = x + ((r) < mr ? (r) : mr - 1);
#define TSTEP1(r) c##r##0 = _mm512_fmadd_ps(_mm512_set1_ps(x##r[i * ldx]), g0, c##r##0);
#define TSTEP2(r)                                                                  \
    {                                                                              \
        const __m512 av = _mm512_set1_ps(x##r[i * ldx]);                           \
        c##r##0 = _mm512_fmadd_ps(av, g0, c##r##0);                                \
        c##r##1 = _mm512_fmadd_ps(av, g1, c##r##1);                                \
    }
#define TSTEP4(r)                                                                  \
    {                                                                              \
        const __m512 av = _mm512_set1_ps(x##r[i * ldx]);                           \
        c##r##0 = _mm512_fmadd_ps(av, g0, c##r##0);                                \
        c##r##1 = _mm512_fmadd_ps(av, g1, c##r##1);                                \
        c##r##2 = _mm512_fmadd_ps(av, g2, c##r##2);                                \
        c##r##3 = _mm512_fmadd_ps(av, g3, c##r##3);                                \
    }
#define TADD1(r)                                                                   \
    if ((r) < mr)                                                                  \
        put16(c + (r) * ldc, c##r##0, &add, col, NULL, m0);
#define TADD2(r)                                                                   \
    if ((r) < mr) {                                                                \
        put16(c + (r) * ldc, c##r##0, &add, col, NULL, m0);                        \
        put16(c + (r) * ldc + 16, c##r##1, &add, col + 16, NULL, m1);              \
    }
#define TADD4(r)                                                                   \
    if ((r) < mr) {                                                                \
        put16(c + (r) * ldc, c##r##0, &add, col, NULL, m0);                        \
        put16(c + (r) * ldc + 16, c##r##1, &add, col + 16, NULL, m0);              \
        put16(c + (r) * ldc + 32, c##r##2, &add, col + 32, NULL, m0);              \
        put16(c + (r) * ldc + 48, c##r##3, &add, col + 48, NULL, m3);              \
    }

static const nn_gemm_out add = { 1, NULL, 0, NULL, 0, NULL };

TARGET_512 static void t6x64(long m, const float *x, long ldx, const float *g, long ldg,
                             float *c, long ldc, int mr, int col, __mmask16 m3)
{
    const __mmask16 m0 = 0xffff;
    R6(X_COL)
    R6(Z4)
    for (long i = 0; i < m; i++) {
        const float *gi = g + i * ldg;
        const __m512 g0 = _mm512_loadu_ps(gi), g1 = _mm512_loadu_ps(gi + 16),
                     g2 = _mm512_loadu_ps(gi + 32), g3 = _mm512_maskz_loadu_ps(m3, gi + 48);
        R6(TSTEP4)
    }
    R6(TADD4)
}

TARGET_512 static void t12x32(long m, const float *x, long ldx, const float *g, long ldg,
                              float *c, long ldc, int mr, int col, __mmask16 m1)
{
    const __mmask16 m0 = 0xffff;
    R12(X_COL)
    R12(Z2)
    for (long i = 0; i < m; i++) {
        const __m512 g0 = _mm512_loadu_ps(g + i * ldg);
        const __m512 g1 = _mm512_maskz_loadu_ps(m1, g + i * ldg + 16);
        R12(TSTEP2)
    }
    R12(TADD2)
}

TARGET_512 static void t24x16(long m, const float *x, long ldx, const float *g, long ldg,
                              float *c, long ldc, int mr, int col, __mmask16 m0)
{
    R24(X_COL)
    R24(Z1)
    for (long i = 0; i < m; i++) {
        const __m512 g0 = _mm512_maskz_loadu_ps(m0, g + i * ldg);
        R24(TSTEP1)
    }
    R24(TADD1)
}

TARGET_512 void nn_gemm512_tn(long M, int N, int K, const float *X, long ldx, const float *G,
                              long ldg, float *C, long ldc)
{
    /* Rows per pass as gemm_tn_avx2 has them: the sums' order depends on it. */
    long mc = 65536L / (K + N);
    mc = mc < 64 ? 64 : mc;
    for (long m0 = 0; m0 < M; m0 += mc) {
        const long m = M - m0 < mc ? M - m0 : mc;
        const float *x = X + m0 * ldx, *g = G + m0 * ldg;
        for (int n0 = 0; n0 < N;) {
            const int left = N - n0, kb = left > 48 ? 6 : left > 16 ? 12 : 24;
            for (int k0 = 0; k0 < K; k0 += kb) {
                const int mr = K - k0 < kb ? K - k0 : kb;
                float *c = C + (long)k0 * ldc + n0;
                if (kb == 6)
                    t6x64(m, x + k0, ldx, g + n0, ldg, c, ldc, mr, n0, lanes(left - 48));
                else if (kb == 12)
                    t12x32(m, x + k0, ldx, g + n0, ldg, c, ldc, mr, n0, lanes(left - 16));
                else
                    t24x16(m, x + k0, ldx, g + n0, ldg, c, ldc, mr, n0, lanes(left));
            }
            n0 += kb == 6 ? 64 : kb == 12 ? 32 : 16;
        }
    }
}

#else

void nn_gemm512_nn(long M, int N, int K, const float *A, long lda, const float *B, long ldb,
                   float *C, long ldc, const nn_gemm_out *o)
{
    (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc;
    (void)o;
}

void nn_gemm512_tn(long M, int N, int K, const float *X, long ldx, const float *G, long ldg,
                   float *C, long ldc)
{
    (void)M, (void)N, (void)K, (void)X, (void)ldx, (void)G, (void)ldg, (void)C, (void)ldc;
}

size_t nn_gemm512_pack_floats(int K, int N)
{
    (void)K, (void)N;
    return 0;
}

void nn_gemm512_pack(int K, int N, const float *B, long ldb, float *pre)
{
    (void)K, (void)N, (void)B, (void)ldb, (void)pre;
}

void nn_gemm512_nn_packed(long M, int N, int K, const float *A, long lda, const float *pre,
                          float *C, long ldc, const nn_gemm_out *o)
{
    (void)M, (void)N, (void)K, (void)A, (void)lda, (void)pre, (void)C, (void)ldc, (void)o;
}

#endif
