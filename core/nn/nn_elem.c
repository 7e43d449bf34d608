/* nn_elem — elementwise kernels more than one layer kind uses: the product with a
 * second tensor (dropout's mask, mul's operand) and its backward, the copy or sum of
 * a gradient (dropout at rate 0, add), and a BN's per-channel scale, shift and
 * activation (BN, and the readers that compute a BN's output themselves). */
#include <string.h>

#include "nn/nn_impl.h"

void nn_mul_fwd(size_t len, const float *x, const float *mask, float *y)
{
    const float *restrict u = x, *restrict mk = mask;
    float *restrict o = y;
    for (size_t i = 0; i < len; i++)
        o[i] = u[i] * mk[i];
}

void nn_mul_bwd(size_t len, const float *dy, const float *mask, float *dx, int accum)
{
    const float *restrict g = dy, *restrict mk = mask;
    float *restrict d = dx;
    if (accum)
        for (size_t i = 0; i < len; i++)
            d[i] += g[i] * mk[i];
    else
        for (size_t i = 0; i < len; i++)
            d[i] = g[i] * mk[i];
}

void nn_copy_grad(size_t len, const float *dy, float *dx, int accum)
{
    if (!accum) {
        memcpy(dx, dy, len * sizeof *dx);
        return;
    }
    const float *restrict g = dy;
    float *restrict d = dx;
    for (size_t i = 0; i < len; i++)
        d[i] += g[i];
}

void nn_scale_shift_act(long rows, int c, const float *x, const float *a, const float *b,
                        int act, float *y)
{
    const float *restrict u = x, *restrict sa = a, *restrict sb = b;
    float *restrict o = y;
    const size_t n = (size_t)rows * (size_t)c;
    if (act == NN_ACT_RELU) {
        for (size_t r = 0; r < n; r += (size_t)c)
            for (int j = 0; j < c; j++) {
                float v = u[r + j] * sa[j] + sb[j];
                o[r + j] = v > 0.0f ? v : 0.0f;
            }
    } else if (act == NN_ACT_RELU6) {
        for (size_t r = 0; r < n; r += (size_t)c)
            for (int j = 0; j < c; j++) {
                float v = u[r + j] * sa[j] + sb[j];
                v = v > 0.0f ? v : 0.0f;
                o[r + j] = v < 6.0f ? v : 6.0f;
            }
    } else {
        for (size_t r = 0; r < n; r += (size_t)c)
            for (int j = 0; j < c; j++)
                o[r + j] = u[r + j] * sa[j] + sb[j];
    }
}
