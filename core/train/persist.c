/* persist — the trainer's side of its run folder (persist.h; run/runfolder.h owns
 * the format): the log (on screen and in log.txt; each bad record once a run), the
 * folder's making, the configuration and class names, and the checkpoint's save and
 * restore (with the history and curves it carries so that a resumed run shows its
 * whole past). In a job of several ranks, rank 0 alone has a run folder: on the
 * others nothing here writes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "run/checkpoint.h"
#include "train/publish.h"
#include "train/trn.h"

void trn_log(trn *r, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->env->log(r->env->ctx, line);
    run_log_line(&r->persist.folder, line);
}

void trn_log_end(trn *r, const char *line)
{
    run_log_line(&r->persist.folder, line);
}

int trn_make_run_dir(trn *r, pt_err *e)
{
    int gone;
    int rc = run_create(&r->persist.folder, r->plan.rank == 0, r->cfg, &gone, e);
    if (rc == PT_OK)
        rc = run_keep_source(&r->persist.folder, r->cfg, e);
    if (rc == PT_OK && gone > 0)
        trn_log(r, "removed %d temporary file%s left by a run that was killed while writing", gone,
                gone == 1 ? "" : "s");
    return rc;
}

int trn_save_checkpoint(trn *r, const char *why, pt_err *e)
{
    /* Every rank gets here at the same update; the moments of an optimizer sliced
     * across the ranks come together first. */
    int rc = r->parts.pool ? rpool_share_optimizer(r->parts.pool, e) : PT_OK;
    if (rc != PT_OK || r->plan.rank != 0)
        return rc;
    char path[4200];
    run_path(&r->persist.folder, RUN_F_CHECKPOINT, path, sizeof path);
    uint8_t *hist = NULL;
    size_t hist_bytes = crv_pack(&r->curves, &hist);
    ckpt_best best;
    ckpt_data d = {
        .best = trn_keep_state(r, &best),
        .params = nn_params(r->parts.model),
        .n_params = nn_param_count(r->parts.model),
        .buffers = nn_buffers(r->parts.model),
        .n_buffers = nn_buffer_count(r->parts.model),
        .opt_m = r->parts.optimizer.m,
        .opt_v = r->parts.optimizer.v,
        .n_opt = r->parts.optimizer.n,
        .confusion = r->loop.train_cm,
        .n_classes = r->plan.n_classes,
        .history = hist,
        .history_bytes = hist_bytes,
        .config = r->env->cfg_text,
        .ema = r->parts.average.avg,
        .n_ema = r->parts.average.n_params + r->parts.average.n_buffers,
    };
    d.progress.update = r->loop.update;
    d.progress.epoch = r->loop.epoch;
    d.progress.update_in_epoch = r->loop.in_epoch;
    d.progress.batches_consumed = r->loop.update * r->plan.grad_acc;
    d.progress.seed = r->cfg->seed;
    d.progress.epoch_seconds = r->loop.in_epoch ? trn_epoch_elapsed(r) : 0;
    d.progress.elapsed = trn_elapsed(r);
    d.progress.loss_sum = r->loop.loss_sum;
    d.progress.examples = r->loop.examples;
    d.progress.correct = r->loop.correct;
    rc = ckpt_save(path, &d, e);
    free(hist);
    /* A failure ends the run, which says why (once). */
    if (rc == PT_OK) {
        r->persist.checkpoints++;
        util_fmt(r->persist.last_checkpoint, sizeof r->persist.last_checkpoint,
                 "%s (update %lld, %s)", path, r->loop.update, why);
        trn_log(r, "checkpoint written: %s after update %lld (%s)", path, r->loop.update, why);
        tb_flush(&r->persist.events); /* the event files as far as the checkpoint */
        trn_publish_history(r);
    }
    return rc;
}

/* Whether the log says the run was done since it last resumed: a "done: " line after
 * the last "resumed " one (a refused resume's "failed: " line after it changes nothing). */
static void log_done(void *ctx, const char *line)
{
    if (!strncmp(line, "done: ", 6))
        *(int *)ctx = 1;
    else if (!strncmp(line, "resumed ", 8))
        *(int *)ctx = 0;
}

int trn_restore_checkpoint(trn *r, pt_err *e)
{
    char path[4200];
    run_path(&r->persist.folder, RUN_F_CHECKPOINT, path, sizeof path);
    if (!util_is_file(path)) {
        /* Stopped (killed) before its first checkpoint: nothing was kept but the
         * configuration, and the run starts again from the beginning. */
        trn_log(r, "resumed %s from the beginning: it has no checkpoint (it ended before its "
                   "first)",
                r->persist.folder.dir);
        return PT_OK;
    }
    ckpt_loaded l;
    int rc = ckpt_load(path, nn_params(r->parts.model), nn_param_count(r->parts.model),
                       nn_buffers(r->parts.model), nn_buffer_count(r->parts.model),
                       r->parts.optimizer.m, r->parts.optimizer.v, r->parts.optimizer.n, &l, e);
    if (rc != PT_OK)
        return rc;
    r->loop.update = l.progress.update;
    r->loop.epoch = (int)l.progress.epoch;
    r->loop.in_epoch = l.progress.update_in_epoch;
    r->loop.epoch_time_before = l.progress.epoch_seconds;
    r->loop.elapsed_before = l.progress.elapsed;
    r->loop.loss_sum = l.progress.loss_sum;
    r->loop.examples = l.progress.examples;
    r->loop.correct = l.progress.correct;
    /* A checkpoint without an average (--ema was off, or an older file) starts it at
     * the restored weights. */
    if (ema_on(&r->parts.average)) {
        size_t np = r->parts.average.n_params, nb = r->parts.average.n_buffers;
        if (l.ema && l.n_ema == np + nb) {
            memcpy(r->parts.average.avg, l.ema, (np + nb) * sizeof(float));
        } else if (l.ema) {
            ckpt_free_loaded(&l);
            return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                           "the checkpoint's moving average has %zu values, the model %zu",
                           l.n_ema, np + nb);
        } else {
            ema_restart(&r->parts.average, nn_params(r->parts.model), nn_buffers(r->parts.model));
        }
    }
    if (l.confusion && l.n_classes == r->plan.n_classes)
        memcpy(r->loop.train_cm, l.confusion,
               (size_t)r->plan.n_classes * r->plan.n_classes * sizeof(long long));
    if (l.history && crv_unpack(&r->curves, l.history, l.history_bytes) != 0) {
        ckpt_free_loaded(&l);
        return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "the checkpoint's history is damaged");
    }
    /* A finished run has nothing to train: saying "resumed" and exiting 0 would read as
     * done work. Its files are left as they are. Finished is all epochs checkpointed and
     * the log's end written after the outputs: one killed between the last checkpoint
     * and its end writes the outputs now. An early stop is an end too (keep.c). */
    int done = 0;
    run_log_lines(r->persist.folder.dir, log_done, &done, NULL);
    rc = trn_keep_restore(r, &l, done, e);
    ckpt_free_loaded(&l);
    if (rc != PT_OK)
        return rc;
    if (r->loop.epoch >= r->cfg->epochs && done)
        return err_set(e, PT_EUSAGE, r->persist.folder.dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "the run is finished: epoch %d of %d done (update %lld); --epochs N "
                       "with N above %d continues it (petal-tui --resume %s --epochs %d)",
                       r->loop.epoch, r->cfg->epochs, r->loop.update, r->loop.epoch,
                       r->persist.folder.dir, r->loop.epoch + 5);
    trn_log(r, "resumed %s at update %lld (epoch %d, step %lld)", r->persist.folder.dir,
            r->loop.update, r->loop.epoch + 1, r->loop.in_epoch);
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
    r->persist.data_errors++;
    uint64_t h = msg_hash(err->msg);
    int seen = 0;
    pthread_mutex_lock(&r->persist.error_lock);
    for (int i = 0; i < r->persist.n_errors_seen && !seen; i++)
        seen = r->persist.errors_seen[i] == h;
    int cap = (int)(sizeof r->persist.errors_seen / sizeof r->persist.errors_seen[0]);
    if (!seen && r->persist.n_errors_seen < cap)
        r->persist.errors_seen[r->persist.n_errors_seen++] = h;
    pthread_mutex_unlock(&r->persist.error_lock);
    if (!seen)
        trn_log(r, "data error: %s", err->msg);
}

int trn_write_config(trn *r, pt_err *e)
{
    int rc = run_write_file(&r->persist.folder, RUN_F_CONFIG, r->env->cfg_text,
                            strlen(r->env->cfg_text), e);
    if (rc != PT_OK || !r->persist.folder.on)
        return rc;
    size_t cap = (size_t)r->plan.n_classes * RUN_NAME_MAX + 1, len = 0;
    char *text = malloc(cap);
    if (!text)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    for (int c = 0; c < r->plan.n_classes; c++) {
        char name[RUN_NAME_MAX];
        trn_class_name(r, c, name, sizeof name);
        /* A name is one line: a line break in classes.txt's source cannot split it. */
        for (char *q = name; *q; q++)
            if (*q == '\n' || *q == '\r')
                *q = ' ';
        len += (size_t)snprintf(text + len, cap - len, "%s\n", name);
    }
    rc = run_write_file(&r->persist.folder, RUN_F_CLASSES, text, len, e);
    free(text);
    return rc;
}

void trn_persist_init(trn_persist *p)
{
    pthread_mutex_init(&p->error_lock, NULL);
}

void trn_persist_free(trn_persist *p)
{
    pthread_mutex_destroy(&p->error_lock);
}
