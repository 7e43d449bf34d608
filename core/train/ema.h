/* ema — an exponential moving average of the weights (Polyak averaging): the weights
 * that validation and test predictions use, while training goes on with the live ones.
 *
 * After update t the average moves as avg = d x avg + (1 - d) x w with
 * d = min(decay, (1 + t) / (10 + t)), TensorFlow's ExponentialMovingAverage with
 * num_updates: early on it averages about the last 11% of the run, later the last
 * 1 / (1 - decay) updates. It covers every parameter and the batch-norm running
 * statistics, since inference reads both. Why: within 10 epochs on real photos the
 * live weights still jump from update to update (validation F1 swings by 0.05
 * between epochs), and their average validates higher and steadier
 * (bench/RESULTS.md, issue 12).
 *
 * Ownership: ema_init() mallocs the average (parameters, then buffers); ema_free()
 * releases it. The caller's arrays are only read (ema_update) or exchanged in place
 * (ema_swap), never kept.
 */
#ifndef PT_EMA_H
#define PT_EMA_H

#include <stddef.h>

#include "base/err.h"

typedef struct ema {
    float *avg;                 /* n_params, then n_buffers; NULL when off */
    size_t n_params, n_buffers;
    double decay;
} ema;

/* Starts the average at the current weights. decay <= 0 leaves it off (avg NULL). */
int ema_init(ema *a, double decay, const float *params, size_t n_params, const float *buffers,
             size_t n_buffers, pt_err *e);
void ema_free(ema *a);

/* Starts the average again at these weights (a checkpoint without one). */
void ema_restart(ema *a, const float *params, const float *buffers);

/* Whether the average is on. */
int ema_on(const ema *a);

/* The decay used after update t (1-based: the first update is t = 1). */
double ema_decay_at(const ema *a, long long t);

/* Folds the weights after update t into the average. */
void ema_update(ema *a, long long t, const float *params, const float *buffers);

/* Exchanges the average with the weights in place: the model then holds the average.
 * A second call puts everything back. No-op when off. */
void ema_swap(ema *a, float *params, float *buffers);

#endif
