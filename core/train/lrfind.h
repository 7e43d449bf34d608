/* lrfind — the learning-rate finder (fastai v2's lr_find, fastai/callback/schedule.py):
 * num_it training updates of the run's own model, optimizer, replicas, precision and
 * pipeline (augmentation, batch, accumulation, freeze settings: what the run would
 * train first), the rate of update i
 *     lr_i = start_lr * (end_lr / start_lr) ^ (i / (num_it - 1))
 * from 1e-7 to 10 over 100 updates; each update's training loss and its smoothed
 * value (avg = beta avg + (1 - beta) loss, smooth = avg / (1 - beta^(i+1)), beta 0.98),
 * stopping early when the smoothed loss passes 4x its best or a loss is not finite.
 * Suggestions as fastai's: on the points without the first num_it/10 and the last 5,
 * "valley" (the longest decreasing run's rule) and "steep" (the most negative slope
 * against log lr).
 *
 * Nothing of a run is touched: the finder prepares its own model, optimizer,
 * replicas and pipeline (the trainer's preparing steps, without a run folder, event
 * files or a moving average) and frees them at its end, so a run started after it
 * starts from the same weights, state and pipeline position, bit for bit.
 *
 * Threads: lrf_run runs on the engine's finder thread; the track's lock guards the
 * result, which lrf_track_get copies for any other thread.
 *
 * Ownership: lrf_track_init makes the track's lock and progress, lrf_track_free
 * frees them; the suggestion functions only read their arrays.
 */
#ifndef PT_LRFIND_H
#define PT_LRFIND_H

#include <pthread.h>

#include "base/err.h"
#include "run.h"
#include "train/progress.h"
#include "train/trainer.h"

#define LRF_START 1e-7
#define LRF_END 10.0
#define LRF_NUM_IT 100
#define LRF_BETA 0.98
#define LRF_DIV 4.0     /* fastai's stop_div: the smoothed loss over 4x its best */

/* The rate of update i of num_it from start to end (exponential). */
double lrf_rate(int i, int num_it, double start, double end);
/* One step of fastai's smoothed loss: *avg updated with loss; the debiased value
 * after i + 1 losses. */
double lrf_smooth(double *avg, double loss, int i);
/* fastai's valley on n losses: the index of the suggested point, or -1 when the
 * losses never fall (no decreasing pair). */
int lrf_valley(const double *loss, int n);
/* fastai's steep: the index i of the most negative (loss[i+1] - loss[i]) /
 * (log lr[i+1] - log lr[i]); -1 when n < 2. */
int lrf_steep(const double *lr, const double *loss, int n);
/* Both rules on a finder's recorded points (f->lr, f->smooth, f->n of f->num_it):
 * fills f->valley, f->steep and f->found (0: fewer than two points are left after
 * the drops, or the loss never fell). */
void lrf_suggest(run_lrfind *f);

typedef struct lrf_track {
    pthread_mutex_t lock;       /* res */
    run_lrfind res;
    prg *progress;              /* the finder's own run progress: what preparing does */
} lrf_track;

int lrf_track_init(lrf_track *t, const run_config *cfg, pt_err *e);
void lrf_track_free(lrf_track *t);
/* Back to a finder about to prepare (state RUN_LRF_PREPARING, no points). */
void lrf_track_reset(lrf_track *t);
void lrf_track_get(lrf_track *t, run_lrfind *out);

/* Whether the finder can run with cfg: PT_EUSAGE with e filled for a resumed run
 * (it chooses a new run's rate) or in a job of several processes (in_job). */
int lrf_check(const run_config *cfg, int in_job, pt_err *e);

/* The finder, start to end, with env as a run's (its progress: t->progress; its
 * control hook's TRN_STOP cancels). Publishes its end in t: RUN_LRF_DONE,
 * RUN_LRF_STOPPED or RUN_LRF_FAILED (e says why), and returns that state. */
run_lrf_state lrf_run(const trn_env *env, lrf_track *t, pt_err *e);

#endif
