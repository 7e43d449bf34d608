/* predict — the prediction engine (predict.h): decode workers, replica threads with
 * inference contexts, softmax, test-time flip. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "data/image.h"
#include "data/imgfile.h"
#include "data/jpeg.h"
#include "data/pipeline.h"
#include "infer/predict.h"

#define PRD_MAX_THREADS 64

/* A decode worker's own codec and resize scratch. */
typedef struct dec {
    jpg_codec *jc;
    img_scratch scratch;
} dec;

/* A replica: its inference context and input floats. */
typedef struct rep {
    nn_ctx *ctx;
    float *x;
} rep;

struct prd {
    const rm_model *m;
    prd_opts o;
    int S, k, per_rep;
    size_t px;                  /* bytes per image */
    dec dec[PRD_MAX_THREADS];
    rep rep[PRD_MAX_THREADS];
    atomic_llong done, total;
    _Atomic double t0;
};

void prd_free(prd *p)
{
    if (!p)
        return;
    for (int w = 0; w < PRD_MAX_THREADS; w++) {
        jpg_codec_free(p->dec[w].jc);
        img_scratch_free(&p->dec[w].scratch);
        nn_ctx_free(p->rep[w].ctx);
        free(p->rep[w].x);
    }
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
    if (p->o.replicas > p->o.batch)
        p->o.replicas = p->o.batch;
    p->S = m->image_size;
    p->k = m->n_classes;
    p->px = (size_t)p->S * p->S * 3;
    p->per_rep = (p->o.batch + p->o.replicas - 1) / p->o.replicas;
    for (int w = 0; w < p->o.workers; w++)
        if (!(p->dec[w].jc = jpg_codec_new()))
            goto oom;
    for (int r = 0; r < p->o.replicas; r++) {
        if (!(p->rep[r].ctx = nn_ctx_new_infer(m->net, p->per_rep, e))) {
            prd_free(p);
            return e->code;
        }
        if (!(p->rep[r].x = malloc((size_t)p->per_rep * p->px * sizeof(float))))
            goto oom;
    }
    *out = p;
    return PT_OK;
oom:
    prd_free(p);
    return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
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

int prd_argmax(const double *p, int k)
{
    int best = 0;
    for (int c = 1; c < k; c++)
        if (p[c] > p[best])
            best = c;
    return best;
}

/* ---- forward ---- */

void prd_softmax(const float *logits, int k, double *out)
{
    double mx = logits[0], sum = 0;
    for (int c = 1; c < k; c++)
        mx = logits[c] > mx ? logits[c] : mx;
    for (int c = 0; c < k; c++)
        sum += out[c] = exp((double)logits[c] - mx);
    for (int c = 0; c < k; c++)
        out[c] /= sum;
}

/* Mirror each of n images left to right, in place (floats, 3 a pixel). */
static void flip_floats(float *x, int n, int S)
{
    for (long row = 0; row < (long)n * S; row++) {
        float *a = x + row * S * 3, *b = a + (S - 1) * 3;
        for (; a < b; a += 3, b -= 3)
            for (int c = 0; c < 3; c++) {
                float t = a[c];
                a[c] = b[c];
                b[c] = t;
            }
    }
}

typedef struct fwd_job {
    prd *p;
    int r;
    const uint8_t *images;  /* the batch */
    const int *idx;         /* the batch's images to forward */
    int lo, hi;             /* this replica's part of idx */
    double *probs;          /* row per image of the batch */
    int rc;
} fwd_job;

static void *forward_part(void *arg)
{
    fwd_job *j = arg;
    prd *p = j->p;
    rep *rp = &p->rep[j->r];
    const int n = j->hi - j->lo, k = p->k;
    if (n <= 0)
        return NULL;
    /* As training feeds images (train/strategy.c): bytes times the float 1 / 255. */
    const float s = 1.0f / 255.0f;
    for (int i = 0; i < n; i++) {
        const uint8_t *src = j->images + (size_t)j->idx[j->lo + i] * p->px;
        float *dst = rp->x + (size_t)i * p->px;
        for (size_t q = 0; q < p->px; q++)
            dst[q] = (float)src[q] * s;
    }
    const float *y = nn_forward(rp->ctx, rp->x, n, 0, 0, 0);
    if (!y) {
        j->rc = PT_EUSAGE;
        return NULL;
    }
    for (int i = 0; i < n; i++)
        prd_softmax(y + (size_t)i * k, k, j->probs + (size_t)j->idx[j->lo + i] * k);
    if (!p->o.tta_flip)
        return NULL;
    flip_floats(rp->x, n, p->S);
    if (!(y = nn_forward(rp->ctx, rp->x, n, 0, 0, 0))) {
        j->rc = PT_EUSAGE;
        return NULL;
    }
    double *q = malloc((size_t)k * sizeof *q);
    if (!q) {
        j->rc = PT_ENOMEM;
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        double *row = j->probs + (size_t)j->idx[j->lo + i] * k;
        prd_softmax(y + (size_t)i * k, k, q);
        for (int c = 0; c < k; c++)
            row[c] = 0.5 * (row[c] + q[c]);
    }
    free(q);
    return NULL;
}

/* The probabilities of the images of a batch whose ok[i] is set, into probs (a row
 * per image, n_img rows); the others' rows are left alone. */
static int forward_batch(prd *p, const uint8_t *images, const uint8_t *ok, int n_img,
                         double *probs, pt_err *e)
{
    int idx[n_img > 0 ? n_img : 1], n = 0;
    for (int i = 0; i < n_img; i++)
        if (ok[i])
            idx[n++] = i;
    const int R = p->o.replicas;
    fwd_job jobs[PRD_MAX_THREADS];
    pthread_t th[PRD_MAX_THREADS];
    int started[PRD_MAX_THREADS] = { 0 };
    for (int r = 0; r < R; r++) {
        size_t lo, hi;
        /* Contiguous parts of at most per_rep images, replica 0 the first. */
        lo = (size_t)r * p->per_rep;
        hi = lo + (size_t)p->per_rep;
        lo = lo < (size_t)n ? lo : (size_t)n;
        hi = hi < (size_t)n ? hi : (size_t)n;
        jobs[r] = (fwd_job){ p, r, images, idx, (int)lo, (int)hi, probs, PT_OK };
        if (r > 0 && hi > lo)
            started[r] = pthread_create(&th[r], NULL, forward_part, &jobs[r]) == 0;
        if (r > 0 && hi > lo && !started[r])
            forward_part(&jobs[r]); /* no thread to be had: on this one */
    }
    forward_part(&jobs[0]);
    int rc = PT_OK;
    for (int r = 0; r < R; r++) {
        if (started[r])
            pthread_join(th[r], NULL);
        if (jobs[r].rc != PT_OK && rc == PT_OK)
            rc = jobs[r].rc;
    }
    if (rc != PT_OK)
        return err_set(e, rc, NULL, PT_NO_RECORD, PT_NO_OFFSET, "the forward pass failed");
    return PT_OK;
}

/* ---- files ---- */

static int decode_file(prd *p, dec *d, const char *path, uint8_t *out, pt_err *e)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    pt_err why;
    err_clear(&why);
    int rc = PT_OK;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > PRD_MAX_FILE_BYTES)
        return err_set(e, PT_ETOOBIG, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "%lld bytes: files over %lld MiB are refused", (long long)st.st_size,
                       PRD_MAX_FILE_BYTES >> 20);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "a folder, not an image");
    if ((rc = util_read_file(path, &buf, &len, e)) != PT_OK)
        return rc;
    rc = imf_decode(d->jc, &d->scratch, buf, len, out, p->S, p->m->crop, p->m->fast_decode,
                    &why);
    free(buf);
    if (rc != PT_OK)
        return err_set(e, rc, path, PT_NO_RECORD, PT_NO_OFFSET, "%s", why.msg);
    return PT_OK;
}

typedef struct dec_job {
    prd *p;
    char *const *paths;     /* the batch's */
    int n;
    uint8_t *images;
    uint8_t *ok;
    prd_item *items;
    atomic_int next;
} dec_job;

typedef struct dec_arg {
    dec_job *j;
    int w;
} dec_arg;

static void *decode_part(void *arg)
{
    dec_arg *a = arg;
    dec_job *j = a->j;
    prd *p = j->p;
    for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
        prd_item *it = &j->items[i];
        it->label = -1;
        it->ok = decode_file(p, &p->dec[a->w], j->paths[i], j->images + (size_t)i * p->px,
                             &it->err) == PT_OK;
        j->ok[i] = (uint8_t)it->ok;
    }
    return NULL;
}

/* Decoding of a batch on the workers, started (decode_start) and waited for
 * (decode_wait) around the previous batch's forward. */
typedef struct decoding {
    dec_job job;
    dec_arg args[PRD_MAX_THREADS];
    pthread_t th[PRD_MAX_THREADS];
    int started[PRD_MAX_THREADS];
} decoding;

static void decode_start(prd *p, decoding *d, char *const *paths, int n, uint8_t *images,
                         uint8_t *ok, prd_item *items)
{
    d->job.p = p;
    d->job.paths = paths;
    d->job.n = n;
    d->job.images = images;
    d->job.ok = ok;
    d->job.items = items;
    atomic_store(&d->job.next, 0);
    for (int w = 0; w < p->o.workers; w++) {
        d->args[w] = (dec_arg){ &d->job, w };
        d->started[w] = pthread_create(&d->th[w], NULL, decode_part, &d->args[w]) == 0;
    }
}

static void decode_wait(prd *p, decoding *d)
{
    for (int w = 0; w < p->o.workers; w++)
        if (d->started[w])
            pthread_join(d->th[w], NULL);
    /* Had no thread started, what is left is done here (worker 0's codec is free). */
    dec_arg a = { &d->job, 0 };
    decode_part(&a);
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

int prd_files(prd *p, char *const *paths, long long n, prd_results *out, pt_err *e)
{
    int rc = results_alloc(out, n, p->k, e);
    if (rc != PT_OK)
        return rc;
    progress_start(p, n);
    const int B = p->o.batch;
    uint8_t *img[2] = { malloc((size_t)B * p->px), malloc((size_t)B * p->px) };
    uint8_t *ok[2] = { calloc((size_t)B, 1), calloc((size_t)B, 1) };
    decoding *dj = calloc(1, sizeof *dj);
    if (!img[0] || !img[1] || !ok[0] || !ok[1] || !dj) {
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        goto out;
    }
    long long lo = 0;
    int cur = 0, nb = (int)(n < B ? n : B);
    if (n > 0) {
        decode_start(p, dj, paths, nb, img[cur], ok[cur], out->items);
        decode_wait(p, dj);
    }
    while (lo < n && rc == PT_OK) {
        /* The next batch decodes while this one is forwarded. */
        long long next = lo + nb;
        int nn = (int)(n - next < B ? n - next : B);
        if (nn > 0)
            decode_start(p, dj, paths + next, nn, img[!cur], ok[!cur], out->items + next);
        rc = forward_batch(p, img[cur], ok[cur], nb, out->probs + (size_t)lo * p->k, e);
        if (nn > 0)
            decode_wait(p, dj);
        progress_add(p, nb);
        lo = next;
        nb = nn;
        cur = !cur;
    }
    out->n = n;
    for (long long i = 0; i < n; i++)
        out->n_failed += !out->items[i].ok;
out:
    free(img[0]);
    free(img[1]);
    free(ok[0]);
    free(ok[1]);
    free(dj);
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
    /* Validation's pipeline (train/feed.c, FEED_EVAL): one pass in file order. */
    pipe_config c;
    pipe_config_defaults(&c);
    c.split = split;
    c.labeled = labeled;
    c.n_classes = p->k;
    c.image_w = c.image_h = p->S;
    c.crop = p->m->crop;
    c.fast_decode = p->m->fast_decode;
    c.batch_size = p->o.batch;
    c.interleave = 1;
    c.workers = p->o.workers;
    c.prefetch = 2;
    c.deterministic = 1;
    rec_errors re = { .r = out };
    pthread_mutex_init(&re.lock, NULL);
    c.on_error = on_record_error;
    c.error_ctx = &re;
    pipeline *pl;
    uint8_t *ok = malloc((size_t)p->o.batch);
    if (!ok || (rc = pipe_create(&c, &pl, e)) != PT_OK) {
        if (!ok)
            rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        free(ok);
        pthread_mutex_destroy(&re.lock);
        prd_results_free(out);
        return rc;
    }
    memset(ok, 1, (size_t)p->o.batch);
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
            util_copy(it->id, sizeof it->id, labeled ? "" : b->id[i]);
        }
        rc = forward_batch(p, b->images, ok, b->n, out->probs + (size_t)out->n * p->k, e);
        out->n += b->n;
        progress_add(p, b->planned > b->n ? b->planned : b->n);
        pipe_release(pl, b);
    }
    if (rc == PT_OK && got < 0)
        rc = e->code;
    pipe_destroy(pl);
    free(ok);
    pthread_mutex_destroy(&re.lock);
    if (rc != PT_OK)
        prd_results_free(out);
    return rc;
}
