/* curves — the history and the thinned per-update curves (see curves.h). */
#include "train/curves.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"

int crv_init(crv *c)
{
    c->hist = calloc(RUN_MAX_EPOCHS, sizeof *c->hist);
    c->loss = calloc(RUN_CURVE_POINTS, sizeof(float));
    c->acc = calloc(RUN_CURVE_POINTS, sizeof(float));
    c->lr = calloc(RUN_CURVE_POINTS, sizeof(float));
    c->stride = 1;
    return c->hist && c->loss && c->acc && c->lr ? PT_OK : PT_ENOMEM;
}

void crv_free(crv *c)
{
    free(c->hist);
    free(c->loss);
    free(c->acc);
    free(c->lr);
    memset(c, 0, sizeof *c);
}

void crv_add_epoch(crv *c, const run_epoch *row)
{
    if (c->hist_n < RUN_MAX_EPOCHS)
        c->hist[c->hist_n++] = *row;
}

void crv_push(crv *c, double loss, double acc, double lr)
{
    /* Average `stride` updates into one point; halve the curve when it fills. */
    c->sum_loss += loss;
    c->sum_acc += acc;
    c->sum_lr += lr;
    if (++c->pending < c->stride)
        return;
    double k = c->pending;
    if (c->n == RUN_CURVE_POINTS) {
        for (int i = 0; i < RUN_CURVE_POINTS / 2; i++) {
            c->loss[i] = 0.5f * (c->loss[2 * i] + c->loss[2 * i + 1]);
            c->acc[i] = 0.5f * (c->acc[2 * i] + c->acc[2 * i + 1]);
            c->lr[i] = 0.5f * (c->lr[2 * i] + c->lr[2 * i + 1]);
        }
        c->n = RUN_CURVE_POINTS / 2;
        c->stride *= 2;
    }
    c->loss[c->n] = (float)(c->sum_loss / k);
    c->acc[c->n] = (float)(c->sum_acc / k);
    c->lr[c->n] = (float)(c->sum_lr / k);
    c->n++;
    c->pending = 0;
    c->sum_loss = c->sum_acc = c->sum_lr = 0;
}

size_t crv_pack(const crv *c, uint8_t **out)
{
    size_t n = 4 + (size_t)c->hist_n * sizeof(run_epoch) + 12 + (size_t)c->n * 3 * sizeof(float);
    uint8_t *b = malloc(n), *p = b;
    if (!b)
        return 0;
    int32_t v = c->hist_n;
    memcpy(p, &v, 4);
    p += 4;
    memcpy(p, c->hist, (size_t)c->hist_n * sizeof(run_epoch));
    p += (size_t)c->hist_n * sizeof(run_epoch);
    int32_t h[3] = { c->n, c->stride, 0 };
    memcpy(p, h, 12);
    p += 12;
    memcpy(p, c->loss, (size_t)c->n * sizeof(float));
    p += (size_t)c->n * sizeof(float);
    memcpy(p, c->acc, (size_t)c->n * sizeof(float));
    p += (size_t)c->n * sizeof(float);
    memcpy(p, c->lr, (size_t)c->n * sizeof(float));
    *out = b;
    return n;
}

int crv_unpack(crv *c, const uint8_t *b, size_t n)
{
    if (n < 16)
        return -1;
    int32_t hn;
    memcpy(&hn, b, 4);
    if (hn < 0 || hn > RUN_MAX_EPOCHS || 4 + (size_t)hn * sizeof(run_epoch) + 12 > n)
        return -1;
    memcpy(c->hist, b + 4, (size_t)hn * sizeof(run_epoch));
    c->hist_n = hn;
    const uint8_t *p = b + 4 + (size_t)hn * sizeof(run_epoch);
    int32_t h[3];
    memcpy(h, p, 12);
    p += 12;
    if (h[0] < 0 || h[0] > RUN_CURVE_POINTS || h[1] < 1 ||
        (size_t)(p - b) + (size_t)h[0] * 3 * sizeof(float) > n)
        return -1;
    c->n = h[0];
    c->stride = h[1];
    memcpy(c->loss, p, (size_t)h[0] * sizeof(float));
    p += (size_t)h[0] * sizeof(float);
    memcpy(c->acc, p, (size_t)h[0] * sizeof(float));
    p += (size_t)h[0] * sizeof(float);
    memcpy(c->lr, p, (size_t)h[0] * sizeof(float));
    return 0;
}
