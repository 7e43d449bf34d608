/* nn_bf16_amx — the AMX-BF16 engine of nn_bf16.h. Each 16-row group of a packed block
 * of A (NN_BF16_ROWS: rows of kp pairs, kp a multiple of 16) is summed with a
 * panel of 32 columns (the panel layout every engine shares, read as two 16-column
 * tiles with a 128-byte stride) into two 16 x 16 float32 tiles, 16 pairs of depth per
 * TDPBF16PS, then stores them to the tile of sums the driver finishes.
 *
 * Tiles: 0 and 1 the sums, 2 A's 16 x 16 pairs, 3 and 4 the panel's halves. The
 * configuration (palette 1) is loaded at each block and the tiles released at its end,
 * so no other code in the thread sees tile state. Linux must have granted the tile
 * data state first (cpu_amx_enable, which nn_bf16_have(NN_BF16_AMX) asks for).
 *
 * Built on x86-64 with GCC or clang; runs only where nn_bf16_have says. */
#include <string.h>

#include "nn/nn_bf16.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    (!defined(__GNUC__) || defined(__clang__) || __GNUC__ >= 11)
#include <immintrin.h>

#define TARGET_AMX __attribute__((target("amx-tile,amx-bf16")))

int nn_bf16_amx_built(void)
{
    return 1;
}

/* LDTILECFG's 64-byte operand. */
typedef struct tile_cfg {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_cfg;

TARGET_AMX void nn_bf16_block_amx(const nn_bf16_block *k)
{
    tile_cfg cfg __attribute__((aligned(64)));
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int i = 0; i < 5; i++) {
        cfg.rows[i] = 16;
        cfg.colsb[i] = 64;
    }
    float t[16 * NN_BF16_NR] __attribute__((aligned(64)));
    const long N = k->B->N, kp = k->kp, astride = kp * 4;
    _tile_loadconfig(&cfg);
    for (long j0 = 0; j0 < N; j0 += NN_BF16_NR) {
        const long nc = N - j0 < NN_BF16_NR ? N - j0 : NN_BF16_NR;
        const uint32_t *b = k->B->p + j0 * kp;
        for (long g = 0; g < k->mc; g += 16) {
            const long rows = k->mc - g < 16 ? k->mc - g : 16;
            const uint32_t *a = k->a + g * kp;
            _tile_zero(0);
            _tile_zero(1);
            for (long q = 0; q < kp; q += 16) {
                _tile_loadd(2, a + q, astride);
                _tile_loadd(3, b + q * NN_BF16_NR, NN_BF16_NR * 4);
                _tile_loadd(4, b + q * NN_BF16_NR + 16, NN_BF16_NR * 4);
                _tile_dpbf16ps(0, 2, 3);
                _tile_dpbf16ps(1, 2, 4);
            }
            _tile_stored(0, t, NN_BF16_NR * 4);
            _tile_stored(1, t + 16, NN_BF16_NR * 4);
            nn_bf16_finish_x86(t, k->i0 + g, rows, j0, nc, k->c, k->ldc, k->o);
        }
    }
    _tile_release();
}

#else

int nn_bf16_amx_built(void)
{
    return 0;
}

void nn_bf16_block_amx(const nn_bf16_block *k)
{
    nn_bf16_block_c(k);
}

#endif
