/* nn_models — the built-in models, described through the nn builder (nn.h).
 *
 * Each builder returns a finalized model (parameters initialised with seed 0; call
 * nn_model_init_params() for another seed) that the caller frees with
 * nn_model_free(), or NULL with e filled.
 *
 * Input: float RGB in [0, 1], NHWC. The models normalise internally: their first node
 * is a fixed affine x * 2 - 1 (to [-1, 1], what Keras' MobileNetV2 preprocessing
 * does), so the trainer feeds raw [0, 1] pixels.
 *
 * Head (both models): global average pooling -> dropout(rate) -> dense(n_classes),
 * whose output is the logits. nn_model_freeze_backbone() leaves only that dense
 * layer trainable.
 */
#ifndef PT_NN_MODELS_H
#define PT_NN_MODELS_H

#include "nn/nn.h"

/* "small": four VGG-style blocks of 3x3 conv (no bias) -> BN -> ReLU, then a 2x2
 * max-pool, with 32, 64, 128 and 256 channels; convs_per_block is 1 or 2. Inputs
 * need h, w >= 16. nn_build_small uses one conv per block: 120 MFLOP forward per image
 * at 64x64, 481 at 128x128 (354 / 1416 with backward). Two per block cost 3.5x that
 * (the first block's second conv runs at full resolution) and, trained side by side
 * on the 5-class flower photos at 64x64 (12 epochs, same seed and schedule), reached
 * the same validation accuracy (0.705 vs 0.708), so they are not the default. */
#define NN_SMALL_CONVS_PER_BLOCK 1
#define NN_SMALL_MIN_SIDE 16 /* the four blocks' 2x2 pools need 16 px */
nn_model *nn_build_small(int h, int w, int n_classes, float dropout, pt_err *e);
nn_model *nn_build_small_ex(int h, int w, int n_classes, float dropout, int convs_per_block,
                            pt_err *e);
/* The same family with n_blocks blocks of widths[b] channels each (the inputs then need
 * h, w >= 2^n_blocks): --widths on the command line, so that nets people try from
 * scratch (PyTorch's five-block 32-64-128-256-256, say) can be written down.
 * strided[b] (strided may be NULL: every block NN_BLOCK_POOL) says how block b halves
 * the map: NN_BLOCK_POOL, its convolutions then a 2x2 max-pool; NN_BLOCK_STRIDED, a
 * stride-2 first convolution ("same" padding: the extra row and column at the bottom
 * and right) and no max-pool; NN_BLOCK_AVGPOOL, no convolution at all, only a 2x2
 * average pool (its widths[b] is not read; the channels pass through).
 * convs_per_block 1 or 2 gives that many 3x3 conv -> BN -> ReLU a block;
 * NN_SMALL_RESIDUAL gives each block ResNet's basic block (He et al. 2016) instead:
 * 3x3 conv -> BN -> ReLU -> 3x3 conv -> BN, plus the block's input (through a 1x1
 * conv -> BN where the channels or the stride change), then ReLU (--residual yes). */
enum { NN_BLOCK_POOL = 0, NN_BLOCK_STRIDED = 1, NN_BLOCK_AVGPOOL = 2 };
#define NN_SMALL_RESIDUAL 3
#define NN_SMALL_MAX_BLOCKS 8
#define NN_SMALL_MAX_WIDTH 4096
nn_model *nn_build_small_widths(int h, int w, int n_classes, float dropout, const int *widths,
                                const int *strided, int n_blocks, int convs_per_block,
                                pt_err *e);
/* nn_widths.c: parse a --widths list ("a,32,64s,128": 1 to NN_SMALL_MAX_BLOCKS
 * comma-separated blocks, each a whole number from 1 to NN_SMALL_MAX_WIDTH with an
 * optional s, or the letter a) into out, and into strided (may be NULL) each block's
 * kind: NN_BLOCK_STRIDED for a count written with s, NN_BLOCK_AVGPOOL for a (out 0),
 * NN_BLOCK_POOL otherwise. "auto" is 32, 64, 128, 256, then more 256 blocks while the
 * map they leave on an input of side pixels is at least 2 a side (so the last block
 * sees the whole image), after a 2x2 average pool wherever the blocks still fit
 * after it (from 2 * NN_SMALL_MIN_SIDE = 32 px): a,32,64,128,256 at 32 to 127 px
 * (the pool counts as a block), a,32,64,128,256,256 at 128 to 255, one more 256 block
 * each time the side doubles; below 32 px no pool. The count, or -1 with e filled. */
int nn_parse_widths(const char *s, int side, int out[NN_SMALL_MAX_BLOCKS],
                    int strided[NN_SMALL_MAX_BLOCKS], pt_err *e);
/* Whether s is a --widths list nn_parse_widths takes: PT_OK, or PT_EUSAGE with its
 * message. The options' table runs it on a --widths value (registered with
 * cfg_set_check when the program starts). */
int nn_check_widths(const char *s, pt_err *e);

/* MobileNetV2 (Sandler et al. 2018, as in keras.applications) with width multiplier
 * alpha (e.g. 0.35, 0.5, 0.75, 1.0, 1.3, 1.4): channel counts rounded to multiples of
 * 8, stem 3x3/2 conv, 17 inverted residual blocks (expansion 1 in the first, 6 after),
 * depthwise 3x3, ReLU6, linear bottlenecks, residual add where stride is 1 and the
 * channels match, final 1x1 conv to 1280 (times alpha when alpha > 1). Every conv is
 * bias-free and followed by BN; "same" padding throughout. */
nn_model *nn_build_mobilenetv2(int h, int w, int n_classes, float alpha, float dropout,
                               pt_err *e);

/* Pieces the builders use, for other backbones: the [0, 1] -> [-1, 1] affine on the
 * input node, and the head on top of a feature map. Return a node id or an error. */
int nn_add_input_normalization(nn_model *m, int input);
int nn_add_head(nn_model *m, int features, int n_classes, float dropout);

#endif
