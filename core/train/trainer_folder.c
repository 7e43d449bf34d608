/* trainer_folder — the trainer's side of its run folder (run/runfolder.h owns
 * the format): the log (on screen and in log.txt; each bad record once a run), the
 * folder's making, and the checkpoint's save and restore (with the history and curves
 * it carries so that a resumed run shows its whole past). In a job of several ranks, rank 0 alone has a
 * run folder: on the others nothing here writes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "run/checkpoint.h"
#include "train/trainer_impl.h"

void trn_log(trn *r, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->env->log(r->env->ctx, line);
    run_log_line(&r->folder, line);
}

void trn_log_end(trn *r, const char *line)
{
    run_log_line(&r->folder, line);
}

int trn_make_run_dir(trn *r, pt_err *e)
{
    int gone;
    int rc = run_create(&r->folder, r->rank == 0, r->cfg, &gone, e);
    if (rc == PT_OK && gone > 0)
        trn_log(r, "removed %d temporary file%s left by a run that was killed while writing", gone,
                gone == 1 ? "" : "s");
    return rc;
}

int trn_save_checkpoint(trn *r, const char *why, pt_err *e)
{
    /* Every rank gets here at the same update; the moments of an optimizer sliced
     * across the ranks come together first. */
    int rc = r->st ? rpool_share_optimizer(r->st, e) : PT_OK;
    if (rc != PT_OK || r->rank != 0)
        return rc;
    char path[4200];
    run_path(&r->folder, RUN_F_CHECKPOINT, path, sizeof path);
    uint8_t *hist = NULL;
    size_t hist_bytes = crv_pack(&r->curves, &hist);
    ckpt_data d = {
        .params = nn_params(r->model), .n_params = nn_param_count(r->model),
        .buffers = nn_buffers(r->model), .n_buffers = nn_buffer_count(r->model),
        .opt_m = r->optim.m, .opt_v = r->optim.v, .n_opt = r->optim.n,
        .confusion = r->train_cm, .n_classes = r->n_classes,
        .history = hist, .history_bytes = hist_bytes, .config = r->env->cfg_text,
        .ema = r->avg.avg, .n_ema = r->avg.n_params + r->avg.n_buffers,
    };
    d.progress.update = r->update;
    d.progress.epoch = r->epoch;
    d.progress.update_in_epoch = r->in_epoch;
    d.progress.batches_consumed = r->update * r->A;
    d.progress.seed = r->cfg->seed;
    d.progress.epoch_seconds = r->in_epoch ? trn_epoch_elapsed(r) : 0;
    d.progress.elapsed = trn_elapsed(r);
    d.progress.loss_sum = r->loss_sum;
    d.progress.examples = r->examples;
    d.progress.correct = r->correct;
    rc = ckpt_save(path, &d, e);
    free(hist);
    /* A failure ends the run, which says why (once). */
    if (rc == PT_OK) {
        r->checkpoints++;
        util_fmt(r->last_ckpt, sizeof r->last_ckpt, "%s (update %lld, %s)", path, r->update, why);
        trn_log(r, "checkpoint written: %s after update %lld (%s)", path, r->update, why);
        tb_flush(&r->tb); /* the event files as far as the checkpoint */
        trn_publish_history(r);
    }
    return rc;
}

int trn_restore_checkpoint(trn *r, pt_err *e)
{
    char path[4200];
    run_path(&r->folder, RUN_F_CHECKPOINT, path, sizeof path);
    if (!util_is_file(path)) {
        /* Stopped (killed) before its first checkpoint: nothing was kept but the
         * configuration, and the run starts again from the beginning. */
        trn_log(r, "resumed %s from the beginning: it has no checkpoint (it ended before its "
                   "first)",
                r->folder.dir);
        return PT_OK;
    }
    ckpt_loaded l;
    int rc = ckpt_load(path, nn_params(r->model), nn_param_count(r->model), nn_buffers(r->model),
                   nn_buffer_count(r->model), r->optim.m, r->optim.v, r->optim.n, &l, e);
    if (rc != PT_OK)
        return rc;
    r->update = l.progress.update;
    r->epoch = (int)l.progress.epoch;
    r->in_epoch = l.progress.update_in_epoch;
    r->epoch_time_before = l.progress.epoch_seconds;
    r->elapsed_before = l.progress.elapsed;
    r->loss_sum = l.progress.loss_sum;
    r->examples = l.progress.examples;
    r->correct = l.progress.correct;
    /* A checkpoint without an average (--ema was off, or an older file) starts it at
     * the restored weights. */
    if (ema_on(&r->avg)) {
        size_t np = r->avg.n_params, nb = r->avg.n_buffers;
        if (l.ema && l.n_ema == np + nb) {
            memcpy(r->avg.avg, l.ema, (np + nb) * sizeof(float));
        } else if (l.ema) {
            ckpt_free_loaded(&l);
            return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                           "the checkpoint's moving average has %zu values, the model %zu",
                           l.n_ema, np + nb);
        } else {
            ema_restart(&r->avg, nn_params(r->model), nn_buffers(r->model));
        }
    }
    if (l.confusion && l.n_classes == r->n_classes)
        memcpy(r->train_cm, l.confusion, (size_t)r->n_classes * r->n_classes * sizeof(long long));
    if (l.history && crv_unpack(&r->curves, l.history, l.history_bytes) != 0) {
        ckpt_free_loaded(&l);
        return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "the checkpoint's history is damaged");
    }
    ckpt_free_loaded(&l);
    trn_log(r, "resumed %s at update %lld (epoch %d, step %lld)", r->folder.dir, r->update,
            r->epoch + 1, r->in_epoch);
    return PT_OK;
}

/* FNV-1a of a message. */
static uint64_t msg_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

void trn_data_error(void *ctx, const pt_err *err)
{
    trn *r = ctx;
    r->data_errors++;
    uint64_t h = msg_hash(err->msg);
    int seen = 0;
    pthread_mutex_lock(&r->err_lock);
    for (int i = 0; i < r->n_err_seen && !seen; i++)
        seen = r->err_seen[i] == h;
    int cap = (int)(sizeof r->err_seen / sizeof r->err_seen[0]);
    if (!seen && r->n_err_seen < cap)
        r->err_seen[r->n_err_seen++] = h;
    pthread_mutex_unlock(&r->err_lock);
    if (!seen)
        trn_log(r, "data error: %s", err->msg);
}
