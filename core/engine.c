/* engine — the thread-safe front of a training run (see engine.h): life cycle,
 * locks and copies.
 *
 * Threads: the caller's (UI or headless), the run thread (trn_run: the trainer,
 * which drives the replica and pipeline threads), and a sample thread started on
 * the first preview or validation-image request. The run's progress (snapshot,
 * validation results, class names) is written by the trainer alone into `progress`,
 * which has its own lock; the engine copies out of it. `lock` guards the command,
 * the log ring and the sample thread's requests and results.
 *
 * The command is one value, not a queue: go, pause and stop are states the user
 * wants, and at an update boundary only the latest one matters (a queue would
 * replay stale presses, p p p, that no longer mean anything). Stop wins over
 * everything; resume only undoes a pause. */
#include "engine.h"
#include "engine_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/demo.h"
#include "data/feed.h"
#include "train/progress.h"
#include "run/runfolder.h"
#include "infer/netcfg.h"
#include "train/lrfind.h"
#include "train/trainer.h"


/* ------------------------------------------------------------------------------ */
/* shared pieces */

void eng_log_push(eng *g, const char *line)
{
    pthread_mutex_lock(&g->lock);
    if (g->log_head - g->log_tail == LOG_LINES)
        g->log_tail++;
    util_copy(g->log[g->log_head % LOG_LINES], sizeof g->log[0], line);
    g->log_head++;
    pthread_mutex_unlock(&g->lock);
}

static int demo_progress(void *ctx, long long done, long long total)
{
    eng *g = ctx;
    prg_set_message(g->progress, "generating the demo dataset (once): %lld / %lld images", done,
                    total);
    /* A stop or a quit does not wait for the rest of the generation. */
    pthread_mutex_lock(&g->lock);
    int stop = g->cmd == TRN_STOP || g->sample_exit;
    pthread_mutex_unlock(&g->lock);
    return stop;
}

/* Open the dataset once, for the run and the samples. */
int eng_open_data(eng *g, const ds_dataset **out, pt_err *e)
{
    pthread_mutex_lock(&g->data_lock);
    if (!g->ds && g->data_rc == PT_OK) {
        char path[4096];
        int rc = PT_OK;
        if (g->cfg.data[0]) {
            util_copy(path, sizeof path, g->cfg.data);
        } else {
            rc = demo_ensure(NULL, path, sizeof path, demo_progress, g, &g->data_err);
            /* Its count would otherwise stay in the footer until a run starts: the
             * previews' first request generates it before any run. */
            run_snapshot *s = prg_lock(g->progress);
            if (rc == PT_OK && s->state == RUN_IDLE)
                util_fmt(s->message, sizeof s->message, "ready: press s to start (the demo "
                         "dataset is in %s)", path);
            prg_unlock(g->progress);
        }
        if (rc == PT_OK)
            rc = ds_open(path, g->cfg.image_size, &g->ds, &g->data_err);
        g->data_rc = rc;
    }
    int rc = g->data_rc;
    if (rc != PT_OK && e)
        *e = g->data_err;
    if (out)
        *out = g->ds;
    pthread_mutex_unlock(&g->data_lock);
    return rc;
}

/* ---- hooks for the trainer ---- */

static void hook_log(void *ctx, const char *line)
{
    eng_log_push(ctx, line);
}

static int hook_control(void *ctx)
{
    eng *g = ctx;
    pthread_mutex_lock(&g->lock);
    int c = g->cmd;
    pthread_mutex_unlock(&g->lock);
    return c;
}

static int hook_wait(void *ctx, int pause)
{
    eng *g = ctx;
    pthread_mutex_lock(&g->lock);
    if (pause && g->cmd == TRN_GO)
        g->cmd = TRN_PAUSE;
    while (g->cmd == TRN_PAUSE)
        pthread_cond_wait(&g->cmd_cv, &g->lock);
    int c = g->cmd;
    pthread_mutex_unlock(&g->lock);
    return c;
}

static int hook_data(void *ctx, const ds_dataset **d, pt_err *e)
{
    return eng_open_data(ctx, d, e);
}

static void *run_main(void *arg)
{
    eng *g = arg;
    trn_env env = { .cfg = &g->cfg, .cfg_text = g->cfg_text, .progress = g->progress,
                    .feed = g->samples, .ctx = g, .log = hook_log, .control = hook_control,
                    .wait = hook_wait, .data = hook_data };
    pt_err e;
    err_clear(&e);
    run_state end = trn_run(&env, &e); /* it publishes how the run ended */
    pthread_mutex_lock(&g->lock);
    if (end == RUN_FAILED) {
        g->fail = e;
        if (g->fail.code == PT_OK) /* a failure that left no error: still one */
            g->fail.code = PT_EIO;
        if (!g->fail.msg[0])
            util_copy(g->fail.msg, sizeof g->fail.msg, "the run failed");
    }
    g->ended = 1;
    pthread_cond_broadcast(&g->end_cv);
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* ---- the learning-rate finder's hooks and thread (lrf_run, train/lrfind.h) ---- */

static void finder_log(void *ctx, const char *line)
{
    char buf[1100];
    util_fmt(buf, sizeof buf, "%s%s", strncmp(line, "lr-find", 7) ? "lr-find: " : "", line);
    eng_log_push(ctx, buf);
}

static int finder_control(void *ctx)
{
    eng *g = ctx;
    pthread_mutex_lock(&g->lock);
    int c = g->finder_stop || g->cmd == TRN_STOP || g->sample_exit ? TRN_STOP : TRN_GO;
    pthread_mutex_unlock(&g->lock);
    return c;
}

static int finder_wait(void *ctx, int pause)
{
    (void)pause;
    return finder_control(ctx) == TRN_GO ? TRN_GO : TRN_STOP; /* it never pauses */
}

static void *finder_main(void *arg)
{
    eng *g = arg;
    trn_env env = { .cfg = &g->cfg, .cfg_text = g->cfg_text, .progress = g->finder.progress,
                    .feed = g->samples, .ctx = g, .log = finder_log, .control = finder_control,
                    .wait = finder_wait, .data = hook_data };
    pt_err e;
    err_clear(&e);
    lrf_run(&env, &g->finder, &e); /* it publishes how it ended */
    return NULL;
}

/* Cancel a finder under way and wait for its thread. */
static void finder_join(eng *g)
{
    pthread_mutex_lock(&g->lock);
    int started = g->finder_started;
    g->finder_stop = 1;
    g->finder_started = 0;
    pthread_mutex_unlock(&g->lock);
    if (started)
        pthread_join(g->finder_thread, NULL);
}

int eng_lrfind_start(eng *g, pt_err *e)
{
    run_lrfind now;
    eng_lrfind_get(g, &now);
    if (now.state == RUN_LRF_PREPARING || now.state == RUN_LRF_RUNNING)
        return PT_OK; /* one at a time: this one goes on */
    int rc = lrf_check(&g->cfg, eng_job_on(), e);
    if (rc != PT_OK)
        return rc;
    finder_join(g);
    pthread_mutex_lock(&g->lock);
    if (g->started)
        rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                     "a run has started: lr-find runs before one");
    if (rc == PT_OK) {
        lrf_track_reset(&g->finder);
        g->finder_stop = 0;
        g->finder_started = pthread_create(&g->finder_thread, NULL, finder_main, g) == 0;
        if (!g->finder_started)
            rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "cannot start a thread");
    }
    pthread_mutex_unlock(&g->lock);
    return rc;
}

void eng_lrfind_stop(eng *g)
{
    pthread_mutex_lock(&g->lock);
    g->finder_stop = 1;
    pthread_mutex_unlock(&g->lock);
}

void eng_lrfind_get(eng *g, run_lrfind *out)
{
    lrf_track_get(&g->finder, out);
}

/* ------------------------------------------------------------------------------ */
/* life cycle */

int eng_check_run_folder(const run_config *cfg, pt_err *e)
{
    pt_err why;
    if (cfg->resume[0]) {
        if (util_can_make_dir(cfg->resume, &why) != PT_OK)
            return err_set(e, why.code, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "--resume %s: cannot write in the run folder: %s", cfg->resume,
                           why.msg);
        return PT_OK;
    }
    if (!cfg->out[0]) {
        if (util_can_make_dir("runs", &why) != PT_OK)
            return err_set(e, why.code, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "runs/: cannot create the run folder (--out chooses another): %s",
                           why.msg);
        return PT_OK;
    }
    if (run_holds_run(cfg->out))
        return err_set(e, PT_EUSAGE, cfg->out, PT_NO_RECORD, PT_NO_OFFSET,
                       "holds a run already; continue it with --resume or choose another --out");
    if (util_can_make_dir(cfg->out, &why) != PT_OK)
        return err_set(e, why.code, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "--out %s: cannot create the run folder: %s", cfg->out, why.msg);
    return PT_OK;
}

/* The side of the images in the shards the run will read (the shorter one), or
 * 0 when it is not known without decoding failing. The demo data's is its
 * parameters', known before the data is made. */
static int shard_side(const eng *g)
{
    demo_params p;
    if (!g->cfg.data[0])
        return demo_params_get(&p, NULL) == PT_OK ? p.image_size : 0;
    if (!g->ds)
        return 0;
    int w = g->ds->image_w, h = g->ds->image_h;
    if (w <= 0 && ds_probe_image_size(&g->ds->split[DS_TRAIN], &w, &h, NULL) != PT_OK)
        return 0;
    return w < h ? w : h;
}

/* An --image-size above the shards' size costs compute per image as the square
 * of the ratio and adds no detail: allowed (a net may need a minimum input), but
 * said. */
static void size_warning(eng *g)
{
    int side = shard_side(g), want = g->cfg.image_size;
    if (want <= 0 || side <= 0 || want <= side)
        return;
    double cost = (double)want * want / ((double)side * side);
    util_fmt(g->warnings, sizeof g->warnings,
             "--image-size %d upsamples the %d px shards: %.3gx the compute per image for no "
             "more detail",
             want, side, cost);
}

/* The model and the options that apply to some models only. */
static int model_check(const run_config *cfg, pt_err *e)
{
    if (run_model_is_onnx(cfg->model)) {
        if (!util_is_file(cfg->model))
            return err_set(e, PT_EUSAGE, cfg->model, PT_NO_RECORD, PT_NO_OFFSET,
                           "no such ONNX model file");
    } else if (strcmp(cfg->model, "small") && strcmp(cfg->model, "mobilenetv2")) {
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "unknown model '%s'",
                       cfg->model);
    } else if (cfg->reinit) {
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "--reinit applies to an ONNX model; '%s' always starts from scratch",
                       cfg->model);
    } else if (cfg->input_norm != RUN_NORM_AUTO && cfg->input_norm != RUN_NORM_UNIT) {
        /* A built-in net takes pixels in [0, 1] and its batch norm learns the rest:
         * another convention would only be a fixed affine layer in front. */
        const cfg_option *o = cfg_find("input-norm");
        char v[32];
        cfg_value(cfg, o, v, sizeof v);
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "--input-norm %s applies to an ONNX model; '%s' takes pixels in [0, 1] "
                       "(auto or unit) and its batch norm learns the rest",
                       v, cfg->model);
    }
    if (cfg->backbone_bn == RUN_BN_FROZEN && (!run_model_is_onnx(cfg->model) || cfg->reinit))
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "--backbone-bn frozen keeps a pretrained batch norm's statistics: it "
                       "needs an ONNX model's weights (not %s)",
                       cfg->reinit ? "--reinit" : "a built-in net from scratch");
    /* A head trained on a backbone of random weights learns nothing that lasts. */
    if (cfg->reinit && (cfg->freeze_epochs > 0 || cfg->freeze_backbone))
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "--reinit starts from random weights: --freeze-epochs and "
                       "--freeze-backbone need pretrained ones");
    return PT_OK;
}

int eng_create(const run_config *cfg, eng **out, pt_err *e)
{
    *out = NULL;
    if (cfg->epochs < 1 || cfg->batch_per_replica < 1 || cfg->grad_acc < 1)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "epochs, batch per replica and accumulation must be at least 1");
    int rc = model_check(cfg, e);
    if (rc != PT_OK)
        return rc;
    if (cfg->data[0] && !util_is_dir(cfg->data))
        return err_set(e, PT_ENODATA, cfg->data, PT_NO_RECORD, PT_NO_OFFSET,
                       "no such dataset folder");
    /* A run folder to resume without a checkpoint.ckpt is a run that ended (was
     * killed) before its first: it starts again from the beginning. */
    if (cfg->resume[0] && !util_is_dir(cfg->resume))
        return err_set(e, PT_EUSAGE, cfg->resume, PT_NO_RECORD, PT_NO_OFFSET,
                       "no run folder here to resume");
    eng *g = calloc(1, sizeof *g);
    if (!g)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    g->cfg = *cfg;
    rc = feed_new(cfg, &g->samples, e); /* checks the augmentation spec */
    if (rc != PT_OK) {
        free(g);
        return rc;
    }
    if (cfg_format(cfg, g->cfg_text, sizeof g->cfg_text) != 0)
        g->cfg_text[0] = '\0';
    g->progress = prg_new(cfg);
    g->cam_want = -1;
    g->log = calloc(LOG_LINES, sizeof *g->log);
    if (!g->progress || !g->log || lrf_track_init(&g->finder, cfg, e) != PT_OK) {
        lrf_track_free(&g->finder);
        prg_free(g->progress);
        feed_free(g->samples);
        free(g->log);
        free(g);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_mutex_init(&g->data_lock, NULL);
    pthread_cond_init(&g->cmd_cv, NULL);
    pthread_cond_init(&g->end_cv, NULL);
    pthread_cond_init(&g->sample_cv, NULL);
    g->cmd = TRN_GO;
    /* A folder without a dataset is refused now, not after the user has started
     * the run; the run and the previews then share what was opened. */
    if (cfg->data[0] && (rc = eng_open_data(g, NULL, e)) != PT_OK) {
        eng_destroy(g);
        return rc;
    }
    size_warning(g);
    *out = g;
    return PT_OK;
}

const char *eng_warnings(const eng *g)
{
    return g->warnings;
}

int eng_failure(eng *g, pt_err *e)
{
    pthread_mutex_lock(&g->lock);
    int rc = g->fail.code;
    if (rc != PT_OK && e)
        *e = g->fail;
    pthread_mutex_unlock(&g->lock);
    return rc;
}

int eng_start(eng *g)
{
    finder_join(g); /* a finder under way is cancelled: the run needs the cores */
    pthread_mutex_lock(&g->lock);
    if (g->started) {
        pthread_mutex_unlock(&g->lock);
        return PT_OK;
    }
    g->started = 1;
    prg_set_state(g->progress, RUN_PREPARING, "preparing");
    pthread_mutex_unlock(&g->lock);
    if (pthread_create(&g->run_thread, NULL, run_main, g) != 0) {
        pthread_mutex_lock(&g->lock);
        g->started = 0;
        g->ended = 1;
        prg_set_state(g->progress, RUN_FAILED, "failed: cannot start a thread");
        err_set(&g->fail, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "cannot start a thread");
        pthread_mutex_unlock(&g->lock);
        return PT_ENOMEM;
    }
    return PT_OK;
}

void eng_pause(eng *g)
{
    pthread_mutex_lock(&g->lock);
    if (g->cmd == TRN_GO && g->started && !g->ended)
        g->cmd = TRN_PAUSE;
    pthread_cond_broadcast(&g->cmd_cv);
    pthread_mutex_unlock(&g->lock);
}

void eng_resume(eng *g)
{
    pthread_mutex_lock(&g->lock);
    if (g->cmd == TRN_PAUSE)
        g->cmd = TRN_GO;
    pthread_cond_broadcast(&g->cmd_cv);
    pthread_mutex_unlock(&g->lock);
}

void eng_stop(eng *g)
{
    pthread_mutex_lock(&g->lock);
    g->cmd = TRN_STOP;
    pthread_cond_broadcast(&g->cmd_cv);
    pthread_mutex_unlock(&g->lock);
}

int eng_wait(eng *g, double timeout)
{
    pthread_mutex_lock(&g->lock);
    double until = util_now() + timeout;
    while (g->started && !g->ended) {
        if (timeout < 0) {
            pthread_cond_wait(&g->end_cv, &g->lock);
            continue;
        }
        double left = until - util_now();
        if (left <= 0)
            break;
        struct timespec ts;
        util_realtime_after(left < 0.2 ? left : 0.2, &ts);
        pthread_cond_timedwait(&g->end_cv, &g->lock, &ts);
    }
    int ended = !g->started || g->ended;
    pthread_mutex_unlock(&g->lock);
    return ended;
}

void eng_destroy(eng *g)
{
    if (!g)
        return;
    eng_stop(g);
    finder_join(g);
    if (g->started)
        pthread_join(g->run_thread, NULL);
    pthread_mutex_lock(&g->lock);
    g->sample_exit = 1; /* also tells a demo generation under way to stop */
    pthread_cond_broadcast(&g->sample_cv);
    pthread_mutex_unlock(&g->lock);
    if (g->sample_started)
        pthread_join(g->sample_thread, NULL);
    run_preview_free(&g->preview);
    for (int i = 0; i < ITEM_CACHE; i++)
        run_val_item_free(&g->items[i].item);
    run_explain_free(&g->cam);
    eng_cam_model_free(g->cam_model);
    lrf_track_free(&g->finder);
    prg_free(g->progress);
    feed_free(g->samples);
    ds_free(g->ds);
    free(g->log);
    pthread_mutex_destroy(&g->lock);
    pthread_mutex_destroy(&g->data_lock);
    pthread_cond_destroy(&g->cmd_cv);
    pthread_cond_destroy(&g->end_cv);
    pthread_cond_destroy(&g->sample_cv);
    free(g);
}

/* ------------------------------------------------------------------------------ */
/* reading */

void eng_snapshot_get(eng *g, run_snapshot *out)
{
    prg_snapshot(g->progress, out);
}

const char *eng_class_name(eng *g, int k)
{
    const char *name = prg_class_name(g->progress, k);
    if (!name) {
        /* Before the run has published names: the dataset's, once it is open. */
        pthread_mutex_lock(&g->data_lock);
        if (g->ds && k >= 0 && k < g->ds->n_classes)
            name = ds_class_name(g->ds, k);
        pthread_mutex_unlock(&g->data_lock);
    }
    return name;
}

int eng_log_pop(eng *g, char *buf, size_t n)
{
    int got = 0;
    pthread_mutex_lock(&g->lock);
    if (g->log_tail < g->log_head) {
        snprintf(buf, n, "%s", g->log[g->log_tail % LOG_LINES]);
        g->log_tail++;
        got = 1;
    }
    pthread_mutex_unlock(&g->lock);
    return got;
}

