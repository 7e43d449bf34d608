/* trainer — preparing a run and its loop (see trainer.h): prepare, then per
 * update: pause point, fetch A batches, step, account; at the end of an epoch:
 * validation, history, checkpoint; on a non-finite loss: skip, pause, ask. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "nn/nn_import.h"
#include "nn/nn_models.h"
#include "train/dist.h"
#include "train/metrics.h"
#include "train/replicas.h"
#include "infer/netcfg.h"
#include "train/trainer_impl.h"

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
                r->n_classes);
    else
        trn_log(r, "imported %s in %.2f s: %d ONNX nodes -> %d layers%s; replaced %s with a new "
                   "head of %d classes",
                r->cfg->model, info->seconds, info->onnx_nodes, info->mapped,
                info->quantized ? " (int8 weights dequantized)" : "", info->cut, r->n_classes);
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
static void set_phase(trn *r)
{
    const run_config *cfg = r->cfg;
    if (cfg->freeze_epochs <= 0 || cfg->freeze_backbone)
        return;
    int frozen = r->epoch < cfg->freeze_epochs;
    if (frozen) {
        nn_model_freeze_backbone(r->model);
        opt_set_slow(&r->optim, NULL, 1.0, 0);
    } else {
        nn_model_unfreeze(r->model);
        if (cfg->backbone_bn == RUN_BN_FROZEN)
            nn_model_freeze_bn(r->model);
        /* The backbone's moments start at zero here, after the frozen epochs' updates
         * (a resumed run finds the same count: every epoch has as many updates). */
        opt_set_slow(&r->optim, r->slow, cfg->backbone_lr_scale,
                     (long long)cfg->freeze_epochs * r->updates_per_epoch);
    }
    char tr[16], all[16];
    count_text(tr, sizeof tr, nn_trainable_count(r->model));
    count_text(all, sizeof all, nn_param_count(r->model));
    run_snapshot *s = prg_lock(r->env->progress);
    if (frozen)
        snprintf(s->phase, sizeof s->phase, "head only to epoch %d: %s of %s", cfg->freeze_epochs,
                 tr, all);
    else
        snprintf(s->phase, sizeof s->phase, "%s %s, backbone lr x%g",
                 strcmp(tr, all) ? "BN frozen," : "all", tr, cfg->backbone_lr_scale);
    prg_unlock(r->env->progress);
    if (!frozen && r->epoch == cfg->freeze_epochs)
        trn_log(r, "epoch %d on: the whole net trains (%s of %s parameters%s), the backbone at "
                   "%g x the learning rate",
                r->epoch + 1, tr, all,
                cfg->backbone_bn == RUN_BN_FROZEN ? "; its batch norm frozen, as imported" : "",
                cfg->backbone_lr_scale);
}

static int build_model(trn *r, pt_err *e)
{
    int onnx = run_model_is_onnx(r->cfg->model);
    nn_import_info info;
    /* The one builder predict uses too (infer/runmodel.h). */
    r->model = netcfg_build(r->cfg, r->img, r->n_classes, &info, e);
    if (!r->model)
        return e && e->code ? e->code : PT_ENOMEM;
    if (onnx)
        log_import(r, &info);
    if (!onnx || r->cfg->reinit) {
        nn_model_set_bn_momentum(r->model, (float)r->cfg->bn_momentum);
        nn_model_set_init(r->model, r->cfg->init == RUN_INIT_TORCH ? NN_INIT_TORCH
                                                                   : NN_INIT_HE_NORMAL);
        nn_model_init_params(r->model, r->cfg->seed);
    }
    if (onnx && r->cfg->backbone_bn == RUN_BN_FROZEN)
        nn_model_freeze_bn(r->model);
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
    if (r->cfg->freeze_epochs > 0) {
        /* The backbone is everything but the head: the last dense layer. */
        r->slow = malloc(np ? np : 1);
        if (!r->slow)
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        memset(r->slow, 1, np);
        nn_node_info head = { 0 };
        for (int i = 0; i < nn_node_count(r->model); i++) {
            nn_node_info ni;
            if (nn_node_get(r->model, i, &ni) == PT_OK && ni.op == NN_OP_DENSE)
                head = ni;
        }
        memset(r->slow + head.param_offset, 0, head.weight_count + head.bias_count);
    }
    if (opt_init(&r->optim, r->cfg->optimizer == RUN_OPT_SGD ? OPT_SGD : OPT_ADAM, np,
                 r->cfg->momentum, r->cfg->weight_decay) != 0)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    r->optim_ready = 1;
    return PT_OK;
}

/* The configuration and the class names (classes.txt: what predict labels with). */
static int write_config(trn *r, pt_err *e)
{
    int rc = run_write_file(&r->folder, RUN_F_CONFIG, r->env->cfg_text,
                            strlen(r->env->cfg_text), e);
    if (rc != PT_OK || !r->folder.on)
        return rc;
    size_t cap = (size_t)r->n_classes * RUN_NAME_MAX + 1, len = 0;
    char *text = malloc(cap);
    if (!text)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    for (int c = 0; c < r->n_classes; c++) {
        char name[RUN_NAME_MAX];
        trn_class_name(r, c, name, sizeof name);
        /* A name is one line: a line break in classes.txt's source cannot split it. */
        for (char *q = name; *q; q++)
            if (*q == '\n' || *q == '\r')
                *q = ' ';
        len += (size_t)snprintf(text + len, cap - len, "%s\n", name);
    }
    rc = run_write_file(&r->folder, RUN_F_CLASSES, text, len, e);
    free(text);
    return rc;
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
    return feed_preview(r->env->feed, r->ds, r->img, n, count, p, e);
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
static int stop_asked(void *ctx)
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
    int rc = ds_scan_labels(&r->ds->split[DS_TRAIN], &tl, &tn, &bad, scan_error, stop_asked, r, e);
    if (rc == PT_OK && r->ds->split[DS_VAL].count > 0)
        rc = ds_scan_labels(&r->ds->split[DS_VAL], &vl, &vn, &bad, scan_error, stop_asked, r, e);
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
    r->readable[DS_TRAIN] = tn;
    r->readable[DS_VAL] = vn;
    /* The scan's errors reach the screen before the run folder (and its log.txt) is
     * made: training's first meeting with each logs it again, there, once. */
    pthread_mutex_lock(&r->err_lock);
    r->n_err_seen = 0;
    pthread_mutex_unlock(&r->err_lock);
    smp_count_labels(tl, (size_t)tn, r->n_classes, r->train_counts);
    smp_count_labels(vl, (size_t)vn, r->n_classes, r->val_counts);

    r->epoch_examples = tn;
    memcpy(r->train_os, r->train_counts, (size_t)r->n_classes * sizeof(long long));
    if (cfg->oversample != 0) {
        if (smp_build(&r->smp, r->train_counts, r->n_classes,
                      cfg->oversample > 0 ? cfg->oversample : 0) != 0) {
            free(tl);
            free(vl);
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        }
        r->oversampling = 1;
        r->epoch_examples = smp_expected_total(&r->smp, r->train_counts);
        smp_count_pass(&r->smp, tl, (size_t)tn, cfg->seed, r->train_os);
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
    if ((rc = netcfg_image_size(cfg, r->ds, &r->img, e)) != PT_OK)
        return rc;
    r->R = rpl_count(cfg);
    r->B = cfg->batch_per_replica;
    r->A = cfg->grad_acc;
    r->P = r->B; /* prediction reuses the training contexts: no extra memory */
    if ((rc = trn_dist_join(r, e)) != PT_OK)
        return rc;
    r->U = r->G * r->B * r->A;
    r->updates_per_epoch = r->epoch_examples / r->U;
    if (r->updates_per_epoch < 1)
        return err_set(e, PT_EUSAGE, r->ds->root, PT_NO_RECORD, PT_NO_OFFSET,
                       "%lld training examples cannot fill one update of %d (replicas x batch "
                       "x accumulation)",
                       r->epoch_examples, r->U);
    r->total_updates = r->updates_per_epoch * cfg->epochs;
    sched_init(&r->sch, (sched_kind)cfg->schedule, cfg->lr_start, cfg->lr_max, cfg->lr_end,
               cfg->warmup, cfg->lr_scaling, r->total_updates);
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
        return write_config(r, e);
    return PT_OK;
}

static int step_build_model(trn *r, pt_err *e)
{
    trn_set_state(r, RUN_PREPARING, "building %s for %dx%d input, %d classes", r->cfg->model,
                  r->img, r->img, r->n_classes);
    return build_model(r, e);
}

static int step_start_replicas(trn *r, pt_err *e)
{
    trn_set_state(r, RUN_PREPARING, "allocating the replicas' memory");
    rpool_config sc = { .stop = stop_asked, .stop_ctx = r, .model = r->model, .optimizer = &r->optim, .decay_mask = r->decay,
                        .replicas = r->R, .batch_per_replica = r->B, .grad_acc = r->A,
                        .predict_batch = r->P,
                        .label_smoothing = (float)r->cfg->label_smoothing,
                        .reducer = r->ranks > 1 ? dist_reducer() : NULL,
                        .first_replica = r->g0, .all_replicas = r->ranks > 1 ? r->G : 0,
                        .overlap = trn_dist_overlap(r), .recompute = r->cfg->recompute };
    return rpool_new(&sc, &r->st, e);
}

static int step_measure_peak(trn *r, pt_err *e)
{
    (void)e;
    trn_set_state(r, RUN_PREPARING, "measuring the single-core sgemm peak");
    r->peak = trn_sgemm_peak(0.3);
    return PT_OK;
}

/* The training figures, the curves, the event files' confusion matrix. */
static int step_figures(trn *r, pt_err *e)
{
    r->train_cm = calloc((size_t)r->n_classes * r->n_classes, sizeof *r->train_cm);
    r->preds = calloc((size_t)r->U, sizeof *r->preds);
    if (!r->train_cm || !r->preds || crv_init(&r->curves) != PT_OK ||
        tb_init(&r->tb, r->n_classes) != PT_OK)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    return PT_OK;
}

static int step_moving_average(trn *r, pt_err *e)
{
    /* Starts at the weights as built; a resumed run's checkpoint then restores it. */
    return ema_init(&r->avg, r->cfg->ema, nn_params(r->model), nn_param_count(r->model),
                    nn_buffers(r->model), nn_buffer_count(r->model), e);
}

static int step_resume(trn *r, pt_err *e)
{
    /* A resumed run's history.json is made again from the checkpoint: one killed
     * between the two left it an epoch ahead, which this run does again. */
    int rc = PT_OK;
    if (r->cfg->resume[0] && r->rank == 0 &&
        ((rc = trn_restore_checkpoint(r, e)) != PT_OK || (rc = write_config(r, e)) != PT_OK ||
         (rc = run_write_history(&r->folder, r->curves.hist, r->curves.hist_n, e)) != PT_OK))
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
    set_phase(r);
    return PT_OK;
}

static int step_training_pipeline(trn *r, pt_err *e)
{
    /* Global batches of every replica of the job; a rank decodes its slice. */
    pipe_config pc;
    feed_pipe_config(r->env->feed, FEED_TRAIN, &r->ds->split[DS_TRAIN], 1, r->n_classes, r->img,
                     r->G * r->B, &pc);
    if (r->ranks > 1) {
        pc.slice_first = r->g0 * r->B;
        pc.slice_count = r->R * r->B;
    }
    pc.oversample = r->oversampling ? &r->smp : NULL;
    pc.on_error = trn_data_error;
    pc.error_ctx = r;
    pc.start_batch = (uint64_t)(r->update * r->A);
    return pipe_create(&pc, &r->train, e);
}

static int step_publish(trn *r, pt_err *e)
{
    (void)e;
    /* rank 0 writes the event files */
    tb_hooks th = { r, tb_log, tb_class_name, tb_preview };
    tb_open(&r->tb, r->rank == 0, r->folder.dir, &th);
    trn_publish_static(r);
    trn_publish_history(r);
    return PT_OK;
}

/* A job's ranks, and how its gradients travel. */
static void log_job(trn *r)
{
    trn_log(r, "data parallel: %d ranks (rank 0 on %s) with %d replicas in all, %d per update; "
               "each rank decodes its slice of every batch of %d",
            r->ranks, dist_host(), r->G, r->U, r->G * r->B);
    int nb;
    long long sent, early;
    rpool_get_overlap(r->st, &nb, &sent, &early);
    if (nb > 0)
        trn_log(r, "gradients cross the ranks in %d bucket%s of about %zu floats, each sent "
                   "as soon as the backward pass has finished it",
                nb, nb == 1 ? "" : "s", (nn_param_count(r->model) + (size_t)nb - 1) / (size_t)nb);
    else
        trn_log(r, "gradients cross the ranks after the backward pass, each rank stepping "
                   "its 1/%d of the optimizer (--no-overlap)",
                r->ranks);
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
    long long read = r->readable[DS_TRAIN] + r->readable[DS_VAL];
    if (read < named)
        snprintf(lost, sizeof lost, " (%lld unreadable of the %lld train and val records the "
                 "files' names count)", named - read, named);
    snprintf(summary, sizeof summary,
             "%s: %lld train / %lld val / %lld test records%s, %d classes, %dx%d; %d replicas x "
             "%d x %d accumulation = %d per update, %lld updates per epoch%s",
             r->ds->root, r->readable[DS_TRAIN], r->readable[DS_VAL], r->ds->split[DS_TEST].count,
             lost, r->n_classes, r->img, r->img, r->G, r->B, r->A, r->U, r->updates_per_epoch,
             r->oversampling ? " (oversampled)" : "");
    trn_log(r, "%s", summary);
    if (cfg->replicas == 0 && util_cores() < util_cores_online())
        trn_log(r, "--replicas 0: one replica per core this process may run on, %d of the "
                   "host's %d%s",
                util_cores(), util_cores_online(),
                r->ranks > 1 ? " (mpirun binds each rank to one core unless told otherwise; "
                               "with --bind-to none a rank may use them all)"
                             : "");
    if (r->ranks > 1)
        log_job(r);
    trn_log(r, "model %s: %zu parameters (%zu trainable), %.1f MFLOP per image forward; sgemm "
               "peak %.1f GFLOP/s (%s)",
            cfg->model, nn_param_count(r->model), nn_trainable_count(r->model),
            nn_flops(r->model, 1, 0) * 1e-6, r->peak, nn_blas_corename());
    rpool_memory_note(r->st, summary, sizeof summary);
    trn_log(r, "%s", summary);
    if (ema_on(&r->avg))
        trn_log(r, "validation and predictions use a moving average of the weights (--ema %g)",
                cfg->ema);
    return PT_OK;
}

/* Preparing a run: each step in order, the first error ends it. */
static const struct {
    const char *name;
    int (*run)(trn *r, pt_err *e);
} steps[] = {
    { "open the data", step_open_data },
    { "scan labels", step_scan_labels },
    { "plan the updates", step_plan_updates },
    { "make the run folder", step_run_folder },
    { "build the model", step_build_model },
    { "start the replicas", step_start_replicas },
    { "measure the sgemm peak", step_measure_peak },
    { "allocate the figures", step_figures },
    { "start the moving average", step_moving_average },
    { "resume from the checkpoint", step_resume },
    { "share rank 0's state", step_share_state },
    { "start the training pipeline", step_training_pipeline },
    { "open the event files and publish", step_publish },
    { "log the plan", step_log_plan },
};

/* Each step in order; a stop asked for lands between steps (and inside the long
 * ones: the label scan, the replicas' memory), named in r->stopped_in. */
static int prepare(trn *r, pt_err *e)
{
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int rc = stop_asked(r) ? PT_ESTOPPED : steps[i].run(r, e);
        if (rc == PT_ESTOPPED)
            r->stopped_in = steps[i].name;
        if (rc != PT_OK)
            return rc;
    }
    return PT_OK;
}

static void end_of_epoch_row(trn *r, run_epoch *row)
{
    memset(row, 0, sizeof *row);
    row->epoch = r->epoch + 1;
    row->updates = (int)r->updates_per_epoch;
    row->seconds = trn_epoch_elapsed(r);
    met_summary ms;
    met_from_confusion(r->train_cm, r->n_classes, &ms, NULL, NULL, NULL, NULL);
    row->train_loss = r->examples ? r->loss_sum / (double)r->examples : NAN;
    row->train_acc = r->examples ? (double)r->correct / (double)r->examples : NAN;
    row->train_precision = ms.precision;
    row->train_recall = ms.recall;
    row->train_f1 = ms.f1;
}

/* Wait for the user (pause = 1: pause first, the trainer's own decision). Paused
 * time is not training time. */
static int wait_user(trn *r, int pause, pt_err *e)
{
    double t_pause = util_now();
    /* In a job, rank 0 (the terminal, the workbench) decides for every rank. */
    int c = r->rank == 0 ? r->env->wait(r->env->ctx, pause) : TRN_STOP;
    c = trn_dist_decision(r, c, e);
    double away = util_now() - t_pause;
    r->t_epoch += away;
    r->t_run += away;
    tlm_resume(&r->tel, util_now());
    return c;
}

/* At an update boundary: obey a pause or a stop; each writes a checkpoint. */
static int pause_point(trn *r, pt_err *e, int *stopped)
{
    int c = trn_dist_control(r, r->env->control(r->env->ctx), e);
    if (c < 0)
        return c;
    if (c == TRN_GO)
        return PT_OK;
    if (c == TRN_PAUSE) {
        trn_telemetry_idle(r);
        trn_set_state(r, RUN_PAUSED, "paused at update %lld (epoch %d, step %lld); writing a checkpoint",
                      r->update, r->epoch + 1, r->in_epoch);
        int rc = trn_save_checkpoint(r, "pause", e);
        if (rc != PT_OK)
            return rc;
        trn_set_state(r, RUN_PAUSED, "paused at update %lld (epoch %d, step %lld)", r->update,
                      r->epoch + 1, r->in_epoch);
        if ((c = wait_user(r, 0, e)) < 0)
            return c;
        if (c == TRN_GO) {
            trn_set_state(r, RUN_RUNNING, "running");
            return PT_OK;
        }
    }
    *stopped = 1;
    /* Nothing trained yet in a new run: nothing to keep (trn_run removes its folder). */
    if (r->update == 0 && !r->cfg->resume[0])
        return PT_OK;
    return trn_save_checkpoint(r, "stop", e);
}

/* One update: A batches from the pipeline, forward, backward, reduce, optimizer
 * step, then the training figures. *finite is 0 when the loss was not finite
 * (the replica pool then leaves the weights as they were). */
static int step(trn *r, batch **batches, int *finite, pt_err *e)
{
    const run_config *cfg = r->cfg;
    double t0 = util_now();
    for (int a = 0; a < r->A; a++) {
        int rc = pipe_next(r->train, &batches[a], e);
        if (rc != 1) {
            for (int k = 0; k < a; k++)
                pipe_release(r->train, batches[k]);
            return rc == 0 ? err_set(e, PT_ENODATA, r->ds->root, PT_NO_RECORD, PT_NO_OFFSET,
                                     "the training stream ended (every record unreadable?)")
                           : rc;
        }
    }
    double idle = util_now() - t0;
    double comm0 = dist_comm_seconds();
    double lr = sched_lr(&r->sch, r->update);
    rpool_result res;
    int rc = rpool_update(r->st, batches, lr, r->update + 1,
                          cfg->seed ^ (uint64_t)r->update * 0x9e3779b97f4a7c15ULL, &res, r->preds, e);
    if (rc == PT_OK && res.finite && r->ranks > 1) {
        rc = trn_dist_train_cm(r, batches, e);
    } else if (rc == PT_OK && res.finite) {
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
    *finite = rc == PT_OK && res.finite;
    if (rc != PT_OK || !res.finite)
        return rc;
    r->update++;
    ema_update(&r->avg, r->update, nn_params(r->model), nn_buffers(r->model));
    r->in_epoch++;
    r->loss_sum += res.loss_sum;
    r->examples += res.examples;
    r->correct += res.correct;
    double dt = util_now() - t0;
    tlm_note_update(&r->tel, dt);
    double loss = res.examples ? res.loss_sum / (double)res.examples : 0;
    double acc = res.examples ? (double)res.correct / (double)res.examples : 0;
    crv_push(&r->curves, loss, acc, lr);
    tlm_sample(&r->tel, r->st, r->R, r->peak, idle);
    if ((rc = trn_dist_telemetry(r, e)) != PT_OK)
        return rc;
    double comm = dist_comm_seconds() - comm0;
    tlm_note_comm(&r->tel, r->update, comm);
    trn_publish_progress(r, lr, loss, acc);
    tb_update(&r->tb, r->update, loss, acc, lr);
    return PT_OK;
}

/* A non-finite loss: the update was skipped and the weights are unchanged. Say
 * so, pause, and let the user decide (lower the learning rate and resume, or
 * stop). No checkpoint is written: the last good one is kept. TRN_GO or TRN_STOP. */
static int on_nonfinite(trn *r, pt_err *e)
{
    run_snapshot *s = prg_lock(r->env->progress);
    s->nonfinite_at = r->update + 1;
    prg_unlock(r->env->progress);
    trn_log(r, "non-finite loss at update %lld (epoch %d, step %lld): the update was skipped; the "
               "last good checkpoint is kept%s%s",
            r->update + 1, r->epoch + 1, r->in_epoch + 1, r->last_ckpt[0] ? ": " : "",
            r->last_ckpt);
    trn_telemetry_idle(r);
    trn_set_state(r, RUN_PAUSED,
                  "non-finite loss at update %lld (epoch %d, step %lld); paused, weights "
                  "unchanged (lower the learning rate?)",
                  r->update + 1, r->epoch + 1, r->in_epoch + 1);
    int c = wait_user(r, 1, e);
    if (c < 0)
        return c;
    if (c != TRN_GO)
        return TRN_STOP; /* nonfinite_at stays: the headless runner's exit status says it */
    s = prg_lock(r->env->progress);
    s->nonfinite_at = 0;
    prg_unlock(r->env->progress);
    trn_set_state(r, RUN_RUNNING, "running");
    return TRN_GO;
}

/* End of an epoch: validation, history, outputs, checkpoint. */
static int end_epoch(trn *r, int *stopped, pt_err *e)
{
    const run_config *cfg = r->cfg;
    run_epoch row;
    int rc = trn_dist_check_weights(r, e);
    if (rc != PT_OK)
        return rc;
    end_of_epoch_row(r, &row);
    double images_per_sec = row.seconds > 0 ? (double)r->examples / row.seconds : 0;
    trn_set_state(r, RUN_RUNNING, "validating after epoch %d", r->epoch + 1);
    rc = trn_validate(r, &row, e);
    if (rc == PT_ESTOPPED) {
        *stopped = 1;
        return trn_save_checkpoint(r, "stop", e);
    }
    if (rc != PT_OK)
        return rc;
    crv_add_epoch(&r->curves, &row);
    r->epoch++;
    r->in_epoch = 0;
    r->loss_sum = 0;
    r->examples = r->correct = 0;
    memset(r->train_cm, 0, (size_t)r->n_classes * r->n_classes * sizeof(long long));
    /* An epoch begun before a resume: its time is both processes'; this one's
     * part is said too. */
    char here[64] = "";
    if (r->epoch_time_before > 0)
        snprintf(here, sizeof here, " (%.1fs since the resume)",
                 row.seconds - r->epoch_time_before);
    r->epoch_time_before = 0;
    r->t_epoch = util_now();
    if ((rc = run_write_history(&r->folder, r->curves.hist, r->curves.hist_n, e)) != PT_OK)
        return rc;
    tb_epoch(&r->tb, &row, r->update, sched_lr(&r->sch, r->update > 0 ? r->update - 1 : 0),
             images_per_sec);
    trn_log(r,
            "epoch %d/%d - %d updates - %.1fs%s - %.0fms/update - loss %.4f - acc %.4f - val_loss "
            "%.4f - val_acc %.4f - val_f1 %.4f",
            row.epoch, cfg->epochs, row.updates, row.seconds, here,
            1000.0 * row.seconds / (row.updates ? row.updates : 1), row.train_loss, row.train_acc,
            row.val_loss, row.val_acc, row.val_f1);
    char line[1100];
    int k = snprintf(line, sizeof line, "  throughput:");
    for (int q = 0; q < r->tel.shown && k < 1000; q++) {
        char where[64] = "";
        if (r->ranks > 1)
            snprintf(where, sizeof where, " (rank %d on %.32s)", r->tel.rank[q], r->tel.host[q]);
        k += snprintf(line + k, sizeof line - (size_t)k,
                      " replica %d%s %.0f img/s (busy %.0f%%, idle %.0f%%, MXU %.0f%%);", q, where,
                      r->tel.rep[q].ips, 100 * r->tel.rep[q].busy_pct, 100 * r->tel.rep[q].idle_pct,
                      100 * r->tel.rep[q].mxu_pct);
    }
    if (r->ranks > 1 && k < 1000) {
        int nb;
        long long sent, early;
        rpool_get_overlap(r->st, &nb, &sent, &early);
        k += snprintf(line + k, sizeof line - (size_t)k, " collectives %.1f ms/update",
                      1000 * r->tel.comm_per_update);
        if (nb > 0 && sent > 0)
            snprintf(line + k, sizeof line - (size_t)k,
                     " (%.0f%% of gradient buckets sent during the backward pass)",
                     100.0 * (double)early / (double)sent);
    }
    trn_log(r, "%s", line);
    /* A checkpoint that cannot be written (a full disk) ends the run: the previous
     * one is intact, and training on without one would risk more than it saves. */
    if ((r->epoch % (cfg->checkpoint_every > 0 ? cfg->checkpoint_every : 1) == 0 ||
         r->epoch == cfg->epochs) &&
        (rc = trn_save_checkpoint(r, "epoch", e)) != PT_OK)
        return rc;
    set_phase(r);
    trn_publish_history(r);
    trn_set_state(r, RUN_RUNNING, "running");
    return PT_OK;
}

static void free_run(trn *r)
{
    pipe_destroy(r->train);
    rpool_free(r->st);
    if (r->optim_ready)
        opt_free(&r->optim);
    nn_model_free(r->model);
    ema_free(&r->avg);
    if (r->oversampling)
        smp_free(&r->smp);
    free(r->decay);
    free(r->slow);
    free(r->train_cm);
    free(r->preds);
    crv_free(&r->curves);
    pthread_mutex_destroy(&r->err_lock);
    free(r);
}

run_state trn_run(const trn_env *env, pt_err *e)
{
    trn *r = calloc(1, sizeof *r);
    if (r)
        pthread_mutex_init(&r->err_lock, NULL);
    if (!r) {
        err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        prg_set_state(env->progress, RUN_FAILED, "failed: out of memory");
        return RUN_FAILED;
    }
    const run_config *cfg = env->cfg;
    r->cfg = cfg;
    r->env = env;
    r->t_run = r->t_epoch = util_now();
    tlm_start(&r->tel, r->t_run);
    run_state final = RUN_FAILED;
    /* 0 running, 1 stopped on request, 2 stopped after a non-finite loss */
    int stopped = 0;
    batch **batches = NULL;
    int rc = prepare(r, e);
    if (rc == PT_OK && !(batches = calloc((size_t)r->A, sizeof *batches)))
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (rc == PT_OK) {
        trn_set_state(r, RUN_RUNNING, "running");
        r->t_run = r->t_epoch = util_now();
        tlm_resume(&r->tel, r->t_run);
    }
    while (rc == PT_OK && !stopped && r->epoch < cfg->epochs) {
        while (r->in_epoch < r->updates_per_epoch) {
            if ((rc = pause_point(r, e, &stopped)) != PT_OK || stopped)
                break;
            int finite;
            if ((rc = step(r, batches, &finite, e)) != PT_OK)
                break;
            if (!finite && (rc = on_nonfinite(r, e)) != TRN_GO) {
                if (rc >= 0) {
                    rc = PT_OK;
                    stopped = 2;
                }
                break;
            }
        }
        if (rc == PT_OK && !stopped)
            rc = end_epoch(r, &stopped, e);
    }
    if (rc == PT_OK && stopped) {
        final = RUN_STOPPED;
        if (stopped == 2 && !r->last_ckpt[0])
            trn_set_state(r, RUN_STOPPED,
                          "stopped after a non-finite loss at update %lld; no checkpoint had been "
                          "written yet",
                          r->update + 1);
        else if (stopped == 2)
            trn_set_state(r, RUN_STOPPED,
                          "stopped after a non-finite loss at update %lld; the last good "
                          "checkpoint is %s",
                          r->update + 1, r->last_ckpt);
        else
            trn_set_state(r, RUN_STOPPED, "stopped at update %lld; continue with --resume %s",
                          r->update, r->folder.dir);
    } else if (rc == PT_OK) {
        trn_set_state(r, RUN_RUNNING, "predicting the test split");
        if ((rc = trn_predict_test(r, e)) == PT_OK) {
            final = RUN_DONE;
            const run_epoch *last = r->curves.hist_n ? &r->curves.hist[r->curves.hist_n - 1] : NULL;
            /* A resumed run: the whole run's training time, and this process's. */
            char here[64] = "";
            if (r->elapsed_before > 0)
                snprintf(here, sizeof here, " (%.0fs since the resume)",
                         trn_elapsed(r) - r->elapsed_before);
            trn_set_state(r, RUN_DONE,
                          "done: %d epochs in %.0fs%s; val_acc %.4f, val_f1 %.4f; outputs in %s",
                          r->epoch, trn_elapsed(r), here, last ? last->val_acc : 0,
                          last ? last->val_f1 : 0, r->folder.dir);
        }
    }
    /* Closed before the end is logged, so that the run's last log line is its end
     * (a failure to flush the events is said before it). */
    tb_close(&r->tb);
    if (rc == PT_ESTOPPED) {
        /* Stopped while preparing (e.g. during the demo data's generation). */
        final = RUN_STOPPED;
        trn_set_state(r, RUN_STOPPED, "stopped before training began%s%s",
                      r->stopped_in ? ", in the step: " : "", r->stopped_in ? r->stopped_in : "");
    } else if (rc != PT_OK) {
        final = RUN_FAILED;
        if (r->folder.dir[0])
            trn_log(r, "failed: %s", e ? e->msg : "error");
        trn_set_state(r, RUN_FAILED, "failed: %s", e ? e->msg : "error");
    }
    /* log.txt ends with how the run ended (a failure is logged as it happens). */
    if (final != RUN_FAILED) {
        char msg[sizeof(((run_snapshot *)0)->message)];
        run_snapshot *s = prg_lock(r->env->progress);
        util_copy(msg, sizeof msg, s->message);
        prg_unlock(r->env->progress);
        trn_log_end(r, msg);
    }
    /* A new run stopped before its first update leaves no half folder behind. */
    if (final == RUN_STOPPED && r->update == 0 && !cfg->resume[0] && run_discard(&r->folder)) {
        run_snapshot *s = prg_lock(r->env->progress);
        size_t k = strlen(s->message);
        util_fmt(s->message + k, sizeof s->message - k, "; nothing kept (%s removed)",
                 r->folder.dir);
        prg_unlock(r->env->progress);
    }
    trn_publish_history(r);
    free(batches);
    free_run(r);
    return final;
}
