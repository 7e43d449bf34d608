#include "data/pipeline.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/util.h"
#include "data/image.h"
#include "data/jpeg.h"
#include "io/example.h"
#include "io/tfrecord.h"

/* One record's compressed image and label, shared by its oversampled copies. */
typedef struct rec {
    uint8_t *jpeg;
    size_t len;
    atomic_int refs;        /* copies not yet decoded or dropped */
    int32_t label;
    int w, h;               /* from the header check, so workers need not parse it */
    char id[BATCH_ID_MAX];
    batch_src src;
} rec;

static void rec_unref(rec *r)
{
    if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
        free(r->jpeg);
        free(r);
    }
}

/* An open shard in an interleave slot. */
typedef struct slot {
    tfr_reader *reader;
    int shard;
} slot;


struct pipeline {
    pipe_config cfg;
    int n_shards;

    /* ---- planner: everything here is guarded by plan_lock ---- */
    pthread_mutex_t plan_lock;
    rng plan_rng;
    int *order;             /* shard order of the current pass */
    int next_in_order;
    slot *slots;
    int n_slots, cur_slot;
    uint64_t pass;
    long long pass_valid;   /* usable records met in this pass */
    rec *pending;           /* oversampled copies still to emit */
    int pending_left;
    rec **shuf;             /* shuffle buffer */
    int shuf_n;
    int stream_done;        /* no more records will come from the shards */
    int plan_eof;           /* no more batches will be planned */
    uint64_t next_seq;
    long long next_file;    /* the file source: the next path's index */
    jpg_codec *plan_codec;  /* header checks */

    /* ---- batches ---- */
    pthread_mutex_t lock;   /* guards everything below */
    pthread_cond_t free_cv, ready_cv;
    batch **pool_all;       /* every buffer, for destroy */
    batch **pool_free;
    int n_free;
    batch **ready;          /* published, in arrival order */
    int n_ready;
    int pool_size;
    uint64_t total_batches; /* valid once plan_eof */
    int total_known;
    uint64_t next_out;      /* deterministic: the seq to hand out next */
    uint64_t delivered;
    uint64_t empty_run;     /* consecutive batches whose every image failed */
    int stop;
    int failed;
    pt_err fail_err;
    int workers_alive;

    /* ---- stats ---- */
    atomic_uint_fast64_t records_read, examples_out, errors;
    atomic_uint_fast64_t decode_ns, wait_ns;

    pthread_t *threads;
    int n_threads;
};

void pipe_config_defaults(pipe_config *c)
{
    memset(c, 0, sizeof *c);
    c->labeled = 1;
    c->crop = 1;
    c->drop_remainder = 0;
    c->shuffle_buffer = 0;
    c->interleave = 0;
    c->workers = 2;
    c->prefetch = 4;
    c->deterministic = 1;
    c->seed = 42;
}

/* ------------------------------------------------------------------------------ */
/* errors */

static void report(pipeline *p, const pt_err *err)
{
    atomic_fetch_add(&p->errors, 1);
    if (p->cfg.on_error)
        p->cfg.on_error(p->cfg.error_ctx, err);

    if (p->cfg.stop_on_error) {
        pthread_mutex_lock(&p->lock);
        if (!p->failed) {
            p->failed = 1;
            p->fail_err = *err;
        }
        pthread_cond_broadcast(&p->ready_cv);
        pthread_cond_broadcast(&p->free_cv);
        pthread_mutex_unlock(&p->lock);
    }
}

static int is_failed(pipeline *p)
{
    pthread_mutex_lock(&p->lock);
    int f = p->failed || p->stop;
    pthread_mutex_unlock(&p->lock);
    return f;
}

/* ------------------------------------------------------------------------------ */
/* planner (call with plan_lock held) */

static void start_pass(pipeline *p)
{
    for (int i = 0; i < p->n_shards; i++)
        p->order[i] = i;
    if (p->cfg.shuffle_shards)
        for (int i = p->n_shards - 1; i > 0; i--) {
            int j = (int)rng_below(&p->plan_rng, (uint64_t)i + 1);
            int t = p->order[i];
            p->order[i] = p->order[j];
            p->order[j] = t;
        }
    p->next_in_order = 0;
    p->pass++;
    p->pass_valid = 0;
}

/* Open the next shard of the pass into slot s; 0 when the pass has none left. */
static int fill_slot(pipeline *p, slot *s)
{
    while (p->next_in_order < p->n_shards) {
        int shard = p->order[p->next_in_order++];
        pt_err e;
        tfr_reader *r;
        if (tfr_open(&r, p->cfg.split->shards[shard].path, &e) != PT_OK) {
            report(p, &e);
            continue;
        }
        s->reader = r;
        s->shard = shard;
        return 1;
    }
    s->reader = NULL;
    return 0;
}

/* Turn one record's payload into a rec, or report why not. */
static rec *make_rec(pipeline *p, const uint8_t *data, size_t len, int shard, long long index,
                     long long offset)
{
    const char *file = p->cfg.split->shards[shard].path;
    pt_err e, fe;
    err_clear(&fe);
    ex_example *ex;
    if (ex_parse(data, len, &ex, file, index, offset, &e) != PT_OK) {
        report(p, &e);
        return NULL;
    }
    const uint8_t *img;
    size_t ilen;
    int32_t label = -1;
    char id[BATCH_ID_MAX] = "";
    if (ex_get_bytes(ex, "image", &img, &ilen, &fe) != PT_OK) {
        err_set(&e, PT_EFEATURE, file, index, offset, "%s", fe.msg);
        goto bad;
    }
    if (p->cfg.labeled) {
        int64_t cls;
        if (ex_get_int64(ex, "class", &cls, &fe) != PT_OK) {
            err_set(&e, PT_EFEATURE, file, index, offset, "%s", fe.msg);
            goto bad;
        }
        if (cls < 0 || cls >= p->cfg.n_classes) {
            err_set(&e, PT_ECLASS, file, index, offset, "class %lld outside 0..%d",
                    (long long)cls, p->cfg.n_classes - 1);
            goto bad;
        }
        label = (int32_t)cls;
    } else {
        const uint8_t *idb;
        size_t idlen;
        if (ex_get_bytes(ex, "id", &idb, &idlen, &fe) != PT_OK) {
            err_set(&e, PT_EFEATURE, file, index, offset, "%s", fe.msg);
            goto bad;
        }
        if (idlen >= BATCH_ID_MAX)
            idlen = BATCH_ID_MAX - 1;
        memcpy(id, idb, idlen);
        id[idlen] = '\0';
    }
    int w, h;
    if (jpg_header(p->plan_codec, img, ilen, &w, &h, &fe) != PT_OK) {
        err_set(&e, fe.code, file, index, offset, "%s", fe.msg);
        goto bad;
    }
    rec *r = calloc(1, sizeof *r);
    if (!r || !(r->jpeg = malloc(ilen))) {
        free(r);
        err_set(&e, PT_ENOMEM, file, index, offset, "out of memory");
        goto bad;
    }
    memcpy(r->jpeg, img, ilen);
    r->len = ilen;
    r->label = label;
    r->w = w;
    r->h = h;
    memcpy(r->id, id, sizeof id);
    r->src.shard = shard;
    r->src.record = index;
    r->src.offset = offset;
    ex_free(ex);
    return r;
bad:
    ex_free(ex);
    report(p, &e);
    return NULL;
}

/* The file source's next path as a rec of no bytes (src.shard -1, src.record its
 * index): the worker reads it. */
static rec *file_next(pipeline *p)
{
    if (p->next_file >= p->cfg.n_files || is_failed(p)) {
        p->stream_done = 1;
        return NULL;
    }
    rec *r = calloc(1, sizeof *r);
    if (!r) {
        pthread_mutex_lock(&p->lock);
        p->failed = 1;
        err_set(&p->fail_err, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        pthread_mutex_unlock(&p->lock);
        return NULL;
    }
    atomic_store(&r->refs, 1);
    r->label = -1;
    r->src = (batch_src){ .shard = -1, .record = p->next_file++, .offset = PT_NO_OFFSET };
    atomic_fetch_add(&p->records_read, 1);
    return r;
}

/* Next element of the (oversampled) record stream, or NULL at its end. */
static rec *stream_next(pipeline *p)
{
    if (p->pending_left > 0) {
        p->pending_left--;
        return p->pending;
    }
    if (p->cfg.files)
        return file_next(p);
    while (!p->stream_done) {
        if (is_failed(p))
            return NULL;
        /* Find an open slot, refilling slots whose shard ended. */
        int open = 0;
        for (int k = 0; k < p->n_slots; k++)
            if (p->slots[k].reader)
                open++;
        if (open == 0) {
            if (p->cfg.repeat && p->pass_valid > 0) {
                start_pass(p);
                for (int k = 0; k < p->n_slots; k++)
                    fill_slot(p, &p->slots[k]);
                continue;
            }
            p->stream_done = 1;
            break;
        }
        slot *s = &p->slots[p->cur_slot];
        p->cur_slot = (p->cur_slot + 1) % p->n_slots;
        if (!s->reader)
            continue;
        const uint8_t *data;
        size_t len;
        pt_err e;
        int rc = tfr_next(s->reader, &data, &len, &e);
        if (rc == 0) {
            tfr_close(s->reader);
            fill_slot(p, s);
            continue;
        }
        if (rc < 0) {
            report(p, &e);
            continue;
        }
        atomic_fetch_add(&p->records_read, 1);
        rec *r = make_rec(p, data, len, s->shard, tfr_index(s->reader), tfr_offset(s->reader));
        if (!r)
            continue;
        p->pass_valid++;
        int copies = p->cfg.oversample ? smp_draw(p->cfg.oversample, r->label, &p->plan_rng) : 1;
        if (copies <= 0) {
            /* Not rec_unref(): refs is still 0 here (make_rec callocs it) and is set
             * only below, so this record has no references to drop. */
            free(r->jpeg);
            free(r);
            continue;
        }
        atomic_store(&r->refs, copies);
        p->pending = r;
        p->pending_left = copies - 1;
        return r;
    }
    return NULL;
}

/* Next element after the shuffle buffer. */
static rec *shuffled_next(pipeline *p)
{
    int cap = p->cfg.shuffle_buffer;
    if (cap <= 1)
        return stream_next(p);
    while (p->shuf_n < cap) {
        rec *r = stream_next(p);
        if (!r)
            break;
        p->shuf[p->shuf_n++] = r;
    }
    if (p->shuf_n == 0)
        return NULL;
    int j = (int)rng_below(&p->plan_rng, (uint64_t)p->shuf_n);
    rec *out = p->shuf[j];
    p->shuf[j] = p->shuf[--p->shuf_n];
    return out;
}

/* Plan the next batch into items. Returns the count (0: no batch). Sets plan_eof. */
static int plan_batch(pipeline *p, rec **items, uint64_t *seq)
{
    if (p->plan_eof)
        return 0;
    int b = p->cfg.batch_size, n = 0;
    while (n < b) {
        rec *r = shuffled_next(p);
        if (!r)
            break;
        items[n++] = r;
    }
    if (n < b && (n == 0 || p->cfg.drop_remainder)) {
        for (int i = 0; i < n; i++)
            rec_unref(items[i]);
        n = 0;
    }
    if (n == 0) {
        p->plan_eof = 1;
        pthread_mutex_lock(&p->lock);
        p->total_batches = p->next_seq;
        p->total_known = 1;
        pthread_cond_broadcast(&p->ready_cv);
        pthread_mutex_unlock(&p->lock);
        return 0;
    }
    *seq = p->next_seq++;
    return n;
}

/* ------------------------------------------------------------------------------ */
/* workers */

static void publish(pipeline *p, batch *b)
{
    pthread_mutex_lock(&p->lock);
    p->ready[p->n_ready++] = b;
    pthread_cond_broadcast(&p->ready_cv);
    pthread_mutex_unlock(&p->lock);
}

/* Cut a whole batch down to examples [first, first + count). */
static void keep_slice(batch *b, int first, int count)
{
    int lo = first < b->n ? first : b->n;
    int hi = lo + count < b->n ? lo + count : b->n;
    size_t isz = (size_t)b->h * b->w * 3;
    if (lo > 0 && hi > lo) {
        memmove(b->images, batch_image(b, lo), (size_t)(hi - lo) * isz);
        memmove(b->label, b->label + lo, (size_t)(hi - lo) * sizeof *b->label);
        memmove(b->label2, b->label2 + lo, (size_t)(hi - lo) * sizeof *b->label2);
        memmove(b->mix, b->mix + lo, (size_t)(hi - lo) * sizeof *b->mix);
        memmove(b->id, b->id + lo, (size_t)(hi - lo) * sizeof *b->id);
        memmove(b->src, b->src + lo, (size_t)(hi - lo) * sizeof *b->src);
        memmove(b->src2, b->src2 + lo, (size_t)(hi - lo) * sizeof *b->src2);
    }
    int planned_lo = first < b->planned ? first : b->planned;
    int planned_hi = first + count < b->planned ? first + count : b->planned;
    b->n = hi - lo;
    b->first = first;
    b->planned = planned_hi - planned_lo;
}

/* Record r into out: the window of the output's aspect at the centre or, with
 * crop_anywhere, at a place drawn from (seed, batch seq, slot i), so a run resumed at a
 * batch draws the same places. */
static int decode_rec(const pipeline *p, jpg_codec *codec, const rec *r, uint64_t seq, int i,
                      uint8_t *out, int ow, int oh, pt_err *e)
{
    if (!p->cfg.crop || !p->cfg.crop_anywhere)
        return jpg_decode_sized(codec, r->jpeg, r->len, r->w, r->h, out, ow, oh, p->cfg.crop,
                                p->cfg.fast_decode, e);
    int x, y, cw, ch;
    img_crop_box(r->w, r->h, ow, oh, &x, &y, &cw, &ch);
    if (cw < r->w || ch < r->h) {
        rng g;
        rng_derive(&g, p->cfg.seed ^ 0x63726f70ULL /* "crop" */, seq, (uint64_t)i);
        x = (int)rng_below(&g, (uint64_t)(r->w - cw) + 1);
        y = (int)rng_below(&g, (uint64_t)(r->h - ch) + 1);
    }
    return jpg_decode_window(codec, r->jpeg, r->len, r->w, r->h, x, y, cw, ch, out, ow, oh,
                             p->cfg.fast_decode, e);
}

/* The file source's path r into example m of b; a failure keeps its place, black, its
 * error in file_errors (written by this worker alone, read once the batch is out). */
static void keep_file(pipeline *p, jpg_codec *codec, img_scratch *scratch, const rec *r,
                      batch *b, int m)
{
    long long i = r->src.record;
    pt_err *fe = &p->cfg.file_errors[i];
    if (pipe_decode_file(codec, scratch, p->cfg.files[i], p->cfg.max_file_bytes,
                         batch_image(b, m), b->w, p->cfg.crop, p->cfg.fast_decode, fe) != PT_OK)
        memset(batch_image(b, m), 0, (size_t)b->w * b->h * 3);
    b->label[m] = -1;
    b->id[m][0] = '\0';
    b->src[m] = r->src;
}

static void *worker_main(void *arg)
{
    pipeline *p = arg;
    jpg_codec *codec = jpg_codec_new();
    img_scratch scratch = { 0 };    /* the file source's resizing */
    void *aug_ws = NULL;
    rec **items = calloc((size_t)p->cfg.batch_size, sizeof *items);
    if (!codec || !items) {
        pt_err e;
        err_set(&e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "pipeline worker: out of memory");
        pthread_mutex_lock(&p->lock);
        p->failed = 1;
        p->fail_err = e;
        pthread_cond_broadcast(&p->ready_cv);
        pthread_mutex_unlock(&p->lock);
        goto out;
    }
    for (;;) {
        /* A free buffer first: this is the back-pressure that bounds memory, and it
         * guarantees the earliest planned batch always has a buffer. */
        pthread_mutex_lock(&p->lock);
        while (p->n_free == 0 && !p->stop && !p->failed)
            pthread_cond_wait(&p->free_cv, &p->lock);
        if (p->stop || p->failed) {
            pthread_mutex_unlock(&p->lock);
            break;
        }
        batch *b = p->pool_free[--p->n_free];
        pthread_mutex_unlock(&p->lock);

        uint64_t seq = 0;
        pthread_mutex_lock(&p->plan_lock);
        int n = plan_batch(p, items, &seq);
        pthread_mutex_unlock(&p->plan_lock);
        if (n == 0) {
            pipe_release(p, b);
            break;
        }

        double t0 = util_now();
        /* A slice: the items to decode, unless the augmentation needs them all. */
        int lo = 0, hi = n, sliced = p->cfg.slice_count > 0;
        if (sliced && !p->cfg.augment_whole) {
            lo = p->cfg.slice_first < n ? p->cfg.slice_first : n;
            hi = lo + p->cfg.slice_count < n ? lo + p->cfg.slice_count : n;
        }
        int m = 0;
        for (int i = 0; i < n; i++) {
            rec *r = items[i];
            pt_err je;
            if (i < lo || i >= hi) {
                rec_unref(r);
                continue;
            }
            if (r->src.shard < 0) {
                keep_file(p, codec, &scratch, r, b, m++);
            } else if (decode_rec(p, codec, r, seq, i, batch_image(b, m), b->w, b->h, &je) ==
                       PT_OK) {
                b->label[m] = r->label;
                memcpy(b->id[m], r->id, BATCH_ID_MAX);
                b->src[m] = r->src;
                m++;
            } else {
                pt_err e;
                err_set(&e, je.code, p->cfg.split->shards[r->src.shard].path, r->src.record,
                        r->src.offset, "%s", je.msg);
                report(p, &e);
            }
            rec_unref(r);
        }
        b->n = m;
        b->seq = seq;
        b->first = lo;
        b->planned = hi - lo;
        batch_clear_mix(b);
        if (p->cfg.augment && m > 0)
            p->cfg.augment(p->cfg.augment_ctx, b, p->cfg.seed, &aug_ws);
        if (sliced && p->cfg.augment_whole)
            keep_slice(b, p->cfg.slice_first, p->cfg.slice_count);
        atomic_fetch_add(&p->decode_ns, (uint64_t)((util_now() - t0) * 1e9));
        publish(p, b);
    }
out:
    if (aug_ws && p->cfg.augment_ws_free)
        p->cfg.augment_ws_free(aug_ws);
    free(items);
    jpg_codec_free(codec);
    img_scratch_free(&scratch);
    pthread_mutex_lock(&p->lock);
    p->workers_alive--;
    pthread_cond_broadcast(&p->ready_cv);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* ------------------------------------------------------------------------------ */
/* consumer */

int pipe_next(pipeline *p, batch **out, pt_err *e)
{
    *out = NULL;
    double t0 = util_now();
    pthread_mutex_lock(&p->lock);
    int rc;
    for (;;) {
        if (p->stop) {
            rc = err_set(e, PT_ESTOPPED, NULL, PT_NO_RECORD, PT_NO_OFFSET, "pipeline stopped");
            break;
        }
        if (p->failed) {
            if (e)
                *e = p->fail_err;
            rc = p->fail_err.code ? p->fail_err.code : PT_EIO;
            break;
        }
        int pick = -1;
        if (p->cfg.deterministic) {
            for (int i = 0; i < p->n_ready; i++)
                if (p->ready[i]->seq == p->next_out) {
                    pick = i;
                    break;
                }
        } else if (p->n_ready > 0) {
            pick = 0;
        }
        if (pick >= 0) {
            batch *b = p->ready[pick];
            memmove(&p->ready[pick], &p->ready[pick + 1],
                    (size_t)(p->n_ready - pick - 1) * sizeof *p->ready);
            p->n_ready--;
            p->next_out++;
            p->delivered++;
            if (b->n == 0 && !(p->cfg.slice_count > 0 && b->planned == 0)) {
                /* Every image of this batch failed to decode: skip it, but not
                 * forever: an endless stream of undecodable records must end in
                 * an error, not a hang. A slice is handed out all the same (the
                 * other ranks have theirs). */
                uint64_t limit = 16 + 2 * (uint64_t)(p->cfg.split->count / p->cfg.batch_size);
                int over = ++p->empty_run > limit;
                if (over) {
                    p->failed = 1;
                    err_set(&p->fail_err, PT_EJPEG, p->cfg.split->dir, PT_NO_RECORD,
                            PT_NO_OFFSET,
                            "no decodable image in %llu batches in a row: the images of this "
                            "split are damaged",
                            (unsigned long long)p->empty_run);
                    pthread_cond_broadcast(&p->ready_cv);
                }
                if (over || p->cfg.slice_count <= 0) {
                    p->pool_free[p->n_free++] = b;
                    pthread_cond_broadcast(&p->free_cv);
                    continue;
                }
            } else if (b->n > 0) {
                p->empty_run = 0;
            }
            *out = b;
            rc = 1;
            break;
        }
        if (p->total_known && p->delivered + p->cfg.start_batch >= p->total_batches) {
            rc = 0;
            break;
        }
        if (p->workers_alive == 0) {
            rc = err_set(e, PT_EIO, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "pipeline workers ended early");
            break;
        }
        pthread_cond_wait(&p->ready_cv, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    if (*out)
        atomic_fetch_add(&p->examples_out, (uint64_t)(*out)->n);
    atomic_fetch_add(&p->wait_ns, (uint64_t)((util_now() - t0) * 1e9));
    return rc;
}

void pipe_release(pipeline *p, batch *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&p->lock);
    p->pool_free[p->n_free++] = b;
    pthread_cond_broadcast(&p->free_cv);
    pthread_mutex_unlock(&p->lock);
}

void pipe_cancel(pipeline *p)
{
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->free_cv);
    pthread_cond_broadcast(&p->ready_cv);
    pthread_mutex_unlock(&p->lock);
}

void pipe_get_stats(pipeline *p, pipe_stats *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_lock(&p->lock);
    s->ready = p->n_ready;
    s->capacity = p->pool_size; /* every buffer can be waiting when the consumer is slow */
    s->batches_out = p->delivered;
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_lock(&p->plan_lock);
    s->passes = p->pass;
    pthread_mutex_unlock(&p->plan_lock);
    s->records_read = atomic_load(&p->records_read);
    s->examples_out = atomic_load(&p->examples_out);
    s->errors = atomic_load(&p->errors);
    s->decode_seconds = (double)atomic_load(&p->decode_ns) * 1e-9;
    s->wait_seconds = (double)atomic_load(&p->wait_ns) * 1e-9;
}

/* ------------------------------------------------------------------------------ */
/* life cycle */

int pipe_create(const pipe_config *cfg, pipeline **out, pt_err *e)
{
    *out = NULL;
    if ((!cfg->split && !cfg->files) || cfg->batch_size <= 0 || cfg->image_w <= 0 ||
        cfg->image_h <= 0 || (cfg->labeled && cfg->n_classes <= 0) ||
        (cfg->files && (cfg->split || cfg->labeled || !cfg->file_errors ||
                        cfg->image_w != cfg->image_h)))
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "pipeline: a split (or files, unlabeled, square), image size, batch "
                       "size and classes are required");
    for (long long i = 0; cfg->files && i < cfg->n_files; i++)
        err_clear(&cfg->file_errors[i]);
    if (cfg->slice_count < 0 || cfg->slice_first < 0 ||
        (cfg->slice_count > 0 && cfg->slice_first >= cfg->batch_size))
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "pipeline: slice %d + %d outside batches of %d", cfg->slice_first,
                       cfg->slice_count, cfg->batch_size);
    pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    p->cfg = *cfg;
    if (p->cfg.workers < 1)
        p->cfg.workers = 1;
    if (p->cfg.prefetch < 1)
        p->cfg.prefetch = 1;
    p->n_shards = cfg->split ? cfg->split->n_shards : 0;
    p->n_slots = cfg->interleave > 0 ? cfg->interleave : 4;
    if (p->n_slots > p->n_shards)
        p->n_slots = p->n_shards > 0 ? p->n_shards : 1;
    pthread_mutex_init(&p->plan_lock, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->free_cv, NULL);
    pthread_cond_init(&p->ready_cv, NULL);
    rng_derive(&p->plan_rng, cfg->seed, 0x9a7e, 0);

    p->pool_size = p->cfg.prefetch + p->cfg.workers + 1;
    p->order = calloc((size_t)(p->n_shards ? p->n_shards : 1), sizeof *p->order);
    p->slots = calloc((size_t)p->n_slots, sizeof *p->slots);
    p->shuf = calloc((size_t)(cfg->shuffle_buffer > 1 ? cfg->shuffle_buffer : 1), sizeof *p->shuf);
    p->pool_all = calloc((size_t)p->pool_size, sizeof *p->pool_all);
    p->pool_free = calloc((size_t)p->pool_size, sizeof *p->pool_free);
    p->ready = calloc((size_t)p->pool_size, sizeof *p->ready);
    p->threads = calloc((size_t)p->cfg.workers, sizeof *p->threads);
    p->plan_codec = jpg_codec_new();
    /* A slice needs room for itself alone, unless it is cut from a whole batch. */
    int cap = cfg->slice_count > 0 && !cfg->augment_whole && cfg->slice_count < cfg->batch_size
                  ? cfg->slice_count
                  : cfg->batch_size;
    int ok = p->order && p->slots && p->shuf && p->pool_all && p->pool_free && p->ready && p->threads &&
             p->plan_codec;
    for (int i = 0; ok && i < p->pool_size; i++) {
        batch *b = batch_new(cap, cfg->image_h, cfg->image_w);
        if (!b)
            ok = 0;
        else
            p->pool_all[i] = p->pool_free[p->n_free++] = b;
    }
    if (!ok) {
        pipe_destroy(p);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "out of memory for %d batches of %d x %dx%d", p->pool_size,
                       cfg->batch_size, cfg->image_w, cfg->image_h);
    }

    start_pass(p);
    for (int k = 0; k < p->n_slots; k++)
        fill_slot(p, &p->slots[k]);

    /* Resuming: plan (without decoding) the batches already consumed, so the stream
     * continues exactly where it stopped. */
    if (cfg->start_batch > 0) {
        rec **items = calloc((size_t)cfg->batch_size, sizeof *items);
        for (uint64_t i = 0; items && i < cfg->start_batch; i++) {
            uint64_t seq;
            int n = plan_batch(p, items, &seq);
            for (int k = 0; k < n; k++)
                rec_unref(items[k]);
            if (n == 0)
                break;
        }
        free(items);
        p->next_out = cfg->start_batch;
    }

    p->workers_alive = p->cfg.workers;
    for (int i = 0; i < p->cfg.workers; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0) {
            pthread_mutex_lock(&p->lock);
            p->workers_alive -= p->cfg.workers - i;
            pthread_mutex_unlock(&p->lock);
            pipe_destroy(p);
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "cannot start pipeline threads");
        }
        p->n_threads++;
    }
    *out = p;
    return PT_OK;
}

void pipe_destroy(pipeline *p)
{
    if (!p)
        return;
    pipe_cancel(p);
    for (int i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    /* Every buffer, including any the consumer still holds. */
    for (int i = 0; p->pool_all && i < p->pool_size; i++)
        batch_free(p->pool_all[i]);
    for (int i = 0; i < p->shuf_n; i++)
        rec_unref(p->shuf[i]);
    for (int i = 0; i < p->pending_left; i++)
        rec_unref(p->pending);
    for (int k = 0; k < p->n_slots; k++)
        if (p->slots && p->slots[k].reader)
            tfr_close(p->slots[k].reader);
    jpg_codec_free(p->plan_codec);
    free(p->order);
    free(p->slots);
    free(p->shuf);
    free(p->pool_all);
    free(p->pool_free);
    free(p->ready);
    free(p->threads);
    pthread_mutex_destroy(&p->plan_lock);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->free_cv);
    pthread_cond_destroy(&p->ready_cv);
    free(p);
}
