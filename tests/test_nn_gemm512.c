/* The AVX-512 kernels of nn_gemm_nn (nn_gemm512.c) against the AVX2 ones (forced
 * with nn_gemm_force_avx2) and a double-precision reference: the same bits for every
 * output pass (accum, bias, relu / relu6, the activation mask) on shapes that take
 * every kernel and every masked tail; mask_sum (only nn_gemm512_nn itself takes it)
 * near the reference. Skipped where the CPU has no AVX-512F. */
#include "tests/t.h"

#include <stdlib.h>

#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_impl.h"

typedef struct gcase {
    long M;
    int N, K;
    int accum, bias, act, mask, mask_act;
} gcase;

static void fill(rng *r, float *p, long n, float lo, float hi)
{
    for (long i = 0; i < n; i++)
        p[i] = rng_uniform(r, lo, hi);
}

/* The reference of one result (as nn_gemm_out's order says), in double. */
static double ref_at(const gcase *g, const float *A, const float *B, const float *C0,
                     const float *bias, const float *mask, long i, int j)
{
    double s = 0.0;
    for (int k = 0; k < g->K; k++)
        s += (double)A[i * g->K + k] * B[(long)k * g->N + j];
    if (g->accum)
        s += C0[i * g->N + j];
    if (g->bias)
        s += bias[j];
    if (g->act)
        s = s > 0.0 ? s : 0.0;
    if (g->act == NN_ACT_RELU6 && s > 6.0)
        s = 6.0;
    if (g->mask) {
        const float y = mask[i * g->N + j];
        const int pass = y > 0.0f && (g->mask_act != NN_ACT_RELU6 || y < 6.0f);
        s = pass ? s : 0.0;
    }
    return s;
}

/* One case: AVX-512 and AVX2 the same bits, both near the reference; returns 0 on a
 * failure (checked by the caller). */
static int check_gcase(const gcase *g, rng *r)
{
    const long M = g->M, N = g->N, K = g->K;
    float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
    float *C0 = malloc(sizeof(float) * (size_t)(M * N)), *bias = malloc(sizeof(float) * (size_t)N);
    float *mask = malloc(sizeof(float) * (size_t)(M * N));
    float *c512 = malloc(sizeof(float) * (size_t)(M * N)), *c256 = malloc(sizeof(float) * (size_t)(M * N));
    float *s512 = calloc((size_t)N, sizeof(float));
    int ok = A && B && C0 && bias && mask && c512 && c256 && s512;
    if (ok) {
        fill(r, A, M * K, -1.0f, 1.0f);
        fill(r, B, K * N, -1.0f, 1.0f);
        fill(r, C0, M * N, -2.0f, 2.0f);
        fill(r, bias, N, -1.0f, 1.0f);
        fill(r, mask, M * N, -2.0f, 8.0f);
        for (long i = 0; i < M * N; i++)
            c512[i] = c256[i] = C0[i];
        nn_gemm_out o = { g->accum, g->bias ? bias : NULL, g->act, g->mask ? mask : NULL,
                          g->mask_act, NULL };
        nn_gemm_force_avx2(0);
        nn_gemm_nn(M, g->N, g->K, A, K, B, N, c512, N, &o);
        nn_gemm_force_avx2(1);
        nn_gemm_nn(M, g->N, g->K, A, K, B, N, c256, N, &o);
        nn_gemm_force_avx2(0);
        for (long i = 0; i < M * N && ok; i++) {
            const double want = ref_at(g, A, B, C0, bias, mask, i / N, (int)(i % N));
            ok = c512[i] == c256[i] && fabs(c512[i] - want) <= 1e-4 * (1.0 + fabs(want));
            if (!ok)
                t_fail(__FILE__, __LINE__, "M %ld N %ld K %ld at %ld: avx512 %.9g avx2 %.9g ref %.9g",
                       M, N, K, i, c512[i], c256[i], want);
        }
        /* mask_sum, nn_gemm512_nn's own (nn_gemm_nn keeps such calls on AVX2). */
        if (ok && g->mask) {
            for (long i = 0; i < M * N; i++)
                c512[i] = C0[i];
            o.mask_sum = s512;
            nn_gemm512_nn(M, g->N, g->K, A, K, B, N, c512, N, &o);
            for (int j = 0; j < g->N && ok; j++) {
                double want = 0.0;
                for (long i = 0; i < M; i++)
                    want += c512[i * N + j];
                ok = fabs(s512[j] - want) <= 1e-4 * (1.0 + fabs(want));
                if (!ok)
                    t_fail(__FILE__, __LINE__, "mask_sum[%d] %.9g, want %.9g", j, s512[j], want);
            }
        }
    }
    free(A);
    free(B);
    free(C0);
    free(bias);
    free(mask);
    free(c512);
    free(c256);
    free(s512);
    return ok;
}

TEST(nn_gemm512_same_bits_as_avx2_every_output_pass_and_tail)
{
    if (!nn_gemm512_ok()) {
        t_skip("no AVX-512F on this CPU (or PT_GEMM_AVX2 set)");
        return;
    }
    rng r;
    rng_seed(&r, 512);
    /* N: 8, 16, 24, 32 tails, 40 (32 + 8), 96, 264 (8 blocks + 8); M past a row
     * block (264) with ragged row edges; K from 1 up to past the packing depth. */
    const gcase cases[] = {
        { 1, 8, 1, 0, 0, 0, 0, 0 },
        { 37, 16, 27, 0, 1, NN_ACT_RELU, 0, 0 },
        { 25, 24, 5, 1, 1, NN_ACT_RELU6, 0, 0 },
        { 300, 32, 33, 0, 0, NN_ACT_RELU6, 0, 0 },
        { 13, 40, 16, 1, 0, 0, 1, NN_ACT_RELU },
        { 530, 96, 24, 0, 1, NN_ACT_RELU, 1, NN_ACT_RELU6 },
        { 71, 264, 72, 1, 1, 0, 1, NN_ACT_RELU6 },
        { 49, 8, 144, 0, 0, 0, 1, NN_ACT_RELU },
        /* K past G512_PACK_K: B's column blocks packed (32 + 8 wide, then 16). */
        { 61, 56, 1030, 1, 1, NN_ACT_RELU6, 1, NN_ACT_RELU },
        { 50, 16, 1100, 0, 1, NN_ACT_RELU, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        T_CHECKF(check_gcase(&cases[i], &r), "case %zu", i);
}

/* nn_gemm_tn (the weight gradient): the AVX-512 kernels give the AVX2 ones' bits (the
 * same passes of rows, the same chain in each), both near a double reference. */
TEST(nn_gemm512_tn_same_bits_as_avx2)
{
    if (!nn_gemm512_ok()) {
        t_skip("no AVX-512F on this CPU (or PT_GEMM_AVX2 set)");
        return;
    }
    rng r;
    rng_seed(&r, 513);
    /* M N K: tails of 8..16 columns, 64-wide blocks with a masked end, several passes
     * of rows (M past 65536 / (K + N)), K not a multiple of any block's rows. */
    static const int cases[][3] = {
        { 300, 40, 27 }, { 5000, 96, 16 }, { 100, 264, 13 }, { 70, 8, 30 }, { 200, 56, 7 },
        { 1, 16, 1 },
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const long M = cases[t][0];
        const int N = cases[t][1], K = cases[t][2];
        float *X = malloc(sizeof(float) * (size_t)(M * K)), *G = malloc(sizeof(float) * (size_t)(M * N));
        float *c0 = malloc(sizeof(float) * (size_t)K * N), *c5 = malloc(sizeof(float) * (size_t)K * N);
        float *c2 = malloc(sizeof(float) * (size_t)K * N);
        T_REQUIRE(X && G && c0 && c5 && c2);
        fill(&r, X, M * K, -1.0f, 1.0f);
        fill(&r, G, M * N, -1.0f, 1.0f);
        fill(&r, c0, (long)K * N, -1.0f, 1.0f);
        for (long i = 0; i < (long)K * N; i++)
            c5[i] = c2[i] = c0[i];
        nn_gemm_tn(M, N, K, X, K, G, N, c5, N);
        nn_gemm_force_avx2(1);
        nn_gemm_tn(M, N, K, X, K, G, N, c2, N);
        nn_gemm_force_avx2(0);
        int same = 1, near = 1;
        for (int k = 0; k < K; k++)
            for (int j = 0; j < N; j++) {
                double want = c0[(long)k * N + j];
                for (long i = 0; i < M; i++)
                    want += (double)X[i * K + k] * G[i * N + j];
                const float got = c5[(long)k * N + j];
                same &= got == c2[(long)k * N + j];
                near &= fabs(got - want) <= 1e-4 * (1.0 + fabs(want)) * (1.0 + M / 1000.0);
            }
        T_CHECKF(same, "M %ld N %d K %d: AVX-512 and AVX2 differ", M, N, K);
        T_CHECKF(near, "M %ld N %d K %d: far from the reference", M, N, K);
        free(X);
        free(G);
        free(c0);
        free(c5);
        free(c2);
    }
}
