/* nn_elem — elementwise kernels more than one layer kind uses: the product with a
 * second tensor (dropout's mask, mul's operand) and its backward, and the copy or sum
 * of a gradient (dropout at rate 0, add). */
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
