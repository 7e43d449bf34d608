/* nn_loss — softmax cross-entropy from logits with the batch's two-label targets,
 * optionally smoothed, and the distillation loss that mixes it with a teacher's
 * tempered probabilities. */
#include <math.h>

#include "nn/nn_impl.h"

int nn_softmax_ce(const float *logits, int n, int k, const int32_t *a, const int32_t *b,
                  const float *mix, float scale, double *loss, float *dlogits, int32_t *pred,
                  pt_err *e)
{
    return nn_softmax_ce_smooth(logits, n, k, a, b, mix, 0.0f, scale, loss, dlogits, pred, e);
}

int nn_softmax_ce_smooth(const float *logits, int n, int k, const int32_t *a, const int32_t *b,
                         const float *mix, float smooth, float scale, double *loss,
                         float *dlogits, int32_t *pred, pt_err *e)
{
    /* Check every label first, so nothing is written on bad input. */
    for (int i = 0; i < n; i++) {
        int la = a[i], lb = b ? b[i] : la;
        if (la < 0 || la >= k || lb < 0 || lb >= k)
            return err_set(e, PT_ECLASS, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "nn: example %d has label %d/%d outside [0, %d)", i, la, lb, k);
    }
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * k;
        int best = 0;
        for (int j = 1; j < k; j++)
            if (z[j] > z[best])
                best = j;
        const double mx = z[best];
        double s = 0.0;
        for (int j = 0; j < k; j++)
            s += exp((double)z[j] - mx);
        const double lse = mx + log(s);
        const int la = a[i], lb = b ? b[i] : la;
        /* Target: (1 - smooth) of the two-label mix, smooth / k on every class
         * (Keras's and PyTorch's label_smoothing). */
        const double keep = 1.0 - (double)smooth, even = (double)smooth / k;
        const double wa = (mix ? (double)mix[i] : 1.0) * keep, wb = keep - wa;
        double zsum = 0.0;
        if (smooth > 0.0f)
            for (int j = 0; j < k; j++)
                zsum += z[j];
        total += lse - wa * z[la] - wb * z[lb] - even * zsum;
        if (dlogits) {
            float *d = dlogits + (size_t)i * k;
            const double inv = 1.0 / s;
            for (int j = 0; j < k; j++)
                d[j] = (float)(scale * (exp((double)z[j] - mx) * inv - even));
            d[la] -= (float)(scale * wa);
            d[lb] -= (float)(scale * wb);
        }
        if (pred)
            pred[i] = best;
    }
    if (loss)
        *loss = total;
    return PT_OK;
}

int nn_distill_ce(const float *logits, int n, int k, const int32_t *a, const int32_t *b,
                  const float *mix, float smooth, const float *soft, float t, float alpha,
                  float scale, double *loss, float *dlogits, int32_t *pred, pt_err *e)
{
    if (!soft || !(t > 0.0f) || !(alpha >= 0.0f && alpha <= 1.0f))
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "nn: distillation wants soft targets, T > 0 and alpha in [0, 1]");
    /* The hard part is today's loss, its gradient already weighted by (1 - alpha). */
    double ce = 0.0;
    int rc = nn_softmax_ce_smooth(logits, n, k, a, b, mix, smooth, scale * (1.0f - alpha), &ce,
                                  dlogits, pred, e);
    if (rc != PT_OK)
        return rc;
    const double T = t, w = (double)alpha * T * T;
    double kl_sum = 0.0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * k;
        const float *p = soft + (size_t)i * k;
        double mx = z[0];
        for (int j = 1; j < k; j++)
            mx = z[j] > mx ? z[j] : mx;
        double s = 0.0;
        for (int j = 0; j < k; j++)
            s += exp(((double)z[j] - mx) / T);
        /* log q_T[j] = (z[j] - mx) / T - log s; a class the teacher gives 0 adds
         * nothing to the KL (0 log 0 = 0). */
        const double ls = log(s);
        double kl = 0.0;
        for (int j = 0; j < k; j++)
            if (p[j] > 0.0f)
                kl += (double)p[j] * (log((double)p[j]) - (((double)z[j] - mx) / T - ls));
        kl_sum += kl;
        if (dlogits) {
            /* d(T^2 KL)/dz = T (q_T - p_T) */
            float *d = dlogits + (size_t)i * k;
            const double g = (double)scale * alpha * T;
            for (int j = 0; j < k; j++)
                d[j] += (float)(g * (exp(((double)z[j] - mx) / T) / s - (double)p[j]));
        }
    }
    if (loss)
        *loss = w * kl_sum + (1.0 - (double)alpha) * ce;
    return PT_OK;
}
