#include "data/image.h"

#include <stdlib.h>
#include <string.h>

void img_scratch_free(img_scratch *s)
{
    free(s->mem);
    s->mem = NULL;
    s->cap = 0;
}

static void *scratch_get(img_scratch *s, size_t n)
{
    if (n > s->cap) {
        void *m = realloc(s->mem, n);
        if (!m)
            return NULL;
        s->mem = m;
        s->cap = n;
    }
    return s->mem;
}

void img_crop_box(int w, int h, int dw, int dh, int *x, int *y, int *cw, int *ch)
{
    /* Compare w/h with dw/dh in integers: w * dh vs h * dw. */
    long long lw = w, lh = h;
    if (lw * dh > lh * dw) {
        *ch = h;
        *cw = (int)((lh * dw + dh / 2) / dh);
        if (*cw < 1)
            *cw = 1;
    } else {
        *cw = w;
        *ch = (int)((lw * dh + dw / 2) / dw);
        if (*ch < 1)
            *ch = 1;
    }
    *x = (w - *cw) / 2;
    *y = (h - *ch) / 2;
}

/* Contributions of source pixels to one output pixel along one axis. */
typedef struct contrib {
    int first, count;   /* source indices [first, first + count) */
    int wofs;           /* offset into the shared weight array */
} contrib;

/* Build filter weights for mapping n_in source samples onto n_out. Weights for each
 * output sum to 1 (as floats). Returns the number of weights used. */
static int make_weights(int n_in, int n_out, contrib *c, float *w, int wmax)
{
    double scale = (double)n_in / n_out;
    double support = scale > 1.0 ? scale : 1.0; /* triangle half-width in source px */
    int used = 0;
    for (int o = 0; o < n_out; o++) {
        double center = (o + 0.5) * scale;
        int lo = (int)(center - support + 0.5);
        int hi = (int)(center + support + 0.5);
        if (lo < 0)
            lo = 0;
        if (hi > n_in)
            hi = n_in;
        if (hi <= lo) {
            lo = (int)center < n_in ? (int)center : n_in - 1;
            hi = lo + 1;
        }
        double sum = 0;
        int k0 = used;
        for (int i = lo; i < hi && used < wmax; i++) {
            double d = ((i + 0.5) - center) / support;
            double t = d < 0 ? 1.0 + d : 1.0 - d;
            if (t < 0)
                t = 0;
            w[used++] = (float)t;
            sum += t;
        }
        if (sum <= 0) {
            for (int k = k0; k < used; k++)
                w[k] = 1.0f / (float)(used - k0);
        } else {
            for (int k = k0; k < used; k++)
                w[k] = (float)(w[k] / sum);
        }
        c[o].first = lo;
        c[o].count = used - k0;
        c[o].wofs = k0;
    }
    return used;
}

int img_resize(const uint8_t *src, int src_pitch, int sx, int sy, int sw, int sh,
               uint8_t *dst, int dw, int dh, img_scratch *s)
{
    if (sw == dw && sh == dh) {
        for (int y = 0; y < dh; y++)
            memcpy(dst + (size_t)y * dw * 3, src + (size_t)(sy + y) * src_pitch + (size_t)sx * 3,
                   (size_t)dw * 3);
        return 0;
    }
    /* Upper bound of weights per axis: each output touches at most 2*support+2 inputs. */
    int maxw_x = (int)(2.0 * ((double)sw / dw + 1.0) + 3.0) * dw;
    int maxw_y = (int)(2.0 * ((double)sh / dh + 1.0) + 3.0) * dh;
    size_t need = (size_t)dw * sizeof(contrib) + (size_t)dh * sizeof(contrib) +
                  (size_t)(maxw_x + maxw_y) * sizeof(float) +
                  ((size_t)sh + 1) * dw * 3 * sizeof(float) + 64;
    uint8_t *mem = scratch_get(s, need);
    if (!mem)
        return -1;
    contrib *cx = (contrib *)mem;
    contrib *cy = cx + dw;
    float *wx = (float *)(cy + dh);
    float *wy = wx + maxw_x;
    float *acc = wy + maxw_y; /* one output row being accumulated */
    float *tmp = acc + (size_t)dw * 3; /* sh rows of dw * 3 floats: the horizontal pass */
    make_weights(sw, dw, cx, wx, maxw_x);
    make_weights(sh, dh, cy, wy, maxw_y);

    /* Horizontal pass only over the source rows the vertical pass will read. */
    int ylo = cy[0].first, yhi = cy[dh - 1].first + cy[dh - 1].count;
    for (int y = ylo; y < yhi; y++) {
        const uint8_t *row = src + (size_t)(sy + y) * src_pitch + (size_t)sx * 3;
        float *out = tmp + (size_t)y * dw * 3;
        for (int o = 0; o < dw; o++) {
            const contrib *c = &cx[o];
            const float *w = wx + c->wofs;
            const uint8_t *p = row + (size_t)c->first * 3;
            float r = 0, g = 0, b = 0;
            for (int k = 0; k < c->count; k++) {
                r += w[k] * p[3 * k];
                g += w[k] * p[3 * k + 1];
                b += w[k] * p[3 * k + 2];
            }
            out[3 * o] = r;
            out[3 * o + 1] = g;
            out[3 * o + 2] = b;
        }
    }
    for (int o = 0; o < dh; o++) {
        const contrib *c = &cy[o];
        const float *w = wy + c->wofs;
        uint8_t *out = dst + (size_t)o * dw * 3;
        const float *r0 = tmp + (size_t)c->first * dw * 3;
        for (int x = 0; x < dw * 3; x++)
            acc[x] = w[0] * r0[x];
        for (int k = 1; k < c->count; k++) {
            const float *rk = tmp + (size_t)(c->first + k) * dw * 3;
            float wk = w[k];
            for (int x = 0; x < dw * 3; x++)
                acc[x] += wk * rk[x];
        }
        for (int x = 0; x < dw * 3; x++) {
            int iv = (int)(acc[x] + 0.5f);
            out[x] = (uint8_t)(iv < 0 ? 0 : iv > 255 ? 255 : iv);
        }
    }
    return 0;
}
