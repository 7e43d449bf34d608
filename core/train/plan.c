/* plan — preparing a run (see plan.h): the named steps of steps[], in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "infer/netcfg.h"
#include "nn/nn_import.h"
#include "train/dist.h"
#include "train/distill.h"
#include "train/publish.h"
#include "train/rank.h"
#include "train/replicas.h"
#include "train/trn.h"

/* The label scan's bad records: counted and logged like the pipelines'. */
static int scan_error(void *ctx, const pt_err *err)
{
    trn *r = ctx;
    trn_data_error(r, err);
    return r->cfg->stop_on_data_error;
}

/* What the import of a pretrained ONNX backbone did, in the log. */
static void log_import(trn *r, const nn_import_info *info)
{
    if (r->cfg->reinit)
        trn_log(r, "imported the architecture of %s in %.2f s: %d ONNX nodes -> %d layers, "
                   "every weight initialised afresh; replaced %s with a new head of %d classes",
                r->cfg->model, info->seconds, info->onnx_nodes, info->mapped, info->cut,
                r->plan.n_classes);
    else
        trn_log(r, "imported %s in %.2f s: %d ONNX nodes -> %d layers%s; replaced %s with a new "
                   "head of %d classes",
                r->cfg->model, info->seconds, info->onnx_nodes, info->mapped,
                info->quantized ? " (int8 weights dequantized)" : "", info->cut, r->plan.n_classes);
    /* Which input convention, and why: a wrong one trains, only worse. */
    int asked = r->cfg->input_norm != RUN_NORM_AUTO;
    trn_log(r, "input %s (%s): %s", nn_norm_name(info->norm), nn_norm_formula(info->norm),
            info->norm_why);
    run_snapshot *s = prg_lock(r->env->progress);
    snprintf(s->input_norm, sizeof s->input_norm, "%s%s", nn_norm_name(info->norm),
             asked ? "" : " (auto)");
    prg_unlock(r->env->progress);
}

/* Parameters, for the header: 6405, 64.1k, 2.21M. */
static void count_text(char *buf, size_t n, size_t v)
{
    if (v < 10000)
        snprintf(buf, n, "%zu", v);
    else if (v < 1000000)
        snprintf(buf, n, "%.1fk", (double)v / 1e3);
    else
        snprintf(buf, n, "%.2fM", (double)v / 1e6);
}

/* --freeze-epochs: the head alone for the first K epochs, then the whole net
 * with the backbone's learning rate scaled. Called when preparing (a resumed run
 * may be past K) and after each epoch; freezing changes between updates only. */
void trn_set_freeze(trn *r)
{
    const run_config *cfg = r->cfg;
    if (cfg->freeze_epochs <= 0 || cfg->freeze_backbone)
        return;
    int frozen = r->loop.epoch < cfg->freeze_epochs;
    if (frozen) {
        nn_model_freeze_backbone(r->parts.model);
        opt_set_slow(&r->parts.optimizer, NULL, 1.0, 0);
    } else {
        nn_model_unfreeze(r->parts.model);
        if (cfg->backbone_bn == RUN_BN_FROZEN)
            nn_model_freeze_bn(r->parts.model);
        /* The backbone's moments start at zero here, after the frozen epochs' updates
         * (a resumed run finds the same count: every epoch has as many updates). */
        opt_set_slow(&r->parts.optimizer, r->parts.slow_mask, cfg->backbone_lr_scale,
                     (long long)cfg->freeze_epochs * r->plan.updates_per_epoch);
    }
    char tr[16], all[16];
    count_text(tr, sizeof tr, nn_trainable_count(r->parts.model));
    count_text(all, sizeof all, nn_param_count(r->parts.model));
    run_snapshot *s = prg_lock(r->env->progress);
    if (frozen)
        snprintf(s->phase, sizeof s->phase, "head only to epoch %d: %s of %s", cfg->freeze_epochs,
                 tr, all);
    else
        snprintf(s->phase, sizeof s->phase, "%s %s, backbone lr x%g",
                 strcmp(tr, all) ? "BN frozen," : "all", tr, cfg->backbone_lr_scale);
    prg_unlock(r->env->progress);
    if (!frozen && r->loop.epoch == cfg->freeze_epochs)
        trn_log(r, "epoch %d on: the whole net trains (%s of %s parameters%s), the backbone at "
                   "%g x the learning rate",
                r->loop.epoch + 1, tr, all,
                cfg->backbone_bn == RUN_BN_FROZEN ? "; its batch norm frozen, as imported" : "",
                cfg->backbone_lr_scale);
}

static int build_model(trn *r, pt_err *e)
{
    int onnx = run_model_is_onnx(r->cfg->model);
    nn_import_info info;
    /* The one builder predict uses too (infer/runmodel.h). */
    r->parts.model = netcfg_build(r->cfg, r->plan.image_size, r->plan.n_classes, &info, e);
    if (!r->parts.model)
        return e && e->code ? e->code : PT_ENOMEM;
    if (onnx)
        log_import(r, &info);
    if (!onnx || r->cfg->reinit) {
        nn_model_set_bn_momentum(r->parts.model, (float)r->cfg->bn_momentum);
        nn_model_set_init(r->parts.model, r->cfg->init == RUN_INIT_TORCH ? NN_INIT_TORCH
                                                                   : NN_INIT_HE_NORMAL);
        nn_model_init_params(r->parts.model, r->cfg->seed);
    }
    if (onnx && r->cfg->backbone_bn == RUN_BN_FROZEN)
        nn_model_freeze_bn(r->parts.model);
    if (r->cfg->freeze_backbone) {
        int rc = nn_model_freeze_backbone(r->parts.model);
        if (rc != PT_OK)
            return err_set(e, rc, NULL, PT_NO_RECORD, PT_NO_OFFSET, "cannot freeze the backbone");
    }
    size_t np = nn_param_count(r->parts.model);
    r->parts.decay_mask = calloc(np ? np : 1, 1);
    if (!r->parts.decay_mask)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    /* Weight decay on conv and dense weights only, not on biases or BN. */
    for (int i = 0; i < nn_node_count(r->parts.model); i++) {
        nn_node_info ni;
        if (nn_node_get(r->parts.model, i, &ni) != PT_OK)
            continue;
        if (ni.op == NN_OP_CONV || ni.op == NN_OP_DENSE)
            memset(r->parts.decay_mask + ni.param_offset, 1, ni.weight_count);
    }
    if (r->cfg->freeze_epochs > 0) {
        /* The backbone is everything but the head: the last dense layer. */
        r->parts.slow_mask = malloc(np ? np : 1);
        if (!r->parts.slow_mask)
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        memset(r->parts.slow_mask, 1, np);
        nn_node_info head = { 0 };
        for (int i = 0; i < nn_node_count(r->parts.model); i++) {
            nn_node_info ni;
            if (nn_node_get(r->parts.model, i, &ni) == PT_OK && ni.op == NN_OP_DENSE)
                head = ni;
        }
        memset(r->parts.slow_mask + head.param_offset, 0, head.weight_count + head.bias_count);
    }
    if (opt_init(&r->parts.optimizer, r->cfg->optimizer == RUN_OPT_SGD ? OPT_SGD : OPT_ADAM, np,
                 r->cfg->momentum, r->cfg->weight_decay) != 0)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    r->parts.optimizer_ready = 1;
    return PT_OK;
}

/* The event files' hooks into the run. */
static void tb_log(void *ctx, const char *line)
{
    trn_log(ctx, "%s", line);
}

static void tb_class_name(void *ctx, int c, char *buf, size_t n)
{
    trn_class_name(ctx, c, buf, n);
}

static int tb_preview(void *ctx, int n, uint64_t count, run_preview *p, pt_err *e)
{
    const trn *r = ctx;
    return feed_preview(r->env->feed, r->ds, r->plan.image_size, n, count, p, e);
}

/* ---- prepare: the steps before the first update, in the order of steps[] ---- */

static int step_open_data(trn *r, pt_err *e)
{
    int rc = r->env->data(r->env->ctx, &r->ds, e);
    if (rc != PT_OK)
        return rc;
    if (r->ds->split[DS_TRAIN].count == 0)
        return err_set(e, PT_ENODATA, r->ds->root, PT_NO_RECORD, PT_NO_OFFSET,
                       "no training records (train/ is missing or empty)");
    return PT_OK;
}

/* 1 when the user asked the run to stop (nn_stop_fn for long preparing steps). */
int trn_stop_asked(void *ctx)
{
    trn *r = ctx;
    return r->env->control && r->env->control(r->env->ctx) == TRN_STOP;
}

/* The classes, the label counts of both splits, and the oversampling table (the
 * examples of an epoch: as many as the table draws). */
static int step_scan_labels(trn *r, pt_err *e)
{
    const run_config *cfg = r->cfg;
    trn_set_state(r, RUN_PREPARING, "scanning labels of %lld training and %lld validation records",
                  r->ds->split[DS_TRAIN].count, r->ds->split[DS_VAL].count);
    int32_t *tl = NULL, *vl = NULL;
    long long tn = 0, vn = 0, bad = 0;
    int rc =
        ds_scan_labels(&r->ds->split[DS_TRAIN], &tl, &tn, &bad, scan_error, trn_stop_asked, r, e);
    if (rc == PT_OK && r->ds->split[DS_VAL].count > 0)
        rc =
            ds_scan_labels(&r->ds->split[DS_VAL], &vl, &vn, &bad, scan_error, trn_stop_asked, r, e);
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
    r->plan.n_classes = r->ds->n_classes > max ? r->ds->n_classes : max + 1;
    if (r->plan.n_classes < 2 || r->plan.n_classes > RUN_MAX_CLASSES) {
        free(tl);
        free(vl);
        return err_set(e, PT_ENODATA, r->ds->root, PT_NO_RECORD, PT_NO_OFFSET,
                       "%d classes found; between 2 and %d are supported", r->plan.n_classes,
                       RUN_MAX_CLASSES);
    }
    r->plan.readable[DS_TRAIN] = tn;
    r->plan.readable[DS_VAL] = vn;
    /* The scan's errors reach the screen before the run folder (and its log.txt) is
     * made: training's first meeting with each logs it again, there, once. */
    pthread_mutex_lock(&r->persist.error_lock);
    r->persist.n_errors_seen = 0;
    pthread_mutex_unlock(&r->persist.error_lock);
    smp_count_labels(tl, (size_t)tn, r->plan.n_classes, r->plan.train_counts);
    smp_count_labels(vl, (size_t)vn, r->plan.n_classes, r->plan.val_counts);

    r->plan.epoch_examples = tn;
    memcpy(r->plan.train_oversampled, r->plan.train_counts,
           (size_t)r->plan.n_classes * sizeof(long long));
    if (cfg->oversample != 0) {
        if (smp_build(&r->plan.oversampler, r->plan.train_counts, r->plan.n_classes,
                      cfg->oversample > 0 ? cfg->oversample : 0) != 0) {
            free(tl);
            free(vl);
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        }
        r->plan.oversampling = 1;
        r->plan.epoch_examples = smp_expected_total(&r->plan.oversampler, r->plan.train_counts);
        smp_count_pass(&r->plan.oversampler, tl, (size_t)tn, cfg->seed, r->plan.train_oversampled);
    }
    free(tl);
    free(vl);
    return PT_OK;
}

/* Image size, replicas (the job's too), the update's size, updates per epoch and
 * the learning-rate schedule. */
static int step_plan_updates(trn *r, pt_err *e)
{
    const run_config *cfg = r->cfg;
    int rc;
    if ((rc = netcfg_image_size(cfg, r->ds, &r->plan.image_size, e)) != PT_OK)
        return rc;
    r->plan.replicas = rpl_count(cfg);
    r->plan.batch_per_replica = cfg->batch_per_replica;
    r->plan.grad_acc = cfg->grad_acc;
    /* prediction reuses the training contexts: no extra memory */
    r->plan.predict_batch = r->plan.batch_per_replica;
    if ((rc = trn_dist_join(r, e)) != PT_OK)
        return rc;
    r->plan.update_size = r->plan.job_replicas * r->plan.batch_per_replica * r->plan.grad_acc;
    r->plan.updates_per_epoch = r->plan.epoch_examples / r->plan.update_size;
    if (r->plan.updates_per_epoch < 1)
        return err_set(e, PT_EUSAGE, r->ds->root, PT_NO_RECORD, PT_NO_OFFSET,
                       "%lld training examples cannot fill one update of %d (replicas x batch "
                       "x accumulation)",
                       r->plan.epoch_examples, r->plan.update_size);
    r->plan.total_updates = r->plan.updates_per_epoch * cfg->epochs;
    sched_init(&r->plan.schedule, (sched_kind)cfg->schedule, cfg->lr_start, cfg->lr_max,
               cfg->lr_end, cfg->warmup, cfg->lr_scaling, r->plan.total_updates);
    return PT_OK;
}

static int step_run_folder(trn *r, pt_err *e)
{
    int rc = trn_make_run_dir(r, e);
    if (rc != PT_OK)
        return rc;
    /* A new run's configuration first, so that a run folder holds it (and can be
     * resumed) from its first moments on; a resumed run's after its checkpoint has
     * loaded, so that options that do not fit the checkpoint do not replace it. */
    if (!r->cfg->resume[0])
        return trn_write_config(r, e);
    return PT_OK;
}

static int step_build_model(trn *r, pt_err *e)
{
    trn_set_state(r, RUN_PREPARING, "building %s for %dx%d input, %d classes", r->cfg->model,
                  r->plan.image_size, r->plan.image_size, r->plan.n_classes);
    return build_model(r, e);
}

static int step_start_replicas(trn *r, pt_err *e)
{
    trn_set_state(r, RUN_PREPARING, "allocating the replicas' memory");
    r->plan.bf16 = trn_precision_bf16(r->cfg->precision);
    rpool_config sc = { .stop = trn_stop_asked,
                        .stop_ctx = r,
                        .model = r->parts.model,
                        .optimizer = &r->parts.optimizer,
                        .decay_mask = r->parts.decay_mask,
                        .replicas = r->plan.replicas,
                        .batch_per_replica = r->plan.batch_per_replica,
                        .grad_acc = r->plan.grad_acc,
                        .predict_batch = r->plan.predict_batch,
                        .label_smoothing = (float)r->cfg->label_smoothing,
                        .distill_t = (float)r->cfg->distill_t,
                        .distill_alpha = (float)r->cfg->distill_alpha,
                        .reducer = r->plan.ranks > 1 ? dist_reducer() : NULL,
                        .first_replica = r->plan.first_replica,
                        .all_replicas = r->plan.ranks > 1 ? r->plan.job_replicas : 0,
                        .overlap = trn_dist_overlap(r),
                        .recompute = r->cfg->recompute,
                        .bf16 = r->plan.bf16 };
    return rpool_new(&sc, &r->parts.pool, e);
}

static int step_measure_peak(trn *r, pt_err *e)
{
    (void)e;
    trn_set_state(r, RUN_PREPARING, "measuring the single-core product peak");
    r->plan.sgemm_peak = trn_sgemm_peak(0.3, r->plan.bf16);
    return PT_OK;
}

/* The training figures, the curves, the event files' confusion matrix. */
static int step_figures(trn *r, pt_err *e)
{
    r->loop.train_cm =
        calloc((size_t)r->plan.n_classes * r->plan.n_classes, sizeof *r->loop.train_cm);
    r->loop.preds = calloc((size_t)r->plan.update_size, sizeof *r->loop.preds);
    if (!r->loop.train_cm || !r->loop.preds || crv_init(&r->curves) != PT_OK ||
        tb_init(&r->persist.events, r->plan.n_classes) != PT_OK)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    return PT_OK;
}

static int step_moving_average(trn *r, pt_err *e)
{
    /* Starts at the weights as built; a resumed run's checkpoint then restores it. */
    return ema_init(&r->parts.average, r->cfg->ema, nn_params(r->parts.model),
                    nn_param_count(r->parts.model), nn_buffers(r->parts.model),
                    nn_buffer_count(r->parts.model), e);
}

static int step_resume(trn *r, pt_err *e)
{
    /* A resumed run's history.json is made again from the checkpoint: one killed
     * between the two left it an epoch ahead, which this run does again. */
    int rc = PT_OK;
    if (r->cfg->resume[0] && r->plan.rank == 0 &&
        ((rc = trn_restore_checkpoint(r, e)) != PT_OK || (rc = trn_write_config(r, e)) != PT_OK ||
         (rc = run_write_history(&r->persist.folder, r->curves.hist, r->curves.hist_n, e)) !=
             PT_OK))
        return rc;
    return PT_OK;
}

static int step_share_state(trn *r, pt_err *e)
{
    /* A job's ranks start from rank 0's weights and state (a resumed run's: the
     * others never read the checkpoint). */
    int rc = trn_dist_share_state(r, e);
    if (rc != PT_OK)
        return rc;
    trn_set_freeze(r);
    return PT_OK;
}

static int step_training_pipeline(trn *r, pt_err *e)
{
    /* Global batches of every replica of the job; a rank decodes its slice. */
    pipe_config pc;
    feed_pipe_config(r->env->feed, FEED_TRAIN, &r->ds->split[DS_TRAIN], 1, r->plan.n_classes,
                     r->plan.image_size, r->plan.job_replicas * r->plan.batch_per_replica, &pc);
    if (r->plan.ranks > 1) {
        pc.slice_first = r->plan.first_replica * r->plan.batch_per_replica;
        pc.slice_count = r->plan.replicas * r->plan.batch_per_replica;
    }
    pc.oversample = r->plan.oversampling ? &r->plan.oversampler : NULL;
    pc.on_error = trn_data_error;
    pc.error_ctx = r;
    pc.start_batch = (uint64_t)(r->loop.update * r->plan.grad_acc);
    return pipe_create(&pc, &r->parts.pipeline, e);
}

static int step_publish(trn *r, pt_err *e)
{
    (void)e;
    /* rank 0 writes the event files */
    tb_hooks th = { r, tb_log, tb_class_name, tb_preview };
    tb_open(&r->persist.events, r->plan.rank == 0, r->persist.folder.dir, &th);
    trn_publish_static(r);
    trn_publish_history(r);
    return PT_OK;
}

/* A job's ranks, and how its gradients travel. */
static void log_job(trn *r)
{
    trn_log(r,
            "data parallel: %d ranks (rank 0 on %s) with %d replicas in all, %d per update; "
            "each rank decodes its slice of every batch of %d",
            r->plan.ranks, dist_host(), r->plan.job_replicas, r->plan.update_size,
            r->plan.job_replicas * r->plan.batch_per_replica);
    int nb;
    long long sent, early;
    rpool_get_overlap(r->parts.pool, &nb, &sent, &early);
    if (nb > 0)
        trn_log(r,
                "gradients cross the ranks in %d bucket%s of about %zu floats, each sent "
                "as soon as the backward pass has finished it",
                nb, nb == 1 ? "" : "s",
                (nn_param_count(r->parts.model) + (size_t)nb - 1) / (size_t)nb);
    else
        trn_log(r, "gradients cross the ranks after the backward pass, each rank stepping "
                   "its 1/%d of the optimizer (--no-overlap)",
                r->plan.ranks);
    if (r->cfg->overlap < 0)
        trn_log(r, "(--overlap auto: %s)",
                nb > 0 ? "the ranks span more than one host; during the backward pass the "
                         "network's time is hidden"
                       : "the ranks share one host, where the exchange is quick and stepping "
                         "a slice of the optimizer saves more than overlap hides");
}

static int step_log_plan(trn *r, pt_err *e)
{
    (void)e;
    const run_config *cfg = r->cfg;
    char summary[768], lost[160] = "";
    /* The files' names say how many records they hold; the label scan, how many read. */
    long long named = r->ds->split[DS_TRAIN].count + r->ds->split[DS_VAL].count;
    long long read = r->plan.readable[DS_TRAIN] + r->plan.readable[DS_VAL];
    if (read < named)
        snprintf(lost, sizeof lost, " (%lld unreadable of the %lld train and val records the "
                 "files' names count)", named - read, named);
    snprintf(summary, sizeof summary,
             "%s: %lld train / %lld val / %lld test records%s, %d classes, %dx%d; %d replicas x "
             "%d x %d accumulation = %d per update, %lld updates per epoch%s",
             r->ds->root, r->plan.readable[DS_TRAIN], r->plan.readable[DS_VAL],
             r->ds->split[DS_TEST].count, lost, r->plan.n_classes, r->plan.image_size,
             r->plan.image_size, r->plan.job_replicas, r->plan.batch_per_replica, r->plan.grad_acc,
             r->plan.update_size, r->plan.updates_per_epoch,
             r->plan.oversampling ? " (oversampled)" : "");
    trn_log(r, "%s", summary);
    if (cfg->replicas == 0 && util_cores() < util_cores_online())
        trn_log(r, "--replicas 0: one replica per core this process may run on, %d of the "
                   "host's %d%s",
                util_cores(), util_cores_online(),
                r->plan.ranks > 1 ? " (mpirun binds each rank to one core unless told otherwise; "
                               "with --bind-to none a rank may use them all)"
                             : "");
    if (r->plan.ranks > 1)
        log_job(r);
    trn_log(r, "model %s: %zu parameters (%zu trainable), %.1f MFLOP per image forward; sgemm "
               "peak %.1f GFLOP/s (%s)",
            cfg->model, nn_param_count(r->parts.model), nn_trainable_count(r->parts.model),
            nn_flops(r->parts.model, 1, 0) * 1e-6, r->plan.sgemm_peak, nn_blas_corename());
    rpool_memory_note(r->parts.pool, summary, sizeof summary);
    trn_log(r, "%s", summary);
    trn_precision_text(cfg->precision, summary, sizeof summary);
    trn_log(r, "precision: %s", summary);
    if (ema_on(&r->parts.average))
        trn_log(r, "validation and predictions use a moving average of the weights (--ema %g)",
                cfg->ema);
    return PT_OK;
}

/* Preparing a run: each step in order, the first error ends it. finder: 1 for the
 * steps the learning-rate finder (lrfind.h) takes too; it has no run folder, event
 * files, figures or moving average, and starts a new run's model. */
static const struct {
    const char *name;
    int (*run)(trn *r, pt_err *e);
    int finder;
} steps[] = {
    { "open the data", step_open_data, 1 },
    { "scan labels", step_scan_labels, 1 },
    { "plan the updates", step_plan_updates, 1 },
    { "make the run folder", step_run_folder, 0 },
    { "open the teacher", trn_distill_prepare, 0 },
    { "build the model", step_build_model, 1 },
    { "start the replicas", step_start_replicas, 1 },
    { "measure the sgemm peak", step_measure_peak, 0 },
    { "allocate the figures", step_figures, 0 },
    { "start the moving average", step_moving_average, 0 },
    { "resume from the checkpoint", step_resume, 0 },
    { "share rank 0's state", step_share_state, 1 },
    { "start the training pipeline", step_training_pipeline, 1 },
    { "open the event files and publish", step_publish, 0 },
    { "log the plan", step_log_plan, 0 },
};

/* Each step in order; a stop asked for lands between steps (and inside the long
 * ones: the label scan, the replicas' memory), named in r->loop.stopped_in. */
int trn_prepare(trn *r, pt_err *e)
{
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        if (r->finder && !steps[i].finder)
            continue;
        int rc = trn_stop_asked(r) ? PT_ESTOPPED : steps[i].run(r, e);
        if (rc == PT_ESTOPPED)
            r->loop.stopped_in = steps[i].name;
        if (rc != PT_OK)
            return rc;
    }
    return PT_OK;
}

void trn_plan_free(trn_plan *p)
{
    if (p->oversampling)
        smp_free(&p->oversampler);
}

void trn_parts_free(trn_parts *p)
{
    pipe_destroy(p->pipeline);
    tch_close(p->teacher);
    free(p->soft);
    rpool_free(p->pool);
    if (p->optimizer_ready)
        opt_free(&p->optimizer);
    nn_model_free(p->model);
    ema_free(&p->average);
    free(p->decay_mask);
    free(p->slow_mask);
}
