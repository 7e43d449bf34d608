/* The bf16 products (core/nn/nn_bf16.c): the rounding to bfloat16 on known values;
 * the portable engine against a double-precision sum of the rounded operands; the
 * AVX512_BF16 engine against the portable one bit for bit (packs and sums, every
 * output pass, shapes with every ragged edge) and the AMX engine within float32
 * rounding of it. The SIMD engines are skipped, and counted, where the CPU lacks
 * them (valgrind's emulated CPU lacks both). */
#include "tests/t.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/rng.h"
#include "nn/nn_bf16.h"

static float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

TEST(bf16_rounds_to_nearest_even_and_flushes_subnormals)
{
    T_EQ_INT(nn_bf16_from_f32(1.0f), 0x3f80);
    T_EQ_INT(nn_bf16_from_f32(-2.5f), 0xc020);
    /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even one, 1. */
    T_EQ_INT(nn_bf16_from_f32(1.00390625f), 0x3f80);
    /* 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to the even, 1 + 2^-6. */
    T_EQ_INT(nn_bf16_from_f32(1.01171875f), 0x3f82);
    T_EQ_INT(nn_bf16_from_f32(bits_f(0x3f808001u)), 0x3f81);   /* just over half: up */
    T_EQ_INT(nn_bf16_from_f32(1e-39f), 0x0000);                 /* subnormal: +0 */
    T_EQ_INT(nn_bf16_from_f32(-1e-39f), 0x8000);                /* and -0 */
    T_EQ_INT(nn_bf16_from_f32(3.4e38f), 0x7f80);                /* rounds up to inf */
    T_EQ_INT(nn_bf16_from_f32(bits_f(0x7f800001u)), 0x7fc0);    /* signalling NaN: quiet */
    T_EQ_INT(nn_bf16_from_f32(bits_f(0xff800000u)), 0xff80);    /* -inf */
    T_CHECK(nn_bf16_to_f32(0x3f82) == 1.015625f);
}

typedef struct bcase {
    long M, N, K;
    int form;                /* 0 nn, 1 tn, 2 nt */
    int accum, bias, act, mask, mask_act, sum;
} bcase;

static void fill(rng *r, float *p, long n, float lo, float hi)
{
    for (long i = 0; i < n; i++)
        p[i] = rng_uniform(r, lo, hi);
}

/* The product of the case's form into c (which holds c0) with the engine forced. */
static void product(int engine, const bcase *g, const float *A, const float *B,
                    const float *bias, const float *mask, float *c, float *msum, void *ws)
{
    nn_bf16_force(engine);
    const long M = g->M, N = g->N, K = g->K;
    const nn_bf16_ws w = { ws, nn_bf16_ws_bytes(g->form == 1 ? M : K, N) };
    nn_gemm_out o = { g->accum, g->bias ? bias : NULL, g->act, g->mask ? mask : NULL,
                      g->mask_act, g->sum ? msum : NULL };
    if (g->form == 0)
        nn_bf16_nn(M, N, K, A, K, B, N, c, N, &o, w);
    else if (g->form == 1)
        nn_bf16_tn(M, N, K, A, K, B, N, c, N, w);
    else
        nn_bf16_nt(M, N, K, A, K, B, K, c, N, &o, w);
    nn_bf16_force(-1);
}

/* The case's sum at (i, j) in double from the bf16-rounded operands, and the sum of
 * the products' magnitudes (the bound's scale). */
static double ref_sum(const bcase *g, const float *A, const float *B, long i, long j,
                      double *mag)
{
    double s = 0.0, m = 0.0;
    const long depth = g->form == 1 ? g->M : g->K;
    for (long p = 0; p < depth; p++) {
        float a, b;
        if (g->form == 0)
            a = A[i * g->K + p], b = B[p * g->N + j];
        else if (g->form == 1)
            a = A[p * g->K + i], b = B[p * g->N + j];
        else
            a = A[i * g->K + p], b = B[j * g->K + p];
        const double t = (double)nn_bf16_to_f32(nn_bf16_from_f32(a)) *
                         nn_bf16_to_f32(nn_bf16_from_f32(b));
        s += t;
        m += fabs(t);
    }
    *mag = m;
    return s;
}

/* Runs the case on the portable engine and on `engine`; checks the portable one
 * against the double sum (a plain store only) and the two against each other: the
 * same bits when exact, else within float32 rounding of the sum's magnitude. */
static void check_case(const bcase *g, int engine, int exact, rng *r)
{
    const long M = g->M, N = g->N, K = g->K;
    const long rows = g->form == 1 ? K : M;          /* C's shape */
    const long na = M * K, nb = g->form == 1 ? M * N : K * N, nc = rows * N;
    float *A = malloc(sizeof(float) * (size_t)na), *B = malloc(sizeof(float) * (size_t)nb);
    float *c0 = malloc(sizeof(float) * (size_t)nc), *cp = malloc(sizeof(float) * (size_t)nc);
    float *ce = malloc(sizeof(float) * (size_t)nc), *mask = malloc(sizeof(float) * (size_t)nc);
    float *bias = malloc(sizeof(float) * (size_t)N);
    float *sp = calloc((size_t)N, sizeof(float)), *se = calloc((size_t)N, sizeof(float));
    const size_t wsb = nn_bf16_ws_bytes(g->form == 1 ? M : K, N);
    void *ws = malloc(wsb);
    T_REQUIRE(A && B && c0 && cp && ce && mask && bias && sp && se && ws);
    fill(r, A, na, -1.0f, 1.0f);
    fill(r, B, nb, -1.0f, 1.0f);
    fill(r, c0, nc, -2.0f, 2.0f);
    fill(r, mask, nc, -2.0f, 8.0f);
    fill(r, bias, N, -1.0f, 1.0f);
    memcpy(cp, c0, sizeof(float) * (size_t)nc);
    memcpy(ce, c0, sizeof(float) * (size_t)nc);
    product(NN_BF16_PORTABLE, g, A, B, bias, mask, cp, sp, ws);
    product(engine, g, A, B, bias, mask, ce, se, ws);
    long bad = 0, first = -1;
    const int plain = g->form != 1 && !g->accum && !g->bias && !g->act && !g->mask;
    for (long k = 0; k < nc; k++) {
        double mag;
        const double want = ref_sum(g, A, B, k / N, k % N, &mag);
        const double tol = 1e-6 * (1.0 + mag) * (1.0 + (double)(g->form == 1 ? M : K) / 64.0);
        const int ok_eng = exact ? memcmp(&cp[k], &ce[k], sizeof cp[k]) == 0
                                 : fabs((double)cp[k] - ce[k]) <= tol * 4.0;
        const int ok_ref = !plain || fabs((double)cp[k] - want) <= tol;
        if (!(ok_eng && ok_ref) && bad++ == 0)
            first = k;
    }
    for (long j = 0; j < N && g->sum && g->mask; j++)
        if (exact ? sp[j] != se[j] : fabs((double)sp[j] - se[j]) > 1e-3 * (1.0 + fabs(sp[j])))
            bad++;
    T_CHECKF(bad == 0, "form %d M %ld N %ld K %ld engine %d: %ld results differ, first at %ld: "
             "portable %.9g engine %.9g", g->form, M, N, K, engine, bad, first,
             first >= 0 ? cp[first] : 0.0, first >= 0 ? ce[first] : 0.0);
    free(A), free(B), free(c0), free(cp), free(ce), free(mask), free(bias), free(sp), free(se);
    free(ws);
}

static const bcase cases[] = {
    { 1, 1, 1, 0, 0, 0, 0, 0, 0, 0 },
    { 7, 5, 3, 0, 0, 0, 0, 0, 0, 0 },
    { 64, 32, 27, 0, 0, 1, 1, 0, 0, 0 },       /* the RGB stem's depth */
    { 100, 48, 64, 0, 1, 1, 2, 0, 0, 0 },
    { 97, 33, 129, 0, 0, 0, 0, 1, 1, 1 },
    { 200, 96, 288, 0, 0, 1, 0, 1, 2, 1 },
    { 300, 64, 9, 1, 0, 0, 0, 0, 0, 0 },      /* weight gradient: depth M */
    { 257, 40, 33, 1, 0, 0, 0, 0, 0, 0 },
    { 96, 24, 40, 1, 0, 0, 0, 0, 0, 0 },
    { 50, 64, 31, 2, 0, 0, 0, 0, 0, 0 },      /* input gradient */
    { 130, 27, 32, 2, 1, 0, 0, 1, 1, 1 },
    { 33, 100, 257, 2, 0, 0, 0, 1, 2, 1 },
};

static void run_cases(int engine, int exact)
{
    rng r;
    rng_seed(&r, 43);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i], engine, exact, &r);
}

TEST(bf16_portable_engine_is_the_sum_of_the_rounded_operands)
{
    run_cases(NN_BF16_PORTABLE, 1);
}

TEST(bf16_avx512_engine_gives_the_portable_bits)
{
    if (!nn_bf16_have(NN_BF16_AVX512)) {
        t_skip("no AVX512_BF16 on this CPU");
        return;
    }
    run_cases(NN_BF16_AVX512, 1);
}

TEST(bf16_amx_engine_agrees_with_the_portable_one)
{
    if (!nn_bf16_have(NN_BF16_AMX)) {
        t_skip("no AMX-BF16 on this CPU (or Linux did not grant the tile state)");
        return;
    }
    run_cases(NN_BF16_AMX, 0);
}

/* The vector packs lay out the same bytes as the portable ones, ragged edges too. */
TEST(bf16_vector_packs_give_the_portable_bytes)
{
    if (!nn_bf16_have(NN_BF16_AVX512)) {
        t_skip("no AVX512_BF16 on this CPU");
        return;
    }
    rng r;
    rng_seed(&r, 7);
    const long shapes[][2] = { { 1, 1 }, { 13, 37 }, { 96, 27 }, { 40, 70 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const long rows = shapes[s][0], K = shapes[s][1], kp = (K + 1) / 2;
        float *a = malloc(sizeof(float) * (size_t)(rows * K));
        const long big = rows > K ? rows : K;
        const size_t n = (size_t)(big + 32) * (size_t)(big + 1);
        uint32_t *p1 = calloc(n, 4), *p2 = calloc(n, 4);
        T_REQUIRE(a && p1 && p2);
        fill(&r, a, rows * K, -3.0f, 3.0f);
        a[0] = 1e-39f;                       /* a subnormal, flushed by both */
        /* Rows along memory (ars = K) and across (ars = 1), then B's panels. */
        nn_bf16_pack_a_c(NN_BF16_ROWS, rows, K, kp, a, K, 1, p1);
        nn_bf16_pack_a_x86(NN_BF16_ROWS, rows, K, a, K, 1, p2);
        T_CHECKF(memcmp(p1, p2, (size_t)((rows + 15) / 16 * 16 * kp) * 4) == 0, "A %ldx%ld", rows, K);
        const long kr = (rows + 1) / 2;
        nn_bf16_pack_a_c(NN_BF16_PAIRS, K, rows, kr, a, 1, K, p1);
        nn_bf16_pack_a_x86(NN_BF16_PAIRS, K, rows, a, 1, K, p2);
        T_CHECKF(memcmp(p1, p2, (size_t)((K + 7) / 8 * 8 * kr) * 4) == 0, "A^T %ldx%ld", rows, K);
        nn_bf16_pack_b_c(rows, K, kr, a, K, 1, p1);
        nn_bf16_pack_b_x86(rows, K, kr, a, K, 1, p2);
        T_CHECKF(memcmp(p1, p2, (size_t)((K + 31) / 32 * 32 * kr) * 4) == 0, "B %ldx%ld", rows, K);
        /* B read across memory: a weight matrix transposed (the input gradient's). */
        nn_bf16_pack_b_c(K, rows, kp, a, 1, K, p1);
        nn_bf16_pack_b_x86(K, rows, kp, a, 1, K, p2);
        T_CHECKF(memcmp(p1, p2, (size_t)((rows + 31) / 32 * 32 * kp) * 4) == 0, "B^T %ldx%ld",
                 rows, K);
        free(a), free(p1), free(p2);
    }
}

/* What VDPBF16PS does at the edges of the range, measured on an AVX512_BF16 CPU and
 * written into the portable kernel: the product is exact and added with one rounding
 * (a subnormal product still counts), a subnormal sum becomes zero. */
TEST(bf16_sums_flush_subnormal_results_but_keep_subnormal_products)
{
    const int engines[] = { NN_BF16_PORTABLE, NN_BF16_AVX512 };
    for (int e = 0; e < 2; e++) {
        if (!nn_bf16_have(engines[e]))
            continue;
        nn_bf16_force(engines[e]);
        /* C = A B with K = 2: row 0 is 1.2e-38 * 1 + 1e-20 * 1e-19, row 1 is
         * 1.5e-38 * 1 - 1.4e-38 * 1 (subnormal: flushed). */
        const float A[4] = { 1e-20f, 1.2e-38f, 1.5e-38f, -1.4e-38f };
        const float B[2] = { 1e-19f, 1.0f };
        float B2[2] = { 1.0f, 1.0f }, C[2] = { -1, -1 };
        unsigned char ws[4096] __attribute__((aligned(64)));
        const nn_bf16_ws w = { ws, sizeof ws };
        float Bm[2] = { B[0], B[1] };
        nn_bf16_nn(1, 1, 2, A, 2, Bm, 1, C, 1, NULL, w);
        nn_bf16_nn(1, 1, 2, A + 2, 2, B2, 1, C + 1, 1, NULL, w);
        const double want0 = (double)nn_bf16_to_f32(nn_bf16_from_f32(1.2e-38f)) +
                             (double)nn_bf16_to_f32(nn_bf16_from_f32(1e-20f)) *
                                 nn_bf16_to_f32(nn_bf16_from_f32(1e-19f));
        T_CHECKF(fabs(C[0] - want0) < 1e-44 && C[0] > 1.25e-38f, "engine %d: %g", engines[e],
                 (double)C[0]);
        T_CHECKF(C[1] == 0.0f, "engine %d: %g", engines[e], (double)C[1]);
        nn_bf16_force(-1);
    }
}
