/* progress — the run's shared, locked view (see progress.h). */
#include "train/progress.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "config.h"
#include "train/metrics.h"
#include "train/replicas.h"
#include "train/teacher.h"
#include "train/trainer.h"

struct prg {
    pthread_mutex_t lock;
    run_snapshot snap;
    prg_val val;
    char (*names)[RUN_NAME_MAX];
    int n_names;
};

prg *prg_new(const run_config *cfg)
{
    prg *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    run_snapshot *s = &p->snap;
    s->state = RUN_IDLE;
    snprintf(s->message, sizeof s->message, "ready: press s to start");
    run_model_name(cfg, s->model, sizeof s->model);
    if (run_model_is_onnx(cfg->model)) {
        char v[32];
        cfg_value(cfg, cfg_find("input-norm"), v, sizeof v);
        util_copy(s->input_norm, sizeof s->input_norm, v);
    }
    util_copy(s->dataset, sizeof s->dataset, cfg->data[0] ? cfg->data : "built-in demo flowers");
    s->epochs = cfg->epochs;
    s->batch_per_replica = cfg->batch_per_replica;
    s->grad_acc = cfg->grad_acc;
    /* What the run will use, so the UI can show it before start. */
    s->replicas = rpl_count(cfg);
    s->update_size = s->replicas * cfg->batch_per_replica * cfg->grad_acc;
    s->image_size = cfg->image_size;
    util_copy(s->precision, sizeof s->precision, trn_precision_bf16(cfg->precision) ? "bf16" : "fp32");
    if (cfg->teacher[0])
        tch_header(cfg->teacher, cfg->distill_t, cfg->distill_alpha, cfg->teacher_view,
                   s->distill, sizeof s->distill);
    return p;
}

void prg_val_free(prg_val *v)
{
    free(v->labels);
    free(v->preds);
    free(v->conf);
    free(v->loss);
    free(v->src);
    free(v->confusion);
    memset(v, 0, sizeof *v);
}

void prg_free(prg *p)
{
    if (!p)
        return;
    prg_val_free(&p->val);
    free(p->names);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

run_snapshot *prg_lock(prg *p)
{
    pthread_mutex_lock(&p->lock);
    return &p->snap;
}

void prg_unlock(prg *p)
{
    pthread_mutex_unlock(&p->lock);
}

void prg_set_state(prg *p, run_state s, const char *fmt, ...)
{
    pthread_mutex_lock(&p->lock);
    p->snap.state = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->snap.message, sizeof p->snap.message, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&p->lock);
}

void prg_set_message(prg *p, const char *fmt, ...)
{
    pthread_mutex_lock(&p->lock);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->snap.message, sizeof p->snap.message, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&p->lock);
}

void prg_run_dir(prg *p, char *buf, size_t n)
{
    pthread_mutex_lock(&p->lock);
    util_copy(buf, n, p->snap.run_dir);
    pthread_mutex_unlock(&p->lock);
}

void prg_set_val(prg *p, prg_val *v)
{
    pthread_mutex_lock(&p->lock);
    prg_val_free(&p->val);
    p->val = *v;
    pthread_mutex_unlock(&p->lock);
    memset(v, 0, sizeof *v);
}

void prg_set_names(prg *p, char (*names)[RUN_NAME_MAX], int n)
{
    char (*copy)[RUN_NAME_MAX] = calloc((size_t)(n > 0 ? n : 1), sizeof *copy);
    if (!copy)
        return;
    memcpy(copy, names, (size_t)n * sizeof *copy);
    pthread_mutex_lock(&p->lock);
    /* Published once per run: a pointer handed out by prg_class_name() must not
     * dangle, so a second publication keeps the first. */
    if (!p->names) {
        p->names = copy;
        p->n_names = n;
        copy = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    free(copy);
}

void prg_snapshot(prg *p, run_snapshot *out)
{
    pthread_mutex_lock(&p->lock);
    *out = p->snap;
    pthread_mutex_unlock(&p->lock);
}

run_state prg_state(prg *p)
{
    pthread_mutex_lock(&p->lock);
    run_state s = p->snap.state;
    pthread_mutex_unlock(&p->lock);
    return s;
}

const char *prg_class_name(prg *p, int k)
{
    const char *name = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->names && k >= 0 && k < p->n_names)
        name = p->names[k];
    pthread_mutex_unlock(&p->lock);
    return name;
}

int prg_val_report(prg *p, run_val_report *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&p->lock);
    const prg_val *v = &p->val;
    int k = v->n_classes;
    if (v->epoch > 0 && k > 0 && v->confusion) {
        out->n_classes = k;
        out->n = v->n;
        out->epoch = v->epoch;
        out->precision = malloc((size_t)k * sizeof(double));
        out->recall = malloc((size_t)k * sizeof(double));
        out->f1 = malloc((size_t)k * sizeof(double));
        out->support = malloc((size_t)k * sizeof(long long));
        out->confusion = malloc((size_t)k * k * sizeof(long long));
        if (out->precision && out->recall && out->f1 && out->support && out->confusion) {
            memcpy(out->confusion, v->confusion, (size_t)k * k * sizeof(long long));
            met_summary ms;
            met_from_confusion(out->confusion, k, &ms, out->precision, out->recall, out->f1,
                               out->support);
        } else {
            pthread_mutex_unlock(&p->lock);
            run_val_report_free(out);
            return PT_ENOMEM;
        }
    }
    pthread_mutex_unlock(&p->lock);
    return PT_OK;
}

long long prg_val_preds(prg *p, long long first, int n, int *label, int *pred, float *conf,
                        float *loss)
{
    long long got = 0;
    pthread_mutex_lock(&p->lock);
    const prg_val *v = &p->val;
    if (v->epoch > 0 && first >= 0 && first < v->n) {
        got = v->n - first < n ? v->n - first : n;
        for (long long i = 0; i < got; i++) {
            if (label)
                label[i] = v->labels[first + i];
            if (pred)
                pred[i] = v->preds[first + i];
            if (conf)
                conf[i] = v->conf[first + i];
            if (loss)
                loss[i] = v->loss[first + i];
        }
    }
    pthread_mutex_unlock(&p->lock);
    return got;
}

int prg_val_example(prg *p, long long index, batch_src *src, run_val_item *item, int *epoch,
                    pt_err *e)
{
    memset(item, 0, sizeof *item);
    pthread_mutex_lock(&p->lock);
    const prg_val *v = &p->val;
    if (v->epoch == 0 || index < 0 || index >= v->n) {
        long long n = v->n;
        pthread_mutex_unlock(&p->lock);
        return err_set(e, PT_ENODATA, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       n ? "validation example %lld is outside 0..%lld" : "no validation yet",
                       index, n - 1);
    }
    *src = v->src[index];
    item->label = v->labels[index];
    item->pred = v->preds[index];
    item->confidence = v->conf[index];
    item->loss = v->loss[index];
    item->h = item->w = p->snap.image_size;
    *epoch = v->epoch;
    pthread_mutex_unlock(&p->lock);
    return PT_OK;
}
