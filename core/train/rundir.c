/* rundir — the run folder: its creation, log.txt, history.json, the validation
 * predictions, and the checkpoint (with the history and curves it carries so that
 * a resumed run shows its whole past). Every file is written atomically. In a job
 * of several ranks, rank 0 alone has a run folder: on the others run_dir stays
 * empty and nothing here writes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/util.h"
#include "train/checkpoint.h"
#include "train/trainer_impl.h"

/* A line of log.txt, after the local date and time it was written. */
static void log_file(trn *r, const char *line)
{
    if (!r->run_dir[0])
        return;
    char path[4200], stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm) || !strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm))
        util_copy(stamp, sizeof stamp, "?");
    util_path(path, sizeof path, "%s/log.txt", r->run_dir);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s %s\n", stamp, line);
        fclose(f);
    }
}

void trn_log(trn *r, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->env->log(r->env->ctx, line);
    log_file(r, line);
}

void trn_log_end(trn *r, const char *line)
{
    log_file(r, line);
}

int trn_make_run_dir(trn *r, pt_err *e)
{
    if (r->rank != 0)
        return PT_OK;
    if (r->cfg->resume[0]) {
        util_copy(r->run_dir, sizeof r->run_dir, r->cfg->resume);
        if (!util_is_dir(r->run_dir))
            return err_set(e, PT_EUSAGE, r->run_dir, PT_NO_RECORD, PT_NO_OFFSET,
                           "no run folder here to resume");
    } else if (r->cfg->out[0]) {
        util_copy(r->run_dir, sizeof r->run_dir, r->cfg->out);
        if (util_is_dir(r->run_dir)) {
            char probe[4200];
            util_path(probe, sizeof probe, "%s/checkpoint.ckpt", r->run_dir);
            if (util_is_file(probe))
                return err_set(e, PT_EUSAGE, r->run_dir, PT_NO_RECORD, PT_NO_OFFSET,
                               "holds a run already; continue it with --resume or choose another "
                               "--out");
        }
    } else {
        char stamp[32];
        time_t now = time(NULL);
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
        char name[64];
        run_model_name(r->cfg, name, sizeof name);
        snprintf(r->run_dir, sizeof r->run_dir, "runs/%s-%s", name, stamp);
        for (int k = 2; util_is_dir(r->run_dir) && k < 100; k++)
            snprintf(r->run_dir, sizeof r->run_dir, "runs/%s-%s-%d", name, stamp, k);
    }
    int rc = util_mkdirs(r->run_dir, e);
    if (rc != PT_OK)
        return rc;
    /* A run killed while writing a file leaves its NAME.tmp.PID (never a torn NAME):
     * cleared here, before this run writes its own. */
    int gone = util_remove_stale_temps(r->run_dir, NULL);
    if (gone > 0)
        trn_log(r, "removed %d temporary file%s left by a run that was killed while writing", gone,
                gone == 1 ? "" : "s");
    return PT_OK;
}

int trn_write_text(trn *r, const char *name, const char *text, size_t len, pt_err *e)
{
    if (r->rank != 0)
        return PT_OK;
    char path[4200];
    if (util_path(path, sizeof path, "%s/%s", r->run_dir, name) != 0)
        return err_set(e, PT_EUSAGE, r->run_dir, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    return util_write_file_atomic(path, text, len, e);
}

int trn_write_history(trn *r, pt_err *e)
{
    json_w j;
    json_init(&j, 1);
    json_arr(&j);
    for (int i = 0; i < r->hist_n; i++) {
        const run_epoch *h = &r->hist[i];
        json_obj(&j);
        json_key(&j, "epoch");
        json_int(&j, h->epoch);
        json_key(&j, "updates");
        json_int(&j, h->updates);
        json_key(&j, "train_loss");
        json_num(&j, h->train_loss);
        json_key(&j, "train_acc");
        json_num(&j, h->train_acc);
        json_key(&j, "train_precision");
        json_num(&j, h->train_precision);
        json_key(&j, "train_recall");
        json_num(&j, h->train_recall);
        json_key(&j, "train_f1");
        json_num(&j, h->train_f1);
        json_key(&j, "val_loss");
        json_num(&j, h->val_loss);
        json_key(&j, "val_acc");
        json_num(&j, h->val_acc);
        json_key(&j, "val_precision");
        json_num(&j, h->val_precision);
        json_key(&j, "val_recall");
        json_num(&j, h->val_recall);
        json_key(&j, "val_f1");
        json_num(&j, h->val_f1);
        json_key(&j, "train_timing");
        json_num(&j, h->seconds);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    size_t len;
    char *text = json_take(&j, &len);
    if (!text)
        return err_set(e, PT_ENOMEM, r->run_dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = trn_write_text(r, "history.json", text, len, e);
    free(text);
    return rc;
}

char *trn_int_list(const int32_t *v, long long n, size_t *len)
{
    json_w j;
    json_init(&j, 0);
    json_arr(&j);
    for (long long i = 0; i < n; i++)
        json_int(&j, v[i]);
    json_arr_end(&j);
    return json_take(&j, len);
}

/* valid_preds.jsonl: one line per epoch, {"epoch": N, "preds": [...]}. Lines of epochs
 * after `keep` (left by a run that stopped before its checkpoint) are dropped. */
int trn_append_valid_preds(trn *r, int epoch, const int32_t *preds, long long n, pt_err *e)
{
    if (r->rank != 0)
        return PT_OK;
    char path[4200];
    util_path(path, sizeof path, "%s/valid_preds.jsonl", r->run_dir);
    uint8_t *old = NULL;
    size_t olen = 0;
    if (util_is_file(path) && util_read_file(path, &old, &olen, NULL) != PT_OK)
        old = NULL;
    size_t keep = 0;
    if (old) {
        for (size_t at = 0; at < olen;) {
            char *nl = memchr(old + at, '\n', olen - at);
            size_t end = nl ? (size_t)((uint8_t *)nl - old) + 1 : olen;
            int ep = 0;
            if (sscanf((const char *)old + at, "{\"epoch\":%d", &ep) == 1 && ep < epoch)
                keep = end;
            else
                break;
            at = end;
        }
    }
    size_t plen;
    char *list = trn_int_list(preds, n, &plen);
    if (!list) {
        free(old);
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    size_t total = keep + plen + 64;
    char *buf = malloc(total);
    if (!buf) {
        free(old);
        free(list);
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    if (keep)
        memcpy(buf, old, keep);
    int k = snprintf(buf + keep, 64, "{\"epoch\":%d,\"preds\":", epoch);
    memcpy(buf + keep + k, list, plen);
    buf[keep + k + plen] = '}';
    buf[keep + k + plen + 1] = '\n';
    int rc = util_write_file_atomic(path, buf, keep + (size_t)k + plen + 2, e);
    free(buf);
    free(list);
    free(old);
    return rc;
}

static size_t history_blob(trn *r, uint8_t **out)
{
    size_t n = 4 + (size_t)r->hist_n * sizeof(run_epoch) + 12 + (size_t)r->curve_n * 3 * sizeof(float);
    uint8_t *b = malloc(n), *p = b;
    if (!b)
        return 0;
    int32_t v = r->hist_n;
    memcpy(p, &v, 4);
    p += 4;
    memcpy(p, r->hist, (size_t)r->hist_n * sizeof(run_epoch));
    p += (size_t)r->hist_n * sizeof(run_epoch);
    int32_t c[3] = { r->curve_n, r->curve_stride, 0 };
    memcpy(p, c, 12);
    p += 12;
    memcpy(p, r->curve_loss, (size_t)r->curve_n * sizeof(float));
    p += (size_t)r->curve_n * sizeof(float);
    memcpy(p, r->curve_acc, (size_t)r->curve_n * sizeof(float));
    p += (size_t)r->curve_n * sizeof(float);
    memcpy(p, r->curve_lr, (size_t)r->curve_n * sizeof(float));
    *out = b;
    return n;
}

static int unpack_history(trn *r, const uint8_t *b, size_t n)
{
    if (n < 16)
        return -1;
    int32_t hn;
    memcpy(&hn, b, 4);
    if (hn < 0 || hn > RUN_MAX_EPOCHS || 4 + (size_t)hn * sizeof(run_epoch) + 12 > n)
        return -1;
    memcpy(r->hist, b + 4, (size_t)hn * sizeof(run_epoch));
    r->hist_n = hn;
    const uint8_t *p = b + 4 + (size_t)hn * sizeof(run_epoch);
    int32_t c[3];
    memcpy(c, p, 12);
    p += 12;
    if (c[0] < 0 || c[0] > RUN_CURVE_POINTS || c[1] < 1 ||
        (size_t)(p - b) + (size_t)c[0] * 3 * sizeof(float) > n)
        return -1;
    r->curve_n = c[0];
    r->curve_stride = c[1];
    memcpy(r->curve_loss, p, (size_t)c[0] * sizeof(float));
    p += (size_t)c[0] * sizeof(float);
    memcpy(r->curve_acc, p, (size_t)c[0] * sizeof(float));
    p += (size_t)c[0] * sizeof(float);
    memcpy(r->curve_lr, p, (size_t)c[0] * sizeof(float));
    return 0;
}

int trn_save_checkpoint(trn *r, const char *why, pt_err *e)
{
    /* Every rank gets here at the same update; the moments of an optimizer sliced
     * across the ranks come together first. */
    int rc = r->st ? strat_share_optimizer(r->st, e) : PT_OK;
    if (rc != PT_OK || r->rank != 0)
        return rc;
    char path[4200];
    util_path(path, sizeof path, "%s/checkpoint.ckpt", r->run_dir);
    uint8_t *hist = NULL;
    size_t hist_bytes = history_blob(r, &hist);
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
        trn_tb_flush(r); /* the event files as far as the checkpoint */
        trn_publish_history(r);
    }
    return rc;
}

int trn_restore_checkpoint(trn *r, pt_err *e)
{
    char path[4200];
    util_path(path, sizeof path, "%s/checkpoint.ckpt", r->run_dir);
    if (!util_is_file(path)) {
        /* Stopped (killed) before its first checkpoint: nothing was kept but the
         * configuration, and the run starts again from the beginning. */
        trn_log(r, "resumed %s from the beginning: it has no checkpoint (it ended before its "
                   "first)",
                r->run_dir);
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
    if (l.history && unpack_history(r, l.history, l.history_bytes) != 0) {
        ckpt_free_loaded(&l);
        return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "the checkpoint's history is damaged");
    }
    ckpt_free_loaded(&l);
    trn_log(r, "resumed %s at update %lld (epoch %d, step %lld)", r->run_dir, r->update,
            r->epoch + 1, r->in_epoch);
    return PT_OK;
}
