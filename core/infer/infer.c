/* infer — softmax, flip, top-k and the two forward forms on the pool (infer.h). */
#include "infer/infer.h"

#include <math.h>
#include <stdlib.h>

#include "pool/rpool.h"

void inf_softmax(const float *logits, int k, double *out)
{
    double mx = logits[0], sum = 0;
    for (int c = 1; c < k; c++)
        mx = logits[c] > mx ? logits[c] : mx;
    for (int c = 0; c < k; c++)
        sum += out[c] = exp((double)logits[c] - mx);
    for (int c = 0; c < k; c++)
        out[c] /= sum;
}

int inf_argmax(const double *p, int k)
{
    int best = 0;
    for (int c = 1; c < k; c++)
        if (p[c] > p[best])
            best = c;
    return best;
}

void inf_top1(const float *logits, int k, int *arg, float *p)
{
    int best = 0;
    for (int c = 1; c < k; c++)
        if (logits[c] > logits[best])
            best = c;
    /* The largest's probability is 1 / the sum of exp(logit - largest). */
    double sum = 0;
    for (int c = 0; c < k; c++)
        sum += exp((double)logits[c] - logits[best]);
    *arg = best;
    *p = (float)(1.0 / sum);
}

double inf_xent(const float *logits, int k, int label)
{
    /* log-sum-exp about the largest logit, so no term overflows. */
    float top = logits[0];
    for (int c = 1; c < k; c++)
        top = logits[c] > top ? logits[c] : top;
    double sum = 0;
    for (int c = 0; c < k; c++)
        sum += exp((double)logits[c] - top);
    return (double)top + log(sum) - logits[label];
}

void inf_topk(const double *p, int k, int n, int *order)
{
    /* A partial selection, n passes over the classes: k is small. */
    for (int t = 0; t < n && t < k; t++) {
        int best = -1;
        for (int c = 0; c < k; c++) {
            int taken = 0;
            for (int u = 0; u < t; u++)
                taken |= order[u] == c;
            if (!taken && (best < 0 || p[c] > p[best]))
                best = c;
        }
        order[t] = best;
    }
}

void inf_flip(uint8_t *images, int n, int h, int w)
{
    for (long row = 0; row < (long)n * h; row++) {
        uint8_t *a = images + row * w * 3, *b = a + (w - 1) * 3;
        for (; a < b; a += 3, b -= 3)
            for (int c = 0; c < 3; c++) {
                uint8_t t = a[c];
                a[c] = b[c];
                b[c] = t;
            }
    }
}

/* The largest of k logits and the sum of exp(x - largest). */
static void softmax_norm(const float *x, int k, float *top, double *sum)
{
    *top = x[0];
    for (int c = 1; c < k; c++)
        *top = x[c] > *top ? x[c] : *top;
    *sum = 0;
    for (int c = 0; c < k; c++)
        *sum += exp((double)x[c] - *top);
}

void inf_mean_softmax(float *a, const float *b, int n, int k)
{
    for (int i = 0; i < n; i++) {
        float *ra = a + (size_t)i * k;
        const float *rb = b + (size_t)i * k;
        float ta, tb;
        double sa, sb;
        softmax_norm(ra, k, &ta, &sa);
        softmax_norm(rb, k, &tb, &sb);
        for (int c = 0; c < k; c++) {
            double p = 0.5 * (exp((double)ra[c] - ta) / sa + exp((double)rb[c] - tb) / sb);
            ra[c] = (float)log(p > 1e-30 ? p : 1e-30);
        }
    }
}

int inf_pool_new(nn_model *m, int replicas, int per_replica, int bf16, rpool **out, pt_err *e)
{
    rpool_config c = { .model = m, .replicas = replicas, .predict_batch = per_replica,
                       .recompute = 0, .bf16 = bf16 };
    return rpool_new(&c, out, e);
}

void inf_pool_free(rpool *pool)
{
    rpool_free(pool);
}

int inf_logits(rpool *pool, uint8_t *images, int n, int h, int w, int flip, float *logits,
               float *spare, pt_err *e)
{
    int rc = rpool_infer(pool, images, n, logits, e);
    if (rc != PT_OK || !flip)
        return rc;
    inf_flip(images, n, h, w);
    if ((rc = rpool_infer(pool, images, n, spare, e)) != PT_OK)
        return rc;
    inf_mean_softmax(logits, spare, n, rpool_classes(pool));
    return PT_OK;
}

int inf_probs(rpool *pool, uint8_t *images, int n, int h, int w, int k, int flip,
              float *logits, double *probs, pt_err *e)
{
    int rc = rpool_infer(pool, images, n, logits, e);
    if (rc != PT_OK)
        return rc;
    for (int i = 0; i < n; i++)
        inf_softmax(logits + (size_t)i * k, k, probs + (size_t)i * k);
    if (!flip)
        return PT_OK;
    inf_flip(images, n, h, w);
    if ((rc = rpool_infer(pool, images, n, logits, e)) != PT_OK)
        return rc;
    double *q = malloc((size_t)k * sizeof *q);
    if (!q)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    for (int i = 0; i < n; i++) {
        double *row = probs + (size_t)i * k;
        inf_softmax(logits + (size_t)i * k, k, q);
        for (int c = 0; c < k; c++)
            row[c] = 0.5 * (row[c] + q[c]);
    }
    free(q);
    return PT_OK;
}
