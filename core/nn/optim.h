/* optim — optimizers over flat parameter arrays (Adam, SGD with momentum).
 *
 * Works on any slice [lo, hi) of the arrays, so each replica thread can update its
 * own share of the parameters after the gradient reduction. Adam follows Keras
 * (beta1 0.9, beta2 0.999, epsilon 1e-7, bias correction folded into the step
 * size); SGD is Keras' momentum form v = mu v - lr g, w += v. Weight decay is
 * decoupled (w -= lr * wd * w) and applies only where decay_mask is 1.
 *
 * Ownership: opt_init() allocates the moment arrays; opt_free() releases them.
 * Parameters, gradients and masks belong to the caller.
 */
#ifndef PT_OPTIM_H
#define PT_OPTIM_H

#include <stddef.h>
#include <stdint.h>

typedef enum opt_kind { OPT_ADAM = 0, OPT_SGD = 1 } opt_kind;

typedef struct opt {
    opt_kind kind;
    size_t n;
    float *m;               /* Adam first moment / SGD velocity */
    float *v;               /* Adam second moment (NULL for SGD) */
    double beta1, beta2, eps, momentum, weight_decay;
    /* Fine-tuning: where slow[i] is 1 the learning rate is scaled by slow_scale (a
     * pretrained backbone learning more slowly than its new head). NULL: none.
     * The mask belongs to the caller. */
    const uint8_t *slow;
    float slow_scale;
    /* Updates made before the slow parameters began to train (they were frozen until
     * then, their moments still zero). Adam's bias correction counts their steps from
     * there, as PyTorch's per-parameter step count does: counted from update 1, the
     * correction is about 1 while v is still near zero, and with a steady gradient
     * their 10th step comes out 2.2 x too large, their 100th 1.4 x. */
    long long slow_t0;
} opt;

int opt_init(opt *o, opt_kind kind, size_t n, double momentum, double weight_decay);
void opt_free(opt *o);

/* One update of params[lo, hi) from grads[lo, hi). t is the 1-based update number
 * (Adam's bias correction). trainable / decay_mask may be NULL (all 1 / all 0). */
void opt_step(opt *o, float *params, const float *grads, const uint8_t *trainable,
              const uint8_t *decay_mask, size_t lo, size_t hi, double lr, long long t);

/* Scale the learning rate of the parameters where mask is 1 (NULL: none); they
 * began to train after update t0 (0: from the start). */
void opt_set_slow(opt *o, const uint8_t *mask, double scale, long long t0);

/* Bytes of state (m, v) for checkpoints, and their arrays. */
size_t opt_state_floats(const opt *o);

#endif
