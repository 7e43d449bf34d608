/* publish — what the trainer publishes (publish.h) into the run's progress
 * (train/progress.h) as it trains: state, sizes and class names, per-update
 * figures, the curves (train/curves.h) and the replicas' telemetry
 * (train/telemetry.h), history; and the single-core sgemm peak. */
#include <cblas.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "train/publish.h"
#include "train/trn.h"

void trn_set_state(trn *r, run_state s, const char *fmt, ...)
{
    char msg[sizeof(((run_snapshot *)0)->message)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    prg_set_state(r->env->progress, s, "%s", msg);
}

void trn_publish_static(trn *r)
{
    run_snapshot *s = prg_lock(r->env->progress);
    util_copy(s->dataset, sizeof s->dataset, r->ds->root);
    util_copy(s->run_dir, sizeof s->run_dir, r->persist.folder.dir);
    if (!strcmp(r->cfg->model, "mobilenetv2"))
        snprintf(s->model, sizeof s->model, "mobilenetv2 x%.2g", r->cfg->width);
    else
        run_model_name(r->cfg, s->model, sizeof s->model);
    s->replicas = r->plan.job_replicas;
    s->n_replicas = r->telemetry.shown;
    s->ranks = r->plan.ranks;
    for (int q = 0; q < r->telemetry.shown; q++) {
        s->replica[q].rank = r->telemetry.rank[q];
        util_copy(s->replica[q].host, sizeof s->replica[q].host, r->telemetry.host[q]);
    }
    s->batch_per_replica = r->plan.batch_per_replica;
    s->grad_acc = r->plan.grad_acc;
    s->update_size = r->plan.update_size;
    s->image_size = r->plan.image_size;
    s->n_classes = r->plan.n_classes;
    s->epochs = r->cfg->epochs;
    s->steps_per_epoch = r->plan.updates_per_epoch;
    s->total_steps = r->plan.total_updates;
    s->sgemm_peak_gflops = r->plan.sgemm_peak;
    util_copy(s->blas_core, sizeof s->blas_core,
              r->plan.bf16 ? nn_bf16_engine_name() : nn_blas_corename());
    util_copy(s->precision, sizeof s->precision, r->plan.bf16 ? "bf16" : "fp32");
    int k = r->plan.n_classes < RUN_MAX_CLASSES ? r->plan.n_classes : RUN_MAX_CLASSES;
    s->label_classes = k;
    memcpy(s->train_counts, r->plan.train_counts, (size_t)k * sizeof(long long));
    memcpy(s->train_oversampled, r->plan.train_oversampled, (size_t)k * sizeof(long long));
    memcpy(s->val_counts, r->plan.val_counts, (size_t)k * sizeof(long long));
    s->oversampling = r->plan.oversampling;
    prg_unlock(r->env->progress);
    /* Class names, once. */
    char (*names)[RUN_NAME_MAX] = calloc((size_t)r->plan.n_classes, sizeof *names);
    if (names) {
        /* The dataset is shared with the sample thread: read it, never change it. */
        for (int c = 0; c < r->plan.n_classes; c++)
            trn_class_name(r, c, names[c], RUN_NAME_MAX);
        prg_set_names(r->env->progress, names, r->plan.n_classes);
        free(names);
    }
}

void trn_class_name(const trn *r, int c, char *buf, size_t n)
{
    if (c < r->ds->n_classes)
        util_copy(buf, n, ds_class_name(r->ds, c));
    else if (r->plan.n_classes == (int)ds_competition_class_count)
        util_copy(buf, n, ds_competition_classes[c]);
    else
        util_fmt(buf, n, "class %d", c);
}

double trn_elapsed(const trn *r)
{
    return r->loop.elapsed_before + (util_now() - r->loop.run_start);
}

double trn_epoch_elapsed(const trn *r)
{
    return r->loop.epoch_time_before + (util_now() - r->loop.epoch_start);
}

void trn_telemetry_idle(trn *r)
{
    tlm_idle(&r->telemetry);
    run_snapshot *s = prg_lock(r->env->progress);
    for (int q = 0; q < r->telemetry.shown; q++) {
        run_replica *e = &s->replica[q];
        e->images_per_sec = e->busy_pct = e->idle_pct = e->mxu_pct = 0;
        memcpy(e->spark, r->telemetry.spark[q], (size_t)r->telemetry.spark_n * sizeof(float));
        e->spark_n = r->telemetry.spark_n;
    }
    s->total_images_per_sec = 0;
    prg_unlock(r->env->progress);
}

void trn_publish_progress(trn *r, double lr, double loss, double acc)
{
    pipe_stats ps;
    pipe_get_stats(r->parts.pipeline, &ps);
    run_snapshot *s = prg_lock(r->env->progress);
    s->epoch = r->loop.epoch + 1 <= r->cfg->epochs ? r->loop.epoch + 1 : r->cfg->epochs;
    s->step = r->loop.in_epoch;
    s->update = r->loop.update;
    s->elapsed = trn_elapsed(r);
    s->elapsed_resumed = r->loop.elapsed_before;
    long long left = r->plan.total_updates - r->loop.update;
    int epochs_left = r->cfg->epochs - r->loop.epoch;
    s->eta = (double)left * r->telemetry.sec_per_update + epochs_left * r->valid.seconds;
    s->lr = lr;
    s->last_loss = loss;
    s->last_acc = acc;
    s->running_loss = r->loop.examples ? r->loop.loss_sum / (double)r->loop.examples : 0;
    s->running_acc = r->loop.examples ? (double)r->loop.correct / (double)r->loop.examples : 0;
    const crv *c = &r->curves;
    s->curve_n = c->n;
    s->curve_stride = c->stride;
    memcpy(s->curve_loss, c->loss, (size_t)c->n * sizeof(float));
    memcpy(s->curve_acc, c->acc, (size_t)c->n * sizeof(float));
    memcpy(s->curve_lr, c->lr, (size_t)c->n * sizeof(float));
    double total = 0;
    for (int q = 0; q < r->telemetry.shown; q++) {
        run_replica *e = &s->replica[q];
        e->images_per_sec = r->telemetry.rep[q].ips;
        e->busy_pct = 100 * r->telemetry.rep[q].busy_pct;
        e->idle_pct = 100 * r->telemetry.rep[q].idle_pct;
        e->mxu_pct = 100 * r->telemetry.rep[q].mxu_pct;
        memcpy(e->spark, r->telemetry.spark[q], (size_t)r->telemetry.spark_n * sizeof(float));
        e->spark_n = r->telemetry.spark_n;
        total += r->telemetry.rep[q].ips;
    }
    s->total_images_per_sec = total;
    s->comm_ms = 1000 * r->telemetry.comm_per_update;
    s->queue_depth = ps.ready;
    s->queue_capacity = ps.capacity;
    s->data_errors = r->persist.data_errors;
    prg_unlock(r->env->progress);
}

void trn_publish_history(trn *r)
{
    run_snapshot *s = prg_lock(r->env->progress);
    int n = r->curves.hist_n < RUN_MAX_EPOCHS ? r->curves.hist_n : RUN_MAX_EPOCHS;
    if (n > 0) /* a run that failed while preparing has no history array */
        memcpy(s->history, r->curves.hist, (size_t)n * sizeof(run_epoch));
    s->history_n = n;
    s->checkpoints = r->persist.checkpoints;
    util_copy(s->last_checkpoint, sizeof s->last_checkpoint, r->persist.last_checkpoint);
    s->data_errors = r->persist.data_errors;
    prg_unlock(r->env->progress);
}

int trn_precision_bf16(run_precision p)
{
    return p == RUN_PREC_BF16 || (p == RUN_PREC_AUTO && nn_bf16_native());
}

void trn_precision_text(run_precision p, char *buf, size_t n)
{
    if (trn_precision_bf16(p))
        snprintf(buf, n, "bf16 operands, fp32 sums (%s%s)", nn_bf16_engine_name(),
                 nn_bf16_native() ? " on this CPU"
                                  : ": this CPU has no AVX512_BF16 or AMX-BF16, so the bf16 "
                                    "products run in C, several times slower than fp32");
    else if (p == RUN_PREC_AUTO)
        snprintf(buf, n, "fp32 (auto: this CPU has no AVX512_BF16 or AMX-BF16)");
    else
        snprintf(buf, n, "fp32");
}

double trn_sgemm_peak(double seconds, int bf16)
{
    nn_init();
    if (bf16)
        return nn_bf16_peak_gflops(seconds);
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
