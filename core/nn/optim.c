#include "nn/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

int opt_init(opt *o, opt_kind kind, size_t n, double momentum, double weight_decay)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->n = n;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-7;
    o->momentum = momentum;
    o->weight_decay = weight_decay;
    o->m = util_aligned_alloc(n * sizeof(float));
    if (!o->m)
        return -1;
    if (kind == OPT_ADAM) {
        o->v = util_aligned_alloc(n * sizeof(float));
        if (!o->v) {
            opt_free(o);
            return -1;
        }
    }
    return 0;
}

void opt_free(opt *o)
{
    util_aligned_free(o->m);
    util_aligned_free(o->v);
    o->m = o->v = NULL;
}

void opt_set_slow(opt *o, const uint8_t *mask, double scale, long long t0)
{
    o->slow = mask;
    o->slow_scale = (float)scale;
    o->slow_t0 = mask && t0 > 0 ? t0 : 0;
}

/* Adam's step size at its t-th step of a parameter, bias correction folded in. */
static float adam_step_size(const opt *o, double lr, long long t)
{
    if (t < 1)
        t = 1;
    double c1 = 1.0 - pow(o->beta1, (double)t), c2 = 1.0 - pow(o->beta2, (double)t);
    return (float)(lr * sqrt(c2) / c1);
}

size_t opt_state_floats(const opt *o)
{
    return o->kind == OPT_ADAM ? 2 * o->n : o->n;
}

void opt_step(opt *o, float *params, const float *grads, const uint8_t *trainable,
              const uint8_t *decay_mask, size_t lo, size_t hi, double lr, long long t)
{
    if (hi > o->n)
        hi = o->n;
    float wd = (float)(lr * o->weight_decay);
    /* Locals: through a uint8_t pointer the compiler must assume any store may
     * change o->slow, and would reload it for every parameter. */
    const uint8_t *slow = o->slow;
    const float slow_scale = o->slow_scale;
    if (o->kind == OPT_ADAM) {
        float b1 = (float)o->beta1, b2 = (float)o->beta2;
        float step = adam_step_size(o, lr, t);
        /* The slow parameters' step size, the scale folded in. Without a slow mask
         * nothing changes: the same bytes as before there was one. */
        float step_slow = slow ? adam_step_size(o, lr, t - o->slow_t0) * slow_scale : step;
        float eps = (float)o->eps;
        for (size_t i = lo; i < hi; i++) {
            if (trainable && !trainable[i])
                continue;
            float g = grads[i];
            float m = b1 * o->m[i] + (1.0f - b1) * g;
            float v = b2 * o->v[i] + (1.0f - b2) * g * g;
            o->m[i] = m;
            o->v[i] = v;
            int is_slow = slow && slow[i];
            float k = is_slow ? slow_scale : 1.0f;
            float w = params[i];
            if (decay_mask && decay_mask[i])
                w -= (wd * k) * w;
            params[i] = w - (is_slow ? step_slow : step) * m / (sqrtf(v) + eps);
        }
    } else {
        float mu = (float)o->momentum, flr = (float)lr;
        for (size_t i = lo; i < hi; i++) {
            if (trainable && !trainable[i])
                continue;
            float k = slow && slow[i] ? slow_scale : 1.0f;
            float vel = mu * o->m[i] - (flr * k) * grads[i];
            o->m[i] = vel;
            float w = params[i];
            if (decay_mask && decay_mask[i])
                w -= (wd * k) * w;
            params[i] = w + vel;
        }
    }
}
