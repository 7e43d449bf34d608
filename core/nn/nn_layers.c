/* nn_layers — the layers other than convolution: affine, batch norm (with an optional
 * fused ReLU/ReLU6), activations, pools, global average pooling, dropout, dense, add.
 *
 * Tensors are NHWC, so "rows" below are pixels (N*H*W of them) and the channel loop is
 * innermost and contiguous: that is the loop the compiler vectorises.
 */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "base/rng.h"
#include "nn/nn_impl.h"

/* ---- affine ---- */

void nn_affine_fwd(long rows, int c, const float *x, const float *scale, const float *shift,
                   float *y)
{
    for (long r = 0; r < rows; r++) {
        const float *restrict xr = x + r * c;
        float *restrict yr = y + r * c;
        for (int j = 0; j < c; j++)
            yr[j] = xr[j] * scale[j] + shift[j];
    }
}

void nn_affine_bwd(long rows, int c, const float *dy, const float *scale, float *dx, int accum)
{
    for (long r = 0; r < rows; r++) {
        const float *restrict g = dy + r * c;
        float *restrict d = dx + r * c;
        if (accum)
            for (int j = 0; j < c; j++)
                d[j] += g[j] * scale[j];
        else
            for (int j = 0; j < c; j++)
                d[j] = g[j] * scale[j];
    }
}

/* ---- batch norm ---- */

/* Rows per block: about 16 KiB of floats, so the second look at a block hits L1. */
static long block_rows(int c)
{
    long b = 4096 / c;
    return b < 1 ? 1 : b;
}

/* The helpers below take restrict pointers so the compiler can vectorise their
 * channel loops without run-time overlap checks. */

static void col_sums(long nb, int c, const float *restrict x, float *restrict s)
{
    for (int j = 0; j < c; j++)
        s[j] = 0.0f;
    for (long r = 0; r < nb; r++)
        for (int j = 0; j < c; j++)
            s[j] += x[r * c + j];
}

static void col_sq_dev(long nb, int c, const float *restrict x, const float *restrict mu,
                       float *restrict q)
{
    for (int j = 0; j < c; j++)
        q[j] = 0.0f;
    for (long r = 0; r < nb; r++)
        for (int j = 0; j < c; j++) {
            float d = x[r * c + j] - mu[j];
            q[j] += d * d;
        }
}

/* y = act(x * a + b) per channel. */
static void scale_shift_act(long rows, int c, const float *restrict x, const float *restrict a,
                            const float *restrict b, int act, float *restrict y)
{
    const size_t n = (size_t)rows * (size_t)c;
    if (act == NN_ACT_RELU) {
        for (size_t r = 0; r < n; r += (size_t)c)
            for (int j = 0; j < c; j++) {
                float v = x[r + j] * a[j] + b[j];
                y[r + j] = v > 0.0f ? v : 0.0f;
            }
    } else if (act == NN_ACT_RELU6) {
        for (size_t r = 0; r < n; r += (size_t)c)
            for (int j = 0; j < c; j++) {
                float v = x[r + j] * a[j] + b[j];
                v = v > 0.0f ? v : 0.0f;
                y[r + j] = v < 6.0f ? v : 6.0f;
            }
    } else {
        for (size_t r = 0; r < n; r += (size_t)c)
            for (int j = 0; j < c; j++)
                y[r + j] = x[r + j] * a[j] + b[j];
    }
}

void nn_bn_fwd_train(long rows, int c, float eps, const float *x, const float *gamma, const float *beta,
                     int act, float *y, float *mean, float *invstd, float *var_u,
                     double *dscratch, float *fscratch)
{
    /* Per block: exact two-pass mean and sum of squared deviations in float (the block
     * is in L1 for the second pass), merged into double totals with Chan's formula.
     * One pass over memory, no E[x^2] - E[x]^2 cancellation. */
    double *mu = dscratch, *m2 = dscratch + c;
    float *bs = fscratch, *bq = fscratch + c;
    for (int j = 0; j < c; j++)
        mu[j] = m2[j] = 0.0;
    const long B = block_rows(c);
    long seen = 0;
    for (long r0 = 0; r0 < rows; r0 += B) {
        const long nb = rows - r0 < B ? rows - r0 : B;
        const float *xb = x + r0 * c;
        col_sums(nb, c, xb, bs);
        const float inv = 1.0f / (float)nb;
        for (int j = 0; j < c; j++)
            bs[j] *= inv;
        col_sq_dev(nb, c, xb, bs, bq);
        const double tot = (double)(seen + nb);
        for (int j = 0; j < c; j++) {
            double delta = (double)bs[j] - mu[j];
            mu[j] += delta * (double)nb / tot;
            m2[j] += (double)bq[j] + delta * delta * (double)seen * (double)nb / tot;
        }
        seen += nb;
    }
    float *a = fscratch, *b = fscratch + c;
    for (int j = 0; j < c; j++) {
        double var = m2[j] / (double)rows;
        double is = 1.0 / sqrt(var + (double)eps);
        mean[j] = (float)mu[j];
        invstd[j] = (float)is;
        var_u[j] = (float)(rows > 1 ? m2[j] / (double)(rows - 1) : var);
        a[j] = (float)((double)gamma[j] * is);
        b[j] = (float)((double)beta[j] - mu[j] * (double)gamma[j] * is);
    }
    scale_shift_act(rows, c, x, a, b, act, y);
}

void nn_bn_fwd_infer(long rows, int c, float eps, const float *x, const float *gamma, const float *beta,
                     const float *rmean, const float *rvar, int act, float *y, float *fscratch)
{
    float *a = fscratch, *b = fscratch + c;
    for (int j = 0; j < c; j++) {
        double is = 1.0 / sqrt((double)rvar[j] + (double)eps);
        a[j] = (float)((double)gamma[j] * is);
        b[j] = (float)((double)beta[j] - (double)rmean[j] * (double)gamma[j] * is);
    }
    scale_shift_act(rows, c, x, a, b, act, y);
}

/* Over nb rows: s1 += dz, s2 += dz * (x - mean), with dz = dy * act'(y). One loop
 * per activation with the mask written out as a select, so it vectorises: a scalar
 * branch on a ReLU mask mispredicts half the time. */
static void bn_bwd_sums(long nb, int c, int act, const float *restrict x,
                        const float *restrict y, const float *restrict dy,
                        const float *restrict mean, float *restrict s1, float *restrict s2)
{
    for (int j = 0; j < c; j++)
        s1[j] = s2[j] = 0.0f;
    const size_t n = (size_t)nb * (size_t)c;
    for (size_t r = 0; r < n; r += (size_t)c) {
        const float *restrict xr = x + r, *restrict yr = y + r, *restrict g = dy + r;
        if (act == NN_ACT_RELU) {
            for (int j = 0; j < c; j++) {
                float dz = g[j] * (yr[j] > 0.0f ? 1.0f : 0.0f);
                s1[j] += dz;
                s2[j] += dz * (xr[j] - mean[j]);
            }
        } else if (act == NN_ACT_RELU6) {
            for (int j = 0; j < c; j++) {
                float dz = g[j] * (yr[j] > 0.0f ? 1.0f : 0.0f) * (yr[j] < 6.0f ? 1.0f : 0.0f);
                s1[j] += dz;
                s2[j] += dz * (xr[j] - mean[j]);
            }
        } else {
            for (int j = 0; j < c; j++) {
                s1[j] += g[j];
                s2[j] += g[j] * (xr[j] - mean[j]);
            }
        }
    }
}

/* dx (=, or += when accum) p * dy * act'(y) + q * x + r, per channel. */
static void bn_bwd_dx(long rows, int c, int act, const float *restrict x,
                      const float *restrict y, const float *restrict dy, const float *restrict p,
                      const float *restrict q, const float *restrict r, float *restrict dx,
                      int accum)
{
    const size_t n = (size_t)rows * (size_t)c;
    for (size_t o = 0; o < n; o += (size_t)c) {
        const float *restrict xr = x + o, *restrict yr = y + o, *restrict g = dy + o;
        float *restrict d = dx + o;
        if (act == NN_ACT_RELU && !accum) {
            for (int j = 0; j < c; j++)
                d[j] = p[j] * g[j] * (yr[j] > 0.0f ? 1.0f : 0.0f) + q[j] * xr[j] + r[j];
        } else if (act == NN_ACT_RELU) {
            for (int j = 0; j < c; j++)
                d[j] += p[j] * g[j] * (yr[j] > 0.0f ? 1.0f : 0.0f) + q[j] * xr[j] + r[j];
        } else if (act == NN_ACT_RELU6 && !accum) {
            for (int j = 0; j < c; j++)
                d[j] = p[j] * g[j] * (yr[j] > 0.0f ? 1.0f : 0.0f) * (yr[j] < 6.0f ? 1.0f : 0.0f) +
                       q[j] * xr[j] + r[j];
        } else if (act == NN_ACT_RELU6) {
            for (int j = 0; j < c; j++)
                d[j] += p[j] * g[j] * (yr[j] > 0.0f ? 1.0f : 0.0f) * (yr[j] < 6.0f ? 1.0f : 0.0f) +
                        q[j] * xr[j] + r[j];
        } else if (!accum) {
            for (int j = 0; j < c; j++)
                d[j] = p[j] * g[j] + q[j] * xr[j] + r[j];
        } else {
            for (int j = 0; j < c; j++)
                d[j] += p[j] * g[j] + q[j] * xr[j] + r[j];
        }
    }
}

void nn_bn_bwd(long rows, int c, const float *x, const float *y, const float *dy,
               const float *gamma, const float *mean, const float *invstd, int act, float *dx,
               int accum, float *dgamma, float *dbeta, double *dscratch, float *fscratch)
{
    /* dz = dy * act'(z); with xhat = (x - mean) * invstd and R rows:
     *   dbeta = sum dz, dgamma = sum dz * xhat,
     *   dx = gamma * invstd * (dz - dbeta / R - xhat * dgamma / R),
     * which is linear per channel: dx = p * dz + q * x + r. Sums run in float over
     * blocks of rows and in double across blocks. */
    double *s1 = dscratch, *s2 = dscratch + c;
    float *b1 = fscratch, *b2 = fscratch + c;
    for (int j = 0; j < c; j++)
        s1[j] = s2[j] = 0.0;
    const long B = block_rows(c);
    for (long r0 = 0; r0 < rows; r0 += B) {
        const long nb = rows - r0 < B ? rows - r0 : B;
        bn_bwd_sums(nb, c, act, x + r0 * c, y + r0 * c, dy + r0 * c, mean, b1, b2);
        for (int j = 0; j < c; j++) {
            s1[j] += b1[j];
            s2[j] += b2[j];
        }
    }
    if (dgamma)
        for (int j = 0; j < c; j++) {
            dbeta[j] += (float)s1[j];
            dgamma[j] += (float)(s2[j] * invstd[j]);
        }
    if (!dx)
        return;
    float *p = fscratch, *q = fscratch + c, *rr = fscratch + 2 * c;
    for (int j = 0; j < c; j++) {
        double is = invstd[j], k = (double)gamma[j] * is;
        double mdz = s1[j] / (double)rows;
        double mdzx = s2[j] * is / (double)rows;    /* mean of dz * xhat */
        p[j] = (float)k;
        q[j] = (float)(-k * is * mdzx);
        rr[j] = (float)(-k * mdz + k * is * mdzx * (double)mean[j]);
    }
    bn_bwd_dx(rows, c, act, x, y, dy, p, q, rr, dx, accum);
}

void nn_bn_bwd_frozen(long rows, int c, float eps, const float *y, const float *dy, const float *gamma,
                      const float *rvar, int act, float *dx, int accum, float *fscratch)
{
    float *a = fscratch, *zero = fscratch + c;
    for (int j = 0; j < c; j++) {
        a[j] = (float)((double)gamma[j] / sqrt((double)rvar[j] + (double)eps));
        zero[j] = 0.0f;
    }
    /* Same form as training's dx with q = r = 0 (y stands in for the unused x). */
    bn_bwd_dx(rows, c, act, y, y, dy, a, zero, zero, dx, accum);
}

/* ---- activations ---- */

void nn_act_fwd(size_t len, int act, const float *x, float *y)
{
    const float *restrict xs = x;
    float *restrict ys = y;
    if (act == NN_ACT_RELU) {
        for (size_t i = 0; i < len; i++)
            ys[i] = xs[i] > 0.0f ? xs[i] : 0.0f;
    } else {
        for (size_t i = 0; i < len; i++) {
            float v = xs[i] > 0.0f ? xs[i] : 0.0f;
            ys[i] = v < 6.0f ? v : 6.0f;
        }
    }
}

void nn_act_bwd(size_t len, int act, const float *y, const float *dy, float *dx, int accum)
{
    const float *restrict ys = y, *restrict g = dy;
    float *restrict d = dx;
    if (act == NN_ACT_RELU) {
        if (accum)
            for (size_t i = 0; i < len; i++)
                d[i] += g[i] * (ys[i] > 0.0f ? 1.0f : 0.0f);
        else
            for (size_t i = 0; i < len; i++)
                d[i] = g[i] * (ys[i] > 0.0f ? 1.0f : 0.0f);
    } else {
        if (accum)
            for (size_t i = 0; i < len; i++)
                d[i] += g[i] * (ys[i] > 0.0f ? 1.0f : 0.0f) * (ys[i] < 6.0f ? 1.0f : 0.0f);
        else
            for (size_t i = 0; i < len; i++)
                d[i] = g[i] * (ys[i] > 0.0f ? 1.0f : 0.0f) * (ys[i] < 6.0f ? 1.0f : 0.0f);
    }
}

/* ---- pools ---- */

static int is_2x2(int k, int stride, int pt, int pl)
{
    return k == 2 && stride == 2 && pt == 0 && pl == 0;
}

/* The common 2x2/2 max-pool: four rows of c channels in, one out. */
static void max4(int c, const float *restrict a, const float *restrict b, const float *restrict d,
                 const float *restrict e, float *restrict y)
{
    for (int j = 0; j < c; j++) {
        float u = b[j] > a[j] ? b[j] : a[j];
        float v = e[j] > d[j] ? e[j] : d[j];
        y[j] = v > u ? v : u;
    }
}

void nn_maxpool_fwd(int n, int h, int w, int c, int k, int stride, int pt, int pl, int oh,
                    int ow, const float *x, float *y)
{
    const size_t row = (size_t)w * c;
    for (int img = 0; img < n; img++) {
        const float *xi = x + (size_t)img * h * row;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                float *restrict yo = y + (((size_t)img * oh + oy) * ow + ox) * c;
                if (is_2x2(k, stride, pt, pl)) {
                    const float *p = xi + (size_t)(2 * oy) * row + (size_t)(2 * ox) * c;
                    max4(c, p, p + c, p + row, p + row + c, yo);
                    continue;
                }
                for (int j = 0; j < c; j++)
                    yo[j] = -FLT_MAX;
                for (int ky = 0; ky < k; ky++) {
                    const int iy = oy * stride - pt + ky;
                    if (iy < 0 || iy >= h)
                        continue;
                    for (int kx = 0; kx < k; kx++) {
                        const int ix = ox * stride - pl + kx;
                        if (ix < 0 || ix >= w)
                            continue;
                        const float *restrict xp = xi + (size_t)iy * row + (size_t)ix * c;
                        for (int j = 0; j < c; j++)
                            yo[j] = xp[j] > yo[j] ? xp[j] : yo[j];
                    }
                }
            }
    }
}

/* 2x2/2 backward: the gradient goes to the first of the four inputs a, b, d, e equal
 * to the max (the fourth when none of the first three is); every input element is
 * written, so dx needs no clearing. */
static void max4_bwd(int c, const float *restrict a, const float *restrict b,
                     const float *restrict d, const float *restrict y,
                     const float *restrict g, float *restrict ga, float *restrict gb,
                     float *restrict gd, float *restrict ge, int accum)
{
    for (int j = 0; j < c; j++) {
        float ta = a[j] == y[j] ? 1.0f : 0.0f;
        float tb = (1.0f - ta) * (b[j] == y[j] ? 1.0f : 0.0f);
        float td = (1.0f - ta - tb) * (d[j] == y[j] ? 1.0f : 0.0f);
        float te = 1.0f - ta - tb - td;
        if (accum) {
            ga[j] += ta * g[j];
            gb[j] += tb * g[j];
            gd[j] += td * g[j];
            ge[j] += te * g[j];
        } else {
            ga[j] = ta * g[j];
            gb[j] = tb * g[j];
            gd[j] = td * g[j];
            ge[j] = te * g[j];
        }
    }
}

void nn_maxpool_bwd(int n, int h, int w, int c, int k, int stride, int pt, int pl, int oh,
                    int ow, const float *x, const float *y, const float *dy, float *dx,
                    int accum)
{
    const size_t row = (size_t)w * c;
    if (is_2x2(k, stride, pt, pl)) {
        for (int img = 0; img < n; img++) {
            const float *xi = x + (size_t)img * h * row;
            float *di = dx + (size_t)img * h * row;
            for (int oy = 0; oy < oh; oy++) {
                for (int ox = 0; ox < ow; ox++) {
                    const size_t o = (((size_t)img * oh + oy) * ow + ox) * c;
                    const size_t at = (size_t)(2 * oy) * row + (size_t)(2 * ox) * c;
                    max4_bwd(c, xi + at, xi + at + c, xi + at + row, y + o,
                             dy + o, di + at, di + at + c, di + at + row, di + at + row + c,
                             accum);
                }
                /* An odd width leaves a column no window reads. */
                if (!accum && w > 2 * ow)
                    for (int yy = 2 * oy; yy < 2 * oy + 2; yy++)
                        memset(di + (size_t)yy * row + (size_t)(2 * ow) * c, 0,
                               (size_t)(w - 2 * ow) * c * sizeof *dx);
            }
            if (!accum && h > 2 * oh)
                memset(di + (size_t)(2 * oh) * row, 0, (size_t)(h - 2 * oh) * row * sizeof *dx);
        }
        return;
    }
    /* General windows (possibly overlapping): scatter-add to the first winner. */
    if (!accum)
        memset(dx, 0, (size_t)n * h * row * sizeof *dx);
    for (int img = 0; img < n; img++) {
        const float *xi = x + (size_t)img * h * row;
        float *di = dx + (size_t)img * h * row;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                const size_t o = (((size_t)img * oh + oy) * ow + ox) * c;
                for (int j = 0; j < c; j++) {
                    int done = 0;
                    for (int ky = 0; ky < k && !done; ky++) {
                        const int iy = oy * stride - pt + ky;
                        if (iy < 0 || iy >= h)
                            continue;
                        for (int kx = 0; kx < k && !done; kx++) {
                            const int ix = ox * stride - pl + kx;
                            if (ix < 0 || ix >= w)
                                continue;
                            const size_t at = (size_t)iy * row + (size_t)ix * c + (size_t)j;
                            if (xi[at] == y[o + j]) {
                                di[at] += dy[o + j];
                                done = 1;
                            }
                        }
                    }
                }
            }
    }
}

/* Window bounds clipped to the image; the count excludes padding. */
static int window(int o, int stride, int pad, int k, int size, int *lo, int *hi)
{
    *lo = o * stride - pad;
    *hi = *lo + k;
    if (*lo < 0)
        *lo = 0;
    if (*hi > size)
        *hi = size;
    return *hi - *lo;
}

void nn_avgpool_fwd(int n, int h, int w, int c, int k, int stride, int pt, int pl, int oh,
                    int ow, const float *x, float *y)
{
    for (int img = 0; img < n; img++) {
        const float *xi = x + (size_t)img * h * w * c;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                float *restrict yo = y + (((size_t)img * oh + oy) * ow + ox) * c;
                int y0, y1, x0, x1;
                int cnt = window(oy, stride, pt, k, h, &y0, &y1) * window(ox, stride, pl, k, w, &x0, &x1);
                for (int j = 0; j < c; j++)
                    yo[j] = 0.0f;
                for (int iy = y0; iy < y1; iy++)
                    for (int ix = x0; ix < x1; ix++) {
                        const float *restrict xp = xi + ((size_t)iy * w + ix) * c;
                        for (int j = 0; j < c; j++)
                            yo[j] += xp[j];
                    }
                const float inv = cnt > 0 ? 1.0f / (float)cnt : 0.0f;
                for (int j = 0; j < c; j++)
                    yo[j] *= inv;
            }
    }
}

void nn_avgpool_bwd(int n, int h, int w, int c, int k, int stride, int pt, int pl, int oh,
                    int ow, const float *dy, float *dx, int accum)
{
    if (!accum)
        memset(dx, 0, (size_t)n * h * w * c * sizeof *dx);
    for (int img = 0; img < n; img++) {
        float *dxi = dx + (size_t)img * h * w * c;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                const float *restrict g = dy + (((size_t)img * oh + oy) * ow + ox) * c;
                int y0, y1, x0, x1;
                int cnt = window(oy, stride, pt, k, h, &y0, &y1) * window(ox, stride, pl, k, w, &x0, &x1);
                const float inv = cnt > 0 ? 1.0f / (float)cnt : 0.0f;
                for (int iy = y0; iy < y1; iy++)
                    for (int ix = x0; ix < x1; ix++) {
                        float *restrict d = dxi + ((size_t)iy * w + ix) * c;
                        for (int j = 0; j < c; j++)
                            d[j] += g[j] * inv;
                    }
            }
    }
}

void nn_gap_fwd(int n, int hw, int c, const float *x, float *y)
{
    const float inv = 1.0f / (float)hw;
    for (int img = 0; img < n; img++) {
        float *restrict yo = y + (size_t)img * c;
        const float *xi = x + (size_t)img * hw * c;
        for (int j = 0; j < c; j++)
            yo[j] = 0.0f;
        for (int p = 0; p < hw; p++) {
            const float *restrict xp = xi + (size_t)p * c;
            for (int j = 0; j < c; j++)
                yo[j] += xp[j];
        }
        for (int j = 0; j < c; j++)
            yo[j] *= inv;
    }
}

void nn_gap_bwd(int n, int hw, int c, const float *dy, float *dx, int accum)
{
    const float inv = 1.0f / (float)hw;
    for (int img = 0; img < n; img++) {
        const float *restrict g = dy + (size_t)img * c;
        float *dxi = dx + (size_t)img * hw * c;
        for (int p = 0; p < hw; p++) {
            float *restrict d = dxi + (size_t)p * c;
            if (accum)
                for (int j = 0; j < c; j++)
                    d[j] += g[j] * inv;
            else
                for (int j = 0; j < c; j++)
                    d[j] = g[j] * inv;
        }
    }
}

/* ---- dropout ---- */

void nn_dropout_mask(int n, size_t len, float rate, uint64_t seed, int64_t first, int node,
                     float *mask)
{
    /* One stream per (seed, global example, node): element j is its j-th draw. */
    const float keep = 1.0f / (1.0f - rate);
    for (int i = 0; i < n; i++) {
        rng r;
        rng_derive(&r, seed, (uint64_t)(first + i), (uint64_t)node);
        float *mi = mask + (size_t)i * len;
        for (size_t j = 0; j < len; j++)
            mi[j] = rng_float(&r) >= rate ? keep : 0.0f;
    }
}

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

/* ---- dense ---- */

void nn_dense_fwd(int n, int cin, int cout, const float *x, const float *wt, const float *b,
                  float *y)
{
    for (int i = 0; i < n; i++)
        memcpy(y + (size_t)i * cout, b, (size_t)cout * sizeof *y);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, cout, cin, 1.0f, x, cin, wt, cout,
                1.0f, y, cout);
}

void nn_dense_bwd(int n, int cin, int cout, const float *x, const float *wt, const float *dy,
                  float *dx, int accum, float *dw, float *db)
{
    if (dw) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cin, cout, n, 1.0f, x, cin, dy,
                    cout, 1.0f, dw, cout);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < cout; j++)
                db[j] += dy[(size_t)i * cout + j];
    }
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, cin, cout, 1.0f, dy, cout, wt,
                    cout, accum ? 1.0f : 0.0f, dx, cin);
}

/* ---- add ---- */

void nn_add_fwd(size_t len, const float *a, const float *b, float *y)
{
    const float *restrict u = a, *restrict v = b;
    float *restrict o = y;
    for (size_t i = 0; i < len; i++)
        o[i] = u[i] + v[i];
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
