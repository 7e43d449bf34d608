/* rpool_impl — the replica pool's insides, shared by its two files: rpool.c (threads,
 * jobs, one process) and rpool_ranks.c (a rank of a job: the reduce plug-in's part).
 * Nothing outside core/pool/ includes this. Ownership as in rpool.h. */
#ifndef PT_RPOOL_IMPL_H
#define PT_RPOOL_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "pool/rpool.h"

/* The most replicas one rank of a job may have (its figures travel in a fixed-size
 * record). */
#define RPOOL_RANK_REPLICAS 64

/* A rank's gradient crosses to the other ranks in buckets of about this many floats
 * (512 KB), at most RPOOL_BUCKETS of them: each a sum started as soon as every
 * replica's backward has passed its first parameter. Small enough that the last
 * layers' gradients travel while the first layers' are computed, large enough that
 * a collective's fixed cost (tens of microseconds on one host) stays small. */
#define RPOOL_BUCKET_FLOATS 131072
#define RPOOL_BUCKETS 16


/* The jobs; JOB_TRAIN is each micro-batch's forward then its backward. */
enum job { JOB_NONE = 0, JOB_TRAIN, JOB_REDUCE, JOB_STEP, JOB_INFER, JOB_EXIT };

typedef struct replica {
    struct rpool *s;
    int r;
    pthread_t thread;
    int started;
    nn_ctx *ctx;
    float *input;           /* max_batch x H x W x 3 */
    float *dlogits;         /* max_batch x classes */
    int32_t *pred;          /* max_batch */
    /* this job's results */
    double loss_sum;
    long long correct, examples;
    int finite;
    int rc;
    pt_err err;
    double finished_at;
    /* overlap: gradients [final_from, n_params) are final in this update (under the
     * pool.s lock); the first bucket this replica has not announced yet */
    size_t final_from;
    int next_bucket;
    /* counters (written by the replica between jobs, read by the trainer after) */
    double busy, wait, flops;
    long long trained;
    long long team_sections, team_parts;
} replica;

/* The inference job's team (nn_team): when a job has fewer images than replicas,
 * replica 0 runs them and replicas 1 .. max_parts - 1 help with its operators. Each
 * operator split is a section of `parts` parts that every member claims from (so a
 * member that is not running, on a busy machine, holds up nothing it has not
 * claimed). The hand-over spins (a convolution at batch 1 takes tens of
 * microseconds, a condition variable's wake-up about as long). */
typedef struct rpool_team {
    nn_team nt;                 /* first: the nn side's handle */
    uint64_t gen;               /* sections handed out (replica 0's count) */
    _Atomic uint64_t word;      /* the current section << 16 | its next part */
    _Atomic int done;           /* parts of it finished */
    _Atomic int over;           /* replica 0's forward ended */
    uint64_t gen0;              /* gen when the job started (set before it) */
    /* The section's work: atomics since a member that comes late may read them
     * while replica 0 writes the next section's (its claim then fails). */
    void (*_Atomic fn)(void *arg, int part);
    void *_Atomic arg;
    _Atomic int parts;
    long long lead_parts;       /* parts replica 0 ran (its own counter) */
} rpool_team;

struct rpool {
    rpool_config cfg;
    rpool_team team;        /* inference-only pools of 2 or more replicas */
    int R, B, A, P, U;
    int G, g0;              /* replicas of the job, and this process's first's index */
    const rpool_reducer *red;   /* dist: the reduce job's plug-in */
    int dist;               /* a rank of a job of several */
    int infer_only;         /* no optimizer: inference contexts, the inference job */
    int overlap;            /* dist: buckets of the gradient sent during the backward */
    int recompute;          /* the replicas' contexts recompute cheap outputs */
    size_t keep_all;        /* a context's activations if it kept every output */
    size_t phys;            /* the machine's memory, as auto judged it */
    int max_batch;          /* examples a replica's context is built for: max(B, P),
                               or an inference pool's chunk */
    int chunk;              /* images an inference forward runs at once (<= P) */
    /* dist without overlap: the optimizer is sliced across the ranks; this rank
     * steps parameters [rank_lo, rank_hi) and the weights are gathered after */
    int sliced;
    size_t rank_lo, rank_hi;
    double *bn_rec;         /* dist: BN records summed across ranks */
    /* overlap: bucket b is parameters [bk_lo[b], bk_hi[b]); bucket 0 holds the last
     * parameters, the first whose gradients are final */
    int n_buckets;
    size_t bk_lo[RPOOL_BUCKETS], bk_hi[RPOOL_BUCKETS];
    rpool_sum *bk_sum[RPOOL_BUCKETS];
    long long bk_sent, bk_early;    /* buckets sent; those while a backward ran */
    int h, w, k;
    size_t n_params;
    replica *rep;
    nn_ctx **ctxs;          /* every replica's context, for the BN update */
    size_t *lo, *hi;        /* parameter slice of each replica: its share of the reduce */
    size_t *step_lo, *step_hi;  /* its share of the optimizer step (of the rank's slice) */
    float *sum;             /* reduced gradients */

    pthread_mutex_t lock;
    pthread_cond_t go_cv, done_cv;
    uint64_t gen;
    int job, done;

    /* job arguments */
    batch *const *batches;
    long long *batch_offset;
    double lr;
    long long t;
    uint64_t seed;
    int32_t *preds;
    const uint8_t *pimages;
    int pn;
    float *plogits;
};

/* Parameters [lo, hi) of every replica's gradient summed in replica order into
 * s->sum, and cleared in the replicas. */
void rpool_sum_replicas(rpool *s, size_t lo, size_t hi);
/* Start one job on every replica (called with the lock held). */
void rpool_start_job(rpool *s, int job);
/* After every replica has ended a job: its waiting counted, the first error. */
int rpool_end_job(rpool *s, pt_err *e);
/* Run one job on every replica and wait for all. */
int rpool_dispatch(rpool *s, int job, pt_err *e);
/* An update of a rank of a job, after rpool_update's checks (rpool_ranks.c). */
int rpool_update_ranks(rpool *s, rpool_result *res, pt_err *e);

#endif
