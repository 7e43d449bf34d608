/* nn_gemm — matrix products for the convolutions whose weight matrix is small (the
 * 1x1 convs of MobileNet-like nets: K and N of 16 to a few hundred), with the
 * output pass of the conv (bias, activation, or adding to what is there) done on
 * the registers before the store.
 *
 * OpenBLAS runs these shapes at 40-60% of its peak: it packs the large operand
 * (the activations, millions of rows) into its own layout for every call, which for
 * K = 16..32 costs as much as the arithmetic, and skinny N leaves its micro-kernel
 * half empty. Here nothing is packed: the weights (K x N, a few KiB to a few hundred)
 * stay in L1/L2 as they are, and each micro-kernel holds a block of 6 x 16, 4 x 24
 * or 8 x 8 outputs in twelve (eight) AVX2 registers, reading the activations in
 * place: one broadcast per row and one load per 8 columns for each k. On the 2-core
 * EPYC of bench/RESULTS.md, with the operands in cache, MobileNetV2's shapes run at
 * 80-110 GFLOP/s (forward and both gradients) where OpenBLAS 0.3.21 gives 45-100;
 * the skinny ones gain most.
 *
 * Where the CPU has AVX-512F, nn_gemm512.c's kernels run instead (the same bits), and
 * the forward takes weight matrices up to NN_GEMM512_FWD_MAX_KN (nn_gemm_fwd_ok).
 *
 * The kernels need AVX2 + FMA (x86-64 under GCC or clang, checked at run time as in
 * nn_dw.c) and N a multiple of 8; nn_gemm_ok() says whether they run, and callers
 * use sgemm otherwise. Weight matrices beyond NN_GEMM_MAX_KN (2 MiB, past the 320 x
 * 1280 of MobileNetV2's last 1x1) stay with OpenBLAS: the weight gradient adds its
 * sums into the whole K x N block once per block of rows, and the input gradient
 * needs the weights transposed in the context's workspace.
 */
#include <stddef.h>

#include "nn/nn_impl.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define GEMM_X86 1
#include <immintrin.h>
#define TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define GEMM_X86 0
#endif

/* Rows of the activations per block: the block (rows x K floats) stays in L2 while
 * every column block of the weights passes over it. */
#define GEMM_MC 256L

int nn_gemm_ok(int K, int N)
{
    return GEMM_X86 && N % 8 == 0 && (long)K * N <= NN_GEMM_MAX_KN && nn_simd_avx2();
}

int nn_gemm_fwd_ok(int K, int N)
{
    return nn_gemm_ok(K, N) ||
           (N % 8 == 0 && (long)K * N <= NN_GEMM512_FWD_MAX_KN && nn_gemm512_ok());
}

#if GEMM_X86

/* What happens to a block of sums before the store (nn_gemm_out, and the
 * weight gradient's add). */
typedef struct epi {
    int accum;
    const float *bias;
    int act;
    int mask_act;
    float *mask_sum;
} epi;

/* The finished value of 8 results at p (mk: the same 8 of the mask, or NULL), stored
 * and returned. */
TARGET_AVX2 static inline __m256 put8(float *p, __m256 v, const epi *e, int col,
                                      const float *mk)
{
    if (e->accum)
        v = _mm256_add_ps(v, _mm256_loadu_ps(p));
    if (e->bias)
        v = _mm256_add_ps(v, _mm256_loadu_ps(e->bias + col));
    /* max returns its second operand for a NaN: 0, as the scalar act does. */
    if (e->act)
        v = _mm256_max_ps(v, _mm256_setzero_ps());
    if (e->act == NN_ACT_RELU6)
        v = _mm256_min_ps(v, _mm256_set1_ps(6.0f));
    if (mk) {
        /* Times 1 or 0, as the separate pass multiplied (a NaN stays a NaN). */
        const __m256 y = _mm256_loadu_ps(mk);
        __m256 pass = _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_GT_OQ);
        if (e->mask_act == NN_ACT_RELU6)
            pass = _mm256_and_ps(pass, _mm256_cmp_ps(y, _mm256_set1_ps(6.0f), _CMP_LT_OQ));
        v = _mm256_mul_ps(v, _mm256_and_ps(pass, _mm256_set1_ps(1.0f)));
    }
    _mm256_storeu_ps(p, v);
    return v;
}

/* Adds a kernel's column sums into the mask's sums (when asked for). */
TARGET_AVX2 static inline void add_sum8(const epi *e, int col, __m256 v)
{
    if (e->mask_sum)
        _mm256_storeu_ps(e->mask_sum + col,
                         _mm256_add_ps(_mm256_loadu_ps(e->mask_sum + col), v));
}

/* ---- C = A B: rows of A broadcast, rows of B loaded ----
 * Each kernel computes rows [0, MR) x columns [0, 8 NV) of C from A (lda) and B
 * (ldb), K deep. Rows at or past mr read A's last valid row and are not stored, so
 * the same code serves the bottom edge. */

#define ROWS4(X) X(0) X(1) X(2) X(3)
#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

#define A_ROW(r) const float *a##r = a + (long)((r) < mr ? (r) : mr - 1) * lda;
#define SUMS1(r) __m256 c##r##0 = _mm256_setzero_ps();
#define SUMS2(r) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = c##r##0;
#define SUMS3(r) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = c##r##0, c##r##2 = c##r##0;
#define NN_STEP1(r)                                                                \
    {                                                                              \
        const __m256 av = _mm256_broadcast_ss(a##r + k);                           \
        c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                \
    }
#define NN_STEP2(r)                                                                \
    {                                                                              \
        const __m256 av = _mm256_broadcast_ss(a##r + k);                           \
        c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                \
        c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                \
    }
#define NN_STEP3(r)                                                                \
    {                                                                              \
        const __m256 av = _mm256_broadcast_ss(a##r + k);                           \
        c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                \
        c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                \
        c##r##2 = _mm256_fmadd_ps(av, b2, c##r##2);                                \
    }
/* Row r's results stored (through the mask when there is one), summed per column
 * into s0.. for the mask's sums. */
#define MK(r) (mk ? mk + (r) * ldc : NULL)
#define PUT1(r)                                                                    \
    if ((r) < mr)                                                                  \
        s0 = _mm256_add_ps(s0, put8(c + (r) * ldc, c##r##0, e, col, MK(r)));
#define PUT2(r)                                                                    \
    if ((r) < mr) {                                                                \
        s0 = _mm256_add_ps(s0, put8(c + (r) * ldc, c##r##0, e, col, MK(r)));       \
        s1 = _mm256_add_ps(s1, put8(c + (r) * ldc + 8, c##r##1, e, col + 8,        \
                                    mk ? MK(r) + 8 : NULL));                       \
    }
#define PUT3(r)                                                                    \
    if ((r) < mr) {                                                                \
        s0 = _mm256_add_ps(s0, put8(c + (r) * ldc, c##r##0, e, col, MK(r)));       \
        s1 = _mm256_add_ps(s1, put8(c + (r) * ldc + 8, c##r##1, e, col + 8,        \
                                    mk ? MK(r) + 8 : NULL));                       \
        s2 = _mm256_add_ps(s2, put8(c + (r) * ldc + 16, c##r##2, e, col + 16,      \
                                    mk ? MK(r) + 16 : NULL));                      \
    }

TARGET_AVX2 static void nn_8x8(int K, const float *a, long lda, const float *b, long ldb,
                               float *c, long ldc, int mr, const epi *e, int col,
                               const float *mk)
{
    ROWS8(A_ROW)
    ROWS8(SUMS1)
    for (int k = 0; k < K; k++) {
        const __m256 b0 = _mm256_loadu_ps(b + k * ldb);
        ROWS8(NN_STEP1)
    }
    __m256 s0 = _mm256_setzero_ps();
    ROWS8(PUT1)
    add_sum8(e, col, s0);
}

TARGET_AVX2 static void nn_6x16(int K, const float *a, long lda, const float *b, long ldb,
                                float *c, long ldc, int mr, const epi *e, int col,
                                const float *mk)
{
    ROWS6(A_ROW)
    ROWS6(SUMS2)
    for (int k = 0; k < K; k++) {
        const __m256 b0 = _mm256_loadu_ps(b + k * ldb), b1 = _mm256_loadu_ps(b + k * ldb + 8);
        ROWS6(NN_STEP2)
    }
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    ROWS6(PUT2)
    add_sum8(e, col, s0);
    add_sum8(e, col + 8, s1);
}

TARGET_AVX2 static void nn_4x24(int K, const float *a, long lda, const float *b, long ldb,
                                float *c, long ldc, int mr, const epi *e, int col,
                                const float *mk)
{
    ROWS4(A_ROW)
    ROWS4(SUMS3)
    for (int k = 0; k < K; k++) {
        const __m256 b0 = _mm256_loadu_ps(b + k * ldb), b1 = _mm256_loadu_ps(b + k * ldb + 8),
                     b2 = _mm256_loadu_ps(b + k * ldb + 16);
        ROWS4(NN_STEP3)
    }
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0;
    ROWS4(PUT3)
    add_sum8(e, col, s0);
    add_sum8(e, col + 8, s1);
    add_sum8(e, col + 16, s2);
}

/* ---- C += X^T G: the sum runs down the rows of X and G ----
 * Rows [0, MR) of C are columns of X (broadcast), its columns are columns of G
 * (loaded), summed over m rows. Rows at or past mr (the edge of C) repeat C's last
 * valid row and are not stored. */

#define X_COL(r) const float *x##r = x + ((r) < mr ? (r) : mr - 1);
#define ADD1(r)                                                                    \
    if ((r) < mr)                                                                  \
        put8(c + (r) * ldc, c##r##0, e, col, NULL);
#define ADD2(r)                                                                    \
    if ((r) < mr) {                                                                \
        put8(c + (r) * ldc, c##r##0, e, col, NULL);                                \
        put8(c + (r) * ldc + 8, c##r##1, e, col + 8, NULL);                        \
    }
#define ADD3(r)                                                                    \
    if ((r) < mr) {                                                                \
        put8(c + (r) * ldc, c##r##0, e, col, NULL);                                \
        put8(c + (r) * ldc + 8, c##r##1, e, col + 8, NULL);                        \
        put8(c + (r) * ldc + 16, c##r##2, e, col + 16, NULL);                      \
    }
#define TN_STEP1(r)                                                                \
    {                                                                              \
        const __m256 av = _mm256_broadcast_ss(x##r + i * ldx);                     \
        c##r##0 = _mm256_fmadd_ps(av, g0, c##r##0);                                \
    }
#define TN_STEP2(r)                                                                \
    {                                                                              \
        const __m256 av = _mm256_broadcast_ss(x##r + i * ldx);                     \
        c##r##0 = _mm256_fmadd_ps(av, g0, c##r##0);                                \
        c##r##1 = _mm256_fmadd_ps(av, g1, c##r##1);                                \
    }
#define TN_STEP3(r)                                                                \
    {                                                                              \
        const __m256 av = _mm256_broadcast_ss(x##r + i * ldx);                     \
        c##r##0 = _mm256_fmadd_ps(av, g0, c##r##0);                                \
        c##r##1 = _mm256_fmadd_ps(av, g1, c##r##1);                                \
        c##r##2 = _mm256_fmadd_ps(av, g2, c##r##2);                                \
    }

TARGET_AVX2 static void tn_8x8(long m, const float *x, long ldx, const float *g, long ldg,
                               float *c, long ldc, int mr, const epi *e, int col)
{
    ROWS8(X_COL)
    ROWS8(SUMS1)
    for (long i = 0; i < m; i++) {
        const __m256 g0 = _mm256_loadu_ps(g + i * ldg);
        ROWS8(TN_STEP1)
    }
    ROWS8(ADD1)
}

TARGET_AVX2 static void tn_6x16(long m, const float *x, long ldx, const float *g, long ldg,
                                float *c, long ldc, int mr, const epi *e, int col)
{
    ROWS6(X_COL)
    ROWS6(SUMS2)
    for (long i = 0; i < m; i++) {
        const __m256 g0 = _mm256_loadu_ps(g + i * ldg), g1 = _mm256_loadu_ps(g + i * ldg + 8);
        ROWS6(TN_STEP2)
    }
    ROWS6(ADD2)
}

TARGET_AVX2 static void tn_4x24(long m, const float *x, long ldx, const float *g, long ldg,
                                float *c, long ldc, int mr, const epi *e, int col)
{
    ROWS4(X_COL)
    ROWS4(SUMS3)
    for (long i = 0; i < m; i++) {
        const __m256 g0 = _mm256_loadu_ps(g + i * ldg), g1 = _mm256_loadu_ps(g + i * ldg + 8),
                     g2 = _mm256_loadu_ps(g + i * ldg + 16);
        ROWS4(TN_STEP3)
    }
    ROWS4(ADD3)
}

/* The width of the next column block at n0 of N (a multiple of 8): 24 (4 rows), 16
 * (6 rows) or 8 (8 rows), every kernel with 12 (8) sums in registers. Widths that
 * divide N evenly are kept throughout. */
static int block_cols(int N, int n0)
{
    const int left = N - n0;
    if (N % 24 == 0)
        return 24;
    if (N % 16 == 0)
        return 16;
    return left >= 24 && left != 32 ? 24 : left >= 16 ? 16 : 8;
}

static int block_rows(int cols)
{
    return cols == 24 ? 4 : cols == 16 ? 6 : 8;
}

TARGET_AVX2 static inline void prefetch_rows(const float *p, long rows, int cols, long ld)
{
    for (long r = 0; r < rows; r++)
        for (int c = 0; c < cols; c += 16)
            _mm_prefetch((const char *)(p + r * ld + c), _MM_HINT_T0);
}

TARGET_AVX2 static void gemm_nn_avx2(long M, int N, int K, const float *A, long lda,
                                     const float *B, long ldb, float *C, long ldc, const epi *e,
                                     const float *mask)
{
    for (long m0 = 0; m0 < M; m0 += GEMM_MC) {
        const long mc = M - m0 < GEMM_MC ? M - m0 : GEMM_MC;
        for (int n0 = 0; n0 < N;) {
            const int nb = block_cols(N, n0), mb = block_rows(nb);
            for (long i = 0; i < mc; i += mb) {
                const int mr = (int)(mc - i < mb ? mc - i : mb);
                const float *a = A + (m0 + i) * lda;
                /* The first column block reads A from memory: ask for the next block
                 * of rows ahead. Each row is a stream of its own (the kernel reads its
                 * rows side by side), too short for the hardware prefetcher to lock
                 * on when rows are long: a 16384 x 144 A ran at 45 GFLOP/s from
                 * memory, 71 with this. */
                if (n0 == 0 && m0 + i + 2 * mb <= M)
                    prefetch_rows(a + mb * lda, mb, K, lda);
                float *c = C + (m0 + i) * ldc + n0;
                const float *mk = mask ? mask + (m0 + i) * ldc + n0 : NULL;
                if (nb == 24)
                    nn_4x24(K, a, lda, B + n0, ldb, c, ldc, mr, e, n0, mk);
                else if (nb == 16)
                    nn_6x16(K, a, lda, B + n0, ldb, c, ldc, mr, e, n0, mk);
                else
                    nn_8x8(K, a, lda, B + n0, ldb, c, ldc, mr, e, n0, mk);
            }
            n0 += nb;
        }
    }
}

TARGET_AVX2 static void gemm_tn_avx2(long M, int N, int K, const float *X, long ldx,
                                     const float *G, long ldg, float *C, long ldc)
{
    const epi e = { 1, NULL, 0, 0, NULL };
    /* Rows per pass: X's and G's rows of the block together about 256 KiB, so the
     * passes of every block of C over them read L2. */
    long mc = 65536L / (K + N);
    mc = mc < 64 ? 64 : mc;
    for (long m0 = 0; m0 < M; m0 += mc) {
        const long m = M - m0 < mc ? M - m0 : mc;
        const float *x = X + m0 * ldx, *g = G + m0 * ldg;
        for (int n0 = 0; n0 < N;) {
            const int nb = block_cols(N, n0), kb = block_rows(nb);
            for (int k0 = 0; k0 < K; k0 += kb) {
                const int mr = K - k0 < kb ? K - k0 : kb;
                float *c = C + (long)k0 * ldc + n0;
                if (nb == 24)
                    tn_4x24(m, x + k0, ldx, g + n0, ldg, c, ldc, mr, &e, n0);
                else if (nb == 16)
                    tn_6x16(m, x + k0, ldx, g + n0, ldg, c, ldc, mr, &e, n0);
                else
                    tn_8x8(m, x + k0, ldx, g + n0, ldg, c, ldc, mr, &e, n0);
            }
            n0 += nb;
        }
    }
}

#endif

void nn_gemm_nn(long M, int N, int K, const float *A, long lda, const float *B, long ldb,
                float *C, long ldc, const nn_gemm_out *o)
{
#if GEMM_X86
    /* The same bits either way; mask_sum's sums would come in another order. */
    if (!o->mask_sum && nn_gemm512_ok()) {
        nn_gemm512_nn(M, N, K, A, lda, B, ldb, C, ldc, o);
        return;
    }
    const epi e = { o->accum, o->bias, o->act, o->mask_act, o->mask_sum };
    gemm_nn_avx2(M, N, K, A, lda, B, ldb, C, ldc, &e, o->mask);
#else
    (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc;
    (void)o;
#endif
}

void nn_gemm_tn(long M, int N, int K, const float *X, long ldx, const float *G, long ldg,
                float *C, long ldc)
{
#if GEMM_X86
    if (nn_gemm512_ok()) {
        nn_gemm512_tn(M, N, K, X, ldx, G, ldg, C, ldc);
        return;
    }
    gemm_tn_avx2(M, N, K, X, ldx, G, ldg, C, ldc);
#else
    (void)M, (void)N, (void)K, (void)X, (void)ldx, (void)G, (void)ldg, (void)C, (void)ldc;
#endif
}
