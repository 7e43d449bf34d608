/* aug_mask — the transforms that black out or blend pixels instead of resampling
 * them: cutout, GridMask, the MixUp and CutMix pixel functions, and the Beta (via
 * Gamma) draw of the MixUp / CutMix weight. Pairing the examples of a batch and
 * setting their labels is aug_chain.c's.
 */
#include <math.h>
#include <string.h>

#include "data/aug_impl.h"

/* ===================================================================================
 * Cutout, GridMask
 * =================================================================================== */

void aug_cutout(uint8_t *img, int h, int w, int x0, int y0, int x1, int y1)
{
    if (!img)
        return;
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > w ? w : x1;
    y1 = y1 > h ? h : y1;
    if (x0 >= x1 || y0 >= y1)
        return;
    for (int y = y0; y < y1; y++)
        memset(img + ((size_t)y * w + x0) * 3, 0, (size_t)(x1 - x0) * 3);
}

static int64_t floor_mod64(int64_t a, int64_t m)
{
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

/* Runs of a row where one grid coordinate is in the dropped part of its period:
 * m(X) = (m0 + X * dm) mod D >= K, in 16.16 fixed point with |dm| < D. Instead of
 * testing every pixel, each step jumps to where m next crosses K or wraps around:
 * a few steps per period, and exactly the pixels a per-pixel test would pick. */
typedef struct grid_runs {
    int64_t m, dm, D, K;
    int x, w;
} grid_runs;

/* Next run [*a, *b) with m >= K; 0 when the row is done. */
static int grid_next(grid_runs *g, int *a, int *b)
{
    while (g->x < g->w) {
        int in = g->m >= g->K;
        int64_t n;
        if (g->dm == 0) {
            n = g->w - g->x;
        } else if (g->dm > 0) {
            int64_t target = in ? g->D : g->K;
            n = (target - g->m + g->dm - 1) / g->dm;
        } else {
            int64_t floor_ = in ? g->K : 0;
            n = (g->m - floor_) / -g->dm + 1;
        }
        if (n > g->w - g->x)
            n = g->w - g->x;
        int start = g->x;
        g->x += (int)n;
        g->m += n * g->dm;
        g->m = g->m >= g->D ? g->m - g->D : g->m < 0 ? g->m + g->D : g->m;
        if (in) {
            *a = start;
            *b = g->x;
            return 1;
        }
    }
    return 0;
}

int aug_gridmask(uint8_t *img, int h, int w, int d, int keep, int ox, int oy,
                 double angle_deg)
{
    if (!img || h <= 0 || w <= 0 || d < 2 || keep < 0 || !isfinite(angle_deg))
        return PT_EUSAGE;
    if (keep >= d)
        return PT_OK;
    /* Grid coordinates (u, v) of the pixel centre: rotate about the image centre,
     * then offset. A pixel is black where both are in the dropped part of their
     * period; along a row both advance linearly, so the black pixels are the
     * intersections of two lists of runs. */
    double t = -angle_deg * AUG_PI / 180, c = cos(t), s = sin(t);
    double cx = w * 0.5, cy = h * 0.5;
    const int64_t one = 65536, D = (int64_t)d * one, K = (int64_t)keep * one;
    int64_t du = (int64_t)floor(c * one + 0.5), dv = (int64_t)floor(-s * one + 0.5);
    for (int y = 0; y < h; y++) {
        double dx = 0.5 - cx, dy = y + 0.5 - cy;
        double u = c * dx + s * dy + cx + ox, v = -s * dx + c * dy + cy + oy;
        grid_runs gu = {floor_mod64((int64_t)floor(u * one + 0.5), D), du, D, K, 0, w};
        grid_runs gv = {floor_mod64((int64_t)floor(v * one + 0.5), D), dv, D, K, 0, w};
        uint8_t *row = img + (size_t)y * w * 3;
        int ua, ub, va, vb;
        int hu = grid_next(&gu, &ua, &ub), hv = grid_next(&gv, &va, &vb);
        while (hu && hv) {
            int a0 = ua > va ? ua : va, a1 = ub < vb ? ub : vb;
            if (a0 < a1)
                memset(row + (size_t)a0 * 3, 0, (size_t)(a1 - a0) * 3);
            if (ub < vb)
                hu = grid_next(&gu, &ua, &ub);
            else
                hv = grid_next(&gv, &va, &vb);
        }
    }
    return PT_OK;
}

/* ===================================================================================
 * MixUp, CutMix
 * =================================================================================== */

float aug_mixup_pixels(uint8_t *out, const uint8_t *a, const uint8_t *b, size_t nbytes,
                       double lambda)
{
    if (!(lambda >= 0))
        lambda = 0;
    if (lambda > 1)
        lambda = 1;
    int wa = (int)floor(lambda * 256 + 0.5), wb = 256 - wa;
    size_t i = 0;
    /* Fixed-trip blocks into a local buffer (out may be a): the compiler vectorizes
     * them, in 16-bit lanes since a * wa + b * wb + 128 <= 65408. */
    for (; i + 32 <= nbytes; i += 32) {
        uint8_t t[32];
        for (int j = 0; j < 32; j++)
            t[j] = (uint8_t)((uint16_t)(a[i + j] * wa + b[i + j] * wb + 128) >> 8);
        memcpy(out + i, t, 32);
    }
    for (; i < nbytes; i++)
        out[i] = (uint8_t)((a[i] * wa + b[i] * wb + 128) >> 8);
    return (float)wa / 256.0f;
}

float aug_cutmix_pixels(uint8_t *dst, const uint8_t *src, int h, int w, int x0, int y0,
                        int x1, int y1)
{
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > w ? w : x1;
    y1 = y1 > h ? h : y1;
    if (x0 >= x1 || y0 >= y1)
        return 1.0f;
    for (int y = y0; y < y1; y++) {
        size_t off = ((size_t)y * w + x0) * 3;
        memcpy(dst + off, src + off, (size_t)(x1 - x0) * 3);
    }
    double area = (double)(x1 - x0) * (y1 - y0);
    return (float)(1.0 - area / ((double)h * w));
}

/* Gamma(alpha) by Marsaglia and Tsang (alpha < 1 through alpha + 1). */
static double gamma_draw(rng *r, double alpha)
{
    double boost = 1;
    if (alpha < 1) {
        double u = rng_double(r);
        boost = pow(u > 0 ? u : 1e-300, 1 / alpha);
        alpha += 1;
    }
    double d = alpha - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x = rng_normal(r), v = 1 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = rng_double(r);
        if (u < 1 - 0.0331 * x * x * x * x || log(u > 0 ? u : 1e-300) < 0.5 * x * x + d * (1 - v + log(v)))
            return d * v * boost;
    }
}

double aug_beta_draw(rng *r, double alpha)
{
    if (alpha == 1)
        return rng_double(r);
    double a = gamma_draw(r, alpha), b = gamma_draw(r, alpha);
    return a + b > 0 ? a / (a + b) : 0.5;
}
