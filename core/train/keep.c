/* keep — early stopping and the best epoch's weights (see keep.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "train/dist.h"
#include "train/keep.h"
#include "train/publish.h"
#include "train/trn.h"

static double monitored(const trn *r, const run_epoch *row)
{
    return r->cfg->monitor == RUN_MON_LOSS ? row->val_loss : row->val_f1;
}

/* The history row of epoch ep (1-based), or NULL. */
static const run_epoch *row_of(const trn *r, int ep)
{
    for (int i = 0; i < r->curves.hist_n; i++)
        if (r->curves.hist[i].epoch == ep)
            return &r->curves.hist[i];
    return NULL;
}

int trn_keep_epoch_kept(const trn *r)
{
    return run_keeps_best(r->cfg) && r->keep.best_epoch > 0 ? r->keep.best_epoch : r->loop.epoch;
}

/* best.ckpt: the weights validation just measured, as a checkpoint without the
 * optimizer (the live weights and their moving average, as checkpoint.ckpt holds them,
 * so that a run folder's model is read the same way from either file). */
static int save_best(trn *r, pt_err *e)
{
    char path[4200];
    run_path(&r->persist.folder, RUN_F_BEST, path, sizeof path);
    ckpt_data d = {
        .params = nn_params(r->parts.model),
        .n_params = nn_param_count(r->parts.model),
        .buffers = nn_buffers(r->parts.model),
        .n_buffers = nn_buffer_count(r->parts.model),
        .confusion = r->loop.train_cm,
        .n_classes = r->plan.n_classes,
        .config = r->env->cfg_text,
        .ema = r->parts.average.avg,
        .n_ema = r->parts.average.n_params + r->parts.average.n_buffers,
    };
    d.progress.update = r->loop.update;
    d.progress.epoch = r->loop.epoch;
    d.progress.seed = r->cfg->seed;
    d.progress.elapsed = trn_elapsed(r);
    return ckpt_save(path, &d, e);
}

int trn_keep_epoch(trn *r, const run_epoch *row, pt_err *e)
{
    const run_config *cfg = r->cfg;
    /* Rank 0 alone has the validation figures. */
    double v = monitored(r, row);
    int rc = r->plan.ranks > 1 ? dist_bcast(&v, sizeof v, 0, e) : PT_OK;
    if (rc != PT_OK)
        return rc;
    const char *key = run_monitor_key(cfg->monitor);
    if (!isfinite(v)) {
        /* No validation split (or no example of it read): nothing to compare. */
        if (trn_keep_watching(r) && !r->keep.noted)
            trn_log(r, "no %s to watch (no validation figures): --early-stop and --keep best "
                       "do nothing; the model is the last epoch's weights",
                    key);
        r->keep.noted = 1;
    } else if (r->keep.best_epoch == 0 || run_monitor_better(cfg->monitor, v, r->keep.best_value)) {
        r->keep.best_epoch = r->loop.epoch;
        r->keep.best_update = r->loop.update;
        r->keep.best_value = v;
        r->keep.since = 0;
        if (run_keeps_best(cfg) && r->plan.rank == 0) {
            if ((rc = save_best(r, e)) != PT_OK)
                return rc;
            trn_log(r, "best so far: epoch %d, %s %.4f; its weights kept (%s)", r->loop.epoch,
                    key, v, run_file_name(RUN_F_BEST));
        }
    } else {
        r->keep.since++;
        if (cfg->early_stop > 0 && r->keep.since >= cfg->early_stop &&
            r->loop.epoch < cfg->epochs) {
            r->keep.early = 1;
            trn_log(r, "early stop at epoch %d of %d: %d epoch%s without a better %s than epoch "
                       "%d's %.4f",
                    r->loop.epoch, cfg->epochs, r->keep.since, r->keep.since == 1 ? "" : "s", key,
                    r->keep.best_epoch, r->keep.best_value);
        }
    }
    return trn_keep_write_outcome(r, RUN_STOP_NONE, "", e);
}

int trn_keep_watching(const trn *r)
{
    return r->cfg->early_stop > 0 || run_keeps_best(r->cfg);
}

const ckpt_best *trn_keep_state(const trn *r, ckpt_best *b)
{
    memset(b, 0, sizeof *b);
    b->best_epoch = r->keep.best_epoch;
    b->best_update = r->keep.best_update;
    b->since = r->keep.since;
    b->monitor = r->cfg->monitor;
    b->best_value = r->keep.best_value;
    b->stopped_early = r->keep.early;
    b->epochs = r->cfg->epochs;
    b->early_stop = r->cfg->early_stop;
    return trn_keep_watching(r) ? b : NULL;
}

/* The state from the history alone (a checkpoint without it, or another --monitor). */
static void from_history(trn *r)
{
    long long updates = 0;
    for (int i = 0; i < r->curves.hist_n; i++) {
        const run_epoch *h = &r->curves.hist[i];
        double v = monitored(r, h);
        updates += h->updates;
        if (!isfinite(v))
            continue;
        if (r->keep.best_epoch == 0 || run_monitor_better(r->cfg->monitor, v, r->keep.best_value)) {
            r->keep.best_epoch = h->epoch;
            r->keep.best_update = updates;
            r->keep.best_value = v;
            r->keep.since = 0;
        } else {
            r->keep.since++;
        }
    }
}

/* The kept weights of the restored best epoch in the folder: there already, written
 * now from the restored weights (the checkpoint is that epoch's end), or the best
 * forgotten. */
static int check_kept(trn *r, pt_err *e)
{
    if (!run_keeps_best(r->cfg) || r->keep.best_epoch == 0)
        return PT_OK;
    char path[4200];
    run_path(&r->persist.folder, RUN_F_BEST, path, sizeof path);
    ckpt_progress p;
    if (util_is_file(path) && ckpt_peek(path, &p, NULL) == PT_OK && p.epoch == r->keep.best_epoch)
        return PT_OK;
    if (r->keep.best_epoch == r->loop.epoch && r->loop.in_epoch == 0) {
        trn_log(r, "epoch %d's weights, the best %s, kept from the checkpoint (%s)",
                r->keep.best_epoch, run_monitor_key(r->cfg->monitor), run_file_name(RUN_F_BEST));
        return save_best(r, e);
    }
    trn_log(r, "epoch %d's weights (the best %s, %.4f) are not in the run folder: the best "
               "epoch is chosen again from the next one",
            r->keep.best_epoch, run_monitor_key(r->cfg->monitor), r->keep.best_value);
    r->keep.best_epoch = 0;
    r->keep.best_value = NAN;
    r->keep.since = 0;
    return PT_OK;
}

int trn_keep_restore(trn *r, const ckpt_loaded *l, int done, pt_err *e)
{
    memset(&r->keep, 0, sizeof r->keep);
    r->keep.best_value = NAN;
    if (l->has_best && l->best.monitor == (int64_t)r->cfg->monitor) {
        r->keep.best_epoch = (int)l->best.best_epoch;
        r->keep.best_update = l->best.best_update;
        r->keep.best_value = l->best.best_value;
        r->keep.since = (int)l->best.since;
    } else {
        from_history(r);
    }
    if (l->has_best && l->best.stopped_early) {
        const char *key = run_monitor_key(r->cfg->monitor);
        if (done && r->cfg->epochs <= l->best.epochs && r->cfg->early_stop == l->best.early_stop)
            return err_set(e, PT_EUSAGE, r->persist.folder.dir, PT_NO_RECORD, PT_NO_OFFSET,
                           "the run stopped early at epoch %lld of %lld (%d epochs without a "
                           "better %s than epoch %d's): --epochs N with N above %lld, or "
                           "another --early-stop, continues it",
                           (long long)l->progress.epoch, (long long)l->best.epochs,
                           r->keep.since, key, r->keep.best_epoch, (long long)l->best.epochs);
        /* Asked to go on: a new count. */
        trn_log(r, "the run had stopped early at epoch %lld (%d epochs without a better %s than "
                   "epoch %d's %.4f); it goes on, and %d more without one stop it again",
                (long long)l->progress.epoch, r->keep.since, key, r->keep.best_epoch,
                r->keep.best_value, r->cfg->early_stop);
        r->keep.since = 0;
    }
    return check_kept(r, e);
}

int trn_keep_use_best(trn *r, float **saved, pt_err *e)
{
    *saved = NULL;
    int kept = trn_keep_epoch_kept(r);
    if (kept == r->loop.epoch)
        return PT_OK;
    nn_model *m = r->parts.model;
    size_t np = nn_param_count(m), nb = nn_buffer_count(m);
    size_t na = ema_on(&r->parts.average) ? np + nb : 0;
    float *copy = malloc((np + nb + na + 1) * sizeof *copy);
    if (!copy)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    memcpy(copy, nn_params(m), np * sizeof *copy);
    memcpy(copy + np, nn_buffers(m), nb * sizeof *copy);
    if (na)
        memcpy(copy + np + nb, r->parts.average.avg, na * sizeof *copy);
    int rc = PT_OK;
    if (r->plan.rank == 0) {
        char path[4200];
        run_path(&r->persist.folder, RUN_F_BEST, path, sizeof path);
        ckpt_loaded l;
        rc = ckpt_load(path, nn_params(m), np, nn_buffers(m), nb, NULL, NULL, 0, &l, e);
        if (rc == PT_OK) {
            if (na && (!l.ema || l.n_ema != na))
                rc = err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                             "the kept weights lack the moving average validation used");
            else if (l.progress.epoch != kept)
                rc = err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                             "holds epoch %lld's weights, the run kept epoch %d's",
                             (long long)l.progress.epoch, kept);
            else if (na)
                memcpy(r->parts.average.avg, l.ema, na * sizeof(float));
            ckpt_free_loaded(&l);
        }
    }
    /* The others wait for rank 0's weights, or its failure. */
    if (r->plan.ranks > 1) {
        int ok = rc;
        int brc = dist_bcast(&ok, sizeof ok, 0, e);
        if (brc == PT_OK && ok == PT_OK)
            brc = dist_bcast(nn_params(m), np * sizeof(float), 0, e);
        if (brc == PT_OK && ok == PT_OK)
            brc = dist_bcast(nn_buffers(m), nb * sizeof(float), 0, e);
        if (brc == PT_OK && ok == PT_OK && na)
            brc = dist_bcast(r->parts.average.avg, na * sizeof(float), 0, e);
        if (rc == PT_OK && ok != PT_OK)
            rc = err_set(e, ok, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "rank 0 could not read the kept weights");
        if (rc == PT_OK)
            rc = brc;
    }
    if (rc != PT_OK) {
        trn_keep_use_last(r, copy);
        return rc;
    }
    *saved = copy;
    return PT_OK;
}

void trn_keep_use_last(trn *r, float *saved)
{
    if (!saved)
        return;
    nn_model *m = r->parts.model;
    size_t np = nn_param_count(m), nb = nn_buffer_count(m);
    memcpy(nn_params(m), saved, np * sizeof *saved);
    memcpy(nn_buffers(m), saved + np, nb * sizeof *saved);
    if (ema_on(&r->parts.average))
        memcpy(r->parts.average.avg, saved + np + nb, (np + nb) * sizeof *saved);
    free(saved);
}

int trn_keep_write_outcome(trn *r, run_stop stop, const char *reason, pt_err *e)
{
    /* A folder with a summary keeps it true (a run resumed without --early-stop). */
    if (r->plan.rank != 0 ||
        (!trn_keep_watching(r) && !run_has(&r->persist.folder, RUN_F_SUMMARY)))
        return PT_OK;
    run_outcome o = { 0 };
    o.keep_best = run_keeps_best(r->cfg);
    o.monitor = r->cfg->monitor;
    o.early_stop = r->cfg->early_stop;
    o.epochs = r->loop.epoch;
    o.kept_epoch = trn_keep_epoch_kept(r);
    const run_epoch *kept = row_of(r, o.kept_epoch);
    o.kept_value = kept ? monitored(r, kept) : NAN;
    o.best_epoch = r->keep.best_epoch;
    o.best_value = r->keep.best_epoch > 0 ? r->keep.best_value : NAN;
    o.since_best = r->keep.since;
    o.stop = stop;
    util_copy(o.reason, sizeof o.reason, reason);
    return run_write_outcome(&r->persist.folder, &o, e);
}

void trn_keep_text(const trn *r, char *buf, size_t n)
{
    buf[0] = '\0';
    if (!run_keeps_best(r->cfg))
        return;
    const char *key = run_monitor_key(r->cfg->monitor);
    if (r->keep.best_epoch > 0)
        util_fmt(buf, n, "the model is epoch %d's weights (the best %s, %.4f)", r->keep.best_epoch,
                 key, r->keep.best_value);
    else
        util_fmt(buf, n, "the model is the last epoch's weights (no %s to choose a best by)", key);
}
