#include "train/ema.h"

#include <stdlib.h>
#include <string.h>

int ema_init(ema *a, double decay, const float *params, size_t n_params, const float *buffers,
             size_t n_buffers, pt_err *e)
{
    memset(a, 0, sizeof *a);
    if (decay <= 0)
        return PT_OK;
    a->avg = malloc((n_params + n_buffers + 1) * sizeof(float));
    if (!a->avg)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "out of memory (the average of the weights)");
    a->n_params = n_params;
    a->n_buffers = n_buffers;
    a->decay = decay;
    ema_restart(a, params, buffers);
    return PT_OK;
}

void ema_restart(ema *a, const float *params, const float *buffers)
{
    if (!a->avg)
        return;
    memcpy(a->avg, params, a->n_params * sizeof(float));
    if (a->n_buffers)
        memcpy(a->avg + a->n_params, buffers, a->n_buffers * sizeof(float));
}

void ema_free(ema *a)
{
    free(a->avg);
    memset(a, 0, sizeof *a);
}

int ema_on(const ema *a)
{
    return a->avg != NULL;
}

double ema_decay_at(const ema *a, long long t)
{
    double warm = (1.0 + (double)t) / (10.0 + (double)t);
    return a->decay < warm ? a->decay : warm;
}

static void fold(float *avg, const float *w, size_t n, float d)
{
    float k = 1.0f - d;
    for (size_t i = 0; i < n; i++)
        avg[i] += k * (w[i] - avg[i]);
}

void ema_update(ema *a, long long t, const float *params, const float *buffers)
{
    if (!a->avg)
        return;
    float d = (float)ema_decay_at(a, t);
    fold(a->avg, params, a->n_params, d);
    if (a->n_buffers)
        fold(a->avg + a->n_params, buffers, a->n_buffers, d);
}

static void exchange(float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float t = x[i];
        x[i] = y[i];
        y[i] = t;
    }
}

void ema_swap(ema *a, float *params, float *buffers)
{
    if (!a->avg)
        return;
    exchange(a->avg, params, a->n_params);
    if (a->n_buffers)
        exchange(a->avg + a->n_params, buffers, a->n_buffers);
}
