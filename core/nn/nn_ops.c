/* nn_ops — layers that imported graphs need beyond the built-in models: sigmoid, the
 * per-channel multiply (squeeze-and-excitation), channel concatenation and clip.
 *
 * Tensors are NHWC, so a per-channel operand lines up with the innermost, contiguous
 * loop, and a concatenation is two copies per pixel.
 */
#include <math.h>
#include <string.h>

#include "nn/nn_impl.h"

/* ---- sigmoid ---- */

void nn_sigmoid_fwd(size_t len, const float *x, float *y)
{
    const float *restrict xs = x;
    float *restrict ys = y;
    /* With e = exp(-|x|) <= 1 nothing overflows: sigmoid(x) = 1 / (1 + e) for x >= 0
     * and e / (1 + e) for x < 0, which keeps the small values' relative accuracy
     * (1 - 1 / (1 + exp(x)) would cancel to 0 long before the true value underflows). */
    for (size_t i = 0; i < len; i++) {
        const float e = expf(-fabsf(xs[i]));
        const float s = 1.0f / (1.0f + e);
        ys[i] = xs[i] >= 0.0f ? s : e * s;
    }
}

void nn_sigmoid_bwd(size_t len, const float *y, const float *dy, float *dx, int accum)
{
    const float *restrict ys = y, *restrict g = dy;
    float *restrict d = dx;
    if (accum)
        for (size_t i = 0; i < len; i++)
            d[i] += g[i] * ys[i] * (1.0f - ys[i]);
    else
        for (size_t i = 0; i < len; i++)
            d[i] = g[i] * ys[i] * (1.0f - ys[i]);
}

/* ---- per-channel multiply ---- */

void nn_mul_chan_fwd(int n, int hw, int c, const float *a, const float *s, float *y)
{
    for (int img = 0; img < n; img++) {
        const float *restrict si = s + (size_t)img * c;
        for (int p = 0; p < hw; p++) {
            const size_t o = ((size_t)img * hw + (size_t)p) * (size_t)c;
            const float *restrict ap = a + o;
            float *restrict yp = y + o;
            for (int j = 0; j < c; j++)
                yp[j] = ap[j] * si[j];
        }
    }
}

void nn_mul_chan_bwd(int n, int hw, int c, const float *a, const float *s, const float *dy,
                     float *da, int accum_a, float *ds, int accum_s)
{
    for (int img = 0; img < n; img++) {
        const size_t o = (size_t)img * hw * (size_t)c;
        const float *restrict si = s + (size_t)img * c;
        if (da)
            for (int p = 0; p < hw; p++) {
                const float *restrict g = dy + o + (size_t)p * c;
                float *restrict d = da + o + (size_t)p * c;
                if (accum_a)
                    for (int j = 0; j < c; j++)
                        d[j] += g[j] * si[j];
                else
                    for (int j = 0; j < c; j++)
                        d[j] = g[j] * si[j];
            }
        if (ds) {
            /* Summed in float over the pixels, as nn_gap_fwd does. */
            float *restrict d = ds + (size_t)img * c;
            if (!accum_s)
                for (int j = 0; j < c; j++)
                    d[j] = 0.0f;
            for (int p = 0; p < hw; p++) {
                const float *restrict g = dy + o + (size_t)p * c;
                const float *restrict ap = a + o + (size_t)p * c;
                for (int j = 0; j < c; j++)
                    d[j] += g[j] * ap[j];
            }
        }
    }
}

/* ---- concat ---- */

void nn_concat_fwd(long rows, int ca, int cb, const float *a, const float *b, float *y)
{
    const size_t c = (size_t)ca + (size_t)cb;
    for (long r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * c;
        memcpy(yr, a + (size_t)r * (size_t)ca, (size_t)ca * sizeof *y);
        memcpy(yr + ca, b + (size_t)r * (size_t)cb, (size_t)cb * sizeof *y);
    }
}

/* One input's slice [c0, c0 + cs) of every row of dy into d (rows of cs). */
static void slice_grad(long rows, size_t c, int c0, int cs, const float *dy, float *d,
                       int accum)
{
    for (long r = 0; r < rows; r++) {
        const float *restrict g = dy + (size_t)r * c + (size_t)c0;
        float *restrict dr = d + (size_t)r * (size_t)cs;
        if (accum)
            for (int j = 0; j < cs; j++)
                dr[j] += g[j];
        else
            memcpy(dr, g, (size_t)cs * sizeof *dr);
    }
}

void nn_concat_bwd(long rows, int ca, int cb, const float *dy, float *da, int accum_a,
                   float *db, int accum_b)
{
    const size_t c = (size_t)ca + (size_t)cb;
    /* Two whole passes, not one interleaved: da and db may be the same buffer. */
    if (da)
        slice_grad(rows, c, 0, ca, dy, da, accum_a);
    if (db)
        slice_grad(rows, c, ca, cb, dy, db, accum_b);
}

/* ---- clip ---- */

void nn_clip_fwd(size_t len, float lo, float hi, const float *x, float *y)
{
    const float *restrict xs = x;
    float *restrict ys = y;
    /* Compares that are false for NaN, so a NaN input stays NaN (as torch.clamp). */
    for (size_t i = 0; i < len; i++) {
        float v = xs[i] < lo ? lo : xs[i];
        ys[i] = v > hi ? hi : v;
    }
}

void nn_clip_bwd(size_t len, float lo, float hi, const float *x, const float *dy, float *dx,
                 int accum)
{
    /* torch.clamp's subgradient: 1 on the closed interval [lo, hi]. It needs the input,
     * not the output: y == lo cannot tell x == lo (passes) from x < lo (does not). The
     * mask is a product of selects so the loop vectorises. */
    const float *restrict xs = x, *restrict g = dy;
    float *restrict d = dx;
    if (accum)
        for (size_t i = 0; i < len; i++)
            d[i] += g[i] * (xs[i] >= lo ? 1.0f : 0.0f) * (xs[i] <= hi ? 1.0f : 0.0f);
    else
        for (size_t i = 0; i < len; i++)
            d[i] = g[i] * (xs[i] >= lo ? 1.0f : 0.0f) * (xs[i] <= hi ? 1.0f : 0.0f);
}
