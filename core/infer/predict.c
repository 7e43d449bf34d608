/* predict — the prediction engine (predict.h): the input pipeline's workers decode,
 * an inference-only replica pool forwards, infer.h turns logits into probabilities. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/image.h"
#include "data/pipeline.h"
#include "infer/infer.h"
#include "infer/predict.h"
#include "pool/rpool.h"

#define PRD_MAX_THREADS 64

struct prd {
    const rm_model *m;
    prd_opts o;
    int S, k, per_rep;
    size_t px;                  /* bytes per image */
    rpool *pool;                /* inference-only: o.replicas x per_rep images */
    uint8_t *packed;            /* a batch's images that decoded, packed */
    float *logits;              /* batch x k */
    double *probs;              /* batch x k, the packed images' */
    uint8_t *view;              /* tta_crops: a batch of one crop of each image */
    double *view_probs;         /* tta_crops: batch x k, one view's */
    img_scratch scratch;        /* tta_crops: the resizer's */
    atomic_llong done, total;
    _Atomic double t0;
};

void prd_free(prd *p)
{
    if (!p)
        return;
    rpool_free(p->pool);
    free(p->packed);
    free(p->logits);
    free(p->probs);
    free(p->view);
    free(p->view_probs);
    img_scratch_free(&p->scratch);
    free(p);
}

int prd_new(const rm_model *m, const prd_opts *o, prd **out, pt_err *e)
{
    pt_err local;
    if (!e)
        e = &local;
    *out = NULL;
    if (!m || !m->net || o->batch < 1 || o->replicas < 1 || o->replicas > PRD_MAX_THREADS ||
        o->workers < 0 || o->workers > PRD_MAX_THREADS)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "predict: a batch >= 1 and 1..%d replicas and workers", PRD_MAX_THREADS);
    prd *p = calloc(1, sizeof *p);
    if (!p)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    p->m = m;
    p->o = *o;
    if (p->o.workers == 0)
        p->o.workers = 2;
    /* More replicas than a batch has images still pay: the pool runs such a batch on
     * one replica with the others splitting its convolutions (rpool.h). */
    p->S = m->image_size;
    p->k = m->n_classes;
    p->px = (size_t)p->S * p->S * 3;
    /* Contiguous parts of at most per_rep images, replica 0 the first. */
    p->per_rep = (p->o.batch + p->o.replicas - 1) / p->o.replicas;
    int rc = inf_pool_new(m->net, p->o.replicas, p->per_rep, p->o.bf16, &p->pool, e);
    if (rc != PT_OK) {
        prd_free(p);
        return rc;
    }
    const size_t B = (size_t)p->o.batch;
    p->packed = malloc(B * p->px);
    p->logits = malloc(B * (size_t)p->k * sizeof *p->logits);
    p->probs = malloc(B * (size_t)p->k * sizeof *p->probs);
    if (p->o.tta_crops && !p->o.raw) {
        p->view = malloc(B * p->px);
        p->view_probs = malloc(B * (size_t)p->k * sizeof *p->view_probs);
    }
    if (!p->packed || !p->logits || !p->probs ||
        (p->o.tta_crops && !p->o.raw && (!p->view || !p->view_probs))) {
        prd_free(p);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    *out = p;
    return PT_OK;
}

void prd_progress(const prd *p, long long *done, long long *total, double *seconds)
{
    prd *q = (prd *)p;
    if (done)
        *done = atomic_load(&q->done);
    if (total)
        *total = atomic_load(&q->total);
    if (seconds)
        *seconds = util_now() - atomic_load(&q->t0);
}

/* The mean of the probabilities of the n packed images' five crops (prd_opts.tta_crops:
 * the centre and the four corners, each PRD_CROP_NUM/PRD_CROP_DEN of the side, resized
 * back to S x S; each with its mirror image too when tta_flip) into p->probs. */
static int crops_probs(prd *p, int n, pt_err *e)
{
    const int S = p->S, k = p->k, c = prd_crop_side(S), far = S - c;
    const int at[PRD_CROPS][2] = { { far / 2, far / 2 }, { 0, 0 }, { far, 0 }, { 0, far },
                                   { far, far } };
    memset(p->probs, 0, (size_t)n * k * sizeof *p->probs);
    for (int v = 0; v < PRD_CROPS; v++) {
        for (int i = 0; i < n; i++)
            if (img_resize(p->packed + (size_t)i * p->px, S * 3, at[v][0], at[v][1], c, c,
                           p->view + (size_t)i * p->px, S, S, &p->scratch) != 0)
                return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        int rc = inf_probs(p->pool, p->view, n, S, S, k, p->o.tta_flip, p->logits,
                           p->view_probs, e);
        if (rc != PT_OK)
            return rc;
        for (size_t q = 0; q < (size_t)n * k; q++)
            p->probs[q] += p->view_probs[q] / PRD_CROPS;
    }
    return PT_OK;
}

int prd_crop_side(int S)
{
    return (S * PRD_CROP_NUM + PRD_CROP_DEN / 2) / PRD_CROP_DEN;
}

/* The probabilities of the images of a batch whose ok[i] is set (ok NULL: all), into
 * probs (a row per image, n_img rows); the others' rows are left alone. The images
 * may be mirrored on the way (the test-time flip). */
static int forward_batch(prd *p, uint8_t *images, const uint8_t *ok, int n_img,
                         double *probs, pt_err *e)
{
    const int k = p->k;
    int n = 0;
    for (int i = 0; i < n_img; i++)
        if (!ok || ok[i])
            memcpy(p->packed + (size_t)n++ * p->px, images + (size_t)i * p->px, p->px);
    if (n == 0)
        return PT_OK;
    int rc = p->o.raw ? inf_logits(p->pool, p->packed, n, p->S, p->S, 0, p->logits, NULL, e)
             : p->o.tta_crops ? crops_probs(p, n, e)
                      : inf_probs(p->pool, p->packed, n, p->S, p->S, k, p->o.tta_flip,
                                  p->logits, p->probs, e);
    for (size_t i = 0; rc == PT_OK && p->o.raw && i < (size_t)n * k; i++)
        p->probs[i] = p->logits[i];
    if (rc != PT_OK)
        return err_set(e, rc, NULL, PT_NO_RECORD, PT_NO_OFFSET, "the forward pass failed");
    for (int i = 0, j = 0; i < n_img; i++)
        if (!ok || ok[i])
            memcpy(probs + (size_t)i * k, p->probs + (size_t)j++ * k, (size_t)k * sizeof *probs);
    return PT_OK;
}

/* Whether the caller asked to stop (prd_opts.stop). */
static int stopped(const prd *p)
{
    return p->o.stop && *p->o.stop;
}

static int results_alloc(prd_results *r, long long n, int k, pt_err *e)
{
    memset(r, 0, sizeof *r);
    r->k = k;
    r->items = calloc((size_t)(n ? n : 1), sizeof *r->items);
    r->probs = calloc((size_t)(n ? n : 1) * (size_t)k, sizeof *r->probs);
    if (!r->items || !r->probs) {
        prd_results_free(r);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "out of memory for the results of %lld images", n);
    }
    return PT_OK;
}

void prd_results_free(prd_results *r)
{
    if (!r)
        return;
    free(r->items);
    free(r->probs);
    free(r->errors);
    memset(r, 0, sizeof *r);
}

static void progress_start(prd *p, long long total)
{
    atomic_store(&p->done, 0);
    atomic_store(&p->total, total);
    atomic_store(&p->t0, util_now());
}

static void progress_add(prd *p, long long n)
{
    long long done = atomic_fetch_add(&p->done, n) + n;
    if (p->o.on_batch)
        p->o.on_batch(p->o.ctx, done, atomic_load(&p->total));
}

/* The file source's pipeline: validation's decode settings, the files in order. */
static int open_files(prd *p, char *const *paths, long long n, pt_err *errs, pipeline **pl,
                      pt_err *e)
{
    pipe_config c;
    rm_pipe_config(p->m, &c);
    c.files = paths;
    c.n_files = n;
    c.file_errors = errs;
    c.max_file_bytes = PRD_MAX_FILE_BYTES;
    c.labeled = 0;
    c.batch_size = p->o.batch;
    c.workers = p->o.workers;
    return pipe_create(&c, pl, e);
}

int prd_files(prd *p, char *const *paths, long long n, prd_results *out, pt_err *e)
{
    int rc = results_alloc(out, n, p->k, e);
    if (rc != PT_OK)
        return rc;
    progress_start(p, n);
    out->n = out->planned = n;
    if (n == 0)
        return PT_OK;
    pt_err *errs = calloc((size_t)n, sizeof *errs);
    uint8_t *ok = malloc((size_t)p->o.batch);
    pipeline *pl = NULL;
    if (!errs || !ok)
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    else
        rc = open_files(p, paths, n, errs, &pl, e);
    batch *b;
    int got = 0;
    while (rc == PT_OK && (got = pipe_next(pl, &b, e)) == 1) {
        /* The batch's files are consecutive, in order. */
        long long lo = b->src[0].record;
        for (int i = 0; i < b->n; i++) {
            prd_item *it = &out->items[lo + i];
            it->label = -1;
            it->shard = -1;
            it->record = lo + i;
            it->ok = errs[lo + i].code == PT_OK;
            if (!it->ok)
                it->err = errs[lo + i];
            ok[i] = (uint8_t)it->ok;
        }
        rc = forward_batch(p, b->images, ok, b->n, out->probs + (size_t)lo * p->k, e);
        progress_add(p, b->n);
        int m = b->n;
        pipe_release(pl, b);
        if (rc == PT_OK && p->o.on_rows)
            p->o.on_rows(p->o.rows_ctx, out, lo, m);
        if (rc == PT_OK && stopped(p)) {
            out->n = lo + m;
            out->stopped = 1;
            break;
        }
    }
    if (rc == PT_OK && got < 0)
        rc = e->code;
    pipe_destroy(pl);
    free(errs);
    free(ok);
    for (long long i = 0; i < out->n; i++)
        out->n_failed += !out->items[i].ok;
    if (rc != PT_OK)
        prd_results_free(out);
    return rc;
}

/* ---- records ---- */

typedef struct rec_errors {
    pthread_mutex_t lock;
    prd_results *r;
    long long cap;
} rec_errors;

/* The pipeline's workers report the records they skip. */
static void on_record_error(void *ctx, const pt_err *err)
{
    rec_errors *re = ctx;
    pthread_mutex_lock(&re->lock);
    prd_results *r = re->r;
    if (r->n_errors == re->cap) {
        long long cap = re->cap ? re->cap * 2 : 16;
        pt_err *v = realloc(r->errors, (size_t)cap * sizeof *v);
        if (v) {
            r->errors = v;
            re->cap = cap;
        }
    }
    if (r->n_errors < re->cap)
        r->errors[r->n_errors++] = *err;
    r->n_failed++;
    pthread_mutex_unlock(&re->lock);
}

/* Room for at least need items (a split whose shard names undercount it). */
static int grow(prd_results *r, long long *cap, long long need, pt_err *e)
{
    long long c = *cap * 2 > need ? *cap * 2 : need;
    prd_item *it = realloc(r->items, (size_t)c * sizeof *it);
    if (it)
        r->items = it;
    double *pr = it ? realloc(r->probs, (size_t)c * (size_t)r->k * sizeof *pr) : NULL;
    if (!pr)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    r->probs = pr;
    memset(r->items + *cap, 0, (size_t)(c - *cap) * sizeof *it);
    *cap = c;
    return PT_OK;
}

int prd_split(prd *p, const ds_split *split, int labeled, prd_results *out, pt_err *e)
{
    pt_err local;
    if (!e)
        e = &local;
    if (!split->dir || split->count <= 0)
        return err_set(e, PT_ENODATA, split->dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "the dataset has no %s records", split->name);
    int rc = results_alloc(out, split->count, p->k, e);
    if (rc != PT_OK)
        return rc;
    progress_start(p, split->count);
    out->planned = split->count;
    /* Validation's pipeline (data/feed.c, FEED_EVAL): one pass in file order. */
    pipe_config c;
    rm_pipe_config(p->m, &c);
    c.split = split;
    c.labeled = labeled;
    c.n_classes = p->k;
    c.batch_size = p->o.batch;
    c.interleave = 1;
    c.workers = p->o.workers;
    rec_errors re = { .r = out };
    pthread_mutex_init(&re.lock, NULL);
    c.on_error = on_record_error;
    c.error_ctx = &re;
    pipeline *pl;
    if ((rc = pipe_create(&c, &pl, e)) != PT_OK) {
        pthread_mutex_destroy(&re.lock);
        prd_results_free(out);
        return rc;
    }
    batch *b;
    int got = 0;
    long long cap = split->count;
    while (rc == PT_OK && (got = pipe_next(pl, &b, e)) == 1) {
        if (out->n + b->n > cap && (rc = grow(out, &cap, out->n + b->n, e)) != PT_OK) {
            pipe_release(pl, b);
            break;
        }
        for (int i = 0; i < b->n; i++) {
            prd_item *it = &out->items[out->n + i];
            it->ok = 1;
            it->label = labeled ? b->label[i] : -1;
            it->shard = b->src[i].shard;
            it->record = (long long)b->src[i].record;
            util_copy(it->id, sizeof it->id, labeled ? "" : b->id[i]);
        }
        rc = forward_batch(p, b->images, NULL, b->n, out->probs + (size_t)out->n * p->k, e);
        long long lo = out->n;
        out->n += b->n;
        progress_add(p, b->planned > b->n ? b->planned : b->n);
        pipe_release(pl, b);
        if (rc == PT_OK && p->o.on_rows)
            p->o.on_rows(p->o.rows_ctx, out, lo, out->n - lo);
        if (rc == PT_OK && stopped(p)) {
            out->stopped = 1;
            break;
        }
    }
    if (rc == PT_OK && got < 0)
        rc = e->code;
    pipe_destroy(pl);
    pthread_mutex_destroy(&re.lock);
    if (rc != PT_OK)
        prd_results_free(out);
    return rc;
}
