/* lrfind — the learning-rate finder (see lrfind.h). */
#include "train/lrfind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "train/plan.h"
#include "train/publish.h"
#include "train/trn.h"

double lrf_rate(int i, int num_it, double start, double end)
{
    if (num_it < 2)
        return start;
    return start * pow(end / start, (double)i / (double)(num_it - 1));
}

double lrf_smooth(double *avg, double loss, int i)
{
    *avg = LRF_BETA * *avg + (1 - LRF_BETA) * loss;
    return *avg / (1 - pow(LRF_BETA, i + 1));
}

/* fastai's loop as it is, its quirks kept: max_start may be -1, and an index below
 * 0 counts from the end as Python's does. */
int lrf_valley(const double *loss, int n)
{
    if (n < 2 || n > RUN_LRF_POINTS)
        return -1;
    int lds[RUN_LRF_POINTS];
    int max_start = 0, max_end = 0;
    for (int i = 0; i < n; i++)
        lds[i] = 1;
    for (int i = 1; i < n; i++)
        for (int j = 0; j < i; j++) {
            if (loss[i] < loss[j] && lds[i] < lds[j] + 1)
                lds[i] = lds[j] + 1;
            if (lds[max_end] < lds[i]) {
                max_end = i;
                max_start = max_end - lds[max_end];
            }
        }
    if (lds[max_end] < 2)
        return -1;
    double sections = (max_end - max_start) / 3.0;
    int idx = max_start + (int)sections + (int)(sections / 2);
    return idx < 0 ? idx + n : idx;
}

int lrf_steep(const double *lr, const double *loss, int n)
{
    int best = -1;
    double min = INFINITY;
    for (int i = 0; i + 1 < n; i++) {
        double g = (loss[i + 1] - loss[i]) / (log(lr[i + 1]) - log(lr[i]));
        if (g < min) {
            min = g;
            best = i;
        }
    }
    return best;
}

void lrf_suggest(run_lrfind *f)
{
    /* fastai drops the first num_it // 10 points and the last 5. */
    int lo = f->num_it / 10, m = f->n - 5 - lo;
    f->found = 0;
    f->valley = f->steep = 0;
    if (m < 2)
        return;
    int v = lrf_valley(f->smooth + lo, m), s = lrf_steep(f->lr + lo, f->smooth + lo, m);
    if (v < 0 || s < 0)
        return;
    f->valley = f->lr[lo + v];
    f->steep = f->lr[lo + s];
    f->found = 1;
}

/* ---- the track ---- */

int lrf_track_init(lrf_track *t, const run_config *cfg, pt_err *e)
{
    memset(t, 0, sizeof *t);
    t->progress = prg_new(cfg);
    if (!t->progress)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    pthread_mutex_init(&t->lock, NULL);
    return PT_OK;
}

void lrf_track_free(lrf_track *t)
{
    if (!t->progress)
        return;
    prg_free(t->progress);
    pthread_mutex_destroy(&t->lock);
    memset(t, 0, sizeof *t);
}

void lrf_track_reset(lrf_track *t)
{
    pthread_mutex_lock(&t->lock);
    memset(&t->res, 0, sizeof t->res);
    t->res.state = RUN_LRF_PREPARING;
    t->res.num_it = LRF_NUM_IT;
    t->res.start_lr = LRF_START;
    t->res.end_lr = LRF_END;
    util_copy(t->res.message, sizeof t->res.message, "lr-find: preparing");
    pthread_mutex_unlock(&t->lock);
}

void lrf_track_get(lrf_track *t, run_lrfind *out)
{
    pthread_mutex_lock(&t->lock);
    *out = t->res;
    pthread_mutex_unlock(&t->lock);
    if (out->state == RUN_LRF_PREPARING) {
        /* What the preparing steps say, as a run's header would. */
        run_snapshot *s = prg_lock(t->progress);
        if (s->state == RUN_PREPARING)
            util_fmt(out->message, sizeof out->message, "lr-find: %s", s->message);
        prg_unlock(t->progress);
    }
}

/* ---- the updates ---- */

/* One update at rate lr: the run's own step (loop.c's, without its figures). The
 * mean loss, NAN when the update was not finite (the pool then took no step). */
static int update(trn *r, batch **batches, int i, double lr, double *loss, pt_err *e)
{
    *loss = NAN;
    int rc = trn_next_batches(r, batches, e);
    if (rc != PT_OK)
        return rc;
    rpool_result res;
    rc = rpool_update(r->parts.pool, batches, lr, i + 1,
                          r->cfg->seed ^ (uint64_t)i * 0x9e3779b97f4a7c15ULL, &res, NULL, e);
    for (int a = 0; a < r->plan.grad_acc; a++)
        pipe_release(r->parts.pipeline, batches[a]);
    *loss = rc == PT_OK && res.finite && res.examples ? res.loss_sum / (double)res.examples : NAN;
    return rc;
}

static int find(trn *r, lrf_track *t, pt_err *e)
{
    batch **batches = calloc((size_t)r->plan.grad_acc, sizeof *batches);
    if (!batches)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    pthread_mutex_lock(&t->lock);
    t->res.state = RUN_LRF_RUNNING;
    t->res.update_size = r->plan.update_size;
    pthread_mutex_unlock(&t->lock);
    trn_log(r, "lr-find: %d updates of %d examples, the rate from %g to %g", LRF_NUM_IT,
            r->plan.update_size, LRF_START, LRF_END);
    double avg = 0, best = INFINITY;
    int rc = PT_OK;
    for (int i = 0; i < LRF_NUM_IT && rc == PT_OK; i++) {
        if (trn_stop_asked(r)) {
            rc = PT_ESTOPPED;
            break;
        }
        double lr = lrf_rate(i, LRF_NUM_IT, LRF_START, LRF_END), loss;
        if ((rc = update(r, batches, i, lr, &loss, e)) != PT_OK)
            break;
        double smooth = isfinite(loss) ? lrf_smooth(&avg, loss, i) : NAN;
        pthread_mutex_lock(&t->lock);
        if (isfinite(smooth)) {
            t->res.lr[i] = lr;
            t->res.loss[i] = loss;
            t->res.smooth[i] = smooth;
            t->res.n = i + 1;
            util_fmt(t->res.message, sizeof t->res.message,
                     "lr-find: update %d/%d, lr %.2e, loss %.4f", i + 1, LRF_NUM_IT, lr, loss);
        } else {
            t->res.why_end = 2;
        }
        if (isfinite(smooth) && smooth < best)
            best = smooth;
        if (isfinite(smooth) && smooth > LRF_DIV * best)
            t->res.why_end = 1;
        int end = t->res.why_end != 0;
        pthread_mutex_unlock(&t->lock);
        if (end)
            break;
    }
    free(batches);
    return rc;
}

/* The end in the track: the suggestions, or why there are none. */
static run_lrf_state publish_end(trn *r, lrf_track *t, int rc, const pt_err *e)
{
    pthread_mutex_lock(&t->lock);
    run_lrfind *f = &t->res;
    if (rc == PT_ESTOPPED) {
        f->state = RUN_LRF_STOPPED;
        util_fmt(f->message, sizeof f->message, "lr-find: cancelled after %d updates", f->n);
    } else if (rc != PT_OK) {
        f->state = RUN_LRF_FAILED;
        util_fmt(f->message, sizeof f->message, "lr-find failed: %s", e ? e->msg : "error");
    } else {
        f->state = RUN_LRF_DONE;
        lrf_suggest(f);
        double scaling = r->cfg->lr_scaling > 0 ? r->cfg->lr_scaling : 1;
        f->lr_max = f->valley / scaling;
        const char *why = f->why_end == 1   ? "; stopped: the smoothed loss passed 4x its best"
                          : f->why_end == 2 ? "; stopped: a loss was not finite"
                                            : "";
        if (f->found)
            util_fmt(f->message, sizeof f->message,
                     "lr-find: suggested --lr-max %.2e (valley); steepest %.2e (%d updates%s)",
                     f->lr_max, f->steep, f->n, why);
        else
            util_fmt(f->message, sizeof f->message,
                     "lr-find: no suggestion: the smoothed loss never fell over the %d updates "
                     "recorded%s",
                     f->n, why);
    }
    run_lrf_state end = f->state;
    pthread_mutex_unlock(&t->lock);
    return end;
}

int lrf_check(const run_config *cfg, int in_job, pt_err *e)
{
    if (cfg->resume[0])
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "lr-find chooses the rate of a new run: --resume continues one");
    if (in_job)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "lr-find runs in one process, not in a job started by mpirun");
    return PT_OK;
}

run_lrf_state lrf_run(const trn_env *env, lrf_track *t, pt_err *e)
{
    trn *r = calloc(1, sizeof *r);
    if (!r) {
        err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        pthread_mutex_lock(&t->lock);
        t->res.state = RUN_LRF_FAILED;
        util_copy(t->res.message, sizeof t->res.message, "lr-find failed: out of memory");
        pthread_mutex_unlock(&t->lock);
        return RUN_LRF_FAILED;
    }
    trn_persist_init(&r->persist);
    r->cfg = env->cfg;
    r->env = env;
    r->finder = 1;
    r->loop.run_start = r->loop.epoch_start = util_now();
    int rc = trn_prepare(r, e);
    if (rc == PT_OK)
        rc = find(r, t, e);
    run_lrf_state end = publish_end(r, t, rc, e);
    trn_parts_free(&r->parts);
    trn_plan_free(&r->plan);
    trn_loop_free(&r->loop);
    trn_persist_free(&r->persist);
    free(r);
    return end;
}
