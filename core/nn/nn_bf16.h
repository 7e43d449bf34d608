/* nn_bf16 — matrix products on bfloat16 operands with float32 sums, for the mixed
 * precision of --precision bf16 (internal to core/nn).
 *
 * A product C(i, j) = sum over p of A(i, p) B(p, j) takes A and B as float32, rounds
 * each operand to bfloat16 (round to nearest even, as VCVTNEPS2BF16: a subnormal
 * becomes a zero of its sign, a NaN stays a quiet NaN) and adds the products up in
 * float32 the way VDPBF16PS does: p in pairs (2q, 2q + 1), q = 0, 1, ..., each pair
 * as s = fma(A(i,2q+1), B(2q+1,j), s) then s = fma(A(i,2q), B(2q,j), s), every sum
 * rounded to nearest even and a subnormal sum flushed to zero (an odd depth gets a
 * zero last pair). The sum then goes through nn_gemm_out's output pass (accum, bias,
 * activation, mask, mask_sum) as the float32 kernels' does.
 *
 * Three engines, one chosen for the process (nn_bf16_engine):
 *   - portable C (nn_bf16.c): the definition above, written out; every machine.
 *   - AVX512_BF16 (nn_bf16_x86.c): VDPBF16PS, 8 rows x 32 columns a kernel; the same
 *     bits as the portable engine (tests/test_bf16.c checks it where the CPU has it).
 *   - AMX-BF16 (nn_bf16_amx.c): TDPBF16PS on 16 x 16 tiles. The tile unit sums a
 *     tile's 32 products in an order of its own, so it agrees with the portable
 *     engine to float32 rounding, not bit for bit; it is deterministic all the same
 *     (the same inputs give the same bits).
 * Each engine's sums run over p in one fixed order for any M and any thread count,
 * so a run is as deterministic in bf16 as in float32.
 *
 * Memory: the caller passes a workspace (nn_bf16_ws) of the bytes nn_bf16_*_bytes
 * say; nothing is allocated here and nothing is to be freed.
 */
#ifndef PT_NN_BF16_H
#define PT_NN_BF16_H

#include <stddef.h>
#include <stdint.h>

#include "nn/nn_impl.h"

enum nn_bf16_engine { NN_BF16_PORTABLE, NN_BF16_AVX512, NN_BF16_AMX };

/* The engine the products run on: the fastest the CPU has (cpu_usable(); AMX only
 * when Linux granted the tile state), or the portable one under cpu_force_portable
 * or nn_bf16_force. */
int nn_bf16_engine(void);
/* Test hook: -1 back to the CPU's choice, else that engine (which must be there). */
void nn_bf16_force(int engine);
/* Whether the engine exists on this CPU. */
int nn_bf16_have(int engine);

/* float32 -> bfloat16 as described above, and back (exact). */
uint16_t nn_bf16_from_f32(float f);
float nn_bf16_to_f32(uint16_t h);

/* A workspace: bytes at p (nn_impl.h's nn_bf16_area). */
typedef nn_bf16_area nn_bf16_ws;

/* Whether a product depth deep (the summed dimension) and width wide is worth bf16:
 * at least NN_BF16_MIN_DEPTH and NN_BF16_MIN_WIDTH. Below them the kernel's padding of
 * pairs and panels and the packing cost more than the halved multiply-adds gain
 * (bench_gemm: MobileNetV2's 16 -> 96 at 66 GFLOP/s in bf16 against 105 in float32;
 * bench_finetune layers: the RGB stem, K = 27, 1.66 ms in bf16 against 1.37): the
 * layers run those in float32. */
#define NN_BF16_MIN_DEPTH 32
#define NN_BF16_MIN_WIDTH 24
static inline int nn_bf16_pays(long depth, long width)
{
    return depth >= NN_BF16_MIN_DEPTH && width >= NN_BF16_MIN_WIDTH;
}

/* Bytes a product of depth K (the summed dimension) into N columns needs for B
 * packed, and for A's row blocks. */
size_t nn_bf16_b_bytes(long K, long N);
size_t nn_bf16_a_bytes(long K);
/* Workspace for one product of those sizes (B packed + A's blocks + alignment). */
size_t nn_bf16_ws_bytes(long K, long N);

/* B packed, for products that reuse it (a layer's weights over its row chunks). */
typedef struct nn_bf16_b {
    const uint32_t *p;
    long K, N;
} nn_bf16_b;

/* Packs B(p, j) = b[p * brs + j * bcs], p < K, j < N, into dst (nn_bf16_b_bytes). */
nn_bf16_b nn_bf16_pack_b(long K, long N, const float *b, long brs, long bcs, void *dst);

/* C (M x N, row stride ldc) = A B through o (NULL: plain store), A(i, p) =
 * a[i * ars + p * aps], B packed; aws: nn_bf16_a_bytes(B->K) bytes. */
void nn_bf16_mm(long M, const float *a, long ars, long aps, const nn_bf16_b *B, void *aws,
                float *c, long ldc, const nn_gemm_out *o);

/* n floats to bfloat16 (nn_bf16_from_f32's bits), vectorized where the engine is. */
void nn_bf16_convert(const float *x, long n, uint16_t *out);
/* Pairs per row of A as the engine reads rows of depth K (nn_bf16_pairs). */
long nn_bf16_row_pairs(long K);
/* nn_bf16_mm with A already packed by the caller as NN_BF16_ROWS: M rows of
 * nn_bf16_row_pairs(B->K) dwords, zero past K, rows padded with zeros to a multiple
 * of 16 (a conv's im2col writes its rows so, skipping a float32 pass). */
void nn_bf16_mm_rows(long M, const uint32_t *a, const nn_bf16_b *B, float *c, long ldc,
                     const nn_gemm_out *o);

/* The three products the layers take, packing B in ws (nn_bf16_ws_bytes):
 * C[M x N] = A[M x K] B[K x N] through o; C[K x N] += X[M x K]^T G[M x N];
 * C[M x N] = A[M x K] B[N x K]^T through o. */
void nn_bf16_nn(long M, long N, long K, const float *a, long lda, const float *b, long ldb,
                float *c, long ldc, const nn_gemm_out *o, nn_bf16_ws ws);
void nn_bf16_tn(long M, long N, long K, const float *x, long ldx, const float *g, long ldg,
                float *c, long ldc, nn_bf16_ws ws);
void nn_bf16_nt(long M, long N, long K, const float *a, long lda, const float *b, long ldb,
                float *c, long ldc, const nn_gemm_out *o, nn_bf16_ws ws);

/* ---- between the engines' files ---- */

/* Rows of A per kernel (the portable and AVX-512 engines; AMX takes 16), rows per
 * packed block (a multiple of both), columns per B panel. */
#define NN_BF16_MR 8
#define NN_BF16_MC 96
#define NN_BF16_NR 32

/* Pairs of the depth K as packed for the engine (AMX pads to whole tiles). */
long nn_bf16_pairs(long K, int engine);

/* How a block of A's rows is packed: NN_BF16_ROWS, row after row of kp dwords (bf16
 * of p = 2q low, 2q + 1 high), rows padded with zeros to 16; NN_BF16_PAIRS, groups of
 * MR rows, each [pair q][row r] (the AVX-512 engine's, for A read across memory). */
enum { NN_BF16_ROWS, NN_BF16_PAIRS };

/* The layout the engine packs A(i, p) = a[i * ars + p * aps] in. */
int nn_bf16_a_layout(int engine, long ars, long aps);

void nn_bf16_pack_a_c(int layout, long rows, long K, long kp, const float *a, long ars,
                      long aps, uint32_t *dst);
void nn_bf16_pack_b_c(long K, long N, long kp, const float *b, long brs, long bcs,
                      uint32_t *dst);

/* A packed block of mc rows (C's rows i0..) times B into C through o: every panel,
 * every group of rows, the output pass on the sums. */
typedef struct nn_bf16_block {
    const uint32_t *a;
    int layout;
    long kp, mc, i0;
    const nn_bf16_b *B;
    float *c;
    long ldc;
    const nn_gemm_out *o;
} nn_bf16_block;
void nn_bf16_block_c(const nn_bf16_block *k);

/* nn_bf16_x86.c: the same with AVX512_BF16 (nn_bf16_x86_built: 0 when not built). */
int nn_bf16_x86_built(void);
void nn_bf16_pack_a_x86(int layout, long rows, long K, const float *a, long ars, long aps,
                        uint32_t *dst);
void nn_bf16_pack_b_x86(long K, long N, long kp, const float *b, long brs, long bcs,
                        uint32_t *dst);
void nn_bf16_block_x86(const nn_bf16_block *k);
void nn_bf16_convert_x86(const float *x, long n, uint16_t *out);

/* nn_bf16_amx.c: 0 when not built; the block's sums by 16 x 32 (two tiles), A in
 * NN_BF16_ROWS with kp a multiple of 16. */
int nn_bf16_amx_built(void);
void nn_bf16_block_amx(const nn_bf16_block *k);

/* The output pass on an r x cols tile of sums t (row stride NR) into C at row i,
 * column j0: nn_gemm_out's steps in nn_gemm.c's order. The AVX-512 form is in
 * nn_bf16_x86.c; AMX uses it too. */
void nn_bf16_finish_c(const float *t, long i, long rows, long j0, long cols, float *c,
                      long ldc, const nn_gemm_out *o);
void nn_bf16_finish_x86(const float *t, long i, long rows, long j0, long cols, float *c,
                        long ldc, const nn_gemm_out *o);

#endif
