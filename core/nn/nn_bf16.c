/* nn_bf16 — the bf16 products' driver and portable engine (nn_bf16.h says what they
 * compute). The driver packs B whole into panels of NN_BF16_NR columns, then for each
 * block of NN_BF16_MC rows packs A's rows and runs the engine's kernel over every
 * (row group, panel) pair, the sums landing in a small tile that the output pass
 * (finish) takes into C. A's block (MC x K bf16) and one panel (K x NR) stay in L2
 * while the kernel runs over them. */
#include <float.h>
#include <pthread.h>
#include <math.h>
#include <string.h>

#include "base/util.h"

#include "nn/nn_bf16.h"

static int forced = -1;

/* Linux's grant of the tile state, asked once (two system calls). */
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static int amx_granted;

static void ask_amx(void)
{
    amx_granted = cpu_amx_enable();
}

int nn_bf16_have(int engine)
{
    const cpu_features *f = cpu_usable();
    switch (engine) {
    case NN_BF16_PORTABLE:
        return 1;
    case NN_BF16_AVX512:
        return nn_bf16_x86_built() && f->avx512f && f->avx512bw && f->avx512vl &&
               f->avx512_bf16;
    case NN_BF16_AMX:
        if (!nn_bf16_amx_built() || !nn_bf16_have(NN_BF16_AVX512) || !f->amx_tile ||
            !f->amx_bf16)
            return 0;
        pthread_once(&amx_once, ask_amx);
        return amx_granted;
    default:
        return 0;
    }
}

void nn_bf16_force(int engine)
{
    forced = engine;
}

int nn_bf16_engine(void)
{
    if (forced >= 0)
        return forced;
    if (nn_bf16_have(NN_BF16_AMX))
        return NN_BF16_AMX;
    if (nn_bf16_have(NN_BF16_AVX512))
        return NN_BF16_AVX512;
    return NN_BF16_PORTABLE;
}

const char *nn_bf16_engine_name(void)
{
    static const char *const names[] = { "emulated", "avx512_bf16", "amx" };
    return names[nn_bf16_engine()];
}

int nn_bf16_native(void)
{
    return nn_bf16_engine() != NN_BF16_PORTABLE;
}

uint16_t nn_bf16_from_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0)
        return (uint16_t)((u >> 16) & 0x8000u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float nn_bf16_to_f32(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

long nn_bf16_pairs(long K, int engine)
{
    long kp = (K + 1) / 2;
    return engine == NN_BF16_AMX ? (kp + 15) / 16 * 16 : kp;
}

static long round_up(long v, long to)
{
    return (v + to - 1) / to * to;
}

size_t nn_bf16_b_bytes(long K, long N)
{
    return (size_t)nn_bf16_pairs(K, NN_BF16_AMX) * (size_t)round_up(N, NN_BF16_NR) * 4u;
}

size_t nn_bf16_a_bytes(long K)
{
    return (size_t)nn_bf16_pairs(K, NN_BF16_AMX) * NN_BF16_MC * 4u;
}

size_t nn_bf16_ws_bytes(long K, long N)
{
    return nn_bf16_b_bytes(K, N) + nn_bf16_a_bytes(K) + 128u;
}

/* ---- portable packing, kernel and output pass ---- */

int nn_bf16_a_layout(int engine, long ars, long aps)
{
    return engine != NN_BF16_AMX && ars == 1 && aps != 1 ? NN_BF16_PAIRS : NN_BF16_ROWS;
}

static uint32_t pair(const float *a, long at, long step, long p, long K)
{
    if (p >= K)
        return 0u;
    const uint32_t lo = nn_bf16_from_f32(a[at + p * step]);
    const uint32_t hi = p + 1 < K ? nn_bf16_from_f32(a[at + (p + 1) * step]) : 0u;
    return lo | hi << 16;
}

void nn_bf16_pack_a_c(int layout, long rows, long K, long kp, const float *a, long ars,
                      long aps, uint32_t *dst)
{
    if (layout == NN_BF16_ROWS) {
        const long rp = round_up(rows, 16);
        for (long i = 0; i < rp; i++)
            for (long q = 0; q < kp; q++)
                dst[i * kp + q] = i < rows ? pair(a, i * ars, aps, 2 * q, K) : 0u;
        return;
    }
    for (long g = 0; g < rows; g += NN_BF16_MR) {
        uint32_t *d = dst + g * kp;
        for (long q = 0; q < kp; q++)
            for (long r = 0; r < NN_BF16_MR; r++)
                d[q * NN_BF16_MR + r] = g + r < rows ? pair(a, (g + r) * ars, aps, 2 * q, K) : 0u;
    }
}

void nn_bf16_pack_b_c(long K, long N, long kp, const float *b, long brs, long bcs,
                      uint32_t *dst)
{
    for (long j0 = 0; j0 < N; j0 += NN_BF16_NR) {
        uint32_t *d = dst + j0 * kp;
        for (long q = 0; q < kp; q++)
            for (long j = 0; j < NN_BF16_NR; j++)
                d[q * NN_BF16_NR + j] = j0 + j < N ? pair(b, (j0 + j) * bcs, brs, 2 * q, K) : 0u;
    }
}

/* VDPBF16PS's sum: exact product, one rounding, subnormals to zero. */
static float dot_step(float s, float a, float b)
{
    s = fmaf(a, b, s);
    return fabsf(s) < FLT_MIN ? copysignf(0.0f, s) : s;
}

/* MR x NR sums of kp pairs: A's row r, pair q at a[r * ars + q * aqs]. */
static void kernel_c(long kp, const uint32_t *a, long ars, long aqs, const uint32_t *b,
                     float *t)
{
    for (int k = 0; k < NN_BF16_MR * NN_BF16_NR; k++)
        t[k] = 0.0f;
    for (long q = 0; q < kp; q++) {
        const uint32_t *bq = b + q * NN_BF16_NR;
        for (int r = 0; r < NN_BF16_MR; r++) {
            const uint32_t av = a[r * ars + q * aqs];
            const float a0 = nn_bf16_to_f32((uint16_t)av);
            const float a1 = nn_bf16_to_f32((uint16_t)(av >> 16));
            float *tr = t + r * NN_BF16_NR;
            for (int j = 0; j < NN_BF16_NR; j++) {
                const float b0 = nn_bf16_to_f32((uint16_t)bq[j]);
                const float b1 = nn_bf16_to_f32((uint16_t)(bq[j] >> 16));
                tr[j] = dot_step(dot_step(tr[j], a1, b1), a0, b0);
            }
        }
    }
}

void nn_bf16_finish_c(const float *t, long i0, long rows, long j0, long cols, float *c,
                      long ldc, const nn_gemm_out *o)
{
    for (long r = 0; r < rows; r++) {
        const float *tr = t + r * NN_BF16_NR;
        float *cr = c + (i0 + r) * ldc + j0;
        if (!o) {
            memcpy(cr, tr, (size_t)cols * sizeof *cr);
            continue;
        }
        const float *mk = o->mask ? o->mask + (i0 + r) * ldc + j0 : NULL;
        for (long j = 0; j < cols; j++) {
            float v = tr[j];
            if (o->accum)
                v = cr[j] + v;
            if (o->bias)
                v += o->bias[j0 + j];
            if (o->act)
                v = v > 0.0f ? v : 0.0f;
            if (o->act == NN_ACT_RELU6)
                v = v < 6.0f ? v : 6.0f;
            if (mk) {
                int pass = mk[j] > 0.0f;
                if (o->mask_act == NN_ACT_RELU6)
                    pass = pass && mk[j] < 6.0f;
                v *= pass ? 1.0f : 0.0f;
                if (o->mask_sum)
                    o->mask_sum[j0 + j] += v;
            }
            cr[j] = v;
        }
    }
}

void nn_bf16_block_c(const nn_bf16_block *k)
{
    float t[NN_BF16_MR * NN_BF16_NR];
    const long N = k->B->N, kp = k->kp;
    const int rows_layout = k->layout == NN_BF16_ROWS;
    for (long j0 = 0; j0 < N; j0 += NN_BF16_NR) {
        const long nc = N - j0 < NN_BF16_NR ? N - j0 : NN_BF16_NR;
        for (long g = 0; g < k->mc; g += NN_BF16_MR) {
            const long rows = k->mc - g < NN_BF16_MR ? k->mc - g : NN_BF16_MR;
            kernel_c(kp, k->a + g * kp, rows_layout ? kp : 1, rows_layout ? 1 : NN_BF16_MR,
                     k->B->p + j0 * kp, t);
            nn_bf16_finish_c(t, k->i0 + g, rows, j0, nc, k->c, k->ldc, k->o);
        }
    }
}

/* ---- the driver ---- */

nn_bf16_b nn_bf16_pack_b(long K, long N, const float *b, long brs, long bcs, void *dst)
{
    const int e = nn_bf16_engine();
    const long kp = nn_bf16_pairs(K, e);
    if (e != NN_BF16_PORTABLE)
        nn_bf16_pack_b_x86(K, N, kp, b, brs, bcs, dst);
    else
        nn_bf16_pack_b_c(K, N, kp, b, brs, bcs, dst);
    return (nn_bf16_b){ dst, K, N };
}

static void *align64(void *p)
{
    return (void *)(((uintptr_t)p + 63u) & ~(uintptr_t)63u);
}

void nn_bf16_mm(long M, const float *a, long ars, long aps, const nn_bf16_b *B, void *aws,
                float *c, long ldc, const nn_gemm_out *o)
{
    const int e = nn_bf16_engine();
    const long K = B->K, kp = nn_bf16_pairs(K, e);
    const int layout = nn_bf16_a_layout(e, ars, aps);
    uint32_t *ap = aws;
    for (long i0 = 0; i0 < M; i0 += NN_BF16_MC) {
        const long mc = M - i0 < NN_BF16_MC ? M - i0 : NN_BF16_MC;
        const nn_bf16_block k = { ap, layout, kp, mc, i0, B, c, ldc, o };
        if (e == NN_BF16_PORTABLE) {
            nn_bf16_pack_a_c(layout, mc, K, kp, a + i0 * ars, ars, aps, ap);
            nn_bf16_block_c(&k);
        } else if (e == NN_BF16_AVX512) {
            nn_bf16_pack_a_x86(layout, mc, K, a + i0 * ars, ars, aps, ap);
            nn_bf16_block_x86(&k);
        } else {
            nn_bf16_pack_a_c(layout, mc, K, kp, a + i0 * ars, ars, aps, ap);
            nn_bf16_block_amx(&k);
        }
    }
}

void nn_bf16_convert(const float *x, long n, uint16_t *out)
{
    if (nn_bf16_engine() != NN_BF16_PORTABLE) {
        nn_bf16_convert_x86(x, n, out);
        return;
    }
    for (long i = 0; i < n; i++)
        out[i] = nn_bf16_from_f32(x[i]);
}

long nn_bf16_row_pairs(long K)
{
    return nn_bf16_pairs(K, nn_bf16_engine());
}

void nn_bf16_mm_rows(long M, const uint32_t *a, const nn_bf16_b *B, float *c, long ldc,
                     const nn_gemm_out *o)
{
    const int e = nn_bf16_engine();
    const long kp = nn_bf16_pairs(B->K, e);
    for (long i0 = 0; i0 < M; i0 += NN_BF16_MC) {
        const long mc = M - i0 < NN_BF16_MC ? M - i0 : NN_BF16_MC;
        const nn_bf16_block k = { a + i0 * kp, NN_BF16_ROWS, kp, mc, i0, B, c, ldc, o };
        if (e == NN_BF16_PORTABLE)
            nn_bf16_block_c(&k);
        else if (e == NN_BF16_AVX512)
            nn_bf16_block_x86(&k);
        else
            nn_bf16_block_amx(&k);
    }
}

void nn_bf16_nn(long M, long N, long K, const float *a, long lda, const float *b, long ldb,
                float *c, long ldc, const nn_gemm_out *o, nn_bf16_ws ws)
{
    uint32_t *bp = align64(ws.p);
    const nn_bf16_b B = nn_bf16_pack_b(K, N, b, ldb, 1, bp);
    nn_bf16_mm(M, a, lda, 1, &B, align64((char *)bp + nn_bf16_b_bytes(K, N)), c, ldc, o);
}

void nn_bf16_tn(long M, long N, long K, const float *x, long ldx, const float *g, long ldg,
                float *c, long ldc, nn_bf16_ws ws)
{
    /* C(i = k, j) = sum over m of X(m, k) G(m, j): depth M. */
    uint32_t *bp = align64(ws.p);
    const nn_bf16_b B = nn_bf16_pack_b(M, N, g, ldg, 1, bp);
    const nn_gemm_out acc = { 1, NULL, 0, NULL, 0, NULL };
    nn_bf16_mm(K, x, 1, ldx, &B, align64((char *)bp + nn_bf16_b_bytes(M, N)), c, ldc, &acc);
}

void nn_bf16_nt(long M, long N, long K, const float *a, long lda, const float *b, long ldb,
                float *c, long ldc, const nn_gemm_out *o, nn_bf16_ws ws)
{
    uint32_t *bp = align64(ws.p);
    const nn_bf16_b B = nn_bf16_pack_b(K, N, b, 1, ldb, bp);
    nn_bf16_mm(M, a, lda, 1, &B, align64((char *)bp + nn_bf16_b_bytes(K, N)), c, ldc, o);
}

/* ---- the peak, for the compute estimate ---- */

double nn_bf16_peak_gflops(double seconds)
{
    const long n = 512;
    float *a = util_aligned_alloc((size_t)(n * n) * sizeof(float));
    float *b = util_aligned_alloc((size_t)(n * n) * sizeof(float));
    float *c = util_aligned_alloc((size_t)(n * n) * sizeof(float));
    const size_t bytes = nn_bf16_ws_bytes(n, n);
    void *ws = util_aligned_alloc(bytes);
    double best = 0;
    if (a && b && c && ws) {
        for (long i = 0; i < n * n; i++) {
            a[i] = (float)((i * 7) % 13) * 0.01f;
            b[i] = (float)((i * 5) % 11) * 0.01f;
        }
        const nn_bf16_area w = { ws, bytes };
        const double t_end = util_now() + seconds;
        do {
            const double t0 = util_now();
            nn_bf16_nn(n, n, n, a, n, b, n, c, n, NULL, w);
            const double g = 2.0 * (double)(n * n * n) / (util_now() - t0) * 1e-9;
            best = g > best ? g : best;
        } while (util_now() < t_end);
    }
    util_aligned_free(a);
    util_aligned_free(b);
    util_aligned_free(c);
    util_aligned_free(ws);
    return best;
}

