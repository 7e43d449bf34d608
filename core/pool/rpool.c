/* rpool — the replica pool (rpool.h): threads, jobs, one process's update, inference. */
#include "pool/rpool.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "pool/rpool_impl.h"

static void to_float(const uint8_t *src, float *dst, size_t n)
{
    const float s = 1.0f / 255.0f;
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)src[i] * s;
}

/* nn's backward progress, on the replica's thread: only a bucket whose first
 * parameter is now final is news to the trainer thread. */
static void on_backward_progress(void *arg, size_t final_from)
{
    replica *p = arg;
    rpool *s = p->s;
    if (p->next_bucket >= s->n_buckets || final_from > s->bk_lo[p->next_bucket])
        return;
    while (p->next_bucket < s->n_buckets && final_from <= s->bk_lo[p->next_bucket])
        p->next_bucket++;
    pthread_mutex_lock(&s->lock);
    p->final_from = final_from;
    pthread_cond_signal(&s->done_cv);
    pthread_mutex_unlock(&s->lock);
}

/* The forward job's part for micro-batch a: examples [lo, lo + n) of its batch
 * forwarded, the loss and its gradient in p->dlogits, the figures counted. */
static int run_forward(replica *p, int a, int lo, int n)
{
    rpool *s = p->s;
    const batch *b = s->batches[a];
    size_t img = (size_t)s->h * s->w * 3;
    to_float(b->images + (size_t)lo * img, p->input, (size_t)n * img);
    /* The global index of an example within the update does not depend on how
     * the update is split, so dropout masks don't either. */
    int64_t first = (int64_t)a * s->G * s->B + (int64_t)s->g0 * s->B + lo;
    const float *logits = nn_forward(p->ctx, p->input, n, 1, s->seed, first);
    if (!logits)
        return err_set(&p->err, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "replica %d: forward of %d examples failed", p->r, n);
    double loss = 0;
    int rc = b->soft ? nn_distill_ce(logits, n, s->k, b->label + lo, b->label2 + lo, b->mix + lo,
                                     s->cfg.label_smoothing, b->soft + (size_t)lo * s->k,
                                     s->cfg.distill_t, s->cfg.distill_alpha, 1.0f / (float)s->U,
                                     &loss, p->dlogits, p->pred, &p->err)
                     : nn_softmax_ce_smooth(logits, n, s->k, b->label + lo, b->label2 + lo,
                                            b->mix + lo, s->cfg.label_smoothing,
                                            1.0f / (float)s->U, &loss, p->dlogits, p->pred,
                                            &p->err);
    if (rc != PT_OK)
        return rc;
    if (!isfinite(loss))
        p->finite = 0;
    p->loss_sum += loss;
    for (int i = 0; i < n; i++) {
        if (p->pred[i] == batch_dominant_label(b, lo + i))
            p->correct++;
        if (s->preds)
            s->preds[s->batch_offset[a] + lo + i] = p->pred[i];
    }
    p->examples += n;
    return PT_OK;
}

/* The backward job's part for micro-batch a, from p->dlogits: gradients added to the
 * replica's. Only the update's last micro-batch finishes gradients (overlap: news of
 * them goes to the calling thread as they are). */
static int run_backward(replica *p, int a)
{
    rpool *s = p->s;
    nn_ctx_on_backward_progress(p->ctx, s->overlap && a == s->A - 1 ? on_backward_progress
                                                                    : NULL, p);
    int rc = nn_backward(p->ctx, p->dlogits);
    nn_ctx_on_backward_progress(p->ctx, NULL, NULL);
    if (rc != PT_OK)
        return err_set(&p->err, rc, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "replica %d: backward failed", p->r);
    return PT_OK;
}

/* JOB_TRAIN: forward then backward of each micro-batch, back to back on the replica
 * (its context holds one micro-batch's activations, so no barrier between them). */
static void run_train(replica *p)
{
    rpool *s = p->s;
    for (int a = 0; a < s->A; a++) {
        const batch *b = s->batches[a];
        if (!b)
            continue;
        int lo = p->r * s->B, hi = lo + s->B < b->n ? lo + s->B : b->n;
        int n = hi - lo;
        if (n <= 0)
            continue;
        if ((p->rc = run_forward(p, a, lo, n)) != PT_OK)
            return;
        if (p->finite && (p->rc = run_backward(p, a)) != PT_OK)
            return;
        p->flops += nn_flops(s->cfg.model, n, 1);
    }
}

/* Parameters [lo, hi) of every replica's gradient summed in replica order into
 * s->sum, and cleared in the replicas. */
void rpool_sum_replicas(rpool *s, size_t lo, size_t hi)
{
    memcpy(s->sum + lo, nn_grads(s->rep[0].ctx) + lo, (hi - lo) * sizeof(float));
    for (int q = 1; q < s->R; q++) {
        const float *gq = nn_grads(s->rep[q].ctx);
        for (size_t i = lo; i < hi; i++)
            s->sum[i] += gq[i];
    }
    for (int q = 0; q < s->R; q++)
        memset(nn_grads(s->rep[q].ctx) + lo, 0, (hi - lo) * sizeof(float));
}

/* Sum slice r of every replica's gradients, then clear them. */
static void run_reduce(replica *p)
{
    rpool *s = p->s;
    size_t lo = s->lo[p->r], hi = s->hi[p->r];
    rpool_sum_replicas(s, lo, hi);
    for (size_t i = lo; i < hi; i++)
        if (!isfinite(s->sum[i])) {
            p->finite = 0;
            break;
        }
}

static void run_step(replica *p)
{
    rpool *s = p->s;
    opt_step(s->cfg.optimizer, nn_params(s->cfg.model), s->sum, nn_param_mask(s->cfg.model),
             s->cfg.decay_mask, s->step_lo[p->r], s->step_hi[p->r], s->lr, s->t);
}

/* ---- the inference job's team ---- */

static inline void spin_pause(int *spins)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    /* A machine with fewer free cores than the team (something else running) must
     * not starve: after a while, give the core away between looks. */
    if (++*spins > 20000)
        sched_yield();
}

/* Claims the next part of section `gen` (the word holds the section in its high bits
 * and the next part's index in its low 16): the index, or -1 when the section has
 * moved on or every part is taken. */
static int team_claim(rpool_team *t, uint64_t gen, int parts)
{
    uint64_t w = atomic_load_explicit(&t->word, memory_order_acquire);
    for (;;) {
        if (w >> 16 != gen || (int)(w & 0xFFFF) >= parts)
            return -1;
        if (atomic_compare_exchange_weak_explicit(&t->word, &w, w + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return (int)(w & 0xFFFF);
    }
}

/* Replica 0 hands out a section: every member, itself included, claims parts until
 * none is left, so a member the kernel has descheduled (a busy machine) costs only
 * the part it holds, not the whole section. */
static void team_run(nn_team *nt, void (*fn)(void *arg, int part), void *arg)
{
    rpool_team *t = (rpool_team *)nt;
    const uint64_t gen = ++t->gen;
    const int parts = nt->parts;
    atomic_store_explicit(&t->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&t->arg, arg, memory_order_relaxed);
    atomic_store_explicit(&t->parts, parts, memory_order_relaxed);
    atomic_store_explicit(&t->done, 0, memory_order_relaxed);
    atomic_store_explicit(&t->word, gen << 16, memory_order_release);
    int part, ran = 0;
    while ((part = team_claim(t, gen, parts)) >= 0) {
        fn(arg, part);
        ran++;
    }
    t->lead_parts += ran;
    atomic_fetch_add_explicit(&t->done, ran, memory_order_acq_rel);
    int spins = 0;
    while (atomic_load_explicit(&t->done, memory_order_acquire) < parts)
        spin_pause(&spins);
}

/* Replicas 1 .. parts - 1 claim parts of each section replica 0 hands out, until
 * its forward is over. fn and arg are read after the section's word and are the
 * section's for as long as a part of it is claimed and not done (replica 0 waits). */
static void team_serve(rpool_team *t, long long *ran)
{
    uint64_t seen = t->gen0;
    for (;;) {
        uint64_t w;
        int spins = 0;
        while ((w = atomic_load_explicit(&t->word, memory_order_acquire)) >> 16 == seen &&
               !atomic_load_explicit(&t->over, memory_order_acquire))
            spin_pause(&spins);
        if (w >> 16 == seen)
            return;
        seen = w >> 16;
        void (*fn)(void *, int) = atomic_load_explicit(&t->fn, memory_order_relaxed);
        void *arg = atomic_load_explicit(&t->arg, memory_order_relaxed);
        const int parts = atomic_load_explicit(&t->parts, memory_order_relaxed);
        int part, n = 0;
        while ((part = team_claim(t, seen, parts)) >= 0) {
            fn(arg, part);
            n++;
        }
        *ran += n;
        atomic_fetch_add_explicit(&t->done, n, memory_order_acq_rel);
    }
}

/* The team's size: the replicas, but no more than the cores (spinning threads that
 * share a core would wait on each other's time slices). */
static int team_parts(int R)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 && cpus < R ? (int)cpus : R;
}

/* Images [lo, hi) of the job on replica p, s->chunk at a time (what its context
 * holds). */
static void infer_range(replica *p, int lo, int hi)
{
    rpool *s = p->s;
    const size_t img = (size_t)s->h * s->w * 3;
    for (int a = lo; a < hi; a += s->chunk) {
        const int n = hi - a < s->chunk ? hi - a : s->chunk;
        to_float(s->pimages + (size_t)a * img, p->input, (size_t)n * img);
        const float *logits = nn_forward(p->ctx, p->input, n, 0, 0, a);
        if (!logits) {
            p->rc = err_set(&p->err, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                            "replica %d: inference of %d examples failed", p->r, n);
            return;
        }
        memcpy(s->plogits + (size_t)a * s->k, logits, (size_t)n * s->k * sizeof(float));
    }
}

/* A job of fewer images than replicas: replica 0 runs them all with the team. */
static void run_infer_team(replica *p)
{
    rpool *s = p->s;
    rpool_team *t = &s->team;
    if (p->r > 0) {
        if (p->r < t->nt.max_parts)
            team_serve(t, &p->team_parts);
        return;
    }
    t->nt.parts = t->nt.max_parts;
    const uint64_t gen0 = t->gen;
    t->lead_parts = 0;
    infer_range(p, 0, s->pn);
    t->nt.parts = 1;
    p->team_sections += (long long)(t->gen - gen0);
    p->team_parts += t->lead_parts;
    atomic_store_explicit(&t->over, 1, memory_order_release);
}

static void run_infer(replica *p)
{
    rpool *s = p->s;
    if (s->team.nt.max_parts > 1 && s->pn < s->R) {
        run_infer_team(p);
        return;
    }
    const int lo = p->r * s->P, hi = lo + s->P < s->pn ? lo + s->P : s->pn;
    infer_range(p, lo, hi);
}

/* Images an inference pool's context runs at once. A batch whose largest activation
 * passes RPOOL_INFER_BYTES runs in parts that stay within it: the early layers of a
 * MobileNetV2 then read what the layer before wrote from the cache, not from memory
 * (bench_predict layers, one thread: 224 px 8-20% faster a pair at a time than 32 at
 * a time, 128 px 5-8% four at a time; `small` the same at any batch). bf16 keeps
 * whole batches: each part would pack the weights again. */
#define RPOOL_INFER_BYTES (8u << 20)

static int infer_chunk(const rpool *s)
{
    if (!s->infer_only || s->cfg.bf16)
        return s->P;
    size_t big = 0;
    for (int i = 0; i < nn_node_count(s->cfg.model); i++) {
        nn_node_info ni;
        nn_node_get(s->cfg.model, i, &ni);
        const size_t bytes = (size_t)ni.h * ni.w * ni.c * sizeof(float);
        big = bytes > big ? bytes : big;
    }
    const size_t fit = big ? RPOOL_INFER_BYTES / big : (size_t)s->P;
    return fit < 1 ? 1 : fit < (size_t)s->P ? (int)fit : s->P;
}

static void *replica_main(void *arg)
{
    replica *p = arg;
    rpool *s = p->s;
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (s->gen == seen)
            pthread_cond_wait(&s->go_cv, &s->lock);
        seen = s->gen;
        int job = s->job;
        pthread_mutex_unlock(&s->lock);
        if (job == JOB_EXIT)
            break;

        double t0 = util_now();
        p->rc = PT_OK;
        switch (job) {
        case JOB_TRAIN:
            p->loss_sum = 0;
            p->correct = p->examples = 0;
            p->finite = 1;
            run_train(p);
            p->trained += p->examples;
            break;
        case JOB_REDUCE:
            p->finite = 1;
            run_reduce(p);
            break;
        case JOB_STEP:
            run_step(p);
            break;
        case JOB_INFER:
            run_infer(p);
            break;
        default:
            break;
        }
        double t1 = util_now();
        p->busy += t1 - t0;
        p->finished_at = t1;

        pthread_mutex_lock(&s->lock);
        p->final_from = 0;
        if (++s->done == s->R || s->overlap)
            pthread_cond_signal(&s->done_cv);
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

/* Start one job on every replica (called with the lock held). */
void rpool_start_job(rpool *s, int job)
{
    s->job = job;
    s->done = 0;
    for (int r = 0; r < s->R; r++) {
        s->rep[r].final_from = s->n_params;
        s->rep[r].next_bucket = 0;
    }
    s->gen++;
    pthread_cond_broadcast(&s->go_cv);
}

/* After every replica has ended a job: charge the waiting for the slowest replica
 * as "wait" (synchronisation), not busy time, and return the first error. */
int rpool_end_job(rpool *s, pt_err *e)
{
    double last = 0;
    for (int r = 0; r < s->R; r++)
        if (s->rep[r].finished_at > last)
            last = s->rep[r].finished_at;
    for (int r = 0; r < s->R; r++)
        s->rep[r].wait += last - s->rep[r].finished_at;
    for (int r = 0; r < s->R; r++)
        if (s->rep[r].rc != PT_OK) {
            if (e)
                *e = s->rep[r].err;
            return s->rep[r].rc;
        }
    return PT_OK;
}

/* Run one job on every replica and wait for all. */
int rpool_dispatch(rpool *s, int job, pt_err *e)
{
    pthread_mutex_lock(&s->lock);
    rpool_start_job(s, job);
    while (s->done < s->R)
        pthread_cond_wait(&s->done_cv, &s->lock);
    pthread_mutex_unlock(&s->lock);
    return rpool_end_job(s, e);
}

/* [from, to) in R slices, one a replica (util_slice). */
static void split(size_t from, size_t to, int R, size_t *lo, size_t *hi)
{
    for (int r = 0; r < R; r++)
        util_slice(from, to, R, r, &lo[r], &hi[r]);
}

/* One replica's context and buffers (p->rc, p->err say how it went). */
static void *build_replica(void *arg)
{
    replica *p = arg;
    rpool *s = p->s;
    const int max_batch = s->max_batch;
    size_t img = (size_t)s->h * s->w * 3;
    err_clear(&p->err);
    p->rc = PT_OK;
    p->input = util_aligned_alloc((size_t)max_batch * img * sizeof(float));
    if (s->infer_only) {
        p->ctx = nn_ctx_new_infer(s->cfg.model, max_batch, &p->err);
    } else {
        p->ctx = nn_ctx_new_cancel(s->cfg.model, max_batch, s->recompute, s->cfg.stop,
                                   s->cfg.stop_ctx, &p->err);
        p->dlogits = util_aligned_alloc((size_t)max_batch * s->k * sizeof(float));
        p->pred = calloc((size_t)max_batch, sizeof *p->pred);
    }
    if (!p->ctx || !p->input || (!s->infer_only && (!p->dlogits || !p->pred))) {
        p->rc = p->err.code != PT_OK ? p->err.code : PT_ENOMEM;
        if (p->err.code == PT_OK)
            err_set(&p->err, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        return NULL;
    }
    if (s->cfg.bf16 && nn_ctx_set_precision(p->ctx, NN_BF16, &p->err) != PT_OK) {
        p->rc = p->err.code;
        return NULL;
    }
    if (!s->infer_only)
        nn_zero_grads(p->ctx);
    else if ((p->r == 0 && s->team.nt.max_parts > 1 &&
              nn_ctx_set_team(p->ctx, &s->team.nt, &p->err) != PT_OK) ||
             (!s->cfg.bf16 && nn_ctx_pack_weights(p->ctx, &p->err) != PT_OK))
        p->rc = p->err.code;
    return NULL;
}

/* Every replica's context at once, each on a thread of its own: building one is
 * mostly the kernel zeroing its pages (gigabytes at 512 px), which two cores do in
 * half the time one does. A stop asked for wins over any other failure. */
static int build_replicas(rpool *s, pt_err *e)
{
    int R = s->R;
    pthread_t *t = calloc((size_t)R, sizeof *t);
    char *on = calloc((size_t)R, 1);
    if (!t || !on) {
        free(t);
        free(on);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    for (int r = 1; r < R; r++)
        on[r] = pthread_create(&t[r], NULL, build_replica, &s->rep[r]) == 0;
    build_replica(&s->rep[0]);
    for (int r = 1; r < R; r++) {
        if (on[r])
            pthread_join(t[r], NULL);
        else
            build_replica(&s->rep[r]);
    }
    free(t);
    free(on);
    const replica *bad = NULL;
    for (int r = 0; r < R; r++) {
        const replica *p = &s->rep[r];
        if (p->rc != PT_OK && (!bad || p->rc == PT_ESTOPPED))
            bad = p;
        if (p->rc == PT_OK)
            s->ctxs[r] = p->ctx;
    }
    if (!bad)
        return PT_OK;
    if (e)
        *e = bad->err;
    return bad->rc;
}

/* Overlap: the parameters cut like the replicas' slices, numbered from the end (bucket
 * 0 is the last slice), each with its sum across the ranks. */
static int make_buckets(rpool *s)
{
    size_t nb = (s->n_params + RPOOL_BUCKET_FLOATS - 1) / RPOOL_BUCKET_FLOATS;
    s->n_buckets = nb < 1 ? 1 : nb > RPOOL_BUCKETS ? RPOOL_BUCKETS : (int)nb;
    for (int b = 0; b < s->n_buckets; b++) {
        util_slice(0, s->n_params, s->n_buckets, s->n_buckets - 1 - b, &s->bk_lo[b],
                   &s->bk_hi[b]);
        if (!(s->bk_sum[b] = s->red->sum_new(s->bk_hi[b] - s->bk_lo[b])))
            return PT_ENOMEM;
    }
    return PT_OK;
}

int rpool_new(const rpool_config *cfg, rpool **out, pt_err *e)
{
    *out = NULL;
    const int infer_only = cfg->model && !cfg->optimizer;
    if (!cfg->model || cfg->replicas < 1 ||
        (infer_only ? cfg->predict_batch < 1 : cfg->batch_per_replica < 1 || cfg->grad_acc < 1))
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "replica pool: model, replicas and batch (training: accumulation) needed");
    nn_init();
    rpool *s = calloc(1, sizeof *s);
    if (!s)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    s->cfg = *cfg;
    s->infer_only = infer_only;
    s->R = cfg->replicas;
    s->B = infer_only ? cfg->predict_batch : cfg->batch_per_replica;
    s->A = infer_only ? 1 : cfg->grad_acc;
    s->P = cfg->predict_batch > 0 ? cfg->predict_batch : cfg->batch_per_replica;
    s->G = cfg->all_replicas > 0 ? cfg->all_replicas : s->R;
    s->g0 = cfg->all_replicas > 0 ? cfg->first_replica : 0;
    s->red = cfg->reducer;
    s->dist = !infer_only && cfg->all_replicas > 0 && s->red && s->red->ranks > 1;
    s->overlap = s->dist && cfg->overlap;
    s->sliced = s->dist && !s->overlap;
    if (s->g0 < 0 || s->g0 + s->R > s->G || (s->dist && s->R > RPOOL_RANK_REPLICAS)) {
        int g0 = s->g0, R = s->R, G = s->G;
        free(s);
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "replica pool: replicas %d..%d of %d (at most %d per rank)", g0, g0 + R - 1,
                       G, RPOOL_RANK_REPLICAS);
    }
    s->U = s->G * s->B * s->A;
    int c;
    nn_model_input_shape(cfg->model, &s->h, &s->w, &c);
    s->k = nn_model_classes(cfg->model);
    s->n_params = nn_param_count(cfg->model);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->go_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);

    s->rep = calloc((size_t)s->R, sizeof *s->rep);
    s->ctxs = calloc((size_t)s->R, sizeof *s->ctxs);
    s->lo = calloc((size_t)s->R, sizeof *s->lo);
    s->hi = calloc((size_t)s->R, sizeof *s->hi);
    s->step_lo = calloc((size_t)s->R, sizeof *s->step_lo);
    s->step_hi = calloc((size_t)s->R, sizeof *s->step_hi);
    s->sum = util_aligned_alloc(s->n_params * sizeof(float));
    s->batch_offset = calloc((size_t)s->A, sizeof *s->batch_offset);
    if (s->dist)
        s->bn_rec = calloc(nn_bn_record_count(cfg->model) + 1, sizeof *s->bn_rec);
    if (!s->rep || !s->ctxs || !s->lo || !s->hi || !s->step_lo || !s->step_hi || !s->sum ||
        !s->batch_offset ||
        (s->dist && !s->bn_rec)) {
        rpool_free(s);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    if (s->overlap && make_buckets(s) != PT_OK) {
        rpool_free(s);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    split(0, s->n_params, s->R, s->lo, s->hi);
    s->rank_lo = 0;
    s->rank_hi = s->n_params;
    if (s->sliced)
        s->red->slice(s->n_params, s->red->rank, &s->rank_lo, &s->rank_hi);
    split(s->rank_lo, s->rank_hi, s->R, s->step_lo, s->step_hi);
    s->chunk = infer_chunk(s);
    s->max_batch = s->infer_only ? s->chunk : s->B > s->P ? s->B : s->P;
    s->keep_all = nn_ctx_keep_all_bytes(cfg->model, s->max_batch);
    s->phys = util_phys_bytes();
    s->recompute = cfg->recompute >= 0 ? cfg->recompute != 0
                                       : rpool_recompute_auto(s->keep_all, s->R, s->phys);
    for (int r = 0; r < s->R; r++) {
        s->rep[r].s = s;
        s->rep[r].r = r;
    }
    s->team.nt.max_parts = infer_only ? team_parts(s->R) : 1;
    s->team.nt.parts = 1;
    s->team.nt.run = team_run;
    int rc = build_replicas(s, e);
    if (rc != PT_OK) {
        rpool_free(s);
        return rc;
    }
    for (int r = 0; r < s->R; r++) {
        if (pthread_create(&s->rep[r].thread, NULL, replica_main, &s->rep[r]) != 0) {
            rpool_free(s);
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "cannot start replica threads");
        }
        s->rep[r].started = 1;
    }
    *out = s;
    return PT_OK;
}

void rpool_free(rpool *s)
{
    if (!s)
        return;
    int any = 0;
    for (int r = 0; s->rep && r < s->R; r++)
        any |= s->rep[r].started;
    if (any) {
        pthread_mutex_lock(&s->lock);
        s->job = JOB_EXIT;
        s->gen++;
        pthread_cond_broadcast(&s->go_cv);
        pthread_mutex_unlock(&s->lock);
        for (int r = 0; r < s->R; r++)
            if (s->rep[r].started)
                pthread_join(s->rep[r].thread, NULL);
    }
    for (int r = 0; s->rep && r < s->R; r++) {
        nn_ctx_free(s->rep[r].ctx);
        util_aligned_free(s->rep[r].input);
        util_aligned_free(s->rep[r].dlogits);
        free(s->rep[r].pred);
    }
    free(s->rep);
    free(s->ctxs);
    free(s->lo);
    free(s->hi);
    free(s->step_lo);
    free(s->step_hi);
    util_aligned_free(s->sum);
    free(s->batch_offset);
    free(s->bn_rec);
    for (int b = 0; b < s->n_buckets; b++)
        s->red->sum_free(s->bk_sum[b]);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->go_cv);
    pthread_cond_destroy(&s->done_cv);
    free(s);
}

int rpool_update(rpool *s, batch *const *batches, double lr, long long t, uint64_t seed,
                 rpool_result *res, int32_t *preds, pt_err *e)
{
    memset(res, 0, sizeof *res);
    if (s->infer_only)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "an inference-only replica pool takes no training update");
    long long off = 0;
    for (int a = 0; a < s->A; a++) {
        s->batch_offset[a] = off;
        off += batches[a] ? batches[a]->n : 0;
        if (batches[a] && batches[a]->n > s->R * s->B)
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "batch of %d examples is larger than %d replicas x %d", batches[a]->n,
                           s->R, s->B);
    }
    s->batches = batches;
    s->preds = preds;
    s->lr = lr;
    s->t = t;
    s->seed = seed;
    if (s->dist)
        return rpool_update_ranks(s, res, e);
    int rc = rpool_dispatch(s, JOB_TRAIN, e);
    if (rc != PT_OK)
        return rc;
    int finite = 1;
    for (int r = 0; r < s->R; r++) {
        res->loss_sum += s->rep[r].loss_sum;
        res->correct += s->rep[r].correct;
        res->examples += s->rep[r].examples;
        finite &= s->rep[r].finite;
    }
    if (finite) {
        rc = rpool_dispatch(s, JOB_REDUCE, e);
        if (rc != PT_OK)
            return rc;
        for (int r = 0; r < s->R; r++)
            finite &= s->rep[r].finite;
    } else {
        for (int r = 0; r < s->R; r++)
            nn_zero_grads(s->rep[r].ctx);
    }
    if (finite) {
        rc = rpool_dispatch(s, JOB_STEP, e);
        if (rc != PT_OK)
            return rc;
        nn_model_update_bn(s->cfg.model, s->ctxs, s->R, t);
    } else {
        for (int r = 0; r < s->R; r++)
            nn_ctx_clear_bn_records(s->rep[r].ctx);
    }
    res->finite = finite;
    return PT_OK;
}

int rpool_infer(rpool *s, const uint8_t *images, int n, float *logits, pt_err *e)
{
    if (n > s->R * s->P)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "prediction batch of %d is larger than %d replicas x %d", n, s->R, s->P);
    if (n <= 0)
        return PT_OK;
    s->pimages = images;
    s->pn = n;
    s->plogits = logits;
    /* No replica runs now: the team's start of this job is set before it begins. */
    s->team.gen0 = s->team.gen;
    atomic_store(&s->team.over, 0);
    return rpool_dispatch(s, JOB_INFER, e);
}

void rpool_get_counters(rpool *s, int r, rpool_counters *c)
{
    memset(c, 0, sizeof *c);
    if (r < 0 || r >= s->R)
        return;
    /* Read between jobs (the trainer thread is the only caller of jobs). */
    const replica *p = &s->rep[r];
    c->busy = p->busy;
    c->wait = p->wait;
    c->flops = p->flops;
    c->examples = p->trained;
    c->team_sections = p->team_sections;
    c->team_parts = p->team_parts;
}

int rpool_recompute_auto(size_t keep_all, int replicas, size_t phys)
{
    /* A quarter leaves the rest to the decoded batches, the pipeline and whatever
     * else the machine runs; unknown memory keeps the faster layout. */
    return phys > 0 && (double)keep_all * replicas > 0.25 * (double)phys;
}

size_t rpool_replica_bytes(const rpool *s)
{
    return nn_ctx_bytes(s->rep[0].ctx);
}

void rpool_memory_note(const rpool *s, char *buf, size_t size)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    const double each = (double)rpool_replica_bytes(s) / gib;
    const double keep = (double)s->keep_all / gib, phys = (double)s->phys / gib;
    const char *why = s->cfg.recompute >= 0 ? "as --recompute says"
                      : s->recompute        ? "--recompute auto: keeping them would take more "
                                              "than a quarter of this machine's memory"
                                            : "--recompute auto: they fit in a quarter of this "
                                              "machine's memory";
    if (s->recompute)
        snprintf(buf, size, "memory: %d replica%s x %.2f GiB, batch-norm and depthwise outputs "
                 "recomputed in the backward instead of kept (kept, the activations alone would "
                 "take %.2f GiB each; the machine has %.1f GiB; %s)",
                 s->R, s->R == 1 ? "" : "s", each, keep, phys, why);
    else
        snprintf(buf, size, "memory: %d replica%s x %.2f GiB, every output kept for the "
                 "backward (the machine has %.1f GiB; %s; --recompute yes needs less, "
                 "at some speed)",
                 s->R, s->R == 1 ? "" : "s", each, phys, why);
}

int rpool_replicas(const rpool *s) { return s->R; }
int rpool_classes(const rpool *s) { return s->k; }
int rpool_update_size(const rpool *s) { return s->U; }
