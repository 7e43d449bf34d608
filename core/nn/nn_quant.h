/* nn_quant — int8 quantization: the arithmetic of an int8 ONNX export (the QDQ form
 * nn_export writes when its meta carries ranges, nn_export.h) and of reading one back
 * (the fake-quantization layer, nn_fakequant in nn.h), and the calibration that
 * measures the ranges.
 *
 * The scheme (what ONNX Runtime's own quantizer does by default for QDQ):
 *   - weights (Conv OIHW, Gemm's [cout][cin] with transB = 1): int8, symmetric per
 *     output channel (axis 0), scale = max |w| / 127, zero point 0, values in
 *     [-127, 127];
 *   - biases: int32, scale = input scale x the channel's weight scale, zero point 0;
 *   - activations: uint8, asymmetric per tensor, from the calibrated [min, max] widened
 *     to hold 0: scale = (max - min) / 255, zero point = round(-min / scale), so that
 *     0 is exact (a ReLU's range starts at zero point 0).
 *   Rounding is half to even everywhere (rintf under the default rounding mode).
 *
 * Calibration: an nn_calib keeps, per model node, the smallest and largest value its
 * output took in the inference forwards it observed (nn_ctx_on_node); NaNs are not
 * counted. Nodes never observed keep [0, 0].
 *
 * Ownership: nn_calib_init allocates its two arrays, nn_calib_free frees them (safe on
 * a zeroed or freed one). The other calls write into the caller's memory.
 */
#ifndef PT_NN_QUANT_H
#define PT_NN_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "nn/nn.h"

/* uint8's range, and the symmetric int8 range of the weights. */
#define NN_Q_U8_MIN 0
#define NN_Q_U8_MAX 255
#define NN_Q_S8_MAX 127

/* y[i] = (clamp(rint(x[i] / scale) + zp, lo, hi) - zp) * scale for n values (x == y
 * is fine). A NaN stays NaN. */
void nn_fake_quant(const float *x, float *y, size_t n, float scale, int zp, int lo, int hi);

/* uint8 parameters of the range [lo, hi] (widened to hold 0): *scale > 0 and *zp in
 * [0, 255]. A range of width 0 gets scale 1 (every value quantizes to 0). */
void nn_quant_u8(float lo, float hi, float *scale, int *zp);

/* Symmetric int8 per channel: w is `channels` rows of `per` values (row c, output
 * channel c); scale[c] = max |row| / 127 (1 for a row of zeros), q = rint(w / scale),
 * clamped to [-127, 127]. */
void nn_quant_s8_rows(const float *w, int channels, size_t per, float *scale, int8_t *q);

/* The int32 bias of a quantized product: rint(b / (x_scale * w_scale)), saturated. */
int32_t nn_quant_bias(float b, float x_scale, float w_scale);

/* ---- calibration ---- */

typedef struct nn_calib {
    int n_nodes;
    float *lo, *hi;         /* per node: the range seen */
    uint8_t *seen;          /* per node: observed at least once */
    long long images;       /* the caller counts the images it forwarded */
} nn_calib;

int nn_calib_init(nn_calib *c, const nn_model *m, pt_err *e);
void nn_calib_free(nn_calib *c);
/* An nn_node_observer (nn.h): arg is the nn_calib; widens node's range by y. */
void nn_calib_observe(void *arg, int node, const float *y, size_t count);

#endif
