/* rpool_ranks — the replica pool as a rank of a job of several processes (rpool.h):
 * the figures gathered, the gradient summed across the ranks through the reduce
 * plug-in (during the backward with overlap), the optimizer's slices shared. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "pool/rpool_impl.h"

/* One rank's figures of an update, gathered by every rank. */
typedef struct rank_figures {
    int n;                  /* replicas */
    int finite[RPOOL_RANK_REPLICAS];
    double loss_sum[RPOOL_RANK_REPLICAS];
    long long correct[RPOOL_RANK_REPLICAS], examples[RPOOL_RANK_REPLICAS];
} rank_figures;

/* The job's figures of this update in res (replica after replica across the ranks,
 * as one process with all the replicas would add them): 1 when every replica's
 * loss was finite. */
static int gather_figures(rpool *s, rpool_result *res, pt_err *e)
{
    rank_figures mine;
    memset(&mine, 0, sizeof mine);
    mine.n = s->R;
    for (int r = 0; r < s->R; r++) {
        mine.finite[r] = s->rep[r].finite;
        mine.loss_sum[r] = s->rep[r].loss_sum;
        mine.correct[r] = s->rep[r].correct;
        mine.examples[r] = s->rep[r].examples;
    }
    int N = s->red->ranks;
    rank_figures *all = malloc((size_t)N * sizeof *all);
    if (!all)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = s->red->allgather(&mine, all, sizeof mine, e);
    int finite = 1;
    for (int k = 0; rc == PT_OK && k < N; k++)
        for (int r = 0; r < all[k].n && r < RPOOL_RANK_REPLICAS; r++) {
            res->loss_sum += all[k].loss_sum[r];
            res->correct += all[k].correct[r];
            res->examples += all[k].examples[r];
            finite &= all[k].finite[r];
        }
    free(all);
    return rc == PT_OK ? finite : rc;
}

/* After the rank's reduce: this rank's slice of the gradient summed across the
 * ranks; 1 when the whole sum is finite (the ranks agree). */
static int sum_across_ranks(rpool *s, pt_err *e)
{
    int rc = s->red->reduce_scatter_floats(s->sum, s->n_params, e);
    if (rc != PT_OK)
        return rc;
    int bad = 0;
    for (size_t i = s->rank_lo; i < s->rank_hi; i++)
        if (!isfinite(s->sum[i])) {
            bad = 1;
            break;
        }
    if ((rc = s->red->max_int(&bad, e)) != PT_OK)
        return rc;
    return !bad;
}

/* Bucket b summed over the rank's replicas, and its sum across the ranks started. */
static int start_bucket(rpool *s, int b, pt_err *e)
{
    rpool_sum_replicas(s, s->bk_lo[b], s->bk_hi[b]);
    return s->red->sum_start(s->bk_sum[b], s->sum + s->bk_lo[b], s->bk_hi[b] - s->bk_lo[b], e);
}

/* The training job with its gradient sent during the backward: as the replicas'
 * backward passes finish the last layers, each finished bucket is summed over the
 * replicas and its sum across the ranks started, while the first layers' gradients
 * are still being computed; between news from the replicas the sums in flight are
 * tested (MPI moves them on only inside its calls). Returns with every bucket
 * summed across the ranks into s->sum. Only this thread calls MPI. */
static int train_overlapped(rpool *s, pt_err *e)
{
    int started = 0, ended = 0, rc = PT_OK;
    int done[RPOOL_BUCKETS] = { 0 };
    pthread_mutex_lock(&s->lock);
    rpool_start_job(s, JOB_TRAIN);
    for (;;) {
        size_t ready = 0;
        for (int r = 0; r < s->R; r++)
            if (s->rep[r].final_from > ready)
                ready = s->rep[r].final_from;
        int upto = started;
        while (upto < s->n_buckets && s->bk_lo[upto] >= ready)
            upto++;
        int all_done = s->done == s->R;
        if (all_done)
            break;
        if (upto == started) {
            if (ended < started) {
                /* Sums in flight: come back to test them within half a
                 * millisecond. */
                struct timespec ts;
                util_realtime_after(5e-4, &ts);
                pthread_cond_timedwait(&s->done_cv, &s->lock, &ts);
            } else {
                pthread_cond_wait(&s->done_cv, &s->lock);
            }
        }
        pthread_mutex_unlock(&s->lock);
        for (; rc == PT_OK && started < upto; started++) {
            s->bk_early++;
            rc = start_bucket(s, started, e);
        }
        for (int b = ended; rc == PT_OK && b < started; b++)
            if (!done[b])
                rc = s->red->sum_test(s->bk_sum[b], &done[b], e);
        while (ended < started && done[ended])
            ended++;
        pthread_mutex_lock(&s->lock);
        if (rc != PT_OK) {
            /* This rank's run ends (and with it the job: dist_abort); let the
             * replicas finish first. */
            while (s->done < s->R)
                pthread_cond_wait(&s->done_cv, &s->lock);
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    int jr = rpool_end_job(s, rc == PT_OK ? e : NULL);
    if (rc != PT_OK)
        return rc;
    if (jr != PT_OK)
        return jr;
    for (; started < s->n_buckets; started++)
        if ((rc = start_bucket(s, started, e)) != PT_OK)
            return rc;
    for (int b = ended; b < s->n_buckets; b++)
        if (!done[b] && (rc = s->red->sum_wait(s->bk_sum[b], e)) != PT_OK)
            return rc;
    s->bk_sent += s->n_buckets;
    return PT_OK;
}

/* An update of a rank of a job: as rpool_update's (rpool.c), with the figures, the
 * gradient and the BN records summed across the ranks, so that every rank takes
 * the same step. With overlap the gradient is summed across the ranks before the
 * figures are known: a step is taken when both the figures and the sum are
 * finite, the same decision as without (a non-finite sum is a skipped step
 * either way). */
int rpool_update_ranks(rpool *s, rpool_result *res, pt_err *e)
{
    int rc = s->overlap ? train_overlapped(s, e) : rpool_dispatch(s, JOB_TRAIN, e);
    if (rc != PT_OK)
        return rc;
    int finite = gather_figures(s, res, e);
    if (finite < 0)
        return finite;
    if (s->overlap) {
        for (size_t i = 0; finite && i < s->n_params; i++)
            if (!isfinite(s->sum[i]))
                finite = 0;
    } else if (finite) {
        if ((rc = rpool_dispatch(s, JOB_REDUCE, e)) != PT_OK)
            return rc;
        if ((finite = sum_across_ranks(s, e)) < 0)
            return finite;
    } else {
        for (int r = 0; r < s->R; r++)
            nn_zero_grads(s->rep[r].ctx);
    }
    if (finite) {
        if ((rc = rpool_dispatch(s, JOB_STEP, e)) != PT_OK)
            return rc;
        if (s->sliced &&
            (rc = s->red->allgather_floats(nn_params(s->cfg.model), s->n_params, e)) != PT_OK)
            return rc;
        nn_bn_records_take(s->ctxs, s->R, s->bn_rec);
        if ((rc = s->red->sum_doubles(s->bn_rec, nn_bn_record_count(s->cfg.model), e)) != PT_OK)
            return rc;
        nn_model_update_bn_records(s->cfg.model, s->bn_rec, s->t);
    } else {
        for (int r = 0; r < s->R; r++)
            nn_ctx_clear_bn_records(s->rep[r].ctx);
    }
    res->finite = finite;
    return PT_OK;
}

void rpool_get_overlap(const rpool *s, int *buckets, long long *sent, long long *early)
{
    *buckets = s->n_buckets;
    *sent = s->bk_sent;
    *early = s->bk_early;
}

int rpool_share_optimizer(rpool *s, pt_err *e)
{
    if (!s->sliced)
        return PT_OK;
    opt *o = s->cfg.optimizer;
    int rc = s->red->allgather_floats(o->m, o->n, e);
    if (rc == PT_OK && o->v)
        rc = s->red->allgather_floats(o->v, o->n, e);
    return rc;
}
