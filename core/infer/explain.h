/* explain — Grad-CAM of a classifier's answer for one image, its pictures, and a
 * run's top losses. The calls (xpl_*) and types are declared in infer/infer.h, the
 * door ui/ and src/ include (its "explain" section says what the maps are); this
 * header adds the pieces the tests check on their own.
 *
 * How: explain.c runs the image on a training context of batch 1 with
 * nn_forward_eval_grad (the inference forward, kept for a backward) and reads the
 * layer's output and gradient through nn's observers (nn_ctx_on_node,
 * nn_ctx_on_node_grad); explain_sheet.c decodes files as predict does
 * (pipe_decode_file with the run's validation settings), reads a run's validation
 * split through the input pipeline as predict's prd_split does (rm_pipe_config), and
 * draws the sheets with picture/grid.h's font and io/png.h.
 *
 * Ownership: as infer.h says for each call; these two write into the caller's arrays.
 */
#ifndef PT_EXPLAIN_H
#define PT_EXPLAIN_H

#include <stdint.h>

#include "infer/infer.h"

/* matplotlib's jet colour map at v (clamped to [0, 1]). */
void xpl_jet(float v, uint8_t rgb[3]);
/* map (mh x mw) resized bilinearly to h x w (half-pixel centres, edges clamped: what
 * PyTorch's interpolate with align_corners=False does). */
void xpl_upsample(const float *map, int mh, int mw, float *out, int h, int w);

/* The model x explains. */
const rm_model *xpl_model(const xpl *x);

#endif
