/* engine — the thread-safe front of a training run (see engine.h).
 *
 * Threads: the caller's (UI or headless), the run thread (trn_run: the trainer,
 * which drives the replica and pipeline threads), and a preview thread started on
 * the first preview request. Shared state lives in `st` (trn_state) under `lock`;
 * the trainer writes it through the hooks below, everyone else copies from it. */
#include "engine.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "data/augment.h"
#include "data/demo.h"
#include "data/jpeg.h"
#include "data/pipeline.h"
#include "io/example.h"
#include "io/tfrecord.h"
#include "train/metrics.h"
#include "train/trainer.h"

#define LOG_LINES 512

struct eng {
    run_config cfg;

    pthread_mutex_t lock;           /* st, log, command, data, preview */
    pthread_cond_t cmd_cv;          /* command changes */
    pthread_cond_t end_cv;          /* run ended */
    trn_state st;
    int started, ended;
    int cmd;                        /* TRN_GO / TRN_PAUSE / TRN_STOP */
    pthread_t run_thread;

    /* log ring */
    char (*log)[1100];
    uint64_t log_head, log_tail;

    /* the dataset, opened once (run and previews share it) */
    pthread_mutex_t data_lock;
    ds_dataset *ds;
    int data_rc;
    pt_err data_err;

    /* previews */
    pthread_t preview_thread;
    int preview_started, preview_exit;
    int preview_want;               /* images asked for; 0 none pending */
    uint64_t preview_gen, preview_count;
    run_preview preview;
    pthread_cond_t preview_cv;
};

/* ------------------------------------------------------------------------------ */
/* shared pieces */

static void log_push(eng *g, const char *line)
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
    pthread_mutex_lock(&g->lock);
    snprintf(g->st.snap.message, sizeof g->st.snap.message,
             "generating the demo dataset (once): %lld / %lld images", done, total);
    /* A stop or a quit does not wait for the rest of the generation. */
    int stop = g->cmd == TRN_STOP || g->preview_exit;
    pthread_mutex_unlock(&g->lock);
    return stop;
}

/* Open the dataset once, for the run and the previews. */
static int open_data(eng *g, const ds_dataset **out, pt_err *e)
{
    pthread_mutex_lock(&g->data_lock);
    if (!g->ds && g->data_rc == PT_OK) {
        char path[4096];
        int rc = PT_OK;
        if (g->cfg.data[0]) {
            util_copy(path, sizeof path, g->cfg.data);
        } else {
            rc = demo_ensure(NULL, path, sizeof path, demo_progress, g, &g->data_err);
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

static trn_state *hook_lock(void *ctx)
{
    eng *g = ctx;
    pthread_mutex_lock(&g->lock);
    return &g->st;
}

static void hook_unlock(void *ctx)
{
    eng *g = ctx;
    pthread_mutex_unlock(&g->lock);
}

static void hook_log(void *ctx, const char *line)
{
    log_push(ctx, line);
}

static int hook_control(void *ctx)
{
    eng *g = ctx;
    pthread_mutex_lock(&g->lock);
    int c = g->cmd;
    pthread_mutex_unlock(&g->lock);
    return c;
}

static int hook_wait_resume(void *ctx)
{
    eng *g = ctx;
    pthread_mutex_lock(&g->lock);
    /* A non-finite pause arrives with cmd == GO: ask the user by pausing. */
    if (g->cmd == TRN_GO)
        g->cmd = TRN_PAUSE;
    while (g->cmd == TRN_PAUSE)
        pthread_cond_wait(&g->cmd_cv, &g->lock);
    int c = g->cmd;
    pthread_mutex_unlock(&g->lock);
    return c;
}

static int hook_data(void *ctx, const ds_dataset **d, pt_err *e)
{
    return open_data(ctx, d, e);
}

static void *run_main(void *arg)
{
    eng *g = arg;
    trn_hooks h = { .ctx = g, .lock = hook_lock, .unlock = hook_unlock, .log = hook_log,
                    .control = hook_control, .wait_resume = hook_wait_resume,
                    .data = hook_data };
    pt_err e;
    err_clear(&e);
    run_state final = trn_run(&g->cfg, &h, &e);
    pthread_mutex_lock(&g->lock);
    g->st.snap.state = final;
    if (final == RUN_FAILED && e.msg[0] && strncmp(g->st.snap.message, "failed", 6) != 0)
        util_fmt(g->st.snap.message, sizeof g->st.snap.message, "failed: %s", e.msg);
    g->ended = 1;
    pthread_cond_broadcast(&g->end_cv);
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* ------------------------------------------------------------------------------ */
/* life cycle */

int eng_create(const run_config *cfg, eng **out, pt_err *e)
{
    *out = NULL;
    if (cfg->epochs < 1 || cfg->batch_per_replica < 1 || cfg->grad_acc < 1)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "epochs, batch per replica and accumulation must be at least 1");
    if (strcmp(cfg->model, "small") && strcmp(cfg->model, "mobilenetv2"))
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "unknown model '%s'",
                       cfg->model);
    if (cfg->augment[0] && strcmp(cfg->augment, "none")) {
        aug_chain *ch;
        int rc = aug_parse(cfg->augment, &ch, e);
        if (rc != PT_OK)
            return rc;
        aug_free(ch);
    }
    if (cfg->data[0] && !util_is_dir(cfg->data))
        return err_set(e, PT_ENODATA, cfg->data, PT_NO_RECORD, PT_NO_OFFSET,
                       "no such dataset folder");
    if (cfg->resume[0]) {
        char path[4200];
        util_path(path, sizeof path, "%s/checkpoint.ckpt", cfg->resume);
        if (!util_is_file(path))
            return err_set(e, PT_EUSAGE, cfg->resume, PT_NO_RECORD, PT_NO_OFFSET,
                           "no checkpoint.ckpt here to resume from");
    }
    eng *g = calloc(1, sizeof *g);
    if (!g)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    g->cfg = *cfg;
    g->log = calloc(LOG_LINES, sizeof *g->log);
    if (!g->log) {
        free(g);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_mutex_init(&g->data_lock, NULL);
    pthread_cond_init(&g->cmd_cv, NULL);
    pthread_cond_init(&g->end_cv, NULL);
    pthread_cond_init(&g->preview_cv, NULL);
    g->st.snap.state = RUN_IDLE;
    snprintf(g->st.snap.message, sizeof g->st.snap.message, "ready: press s to start");
    util_copy(g->st.snap.model, sizeof g->st.snap.model, cfg->model);
    util_copy(g->st.snap.dataset, sizeof g->st.snap.dataset,
              cfg->data[0] ? cfg->data : "built-in demo flowers");
    g->st.snap.epochs = cfg->epochs;
    g->st.snap.batch_per_replica = cfg->batch_per_replica;
    g->st.snap.grad_acc = cfg->grad_acc;
    /* What the run will use, so the UI can show it before start. */
    g->st.snap.replicas = trn_replicas(cfg);
    g->st.snap.update_size = g->st.snap.replicas * cfg->batch_per_replica * cfg->grad_acc;
    g->st.snap.image_size = cfg->image_size;
    g->cmd = TRN_GO;
    *out = g;
    return PT_OK;
}

int eng_start(eng *g)
{
    pthread_mutex_lock(&g->lock);
    if (g->started) {
        pthread_mutex_unlock(&g->lock);
        return PT_OK;
    }
    g->started = 1;
    g->st.snap.state = RUN_PREPARING;
    snprintf(g->st.snap.message, sizeof g->st.snap.message, "preparing");
    pthread_mutex_unlock(&g->lock);
    if (pthread_create(&g->run_thread, NULL, run_main, g) != 0) {
        pthread_mutex_lock(&g->lock);
        g->started = 0;
        g->ended = 1;
        g->st.snap.state = RUN_FAILED;
        snprintf(g->st.snap.message, sizeof g->st.snap.message, "failed: cannot start a thread");
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
    g->st.snap.nonfinite_at = 0;
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
        clock_gettime(CLOCK_REALTIME, &ts);
        double s = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + (left < 0.2 ? left : 0.2);
        ts.tv_sec = (time_t)s;
        ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
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
    if (g->started)
        pthread_join(g->run_thread, NULL);
    pthread_mutex_lock(&g->lock);
    g->preview_exit = 1; /* also tells a demo generation under way to stop */
    pthread_cond_broadcast(&g->preview_cv);
    pthread_mutex_unlock(&g->lock);
    if (g->preview_started)
        pthread_join(g->preview_thread, NULL);
    run_preview_free(&g->preview);
    trn_state_free(&g->st);
    ds_free(g->ds);
    free(g->log);
    pthread_mutex_destroy(&g->lock);
    pthread_mutex_destroy(&g->data_lock);
    pthread_cond_destroy(&g->cmd_cv);
    pthread_cond_destroy(&g->end_cv);
    pthread_cond_destroy(&g->preview_cv);
    free(g);
}

/* ------------------------------------------------------------------------------ */
/* reading */

void eng_snapshot_get(eng *g, run_snapshot *out)
{
    pthread_mutex_lock(&g->lock);
    *out = g->st.snap;
    pthread_mutex_unlock(&g->lock);
}

const char *eng_class_name(eng *g, int k)
{
    const char *name = NULL;
    pthread_mutex_lock(&g->lock);
    if (g->st.names && k >= 0 && k < g->st.n_names)
        name = g->st.names[k];
    pthread_mutex_unlock(&g->lock);
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

/* ------------------------------------------------------------------------------ */
/* previews */

static int make_preview(eng *g, int n, uint64_t count, run_preview *p, pt_err *e)
{
    const ds_dataset *d;
    int rc = open_data(g, &d, e);
    if (rc != PT_OK)
        return rc;
    int img;
    if ((rc = trn_image_size(&g->cfg, d, &img, e)) != PT_OK)
        return rc;
    pipe_config c;
    pipe_config_defaults(&c);
    c.split = &d->split[DS_TRAIN];
    c.labeled = 1;
    c.n_classes = RUN_MAX_CLASSES; /* names come later; any label is fine here */
    c.image_w = c.image_h = img;
    c.batch_size = n;
    c.shuffle_buffer = 256;
    c.shuffle_shards = 1;
    c.workers = 1;
    c.prefetch = 1;
    c.seed = g->cfg.seed + count * 7919;
    pipeline *pl;
    if ((rc = pipe_create(&c, &pl, e)) != PT_OK)
        return rc;
    batch *b;
    rc = pipe_next(pl, &b, e);
    if (rc != 1) {
        pipe_destroy(pl);
        return rc == 0 ? err_set(e, PT_ENODATA, d->root, PT_NO_RECORD, PT_NO_OFFSET,
                                 "no readable training images")
                       : rc;
    }
    size_t bytes = (size_t)b->n * img * img * 3;
    p->n = b->n;
    p->h = p->w = img;
    p->original = malloc(bytes);
    p->augmented = malloc(bytes);
    p->label = malloc((size_t)b->n * sizeof *p->label);
    if (!p->original || !p->augmented || !p->label) {
        pipe_release(pl, b);
        pipe_destroy(pl);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    memcpy(p->original, b->images, bytes);
    if (g->cfg.augment[0] && strcmp(g->cfg.augment, "none")) {
        aug_chain *ch;
        if (aug_parse(g->cfg.augment, &ch, NULL) == PT_OK) {
            aug_workspace *ws = aug_workspace_new(b->n, img, img);
            b->seq = count;
            if (ws)
                aug_apply(ch, b, g->cfg.seed, ws);
            aug_workspace_free(ws);
            aug_free(ch);
        }
    }
    memcpy(p->augmented, b->images, bytes);
    for (int i = 0; i < b->n; i++)
        p->label[i] = batch_dominant_label(b, i);
    pipe_release(pl, b);
    pipe_destroy(pl);
    return PT_OK;
}

static void *preview_main(void *arg)
{
    eng *g = arg;
    pthread_mutex_lock(&g->lock);
    for (;;) {
        while (!g->preview_exit && g->preview_want == 0)
            pthread_cond_wait(&g->preview_cv, &g->lock);
        if (g->preview_exit)
            break;
        int n = g->preview_want;
        g->preview_want = 0;
        uint64_t count = ++g->preview_count;
        pthread_mutex_unlock(&g->lock);
        run_preview p;
        memset(&p, 0, sizeof p);
        pt_err e;
        int rc = make_preview(g, n, count, &p, &e);
        if (rc != PT_OK) {
            char line[1100];
            snprintf(line, sizeof line, "preview failed: %s", e.msg);
            log_push(g, line);
        }
        pthread_mutex_lock(&g->lock);
        if (rc == PT_OK) {
            run_preview_free(&g->preview);
            g->preview = p;
            g->preview.generation = ++g->preview_gen;
        } else {
            run_preview_free(&p);
        }
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

void eng_preview_request(eng *g, int n)
{
    if (n < 1)
        n = 1;
    if (n > 64)
        n = 64;
    pthread_mutex_lock(&g->lock);
    g->preview_want = n;
    int start = !g->preview_started;
    g->preview_started = 1;
    pthread_cond_broadcast(&g->preview_cv);
    pthread_mutex_unlock(&g->lock);
    if (start && pthread_create(&g->preview_thread, NULL, preview_main, g) != 0) {
        pthread_mutex_lock(&g->lock);
        g->preview_started = 0;
        pthread_mutex_unlock(&g->lock);
    }
}

int eng_preview_get(eng *g, uint64_t *seen, run_preview *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&g->lock);
    int got = 0;
    if (g->preview_gen > *seen && g->preview.n > 0) {
        size_t bytes = (size_t)g->preview.n * g->preview.h * g->preview.w * 3;
        *out = g->preview;
        out->original = malloc(bytes);
        out->augmented = malloc(bytes);
        out->label = malloc((size_t)g->preview.n * sizeof *out->label);
        if (out->original && out->augmented && out->label) {
            memcpy(out->original, g->preview.original, bytes);
            memcpy(out->augmented, g->preview.augmented, bytes);
            memcpy(out->label, g->preview.label, (size_t)g->preview.n * sizeof *out->label);
            *seen = g->preview.generation;
            got = 1;
        } else {
            run_preview_free(out);
        }
    }
    pthread_mutex_unlock(&g->lock);
    return got;
}

/* ------------------------------------------------------------------------------ */
/* validation results */

int eng_val_report_get(eng *g, run_val_report *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&g->lock);
    const trn_val *v = &g->st.val;
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
            pthread_mutex_unlock(&g->lock);
            run_val_report_free(out);
            return PT_ENOMEM;
        }
    }
    pthread_mutex_unlock(&g->lock);
    return PT_OK;
}

long long eng_val_preds(eng *g, long long first, int n, int *label, int *pred, float *conf)
{
    long long got = 0;
    pthread_mutex_lock(&g->lock);
    const trn_val *v = &g->st.val;
    if (v->epoch > 0 && first >= 0 && first < v->n) {
        got = v->n - first < n ? v->n - first : n;
        for (long long i = 0; i < got; i++) {
            if (label)
                label[i] = v->labels[first + i];
            if (pred)
                pred[i] = v->preds[first + i];
            if (conf)
                conf[i] = v->conf[first + i];
        }
    }
    pthread_mutex_unlock(&g->lock);
    return got;
}

int eng_val_item_get(eng *g, long long index, run_val_item *out, pt_err *e)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&g->lock);
    const trn_val *v = &g->st.val;
    if (v->epoch == 0 || index < 0 || index >= v->n) {
        long long n = v->n;
        pthread_mutex_unlock(&g->lock);
        return err_set(e, PT_ENODATA, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       n ? "validation example %lld is outside 0..%lld" : "no validation yet",
                       index, n - 1);
    }
    batch_src src = v->src[index];
    out->label = v->labels[index];
    out->pred = v->preds[index];
    out->confidence = v->conf[index];
    int img = g->st.snap.image_size;
    pthread_mutex_unlock(&g->lock);

    const ds_dataset *d;
    int rc = open_data(g, &d, e);
    if (rc != PT_OK)
        return rc;
    if (src.shard < 0 || src.shard >= d->split[DS_VAL].n_shards)
        return err_set(e, PT_ENODATA, NULL, PT_NO_RECORD, PT_NO_OFFSET, "no such shard");
    const char *path = d->split[DS_VAL].shards[src.shard].path;
    tfr_reader *r;
    if ((rc = tfr_open(&r, path, e)) != PT_OK)
        return rc;
    const uint8_t *p;
    size_t len;
    rc = tfr_read_at(r, src.offset, src.record, &p, &len, e);
    if (rc != 1) {
        tfr_close(r);
        return rc < 0 ? rc : err_set(e, PT_ETRUNC, path, src.record, src.offset, "record vanished");
    }
    ex_example *ex;
    if ((rc = ex_parse(p, len, &ex, path, src.record, src.offset, e)) != PT_OK) {
        tfr_close(r);
        return rc;
    }
    const uint8_t *jp;
    size_t jl;
    rc = ex_get_bytes(ex, "image", &jp, &jl, e);
    if (rc == PT_OK) {
        out->h = out->w = img;
        out->rgb = malloc((size_t)img * img * 3);
        jpg_codec *c = jpg_codec_new();
        if (!out->rgb || !c)
            rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        else
            rc = jpg_decode_into(c, jp, jl, out->rgb, img, img, 1, 0, NULL, NULL, e);
        jpg_codec_free(c);
    }
    ex_free(ex);
    tfr_close(r);
    if (rc != PT_OK)
        run_val_item_free(out);
    return rc;
}
