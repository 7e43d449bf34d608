#include "train/trainer.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "base/rng.h"
#include "base/util.h"
#include "data/augment.h"
#include "data/pipeline.h"
#include "data/sampler.h"
#include "nn/nn.h"
#include "nn/nn_models.h"
#include "train/checkpoint.h"
#include "train/metrics.h"
#include "train/optim.h"
#include "train/schedule.h"
#include "train/strategy.h"

/* Smoothing time constant of the live throughput figures, in seconds. */
#define TELEMETRY_TAU 2.0
#define SPARK_PERIOD 0.5

typedef struct rep_tel {
    double busy, wait, idle, flops;
    long long ex;
    double ips, busy_pct, idle_pct, mxu_pct;   /* smoothed */
} rep_tel;

typedef struct run {
    const run_config *cfg;
    const trn_hooks *h;
    const ds_dataset *ds;
    int n_classes, img;
    int R, B, A, P, U;
    long long updates_per_epoch, total_updates;
    smp_table smp;
    int oversampling;
    long long train_counts[RUN_MAX_CLASSES], train_os[RUN_MAX_CLASSES], val_counts[RUN_MAX_CLASSES];
    nn_model *model;
    opt optim;
    int optim_ready;
    uint8_t *decay;
    strat *st;
    aug_chain *aug;
    pipeline *train;
    sched sch;
    double peak;
    char run_dir[4096];
    char cfg_text[16384];

    /* progress */
    long long update;           /* updates done */
    int epoch;                  /* epochs completed */
    long long in_epoch;         /* updates done in the current epoch */
    double epoch_time_before;   /* of the current epoch, before a resume */
    double elapsed_before;      /* of the run, before a resume */
    double t_epoch, t_run;      /* when this process began the epoch / the run */
    double loss_sum;
    long long examples, correct;
    long long *train_cm;
    int32_t *preds;
    long long data_errors;

    run_epoch *hist;
    int hist_n;
    float *curve_loss, *curve_acc, *curve_lr;
    int curve_n, curve_stride, curve_pending;
    double curve_acc_loss, curve_acc_acc, curve_acc_lr;

    rep_tel tel[RUN_MAX_REPLICAS];
    double tel_t, spark_t, sec_per_update, val_seconds;
    float spark[RUN_MAX_REPLICAS][RUN_SPARK_POINTS];
    int spark_n;
    char last_ckpt[512];
    long long checkpoints;
} run;

/* ------------------------------------------------------------------------------ */
/* publishing */

static void logf_(run *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void logf_(run *r, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->h->log(r->h->ctx, line);
    if (r->run_dir[0]) {
        char path[4200];
        util_path(path, sizeof path, "%s/log.txt", r->run_dir);
        FILE *f = fopen(path, "a");
        if (f) {
            fprintf(f, "%s\n", line);
            fclose(f);
        }
    }
}

static void set_state(run *r, run_state s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void set_state(run *r, run_state s, const char *fmt, ...)
{
    trn_state *t = r->h->lock(r->h->ctx);
    t->snap.state = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->snap.message, sizeof t->snap.message, fmt, ap);
    va_end(ap);
    r->h->unlock(r->h->ctx);
}

/* Drain the pipeline's error messages into the log and the counter. */
static void drain_errors(run *r, pipeline *p)
{
    char msg[1100];
    while (pipe_pop_error(p, msg, sizeof msg)) {
        r->data_errors++;
        logf_(r, "data error: %s", msg);
    }
}

static void publish_static(run *r)
{
    trn_state *t = r->h->lock(r->h->ctx);
    run_snapshot *s = &t->snap;
    util_copy(s->dataset, sizeof s->dataset, r->ds->root);
    util_copy(s->run_dir, sizeof s->run_dir, r->run_dir);
    if (!strcmp(r->cfg->model, "mobilenetv2"))
        snprintf(s->model, sizeof s->model, "mobilenetv2 x%.2g", r->cfg->width);
    else
        util_copy(s->model, sizeof s->model, r->cfg->model);
    s->replicas = s->n_replicas = r->R;
    s->batch_per_replica = r->B;
    s->grad_acc = r->A;
    s->update_size = r->U;
    s->image_size = r->img;
    s->n_classes = r->n_classes;
    s->epochs = r->cfg->epochs;
    s->steps_per_epoch = r->updates_per_epoch;
    s->total_steps = r->total_updates;
    s->sgemm_peak_gflops = r->peak;
    util_copy(s->blas_core, sizeof s->blas_core, nn_blas_corename());
    int k = r->n_classes < RUN_MAX_CLASSES ? r->n_classes : RUN_MAX_CLASSES;
    s->label_classes = k;
    memcpy(s->train_counts, r->train_counts, (size_t)k * sizeof(long long));
    memcpy(s->train_oversampled, r->train_os, (size_t)k * sizeof(long long));
    memcpy(s->val_counts, r->val_counts, (size_t)k * sizeof(long long));
    s->oversampling = r->oversampling;
    /* Class names, once. */
    free(t->names);
    t->names = calloc((size_t)r->n_classes, sizeof *t->names);
    if (t->names) {
        /* The dataset is shared with the preview thread: read it, never change it. */
        for (int c = 0; c < r->n_classes; c++) {
            if (c < r->ds->n_classes)
                util_copy(t->names[c], RUN_NAME_MAX, ds_class_name(r->ds, c));
            else if (r->n_classes == (int)ds_competition_class_count)
                util_copy(t->names[c], RUN_NAME_MAX, ds_competition_classes[c]);
            else
                util_fmt(t->names[c], RUN_NAME_MAX, "class %d", c);
        }
        t->n_names = r->n_classes;
    }
    r->h->unlock(r->h->ctx);
}

static void curve_push(run *r, double loss, double acc, double lr)
{
    /* Average `stride` updates into one point; halve the curve when it fills. */
    r->curve_acc_loss += loss;
    r->curve_acc_acc += acc;
    r->curve_acc_lr += lr;
    if (++r->curve_pending < r->curve_stride)
        return;
    double k = r->curve_pending;
    if (r->curve_n == RUN_CURVE_POINTS) {
        for (int i = 0; i < RUN_CURVE_POINTS / 2; i++) {
            r->curve_loss[i] = 0.5f * (r->curve_loss[2 * i] + r->curve_loss[2 * i + 1]);
            r->curve_acc[i] = 0.5f * (r->curve_acc[2 * i] + r->curve_acc[2 * i + 1]);
            r->curve_lr[i] = 0.5f * (r->curve_lr[2 * i] + r->curve_lr[2 * i + 1]);
        }
        r->curve_n = RUN_CURVE_POINTS / 2;
        r->curve_stride *= 2;
    }
    r->curve_loss[r->curve_n] = (float)(r->curve_acc_loss / k);
    r->curve_acc[r->curve_n] = (float)(r->curve_acc_acc / k);
    r->curve_lr[r->curve_n] = (float)(r->curve_acc_lr / k);
    r->curve_n++;
    r->curve_pending = 0;
    r->curve_acc_loss = r->curve_acc_acc = r->curve_acc_lr = 0;
}

static double run_elapsed(const run *r)
{
    return r->elapsed_before + (util_now() - r->t_run);
}

static double epoch_elapsed(const run *r)
{
    return r->epoch_time_before + (util_now() - r->t_epoch);
}

/* Per-update telemetry: smoothed images/s, busy/idle/MXU per replica. */
static void telemetry(run *r, double idle_this_update)
{
    double now = util_now();
    double dt = now - r->tel_t;
    if (dt <= 0)
        return;
    double a = 1.0 - exp(-dt / TELEMETRY_TAU);
    for (int q = 0; q < r->R && q < RUN_MAX_REPLICAS; q++) {
        strat_counters c;
        strat_get_counters(r->st, q, &c);
        rep_tel *t = &r->tel[q];
        double d_busy = c.busy - t->busy, d_flops = c.flops - t->flops;
        double ips = (double)(c.examples - t->ex) / dt;
        double busy = d_busy / dt, idle = idle_this_update / dt;
        double mxu = d_busy > 0 && r->peak > 0 ? d_flops / (d_busy * r->peak * 1e9) : 0;
        if (t->ips == 0 && t->busy_pct == 0) {
            t->ips = ips;
            t->busy_pct = busy;
            t->idle_pct = idle;
            t->mxu_pct = mxu;
        } else {
            t->ips += a * (ips - t->ips);
            t->busy_pct += a * (busy - t->busy_pct);
            t->idle_pct += a * (idle - t->idle_pct);
            t->mxu_pct += a * (mxu - t->mxu_pct);
        }
        t->busy = c.busy;
        t->wait = c.wait;
        t->flops = c.flops;
        t->ex = c.examples;
        t->idle += idle_this_update;
    }
    r->tel_t = now;
    if (now - r->spark_t >= SPARK_PERIOD) {
        r->spark_t = now;
        if (r->spark_n == RUN_SPARK_POINTS) {
            for (int q = 0; q < r->R && q < RUN_MAX_REPLICAS; q++)
                memmove(r->spark[q], r->spark[q] + 1, (RUN_SPARK_POINTS - 1) * sizeof(float));
            r->spark_n--;
        }
        for (int q = 0; q < r->R && q < RUN_MAX_REPLICAS; q++)
            r->spark[q][r->spark_n] = (float)r->tel[q].ips;
        r->spark_n++;
    }
}

static void publish_progress(run *r, double lr, double loss, double acc)
{
    pipe_stats ps;
    pipe_get_stats(r->train, &ps);
    trn_state *t = r->h->lock(r->h->ctx);
    run_snapshot *s = &t->snap;
    s->epoch = r->epoch + 1 <= r->cfg->epochs ? r->epoch + 1 : r->cfg->epochs;
    s->step = r->in_epoch;
    s->update = r->update;
    s->elapsed = run_elapsed(r);
    long long left = r->total_updates - r->update;
    int epochs_left = r->cfg->epochs - r->epoch;
    s->eta = (double)left * r->sec_per_update + epochs_left * r->val_seconds;
    s->lr = lr;
    s->last_loss = loss;
    s->last_acc = acc;
    s->running_loss = r->examples ? r->loss_sum / (double)r->examples : 0;
    s->running_acc = r->examples ? (double)r->correct / (double)r->examples : 0;
    s->curve_n = r->curve_n;
    s->curve_stride = r->curve_stride;
    memcpy(s->curve_loss, r->curve_loss, (size_t)r->curve_n * sizeof(float));
    memcpy(s->curve_acc, r->curve_acc, (size_t)r->curve_n * sizeof(float));
    memcpy(s->curve_lr, r->curve_lr, (size_t)r->curve_n * sizeof(float));
    double total = 0;
    for (int q = 0; q < r->R && q < RUN_MAX_REPLICAS; q++) {
        run_replica *e = &s->replica[q];
        e->images_per_sec = r->tel[q].ips;
        e->busy_pct = 100 * r->tel[q].busy_pct;
        e->idle_pct = 100 * r->tel[q].idle_pct;
        e->mxu_pct = 100 * r->tel[q].mxu_pct;
        memcpy(e->spark, r->spark[q], (size_t)r->spark_n * sizeof(float));
        e->spark_n = r->spark_n;
        total += r->tel[q].ips;
    }
    s->total_images_per_sec = total;
    s->queue_depth = ps.ready;
    s->queue_capacity = ps.capacity;
    s->data_errors = r->data_errors;
    r->h->unlock(r->h->ctx);
}

static void publish_history(run *r)
{
    trn_state *t = r->h->lock(r->h->ctx);
    int n = r->hist_n < RUN_MAX_EPOCHS ? r->hist_n : RUN_MAX_EPOCHS;
    if (n > 0) /* a run that failed while preparing has no history array */
        memcpy(t->snap.history, r->hist, (size_t)n * sizeof(run_epoch));
    t->snap.history_n = n;
    t->snap.checkpoints = r->checkpoints;
    util_copy(t->snap.last_checkpoint, sizeof t->snap.last_checkpoint, r->last_ckpt);
    t->snap.data_errors = r->data_errors;
    r->h->unlock(r->h->ctx);
}

/* ------------------------------------------------------------------------------ */
/* run folder outputs */

static int write_text(run *r, const char *name, const char *text, size_t len, pt_err *e)
{
    char path[4200];
    if (util_path(path, sizeof path, "%s/%s", r->run_dir, name) != 0)
        return err_set(e, PT_EUSAGE, r->run_dir, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    return util_write_file_atomic(path, text, len, e);
}

static int write_history(run *r, pt_err *e)
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
    int rc = write_text(r, "history.json", text, len, e);
    free(text);
    return rc;
}

static char *int_list(const int32_t *v, long long n, size_t *len)
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
static int append_valid_preds(run *r, int epoch, const int32_t *preds, long long n, pt_err *e)
{
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
    char *list = int_list(preds, n, &plen);
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

/* ------------------------------------------------------------------------------ */
/* checkpoints */

static size_t history_blob(run *r, uint8_t **out)
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

static int unpack_history(run *r, const uint8_t *b, size_t n)
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

static int save_checkpoint(run *r, const char *why, pt_err *e)
{
    char path[4200];
    util_path(path, sizeof path, "%s/checkpoint.ckpt", r->run_dir);
    uint8_t *hist = NULL;
    size_t hist_bytes = history_blob(r, &hist);
    ckpt_data d = {
        .params = nn_params(r->model), .n_params = nn_param_count(r->model),
        .buffers = nn_buffers(r->model), .n_buffers = nn_buffer_count(r->model),
        .opt_m = r->optim.m, .opt_v = r->optim.v, .n_opt = r->optim.n,
        .confusion = r->train_cm, .n_classes = r->n_classes,
        .history = hist, .history_bytes = hist_bytes, .config = r->cfg_text,
    };
    d.progress.update = r->update;
    d.progress.epoch = r->epoch;
    d.progress.update_in_epoch = r->in_epoch;
    d.progress.batches_consumed = r->update * r->A;
    d.progress.seed = r->cfg->seed;
    d.progress.epoch_seconds = r->in_epoch ? epoch_elapsed(r) : 0;
    d.progress.elapsed = run_elapsed(r);
    d.progress.loss_sum = r->loss_sum;
    d.progress.examples = r->examples;
    d.progress.correct = r->correct;
    int rc = ckpt_save(path, &d, e);
    free(hist);
    if (rc == PT_OK) {
        r->checkpoints++;
        util_fmt(r->last_ckpt, sizeof r->last_ckpt, "%s (update %lld, %s)", path, r->update, why);
        logf_(r, "checkpoint written: %s after update %lld (%s)", path, r->update, why);
        publish_history(r);
    } else {
        logf_(r, "checkpoint FAILED: %s", e->msg);
    }
    return rc;
}

/* ------------------------------------------------------------------------------ */
/* prediction passes */

static void softmax_top(const float *logits, int k, int *arg, float *p)
{
    int best = 0;
    for (int c = 1; c < k; c++)
        if (logits[c] > logits[best])
            best = c;
    double sum = 0;
    for (int c = 0; c < k; c++)
        sum += exp((double)logits[c] - logits[best]);
    *arg = best;
    *p = (float)(1.0 / sum);
}

static int open_eval_pipe(run *r, const ds_split *split, int labeled, pipeline **p, pt_err *e)
{
    pipe_config c;
    pipe_config_defaults(&c);
    c.split = split;
    c.labeled = labeled;
    c.n_classes = r->n_classes;
    c.image_w = c.image_h = r->img;
    c.batch_size = r->R * r->P;
    c.interleave = 1; /* file order: predictions line up with the split */
    c.workers = r->cfg->workers > 0 ? r->cfg->workers : 2;
    c.prefetch = 2;
    c.deterministic = 1;
    c.seed = r->cfg->seed;
    c.stop_on_error = r->cfg->stop_on_data_error;
    return pipe_create(&c, p, e);
}

/* Validation pass: fills the epoch's val metrics and publishes the results. */
/* Frees the arrays of a validation result and leaves it empty (epoch 0). */
static void val_free(trn_val *v)
{
    free(v->labels);
    free(v->preds);
    free(v->conf);
    free(v->src);
    free(v->confusion);
    memset(v, 0, sizeof *v);
}

static int validate(run *r, run_epoch *row, pt_err *e)
{
    const ds_split *vs = &r->ds->split[DS_VAL];
    if (vs->count == 0) {
        row->val_loss = row->val_acc = row->val_precision = row->val_recall = row->val_f1 = NAN;
        return PT_OK;
    }
    double t0 = util_now();
    pipeline *p;
    int rc = open_eval_pipe(r, vs, 1, &p, e);
    if (rc != PT_OK)
        return rc;
    long long cap = vs->count, n = 0;
    int32_t *labels = malloc((size_t)cap * sizeof *labels), *preds = malloc((size_t)cap * sizeof *preds);
    float *conf = malloc((size_t)cap * sizeof *conf);
    batch_src *src = malloc((size_t)cap * sizeof *src);
    float *logits = malloc((size_t)r->R * r->P * r->n_classes * sizeof *logits);
    long long *cm = calloc((size_t)r->n_classes * r->n_classes, sizeof *cm);
    if (!labels || !preds || !conf || !src || !logits || !cm) {
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory (validation)");
        goto out;
    }
    double loss = 0;
    batch *b;
    while ((rc = pipe_next(p, &b, e)) == 1) {
        if ((rc = strat_predict(r->st, b, logits, e)) != PT_OK) {
            pipe_release(p, b);
            break;
        }
        double l = 0;
        nn_softmax_ce(logits, b->n, r->n_classes, b->label, NULL, NULL, 0.0f, &l, NULL, NULL, NULL);
        loss += l;
        for (int i = 0; i < b->n && n < cap; i++, n++) {
            int arg;
            float pr;
            softmax_top(logits + (size_t)i * r->n_classes, r->n_classes, &arg, &pr);
            labels[n] = b->label[i];
            preds[n] = arg;
            conf[n] = pr;
            src[n] = b->src[i];
        }
        pipe_release(p, b);
        if (r->h->control(r->h->ctx) == TRN_STOP) {
            rc = PT_ESTOPPED;
            break;
        }
    }
    drain_errors(r, p);
    if (rc < 0)
        goto out;
    rc = PT_OK;
    met_confusion(labels, preds, (size_t)n, r->n_classes, cm);
    met_summary ms;
    met_from_confusion(cm, r->n_classes, &ms, NULL, NULL, NULL, NULL);
    row->val_loss = n ? loss / (double)n : NAN;
    row->val_acc = ms.acc;
    row->val_precision = ms.precision;
    row->val_recall = ms.recall;
    row->val_f1 = ms.f1;
    {
        /* valid_labels.json: the labels, in the split's order (rewritten each epoch: cheap). */
        size_t len;
        char *text = int_list(labels, n, &len);
        if (text) {
            write_text(r, "valid_labels.json", text, len, NULL);
            free(text);
        }
    }
    append_valid_preds(r, row->epoch, preds, n, NULL);
    /* Hand the arrays to the shared state (for inspect and the report). */
    {
        trn_state *t = r->h->lock(r->h->ctx);
        trn_val *v = &t->val;
        val_free(v);
        v->labels = labels;
        v->preds = preds;
        v->conf = conf;
        v->src = src;
        v->confusion = cm;
        v->n = n;
        v->n_classes = r->n_classes;
        v->epoch = row->epoch;
        r->h->unlock(r->h->ctx);
        labels = preds = NULL;
        conf = NULL;
        src = NULL;
        cm = NULL;
    }
    r->val_seconds = util_now() - t0;
out:
    free(labels);
    free(preds);
    free(conf);
    free(src);
    free(logits);
    free(cm);
    pipe_destroy(p);
    return rc;
}

static int predict_test(run *r, pt_err *e)
{
    const ds_split *ts = &r->ds->split[DS_TEST];
    if (ts->count == 0) {
        logf_(r, "no test split: no submission.csv");
        return PT_OK;
    }
    pipeline *p;
    int rc = open_eval_pipe(r, ts, 0, &p, e);
    if (rc != PT_OK)
        return rc;
    long long cap = ts->count, n = 0;
    int32_t *preds = malloc((size_t)cap * sizeof *preds);
    char (*ids)[BATCH_ID_MAX] = malloc((size_t)cap * sizeof *ids);
    float *logits = malloc((size_t)r->R * r->P * r->n_classes * sizeof *logits);
    if (!preds || !ids || !logits) {
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory (test)");
        goto out;
    }
    batch *b;
    while ((rc = pipe_next(p, &b, e)) == 1) {
        if ((rc = strat_predict(r->st, b, logits, e)) != PT_OK) {
            pipe_release(p, b);
            break;
        }
        for (int i = 0; i < b->n && n < cap; i++, n++) {
            int arg;
            float pr;
            softmax_top(logits + (size_t)i * r->n_classes, r->n_classes, &arg, &pr);
            preds[n] = arg;
            memcpy(ids[n], b->id[i], BATCH_ID_MAX);
        }
        pipe_release(p, b);
    }
    drain_errors(r, p);
    if (rc < 0)
        goto out;
    rc = PT_OK;
    {
        /* submission.csv in the test split's order, as the competition wants it. */
        size_t sz = 16 + (size_t)n * (BATCH_ID_MAX + 16);
        char *csv = malloc(sz), *q = csv;
        if (!csv) {
            rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
            goto out;
        }
        q += sprintf(q, "id,label\n");
        for (long long i = 0; i < n; i++)
            q += sprintf(q, "%s,%d\n", ids[i], preds[i]);
        rc = write_text(r, "submission.csv", csv, (size_t)(q - csv), e);
        free(csv);
        json_w j;
        json_init(&j, 0);
        json_arr(&j);
        for (long long i = 0; i < n; i++) {
            json_obj(&j);
            json_key(&j, "id");
            json_str(&j, ids[i]);
            json_key(&j, "label");
            json_int(&j, preds[i]);
            json_obj_end(&j);
        }
        json_arr_end(&j);
        size_t len;
        char *text = json_take(&j, &len);
        if (text && rc == PT_OK)
            rc = write_text(r, "test_preds.json", text, len, e);
        free(text);
        if (rc == PT_OK)
            logf_(r, "test predictions: %lld images -> %s/submission.csv", n, r->run_dir);
    }
out:
    free(preds);
    free(ids);
    free(logits);
    pipe_destroy(p);
    return rc;
}

/* ------------------------------------------------------------------------------ */
/* preparation */

int trn_replicas(const run_config *cfg)
{
    int R = cfg->replicas > 0 ? cfg->replicas : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (R < 1)
        R = 1;
    return R < RUN_MAX_REPLICAS ? R : RUN_MAX_REPLICAS;
}

int trn_image_size(const run_config *cfg, const ds_dataset *ds, int *img, pt_err *e)
{
    *img = cfg->image_size > 0 ? cfg->image_size : ds->image_w;
    if (*img > 0)
        return PT_OK;
    int w, h, rc = ds_probe_image_size(&ds->split[DS_TRAIN], &w, &h, e);
    if (rc == PT_OK)
        *img = w;
    return rc;
}

double trn_sgemm_peak(double seconds)
{
    nn_init();
    const int n = 512;
    float *a = util_aligned_alloc((size_t)n * n * sizeof(float));
    float *b = util_aligned_alloc((size_t)n * n * sizeof(float));
    float *c = util_aligned_alloc((size_t)n * n * sizeof(float));
    if (!a || !b || !c) {
        util_aligned_free(a);
        util_aligned_free(b);
        util_aligned_free(c);
        return 0;
    }
    for (int i = 0; i < n * n; i++) {
        a[i] = (float)((i * 7) % 13) * 0.01f;
        b[i] = (float)((i * 5) % 11) * 0.01f;
    }
    double best = 0, t_end = util_now() + seconds;
    do {
        double t0 = util_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f,
                    c, n);
        double dt = util_now() - t0;
        double g = 2.0 * n * n * n / dt * 1e-9;
        if (g > best)
            best = g;
    } while (util_now() < t_end);
    util_aligned_free(a);
    util_aligned_free(b);
    util_aligned_free(c);
    return best;
}

static int scan_error(void *ctx, const pt_err *err)
{
    run *r = ctx;
    r->data_errors++;
    logf_(r, "data error: %s", err->msg);
    return r->cfg->stop_on_data_error;
}

static int make_run_dir(run *r, pt_err *e)
{
    if (r->cfg->resume[0]) {
        util_copy(r->run_dir, sizeof r->run_dir, r->cfg->resume);
        return PT_OK;
    }
    if (r->cfg->out[0]) {
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
        snprintf(r->run_dir, sizeof r->run_dir, "runs/%s-%s", r->cfg->model, stamp);
        for (int k = 2; util_is_dir(r->run_dir) && k < 100; k++)
            snprintf(r->run_dir, sizeof r->run_dir, "runs/%s-%s-%d", r->cfg->model, stamp, k);
    }
    return util_mkdirs(r->run_dir, e);
}

static int build_model(run *r, pt_err *e)
{
    if (!strcmp(r->cfg->model, "small"))
        r->model = nn_build_small(r->img, r->img, r->n_classes, (float)r->cfg->dropout, e);
    else if (!strcmp(r->cfg->model, "mobilenetv2"))
        r->model = nn_build_mobilenetv2(r->img, r->img, r->n_classes, (float)r->cfg->width,
                                        (float)r->cfg->dropout, e);
    else
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "unknown model '%s'",
                       r->cfg->model);
    if (!r->model)
        return e ? e->code : PT_ENOMEM;
    nn_model_init_params(r->model, r->cfg->seed);
    if (r->cfg->freeze_backbone) {
        int rc = nn_model_freeze_backbone(r->model);
        if (rc != PT_OK)
            return err_set(e, rc, NULL, PT_NO_RECORD, PT_NO_OFFSET, "cannot freeze the backbone");
    }
    size_t np = nn_param_count(r->model);
    r->decay = calloc(np ? np : 1, 1);
    if (!r->decay)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    /* Weight decay on conv and dense weights only, not on biases or BN. */
    for (int i = 0; i < nn_node_count(r->model); i++) {
        nn_node_info ni;
        if (nn_node_get(r->model, i, &ni) != PT_OK)
            continue;
        if (ni.op == NN_OP_CONV || ni.op == NN_OP_DENSE)
            memset(r->decay + ni.param_offset, 1, ni.weight_count);
    }
    if (opt_init(&r->optim, r->cfg->optimizer == RUN_OPT_SGD ? OPT_SGD : OPT_ADAM, np,
                 r->cfg->momentum, r->cfg->weight_decay) != 0)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    r->optim_ready = 1;
    return PT_OK;
}

static int prepare(run *r, pt_err *e)
{
    const run_config *cfg = r->cfg;
    int rc = r->h->data(r->h->ctx, &r->ds, e);
    if (rc != PT_OK)
        return rc;
    if (r->ds->split[DS_TRAIN].count == 0)
        return err_set(e, PT_ENODATA, r->ds->root, PT_NO_RECORD, PT_NO_OFFSET,
                       "no training records (train/ is missing or empty)");

    set_state(r, RUN_PREPARING, "scanning labels of %lld training and %lld validation records",
              r->ds->split[DS_TRAIN].count, r->ds->split[DS_VAL].count);
    int32_t *tl = NULL, *vl = NULL;
    long long tn = 0, vn = 0, bad = 0;
    rc = ds_scan_labels(&r->ds->split[DS_TRAIN], &tl, &tn, &bad, scan_error, r, e);
    if (rc == PT_OK && r->ds->split[DS_VAL].count > 0)
        rc = ds_scan_labels(&r->ds->split[DS_VAL], &vl, &vn, &bad, scan_error, r, e);
    if (rc != PT_OK) {
        free(tl);
        free(vl);
        return rc;
    }
    int max = -1;
    for (long long i = 0; i < tn; i++)
        if (tl[i] > max)
            max = tl[i];
    for (long long i = 0; i < vn; i++)
        if (vl[i] > max)
            max = vl[i];
    r->n_classes = r->ds->n_classes > max ? r->ds->n_classes : max + 1;
    if (r->n_classes < 2 || r->n_classes > RUN_MAX_CLASSES) {
        free(tl);
        free(vl);
        return err_set(e, PT_ENODATA, r->ds->root, PT_NO_RECORD, PT_NO_OFFSET,
                       "%d classes found; between 2 and %d are supported", r->n_classes,
                       RUN_MAX_CLASSES);
    }
    smp_count_labels(tl, (size_t)tn, r->n_classes, r->train_counts);
    smp_count_labels(vl, (size_t)vn, r->n_classes, r->val_counts);

    long long examples = tn;
    memcpy(r->train_os, r->train_counts, (size_t)r->n_classes * sizeof(long long));
    if (cfg->oversample != 0) {
        if (smp_build(&r->smp, r->train_counts, r->n_classes, cfg->oversample > 0 ? cfg->oversample : 0) != 0) {
            free(tl);
            free(vl);
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        }
        r->oversampling = 1;
        examples = smp_expected_total(&r->smp, r->train_counts);
        smp_count_pass(&r->smp, tl, (size_t)tn, cfg->seed, r->train_os);
    }
    free(tl);
    free(vl);

    if ((rc = trn_image_size(cfg, r->ds, &r->img, e)) != PT_OK)
        return rc;
    r->R = trn_replicas(cfg);
    r->B = cfg->batch_per_replica;
    r->A = cfg->grad_acc;
    r->P = r->B; /* prediction reuses the training contexts: no extra memory */
    r->U = r->R * r->B * r->A;
    r->updates_per_epoch = examples / r->U;
    if (r->updates_per_epoch < 1)
        return err_set(e, PT_EUSAGE, r->ds->root, PT_NO_RECORD, PT_NO_OFFSET,
                       "%lld training examples cannot fill one update of %d (replicas x batch "
                       "x accumulation)",
                       examples, r->U);
    r->total_updates = r->updates_per_epoch * cfg->epochs;
    sched_init(&r->sch, (sched_kind)cfg->schedule, cfg->lr_start, cfg->lr_max, cfg->lr_end,
               cfg->warmup, cfg->lr_scaling, r->total_updates);

    if ((rc = make_run_dir(r, e)) != PT_OK)
        return rc;
    set_state(r, RUN_PREPARING, "building %s for %dx%d input, %d classes", cfg->model, r->img,
              r->img, r->n_classes);
    if ((rc = build_model(r, e)) != PT_OK)
        return rc;
    strat_config sc = { .model = r->model, .optimizer = &r->optim, .decay_mask = r->decay,
                        .replicas = r->R, .batch_per_replica = r->B, .grad_acc = r->A,
                        .predict_batch = r->P };
    if ((rc = strat_new(&sc, &r->st, e)) != PT_OK)
        return rc;
    set_state(r, RUN_PREPARING, "measuring the single-core sgemm peak");
    r->peak = trn_sgemm_peak(0.3);

    if (strcmp(cfg->augment, "none") != 0 && cfg->augment[0]) {
        if ((rc = aug_parse(cfg->augment, &r->aug, e)) != PT_OK)
            return rc;
    }
    r->train_cm = calloc((size_t)r->n_classes * r->n_classes, sizeof *r->train_cm);
    r->preds = calloc((size_t)r->U, sizeof *r->preds);
    r->hist = calloc(RUN_MAX_EPOCHS, sizeof *r->hist);
    r->curve_loss = calloc(RUN_CURVE_POINTS, sizeof(float));
    r->curve_acc = calloc(RUN_CURVE_POINTS, sizeof(float));
    r->curve_lr = calloc(RUN_CURVE_POINTS, sizeof(float));
    if (!r->train_cm || !r->preds || !r->hist || !r->curve_loss || !r->curve_acc || !r->curve_lr)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    r->curve_stride = 1;

    cfg_format(cfg, r->cfg_text, sizeof r->cfg_text);
    if (cfg->resume[0]) {
        char path[4200];
        util_path(path, sizeof path, "%s/checkpoint.ckpt", r->run_dir);
        ckpt_loaded l;
        rc = ckpt_load(path, nn_params(r->model), nn_param_count(r->model), nn_buffers(r->model),
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
        if (l.confusion && l.n_classes == r->n_classes)
            memcpy(r->train_cm, l.confusion, (size_t)r->n_classes * r->n_classes * sizeof(long long));
        if (l.history && unpack_history(r, l.history, l.history_bytes) != 0) {
            ckpt_free_loaded(&l);
            return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                           "the checkpoint's history is damaged");
        }
        ckpt_free_loaded(&l);
        logf_(r, "resumed %s at update %lld (epoch %d, step %lld)", r->run_dir, r->update,
              r->epoch + 1, r->in_epoch);
    }
    if ((rc = write_text(r, "config", r->cfg_text, strlen(r->cfg_text), e)) != PT_OK)
        return rc;

    pipe_config pc;
    pipe_config_defaults(&pc);
    pc.split = &r->ds->split[DS_TRAIN];
    pc.n_classes = r->n_classes;
    pc.image_w = pc.image_h = r->img;
    pc.batch_size = r->R * r->B;
    pc.drop_remainder = 1;
    pc.repeat = 1;
    pc.shuffle_buffer = cfg->shuffle_buffer;
    pc.shuffle_shards = 1;
    pc.workers = cfg->workers > 0 ? cfg->workers : 2;
    pc.prefetch = cfg->prefetch > 0 ? cfg->prefetch : 4;
    pc.deterministic = cfg->deterministic;
    pc.seed = cfg->seed;
    pc.oversample = r->oversampling ? &r->smp : NULL;
    if (r->aug) {
        pc.augment = aug_pipe_hook;
        pc.augment_ctx = r->aug;
        pc.augment_ws_free = aug_pipe_ws_free;
    }
    pc.stop_on_error = cfg->stop_on_data_error;
    pc.start_batch = (uint64_t)(r->update * r->A);
    if ((rc = pipe_create(&pc, &r->train, e)) != PT_OK)
        return rc;
    publish_static(r);
    publish_history(r);
    char summary[512];
    snprintf(summary, sizeof summary,
             "%s: %lld train / %lld val / %lld test records, %d classes, %dx%d; %d replicas x %d "
             "x %d accumulation = %d per update, %lld updates per epoch%s",
             r->ds->root, r->ds->split[DS_TRAIN].count, r->ds->split[DS_VAL].count,
             r->ds->split[DS_TEST].count, r->n_classes, r->img, r->img, r->R, r->B, r->A, r->U,
             r->updates_per_epoch, r->oversampling ? " (oversampled)" : "");
    logf_(r, "%s", summary);
    logf_(r, "model %s: %zu parameters (%zu trainable), %.1f MFLOP per image forward; sgemm "
             "peak %.1f GFLOP/s (%s)",
          cfg->model, nn_param_count(r->model), nn_trainable_count(r->model),
          nn_flops(r->model, 1, 0) * 1e-6, r->peak, nn_blas_corename());
    return PT_OK;
}

/* ------------------------------------------------------------------------------ */
/* the loop */

static void end_of_epoch_row(run *r, run_epoch *row)
{
    memset(row, 0, sizeof *row);
    row->epoch = r->epoch + 1;
    row->updates = (int)r->updates_per_epoch;
    row->seconds = epoch_elapsed(r);
    met_summary ms;
    met_from_confusion(r->train_cm, r->n_classes, &ms, NULL, NULL, NULL, NULL);
    row->train_loss = r->examples ? r->loss_sum / (double)r->examples : NAN;
    row->train_acc = r->examples ? (double)r->correct / (double)r->examples : NAN;
    row->train_precision = ms.precision;
    row->train_recall = ms.recall;
    row->train_f1 = ms.f1;
}

static int pause_point(run *r, pt_err *e, int *stopped)
{
    int c = r->h->control(r->h->ctx);
    if (c == TRN_GO)
        return PT_OK;
    if (c == TRN_PAUSE) {
        set_state(r, RUN_PAUSED, "paused at update %lld (epoch %d, step %lld); writing a checkpoint",
                  r->update, r->epoch + 1, r->in_epoch);
        double t_pause = util_now();
        save_checkpoint(r, "pause", e);
        set_state(r, RUN_PAUSED, "paused at update %lld (epoch %d, step %lld)", r->update,
                  r->epoch + 1, r->in_epoch);
        c = r->h->wait_resume(r->h->ctx);
        /* Paused time is not training time. */
        double away = util_now() - t_pause;
        r->t_epoch += away;
        r->t_run += away;
        r->tel_t = util_now();
        if (c == TRN_GO) {
            set_state(r, RUN_RUNNING, "running");
            return PT_OK;
        }
    }
    *stopped = 1;
    save_checkpoint(r, "stop", e);
    return PT_OK;
}

run_state trn_run(const run_config *cfg, const trn_hooks *h, pt_err *e)
{
    run *r = calloc(1, sizeof *r);
    if (!r) {
        err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        return RUN_FAILED;
    }
    r->cfg = cfg;
    r->h = h;
    r->t_run = r->t_epoch = r->tel_t = r->spark_t = util_now();
    run_state final = RUN_FAILED;
    int rc = prepare(r, e);
    batch **batches = NULL;
    if (rc != PT_OK)
        goto done;
    batches = calloc((size_t)r->A, sizeof *batches);
    if (!batches) {
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        goto done;
    }
    set_state(r, RUN_RUNNING, "running");
    r->t_run = r->t_epoch = r->tel_t = util_now();
    int stopped = 0;
    while (r->epoch < cfg->epochs && !stopped) {
        while (r->in_epoch < r->updates_per_epoch) {
            if ((rc = pause_point(r, e, &stopped)) != PT_OK || stopped)
                break;
            double t0 = util_now();
            for (int a = 0; a < r->A; a++) {
                rc = pipe_next(r->train, &batches[a], e);
                if (rc != 1) {
                    for (int k = 0; k < a; k++)
                        pipe_release(r->train, batches[k]);
                    if (rc == 0)
                        rc = err_set(e, PT_ENODATA, r->ds->root, PT_NO_RECORD, PT_NO_OFFSET,
                                     "the training stream ended (every record unreadable?)");
                    goto done;
                }
            }
            double idle = util_now() - t0;
            double lr = sched_lr(&r->sch, r->update);
            strat_result res;
            rc = strat_update(r->st, batches, lr, r->update + 1, cfg->seed ^ (uint64_t)r->update * 0x9e3779b97f4a7c15ULL,
                              &res, r->preds, e);
            if (rc == PT_OK && res.finite) {
                long long off = 0;
                for (int a = 0; a < r->A; a++) {
                    const batch *b = batches[a];
                    for (int i = 0; i < b->n; i++) {
                        int t = batch_dominant_label(b, i), p = r->preds[off + i];
                        if (t >= 0 && t < r->n_classes && p >= 0 && p < r->n_classes)
                            r->train_cm[(size_t)t * r->n_classes + p]++;
                    }
                    off += b->n;
                }
            }
            for (int a = 0; a < r->A; a++)
                pipe_release(r->train, batches[a]);
            drain_errors(r, r->train);
            if (rc != PT_OK)
                goto done;
            if (!res.finite) {
                trn_state *t = h->lock(h->ctx);
                t->snap.nonfinite_at = r->update + 1;
                h->unlock(h->ctx);
                logf_(r, "non-finite loss at update %lld (epoch %d, step %lld): the update was "
                         "skipped; the last good checkpoint is kept%s%s",
                      r->update + 1, r->epoch + 1, r->in_epoch + 1, r->last_ckpt[0] ? ": " : "",
                      r->last_ckpt);
                set_state(r, RUN_PAUSED,
                          "non-finite loss at update %lld (epoch %d, step %lld); paused, weights "
                          "unchanged (lower the learning rate?)",
                          r->update + 1, r->epoch + 1, r->in_epoch + 1);
                int c = h->wait_resume(h->ctx);
                if (c != TRN_GO) {
                    stopped = 2; /* no new checkpoint: keep the last good one */
                    break;
                }
                set_state(r, RUN_RUNNING, "running");
                continue;
            }
            r->update++;
            r->in_epoch++;
            r->loss_sum += res.loss_sum;
            r->examples += res.examples;
            r->correct += res.correct;
            double dt = util_now() - t0;
            r->sec_per_update = r->sec_per_update > 0 ? 0.9 * r->sec_per_update + 0.1 * dt : dt;
            double loss = res.examples ? res.loss_sum / (double)res.examples : 0;
            double acc = res.examples ? (double)res.correct / (double)res.examples : 0;
            curve_push(r, loss, acc, lr);
            telemetry(r, idle);
            publish_progress(r, lr, loss, acc);
        }
        if (stopped || rc != PT_OK)
            break;
        /* End of the epoch: validation, history, outputs, checkpoint. */
        run_epoch row;
        end_of_epoch_row(r, &row);
        set_state(r, RUN_RUNNING, "validating after epoch %d", r->epoch + 1);
        rc = validate(r, &row, e);
        if (rc == PT_ESTOPPED) {
            stopped = 1;
            save_checkpoint(r, "stop", e);
            rc = PT_OK;
            break;
        }
        if (rc != PT_OK)
            goto done;
        if (r->hist_n < RUN_MAX_EPOCHS)
            r->hist[r->hist_n++] = row;
        r->epoch++;
        r->in_epoch = 0;
        r->loss_sum = 0;
        r->examples = r->correct = 0;
        memset(r->train_cm, 0, (size_t)r->n_classes * r->n_classes * sizeof(long long));
        r->epoch_time_before = 0;
        r->t_epoch = util_now();
        if ((rc = write_history(r, e)) != PT_OK)
            goto done;
        logf_(r,
              "epoch %d/%d - %d updates - %.1fs - %.0fms/update - loss %.4f - acc %.4f - val_loss "
              "%.4f - val_acc %.4f - val_f1 %.4f",
              row.epoch, cfg->epochs, row.updates, row.seconds,
              1000.0 * row.seconds / (row.updates ? row.updates : 1), row.train_loss, row.train_acc,
              row.val_loss, row.val_acc, row.val_f1);
        {
            char line[512];
            int k = snprintf(line, sizeof line, "  throughput:");
            for (int q = 0; q < r->R && k < 480; q++)
                k += snprintf(line + k, sizeof line - (size_t)k, " replica %d %.0f img/s (busy %.0f%%, idle %.0f%%, MXU %.0f%%);",
                              q, r->tel[q].ips, 100 * r->tel[q].busy_pct, 100 * r->tel[q].idle_pct,
                              100 * r->tel[q].mxu_pct);
            logf_(r, "%s", line);
        }
        if (r->epoch % (cfg->checkpoint_every > 0 ? cfg->checkpoint_every : 1) == 0 ||
            r->epoch == cfg->epochs)
            save_checkpoint(r, "epoch", e);
        publish_history(r);
        set_state(r, RUN_RUNNING, "running");
    }
    if (rc != PT_OK)
        goto done;
    if (stopped) {
        final = RUN_STOPPED;
        if (stopped == 2 && !r->last_ckpt[0])
            set_state(r, RUN_STOPPED,
                      "stopped after a non-finite loss at update %lld; no checkpoint had been "
                      "written yet",
                      r->update + 1);
        else if (stopped == 2)
            set_state(r, RUN_STOPPED,
                      "stopped after a non-finite loss at update %lld; the last good checkpoint "
                      "is %s",
                      r->update + 1, r->last_ckpt);
        else
            set_state(r, RUN_STOPPED, "stopped at update %lld; continue with --resume %s",
                      r->update, r->run_dir);
        goto done;
    }
    set_state(r, RUN_RUNNING, "predicting the test split");
    if ((rc = predict_test(r, e)) != PT_OK)
        goto done;
    final = RUN_DONE;
    {
        const run_epoch *last = r->hist_n ? &r->hist[r->hist_n - 1] : NULL;
        set_state(r, RUN_DONE, "done: %d epochs in %.0fs; val_acc %.4f, val_f1 %.4f; outputs in %s",
                  r->epoch, run_elapsed(r), last ? last->val_acc : 0, last ? last->val_f1 : 0,
                  r->run_dir);
    }
done:
    if (rc == PT_ESTOPPED && final != RUN_DONE) {
        /* Stopped while preparing (e.g. during the demo data's generation). */
        final = RUN_STOPPED;
        rc = PT_OK;
        set_state(r, RUN_STOPPED, "stopped before training began");
    }
    if (rc != PT_OK && final != RUN_DONE && final != RUN_STOPPED) {
        final = RUN_FAILED;
        if (r->run_dir[0])
            logf_(r, "failed: %s", e ? e->msg : "error");
        set_state(r, RUN_FAILED, "failed: %s", e ? e->msg : "error");
    }
    publish_history(r);
    free(batches);
    pipe_destroy(r->train);
    strat_free(r->st);
    if (r->optim_ready)
        opt_free(&r->optim);
    nn_model_free(r->model);
    aug_free(r->aug);
    if (r->oversampling)
        smp_free(&r->smp);
    free(r->decay);
    free(r->train_cm);
    free(r->preds);
    free(r->hist);
    free(r->curve_loss);
    free(r->curve_acc);
    free(r->curve_lr);
    free(r);
    return final;
}

void trn_state_free(trn_state *s)
{
    val_free(&s->val);
    free(s->names);
    s->names = NULL;
    s->n_names = 0;
}
