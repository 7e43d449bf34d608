/* engine_samples — the engine's sample thread and what it answers: previews of
 * augmented batches, validation images for inspect, and their Grad-CAM. Requests
 * and results live in struct eng (engine_impl.h) under g->lock; the thread starts
 * on the first request and engine.c's eng_destroy() stops it. */
#include "engine_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/netcfg.h"


static void make_preview(eng *g, int n, uint64_t count)
{
    run_preview p;
    memset(&p, 0, sizeof p);
    pt_err e;
    const ds_dataset *d;
    int img = 0;
    int rc = eng_open_data(g, &d, &e);
    if (rc == PT_OK)
        rc = netcfg_image_size(&g->cfg, d, &img, &e);
    if (rc == PT_OK)
        rc = feed_preview(g->samples, d, img, n, count, &p, &e);
    if (rc != PT_OK) {
        char line[1100];
        snprintf(line, sizeof line, "preview failed: %s", e.msg);
        eng_log_push(g, line);
    }
    pthread_mutex_lock(&g->lock);
    g->preview_failed = rc != PT_OK;
    if (rc == PT_OK) {
        run_preview_free(&g->preview);
        g->preview = p;
        g->preview.generation = ++g->preview_gen;
    } else {
        g->preview_err = e;
    }
    pthread_mutex_unlock(&g->lock);
}

/* Validation example index's image and results into s. */
static void read_item(eng *g, long long index, item_slot *s)
{
    memset(s, 0, sizeof *s);
    s->used = 1;
    s->index = index;
    batch_src src;
    const ds_dataset *d;
    s->rc = prg_val_example(g->progress, index, &src, &s->item, &s->epoch, &s->err);
    if (s->rc == PT_OK)
        s->rc = eng_open_data(g, &d, &s->err);
    if (s->rc == PT_OK)
        s->rc = feed_val_image(d, src, &s->item, &s->err);
}

static void load_item(eng *g, long long index)
{
    item_slot s;
    read_item(g, index, &s);
    pthread_mutex_lock(&g->lock);
    item_slot *old = &g->items[g->item_next];
    run_val_item_free(&old->item);
    *old = s;
    g->item_next = (g->item_next + 1) % ITEM_CACHE;
    pthread_mutex_unlock(&g->lock);
}

/* Grad-CAM of example index through the run folder's model (the sample thread
 * alone touches cam_model). */
static void make_cam(eng *g, long long index)
{
    item_slot s;
    run_explain x;
    memset(&x, 0, sizeof x);
    read_item(g, index, &s);
    if (s.rc == PT_OK) {
        char dir[sizeof ((run_snapshot *)0)->run_dir];
        prg_run_dir(g->progress, dir, sizeof dir);
        s.rc = eng_cam_make(&g->cam_model, dir, s.epoch, &s.item, &x, &s.err);
    }
    run_val_item_free(&s.item);
    pthread_mutex_lock(&g->lock);
    run_explain_free(&g->cam);
    g->cam = x;
    g->cam_slot = s;
    pthread_mutex_unlock(&g->lock);
}

static void *sample_main(void *arg)
{
    eng *g = arg;
    pthread_mutex_lock(&g->lock);
    for (;;) {
        while (!g->sample_exit && g->preview_want == 0 && g->item_want_n == 0 &&
               g->cam_want < 0)
            pthread_cond_wait(&g->sample_cv, &g->lock);
        if (g->sample_exit)
            break;
        if (g->item_want_n > 0) {
            /* Images for the inspect page first: someone is looking at it. */
            long long index = g->item_want[0];
            g->item_want_n--;
            memmove(g->item_want, g->item_want + 1, (size_t)g->item_want_n * sizeof *g->item_want);
            pthread_mutex_unlock(&g->lock);
            load_item(g, index);
        } else if (g->cam_want >= 0) {
            long long index = g->cam_want;
            g->cam_want = -1;
            pthread_mutex_unlock(&g->lock);
            make_cam(g, index);
        } else {
            int n = g->preview_want;
            g->preview_want = 0;
            uint64_t count = ++g->preview_count;
            pthread_mutex_unlock(&g->lock);
            make_preview(g, n, count);
        }
        pthread_mutex_lock(&g->lock);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* Wake the sample thread, starting it the first time. Called with g->lock held;
 * returns with it held. */
void eng_wake_samples(eng *g)
{
    pthread_cond_broadcast(&g->sample_cv);
    if (g->sample_started)
        return;
    g->sample_started = 1;
    if (pthread_create(&g->sample_thread, NULL, sample_main, g) != 0)
        g->sample_started = 0;
}

/* ------------------------------------------------------------------------------ */
/* previews */

void eng_preview_request(eng *g, int n)
{
    if (n < 1)
        n = 1;
    if (n > 64)
        n = 64;
    pthread_mutex_lock(&g->lock);
    g->preview_want = n;
    eng_wake_samples(g);
    pthread_mutex_unlock(&g->lock);
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

int eng_preview_error(eng *g, pt_err *e)
{
    pthread_mutex_lock(&g->lock);
    int failed = g->preview_failed;
    if (failed && e)
        *e = g->preview_err;
    pthread_mutex_unlock(&g->lock);
    return failed;
}

/* ------------------------------------------------------------------------------ */
/* validation results */

int eng_val_report_get(eng *g, run_val_report *out)
{
    return prg_val_report(g->progress, out);
}

long long eng_val_preds(eng *g, long long first, int n, int *label, int *pred, float *conf,
                        float *loss)
{
    return prg_val_preds(g->progress, first, n, label, pred, conf, loss);
}

/* The epoch of the results example index belongs to; PT_ENODATA (e says why) when
 * there are none or index is outside them. */
static int results_epoch(eng *g, long long index, int *epoch, pt_err *e)
{
    batch_src src;
    run_val_item now;
    return prg_val_example(g->progress, index, &src, &now, epoch, e);
}

int eng_val_item_get(eng *g, long long index, run_val_item *out, pt_err *e)
{
    memset(out, 0, sizeof *out);
    int epoch;
    int rc = results_epoch(g, index, &epoch, e);
    if (rc != PT_OK)
        return rc;
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < ITEM_CACHE; i++) {
        item_slot *s = &g->items[i];
        if (!s->used || s->index != index || s->epoch != epoch)
            continue;
        rc = s->rc;
        if (rc != PT_OK) {
            if (e)
                *e = s->err;
        } else {
            size_t bytes = (size_t)s->item.h * s->item.w * 3;
            *out = s->item;
            out->rgb = malloc(bytes);
            if (out->rgb) {
                memcpy(out->rgb, s->item.rgb, bytes);
                rc = 1;
            } else {
                rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
            }
        }
        pthread_mutex_unlock(&g->lock);
        return rc;
    }
    int queued = 0;
    for (int i = 0; i < g->item_want_n; i++)
        if (g->item_want[i] == index)
            queued = 1;
    if (!queued) {
        if (g->item_want_n == ITEM_QUEUE) {
            /* The oldest request is for a page that is no longer on screen. */
            g->item_want_n--;
            memmove(g->item_want, g->item_want + 1, (size_t)g->item_want_n * sizeof *g->item_want);
        }
        g->item_want[g->item_want_n++] = index;
        eng_wake_samples(g);
    }
    pthread_mutex_unlock(&g->lock);
    return 0;
}

int eng_explain_get(eng *g, long long index, run_explain *out, pt_err *e)
{
    memset(out, 0, sizeof *out);
    int epoch;
    int rc = results_epoch(g, index, &epoch, e);
    if (rc != PT_OK)
        return rc;
    pthread_mutex_lock(&g->lock);
    const item_slot *s = &g->cam_slot;
    if (s->used && s->index == index && s->epoch == epoch) {
        rc = s->rc;
        if (rc != PT_OK) {
            if (e)
                *e = s->err;
        } else {
            rc = run_explain_copy(&g->cam, out) == PT_OK
                     ? 1
                     : err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        }
    } else if (g->cam_want != index) {
        g->cam_want = index;
        eng_wake_samples(g);
    }
    pthread_mutex_unlock(&g->lock);
    return rc == PT_OK ? 0 : rc;
}
