/* validate — the prediction passes of a run (validate.h): validation after every epoch (loss,
 * accuracy, macro precision/recall/F1, the confusion matrix, per-example
 * predictions for inspect) and the test split's predictions for submission.csv. Both
 * run on the moving average of the weights when --ema is on: swapped into the model
 * for the pass, then swapped back before training goes on.
 *
 * In a job of several ranks each rank predicts its slice of every batch and rank 0
 * gathers the slices into the batch one process would have predicted, so its
 * figures and files are a single process's; the other ranks keep nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/util.h"
#include "infer/infer.h"
#include "train/metrics.h"
#include "train/rank.h"
#include "train/trn.h"

/* logits[b->n][classes] of the batch (infer/infer.h); with --tta flip the log of the
 * mean of the softmax of each image and of its mirror image, the batch's pixels
 * mirrored on the way. spare has room for one batch's logits. */
static int predict_batch(trn *r, batch *b, float *logits, float *spare, pt_err *e)
{
    return inf_logits(r->parts.pool, b->images, b->n, b->h, b->w, r->cfg->tta == RUN_TTA_FLIP,
                      logits, spare, e);
}

static int open_eval_pipe(trn *r, const ds_split *split, int labeled, pipeline **p, pt_err *e)
{
    pipe_config c;
    feed_pipe_config(r->env->feed, FEED_EVAL, split, labeled, r->plan.n_classes, r->plan.image_size,
                     r->plan.job_replicas * r->plan.predict_batch, &c);
    if (r->plan.ranks > 1) {
        c.slice_first = r->plan.first_replica * r->plan.predict_batch;
        c.slice_count = r->plan.replicas * r->plan.predict_batch;
    }
    c.on_error = trn_data_error;
    c.error_ctx = r;
    return pipe_create(&c, p, e);
}

/* valid_labels.json: the labels, in the split's order (rewritten each epoch: cheap). */
static void write_valid_labels(trn *r, const int32_t *labels, long long n)
{
    size_t len;
    char *text = run_int_list(labels, n, &len);
    if (text) {
        run_write_file(&r->persist.folder, RUN_F_VALID_LABELS, text, len, NULL);
        free(text);
    }
}

/* Validation pass: fills the epoch's val metrics and publishes the results. */
static int validate(trn *r, run_epoch *row, pt_err *e)
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
    int32_t *labels = malloc((size_t)cap * sizeof *labels);
    int32_t *preds = malloc((size_t)cap * sizeof *preds);
    float *conf = malloc((size_t)cap * sizeof *conf);
    float *eloss = malloc((size_t)cap * sizeof *eloss);
    batch_src *src = malloc((size_t)cap * sizeof *src);
    /* a batch's logits, and the spare the test-time flip needs */
    const size_t slice = (size_t)r->plan.replicas * r->plan.predict_batch * r->plan.n_classes;
    float *logits = malloc(2 * slice * sizeof *logits);
    long long *cm = calloc((size_t)r->plan.n_classes * r->plan.n_classes, sizeof *cm);
    if (!labels || !preds || !conf || !eloss || !src || !logits || !cm) {
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory (validation)");
        goto out;
    }
    double loss = 0;
    batch *b;
    trn_gathered g = { 0 };
    while ((rc = pipe_next(p, &b, e)) == 1) {
        if ((rc = predict_batch(r, b, logits, logits + slice, e)) != PT_OK ||
            (r->plan.ranks > 1 && (rc = trn_dist_gather(r, b, logits, &g, e)) != PT_OK)) {
            pipe_release(p, b);
            break;
        }
        /* The batch as one process predicts it: a job's gathered on rank 0. */
        int bn = r->plan.ranks > 1 ? g.count : b->n;
        const int32_t *blabel = r->plan.ranks > 1 ? g.label : b->label;
        const batch_src *bsrc = r->plan.ranks > 1 ? g.src : b->src;
        const float *blogits = r->plan.ranks > 1 ? g.logits : logits;
        double l = 0;
        if (bn > 0)
            nn_softmax_ce(blogits, bn, r->plan.n_classes, blabel, NULL, NULL, 0.0f, &l, NULL, NULL,
                          NULL);
        loss += l;
        for (int i = 0; i < bn && n < cap; i++, n++) {
            int arg;
            float pr;
            inf_top1(blogits + (size_t)i * r->plan.n_classes, r->plan.n_classes, &arg, &pr);
            labels[n] = blabel[i];
            preds[n] = arg;
            conf[n] = pr;
            eloss[n] = (float)inf_xent(blogits + (size_t)i * r->plan.n_classes,
                                       r->plan.n_classes, blabel[i]);
            src[n] = bsrc[i];
        }
        pipe_release(p, b);
        int c = trn_dist_control(r, r->env->control(r->env->ctx), e);
        if (c < 0 || c == TRN_STOP) {
            rc = c < 0 ? c : PT_ESTOPPED;
            break;
        }
    }
    trn_gathered_free(&g);
    if (rc < 0 || r->plan.rank != 0)
        goto out;
    rc = PT_OK;
    met_confusion(labels, preds, (size_t)n, r->plan.n_classes, cm);
    tb_set_confusion(&r->persist.events, cm, row->epoch);
    met_summary ms;
    met_from_confusion(cm, r->plan.n_classes, &ms, NULL, NULL, NULL, NULL);
    row->val_loss = n ? loss / (double)n : NAN;
    row->val_acc = ms.acc;
    row->val_precision = ms.precision;
    row->val_recall = ms.recall;
    row->val_f1 = ms.f1;
    write_valid_labels(r, labels, n);
    run_append_valid_preds(&r->persist.folder, row->epoch, preds, n, NULL);
    /* Hand the arrays to the run's progress (for inspect and the report). */
    {
        prg_val v = { .epoch = row->epoch, .n = n, .n_classes = r->plan.n_classes, .labels = labels,
                      .preds = preds, .conf = conf, .loss = eloss, .src = src,
                        .confusion = cm };
        prg_set_val(r->env->progress, &v);
        labels = preds = NULL;
        conf = eloss = NULL;
        src = NULL;
        cm = NULL;
    }
    r->valid.seconds = util_now() - t0;
out:
    free(labels);
    free(preds);
    free(conf);
    free(eloss);
    free(src);
    free(logits);
    free(cm);
    pipe_destroy(p);
    return rc;
}

static int predict_test(trn *r, pt_err *e)
{
    const ds_split *ts = &r->ds->split[DS_TEST];
    if (ts->count == 0) {
        trn_log(r, "no test split: no submission.csv");
        return PT_OK;
    }
    pipeline *p;
    int rc = open_eval_pipe(r, ts, 0, &p, e);
    if (rc != PT_OK)
        return rc;
    long long cap = ts->count, n = 0;
    int32_t *preds = malloc((size_t)cap * sizeof *preds);
    char (*ids)[BATCH_ID_MAX] = malloc((size_t)cap * sizeof *ids);
    /* a batch's logits, and the spare the test-time flip needs */
    const size_t slice = (size_t)r->plan.replicas * r->plan.predict_batch * r->plan.n_classes;
    float *logits = malloc(2 * slice * sizeof *logits);
    if (!preds || !ids || !logits) {
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory (test)");
        goto out;
    }
    batch *b;
    trn_gathered g = { 0 };
    while ((rc = pipe_next(p, &b, e)) == 1) {
        if ((rc = predict_batch(r, b, logits, logits + slice, e)) != PT_OK ||
            (r->plan.ranks > 1 && (rc = trn_dist_gather(r, b, logits, &g, e)) != PT_OK)) {
            pipe_release(p, b);
            break;
        }
        int bn = r->plan.ranks > 1 ? g.count : b->n;
        const float *blogits = r->plan.ranks > 1 ? g.logits : logits;
        for (int i = 0; i < bn && n < cap; i++, n++) {
            int arg;
            float pr;
            inf_top1(blogits + (size_t)i * r->plan.n_classes, r->plan.n_classes, &arg, &pr);
            preds[n] = arg;
            memcpy(ids[n], r->plan.ranks > 1 ? g.id[i] : b->id[i], BATCH_ID_MAX);
        }
        pipe_release(p, b);
    }
    trn_gathered_free(&g);
    if (rc < 0 || r->plan.rank != 0)
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
        rc = run_write_file(&r->persist.folder, RUN_F_SUBMISSION, csv, (size_t)(q - csv), e);
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
            rc = run_write_file(&r->persist.folder, RUN_F_TEST_PREDS, text, len, e);
        free(text);
        if (rc == PT_OK) {
            char sub[4200];
            run_path(&r->persist.folder, RUN_F_SUBMISSION, sub, sizeof sub);
            trn_log(r, "test predictions: %lld images -> %s", n, sub);
        }
    }
out:
    free(preds);
    free(ids);
    free(logits);
    pipe_destroy(p);
    return rc;
}

int trn_validate(trn *r, run_epoch *row, pt_err *e)
{
    ema_swap(&r->parts.average, nn_params(r->parts.model), nn_buffers(r->parts.model));
    int rc = validate(r, row, e);
    ema_swap(&r->parts.average, nn_params(r->parts.model), nn_buffers(r->parts.model));
    return rc;
}

int trn_predict_test(trn *r, pt_err *e)
{
    ema_swap(&r->parts.average, nn_params(r->parts.model), nn_buffers(r->parts.model));
    int rc = predict_test(r, e);
    ema_swap(&r->parts.average, nn_params(r->parts.model), nn_buffers(r->parts.model));
    return rc;
}
