/* nn_quant — the int8 arithmetic and the calibration ranges (nn_quant.h). */
#include "nn/nn_quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_impl.h"

/* rint(v) + z clamped to [lo, hi] is rint(v) clamped to [lo - z, hi - z]: v is first
 * held within that range, where |v| < 2^22, then rounded to the nearest even integer
 * by adding and taking away 1.5 x 2^23 (the sum's last bit is the units, and the
 * rounding mode, to nearest even, does the rest). The same values as rintf in a loop
 * the compiler vectorises: rintf is a call per value on baseline x86-64, which made an
 * int8 file predict 65% slower than its float export. */
static inline float fq1(float x, float scale, float vlo, float vhi)
{
    const float magic = 12582912.0f;
    float v = x / scale;
    v = v < vlo ? vlo : v; /* NaN passes both tests and stays NaN */
    v = v > vhi ? vhi : v;
    return ((v + magic) - magic) * scale;
}

static void fq_copy(const float *restrict x, float *restrict y, size_t n, float scale, float vlo,
                    float vhi)
{
    for (size_t i = 0; i < n; i++)
        y[i] = fq1(x[i], scale, vlo, vhi);
}

static void fq_inplace(float *restrict y, size_t n, float scale, float vlo, float vhi)
{
    for (size_t i = 0; i < n; i++)
        y[i] = fq1(y[i], scale, vlo, vhi);
}

void nn_fake_quant(const float *x, float *y, size_t n, float scale, int zp, int lo, int hi)
{
    const float vlo = (float)(lo - zp), vhi = (float)(hi - zp);
    if (x == y)
        fq_inplace(y, n, scale, vlo, vhi);
    else
        fq_copy(x, y, n, scale, vlo, vhi);
}

void nn_quant_u8(float lo, float hi, float *scale, int *zp)
{
    if (!(lo <= 0.0f))
        lo = 0.0f;
    if (!(hi >= 0.0f))
        hi = 0.0f;
    double width = (double)hi - (double)lo;
    if (!(width > 0.0) || !isfinite(width)) {
        *scale = 1.0f;
        *zp = lo < 0.0f ? NN_Q_U8_MAX : 0;
        return;
    }
    *scale = (float)(width / (NN_Q_U8_MAX - NN_Q_U8_MIN));
    double z = rint(NN_Q_U8_MIN - (double)lo / *scale);
    *zp = z < NN_Q_U8_MIN ? NN_Q_U8_MIN : z > NN_Q_U8_MAX ? NN_Q_U8_MAX : (int)z;
}

void nn_quant_s8_rows(const float *w, int channels, size_t per, float *scale, int8_t *q)
{
    for (int c = 0; c < channels; c++) {
        const float *r = w + (size_t)c * per;
        float m = 0.0f;
        for (size_t j = 0; j < per; j++)
            m = fabsf(r[j]) > m ? fabsf(r[j]) : m;
        float s = m > 0.0f ? m / NN_Q_S8_MAX : 1.0f;
        scale[c] = s;
        for (size_t j = 0; j < per; j++) {
            float v = rintf(r[j] / s);
            v = v < -NN_Q_S8_MAX ? -NN_Q_S8_MAX : v > NN_Q_S8_MAX ? NN_Q_S8_MAX : v;
            q[(size_t)c * per + j] = (int8_t)v;
        }
    }
}

int32_t nn_quant_bias(float b, float x_scale, float w_scale)
{
    double v = rint((double)b / ((double)x_scale * (double)w_scale));
    if (!(v == v))
        return 0;
    return v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

/* ---- calibration ---- */

int nn_calib_init(nn_calib *c, const nn_model *m, pt_err *e)
{
    memset(c, 0, sizeof *c);
    size_t n = (size_t)(m->n_nodes > 0 ? m->n_nodes : 1);
    c->lo = calloc(n, sizeof *c->lo);
    c->hi = calloc(n, sizeof *c->hi);
    c->seen = calloc(n, 1);
    if (!c->lo || !c->hi || !c->seen) {
        nn_calib_free(c);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "out of memory for the calibration ranges");
    }
    c->n_nodes = m->n_nodes;
    return PT_OK;
}

void nn_calib_free(nn_calib *c)
{
    free(c->lo);
    free(c->hi);
    free(c->seen);
    memset(c, 0, sizeof *c);
}

void nn_calib_observe(void *arg, int node, const float *y, size_t count)
{
    nn_calib *c = arg;
    if (node < 0 || node >= c->n_nodes || !y)
        return;
    float lo = c->seen[node] ? c->lo[node] : INFINITY;
    float hi = c->seen[node] ? c->hi[node] : -INFINITY;
    for (size_t i = 0; i < count; i++) {
        float v = y[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (lo <= hi) {
        c->lo[node] = lo;
        c->hi[node] = hi;
        c->seen[node] = 1;
    }
}
