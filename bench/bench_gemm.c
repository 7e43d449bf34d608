/* bench_gemm — the forward's matrix products alone, GFLOP/s: nn_gemm_nn's AVX-512
 * kernels (nn_gemm512.c), its AVX2 ones (nn_gemm.c) and OpenBLAS's sgemm (with the
 * separate bias + ReLU pass the conv then runs), on the shapes of `small` (auto widths
 * at 128 px, batch 32, in the im2col chunks nn_conv uses) and of MobileNetV2's 1x1s,
 * including products past NN_GEMM_MAX_KN (the forward takes those to AVX-512 where
 * it has it: nn_gemm_fwd_ok).
 * Operands in cache as the conv has them (one im2col chunk, reused). Best of
 * `reps` runs (the machine is shared). Prints, never asserts.
 *
 *   bench_gemm [reps]
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_bf16.h"
#include "nn/nn_impl.h"

static double now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

typedef struct shape {
    const char *name;
    long M; /* rows per call (an im2col chunk) */
    int N, K;
    int calls; /* calls per timed run: the whole layer at batch 32 */
} shape;

enum { WAY_512, WAY_AVX2, WAY_BLAS, WAY_BF16, N_WAYS };

static nn_bf16_ws bws;

static void run_way(int way, const shape *s, const float *A, const float *B, const float *bias,
                    float *C)
{
    const nn_gemm_out o = { 0, bias, NN_ACT_RELU, NULL, 0, NULL };
    for (int c = 0; c < s->calls; c++) {
        if (way == WAY_BF16) {
            nn_bf16_nn(s->M, s->N, s->K, A, s->K, B, s->N, C, s->N, &o, bws);
            continue;
        }
        if (way == WAY_512) {
            nn_gemm512_nn(s->M, s->N, s->K, A, s->K, B, s->N, C, s->N, &o);
            continue;
        }
        if (way == WAY_AVX2) {
            nn_gemm_force_avx2(1);
            nn_gemm_nn(s->M, s->N, s->K, A, s->K, B, s->N, C, s->N, &o);
            nn_gemm_force_avx2(0);
            continue;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s->M, s->N, s->K, 1.0f, A,
                    s->K, B, s->N, 0.0f, C, s->N);
        for (long i = 0; i < s->M; i++)
            for (int j = 0; j < s->N; j++) {
                const float v = C[i * s->N + j] + bias[j];
                C[i * s->N + j] = v > 0.0f ? v : 0.0f;
            }
    }
}

/* ---- what the instructions give: one core's peak of a register-only loop ----
 * 12 independent sums (enough to cover the multiply-add latency), no loads: fp32
 * VFMADD231PS (32 flops a zmm), bf16 VDPBF16PS (64) and int8 VPDPBUSD (128 ops: 64
 * multiply-adds), each where the CPU has it. What an int8 (VNNI) kernel could at
 * most gain over the fp32 kernels, before memory has its say (issue 44). */

#define PEAK_ITERS 20000000L

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SUMS12(T, Z) T a0 = Z, a1 = Z, a2 = Z, a3 = Z, a4 = Z, a5 = Z, a6 = Z, a7 = Z, a8 = Z, \
                       a9 = Z, a10 = Z, a11 = Z
#define DO12(OP)                                                                          \
    a0 = OP(a0); a1 = OP(a1); a2 = OP(a2); a3 = OP(a3); a4 = OP(a4); a5 = OP(a5);        \
    a6 = OP(a6); a7 = OP(a7); a8 = OP(a8); a9 = OP(a9); a10 = OP(a10); a11 = OP(a11)
#define FOLD12(ADD) ADD(ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7))), \
                        ADD(ADD(a8, a9), ADD(a10, a11)))

__attribute__((target("avx512f"))) static double peak_fp32(float *sink)
{
    const __m512 x = _mm512_set1_ps(1.0f), y = _mm512_set1_ps(0.999f);
    SUMS12(__m512, _mm512_setzero_ps());
#define F32(a) _mm512_fmadd_ps(x, y, a)
    const double t0 = now();
    for (long i = 0; i < PEAK_ITERS; i++) {
        DO12(F32);
    }
    const double t = now() - t0;
    *sink = _mm512_reduce_add_ps(FOLD12(_mm512_add_ps));
    return 12.0 * 32 * PEAK_ITERS / t * 1e-9;
}

__attribute__((target("avx512f,avx512bf16"))) static double peak_bf16(float *sink)
{
    const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = x;
    SUMS12(__m512, _mm512_setzero_ps());
#define B16(a) _mm512_dpbf16_ps(a, x, y)
    const double t0 = now();
    for (long i = 0; i < PEAK_ITERS; i++) {
        DO12(B16);
    }
    const double t = now() - t0;
    *sink = _mm512_reduce_add_ps(FOLD12(_mm512_add_ps));
    return 12.0 * 64 * PEAK_ITERS / t * 1e-9;
}

__attribute__((target("avx512f,avx512vnni"))) static double peak_int8(float *sink)
{
    const __m512i x = _mm512_set1_epi8(1), y = _mm512_set1_epi8(1);
    SUMS12(__m512i, _mm512_setzero_si512());
#define I8(a) _mm512_dpbusd_epi32(a, x, y)
    const double t0 = now();
    for (long i = 0; i < PEAK_ITERS; i++) {
        DO12(I8);
    }
    const double t = now() - t0;
    *sink = (float)_mm512_reduce_add_epi32(FOLD12(_mm512_add_epi32));
    return 12.0 * 128 * PEAK_ITERS / t * 1e-9;
}

/* The loops' sums land here, so that the compiler keeps the loops. */
static volatile float peak_sink;

static void instruction_peaks(void)
{
    const cpu_features *f = cpu_usable();
    float sink = 0;
    if (!f->avx512f)
        return;
    const double f32 = peak_fp32(&sink);
    peak_sink = sink;
    printf("one core, register-only loops: fp32 FMA %.0f GFLOP/s", f32);
    if (f->avx512_bf16) {
        const double b16 = peak_bf16(&sink);
        peak_sink = sink;
        printf(", bf16 VDPBF16PS %.0f (%.1fx)", b16, b16 / f32);
    }
    if (f->avx512_vnni) {
        const double i8 = peak_int8(&sink);
        peak_sink = sink;
        printf(", int8 VPDPBUSD %.0f GOP/s (%.1fx)", i8, i8 / f32);
    }
    printf("\n");
}
#else
static void instruction_peaks(void)
{
}
#endif

int main(int argc, char **argv)
{
    const int reps = argc > 1 ? atoi(argv[1]) : 5;
    /* small auto @128, batch 32: im2col chunks of max(2^18 / K, 256) rows. */
    static const shape shapes[] = {
        { "small 3x3 3->32 @64", 8192, 32, 27, 16 },
        { "small 3x3 32->64 @32", 910, 64, 288, 36 },
        { "small 3x3 64->128 @16", 455, 128, 576, 18 },
        { "small 3x3 128->256 @8", 256, 256, 1152, 8 },
        { "small 3x3 256->256 @4 (KN>max)", 256, 256, 2304, 2 },
        { "mnv2 1x1 16->96", 16384, 96, 16, 2 },
        { "mnv2 1x1 144->24", 16384, 24, 144, 2 },
        { "mnv2 1x1 320->1280", 512, 1280, 320, 8 },
        { "mnv2 1x1 960->160 (KN<max)", 512, 160, 960, 8 },
        { "1x1 1280->1024 (KN>max)", 512, 1024, 1280, 2 },
    };
    if (!nn_gemm512_ok()) {
        printf("bench_gemm: no AVX-512F here (or PT_GEMM_AVX2 set)\n");
        return 0;
    }
    instruction_peaks();
    rng r;
    rng_seed(&r, 1);
    printf("forward products, GFLOP/s (best of %d), bias + relu included\n", reps);
    const char *eng[] = { "portable", "avx512_bf16", "amx" };
    printf("bf16: the %s engine (bf16 operands, fp32 sums)\n", eng[nn_bf16_engine()]);
    printf("%-34s %6s %5s %5s  %8s %8s %8s %8s\n", "shape", "M", "N", "K", "avx512", "avx2",
           "openblas", "bf16");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape *s = &shapes[i];
        float *A = malloc(sizeof(float) * (size_t)(s->M * s->K));
        float *B = malloc(sizeof(float) * (size_t)s->K * (size_t)s->N);
        float *C = malloc(sizeof(float) * (size_t)(s->M * s->N));
        float *bias = malloc(sizeof(float) * (size_t)s->N);
        bws.bytes = nn_bf16_ws_bytes(s->K, s->N);
        bws.p = malloc(bws.bytes);
        if (!A || !B || !C || !bias || !bws.p)
            return 1;
        for (long j = 0; j < s->M * s->K; j++)
            A[j] = rng_uniform(&r, -1.0f, 1.0f);
        for (long j = 0; j < (long)s->K * s->N; j++)
            B[j] = rng_uniform(&r, -1.0f, 1.0f);
        for (int j = 0; j < s->N; j++)
            bias[j] = rng_uniform(&r, -1.0f, 1.0f);
        double best[N_WAYS] = { 1e30, 1e30, 1e30, 1e30 };
        for (int rep = 0; rep < reps; rep++)
            for (int way = 0; way < N_WAYS; way++) { /* alternating: the noise hits all alike */
                const double t0 = now();
                run_way(way, s, A, B, bias, C);
                const double t = now() - t0;
                best[way] = t < best[way] ? t : best[way];
            }
        const double flop = 2.0 * (double)s->M * s->N * s->K * s->calls;
        printf("%-34s %6ld %5d %5d  %8.1f %8.1f %8.1f %8.1f\n", s->name, s->M, s->N, s->K,
               flop / best[0] * 1e-9, flop / best[1] * 1e-9, flop / best[2] * 1e-9,
               flop / best[3] * 1e-9);
        free(bws.p);
        free(A);
        free(B);
        free(C);
        free(bias);
    }
    return 0;
}
