/* rpool — the replica pool: R persistent replica threads, each with its own nn_ctx
 * (activations, gradients), that run jobs on one shared copy of the weights (the
 * model's parameter array). It is the one place that makes compute threads: training,
 * validation, predict, ensemble and classify all run their forward passes here.
 *
 * Jobs (one at a time, every replica takes part, the caller waits for all):
 *   forward + backward  the update's micro-batches: per micro-batch a forward (with the
 *                       loss) then a backward, on the replica's slice of the batch; the
 *                       two run back to back on the replica, with no barrier between
 *                       (a context holds one micro-batch's activations);
 *   reduce              replica r sums slice r of every replica's gradient, in replica
 *                       order (a reduce-scatter in shared memory);
 *   optimizer step      replica r steps slice r of the weights (the "all-gather" is
 *                       free: the weights are shared);
 *   inference           logits of a batch of images, split across the replicas; a
 *                       batch of fewer images than replicas (predict of one photo)
 *                       runs on replica 0, the others its team (nn_ctx_set_team):
 *                       each convolution's output rows or channels split across them,
 *                       handed over by spinning, not by the condition variables
 *                       (the same bits as one thread; a bf16 pool's products stay on
 *                       replica 0).
 * Images enter every job as bytes and are scaled here, and only here, to floats
 * (bytes times the float 1 / 255), as training feeds them.
 *
 * Training: an update takes A global batches (gradient accumulation); replica r
 * handles examples [r*B, (r+1)*B) of each. Per replica, loss = sum of per-example
 * losses / U with U = R x B x A, so that summing gradients over replicas and
 * micro-batches gives the gradient of the mean loss over the update. Sums run in
 * replica order, so results do not depend on thread timing. OpenBLAS is
 * single-threaded inside each replica: the replicas are the parallelism.
 *
 * Across processes (a job of ranks), the reduce job takes a plug-in: rpool_reducer,
 * function pointers the trainer's MPI code fills (the pool itself knows no MPI).
 * This process's replicas are then replicas [first_replica, first_replica + R) of
 * all_replicas: each rank is given its slice of every global batch, U counts every
 * replica of the job, and an update adds two steps before the optimizer: the
 * per-replica figures (loss, counts, finiteness) are gathered so every rank takes the
 * same decision, and the rank's summed gradient is summed across ranks (in rank
 * order, the same bits everywhere); the BN records too. With overlap, the gradient
 * goes in buckets as the backward finishes them (the last layers' first), each summed
 * over the rank's replicas and started across the ranks by the calling thread while
 * the replicas compute the first layers' gradients, and every rank then steps the
 * whole optimizer on the identical sum. Without overlap the optimizer is sliced
 * across the ranks as across the replicas: the rank's summed gradient is
 * reduce-scattered, each rank steps its slice (split among its replicas) and the
 * weights are gathered; the moments stay each in its rank until
 * rpool_share_optimizer(). With 1 replica per rank the sums are bit for bit those of
 * one process with as many replicas.
 *
 * An inference-only pool (no optimizer) builds inference-only contexts
 * (nn_ctx_new_infer) with the convolutions' weights packed once (nn_ctx_pack_weights:
 * the model's weights must not change while the pool lives) and runs only the
 * inference job.
 *
 * Ownership: rpool_new() borrows the model, the optimizer and the reducer (they must
 * outlive it) and owns its threads, contexts and buffers; rpool_free() joins and
 * frees them. Callers run one rpool_* call at a time (one calling thread).
 */
#ifndef PT_RPOOL_H
#define PT_RPOOL_H

#include <stdint.h>

#include "base/err.h"
#include "data/batch.h"
#include "nn/nn.h"
#include "nn/optim.h"

typedef struct rpool rpool;

/* The reduce job's plug-in for a job of several processes (ranks): the collectives
 * the pool needs, every rank calling them in the same order. The sum_* calls are a
 * sum of floats across the ranks started, tested and waited for (overlap); a
 * rpool_sum is the plug-in's own. */
typedef struct rpool_sum rpool_sum;
typedef struct rpool_reducer {
    int ranks;              /* processes of the job; <= 1: the pool works alone */
    int rank;               /* this one's place, 0-based */
    /* [lo, hi) of n parameters that rank steps (the optimizer sliced by rank) */
    void (*slice)(size_t n, int rank, size_t *lo, size_t *hi);
    int (*allgather)(const void *mine, void *all, size_t bytes, pt_err *e);
    int (*reduce_scatter_floats)(float *v, size_t n, pt_err *e);
    int (*allgather_floats)(float *v, size_t n, pt_err *e);
    int (*sum_doubles)(double *v, size_t n, pt_err *e);
    int (*max_int)(int *v, pt_err *e);
    rpool_sum *(*sum_new)(size_t n);
    void (*sum_free)(rpool_sum *q);
    int (*sum_start)(rpool_sum *q, float *v, size_t n, pt_err *e);
    int (*sum_test)(rpool_sum *q, int *done, pt_err *e);
    int (*sum_wait)(rpool_sum *q, pt_err *e);
} rpool_reducer;

typedef struct rpool_config {
    nn_model *model;
    opt *optimizer;             /* NULL: an inference-only pool */
    const uint8_t *decay_mask;  /* per parameter, may be NULL */
    int replicas;
    int batch_per_replica;      /* B */
    int grad_acc;               /* A */
    int predict_batch;          /* per replica, for rpool_infer */
    float label_smoothing;      /* 0: the dataset's targets as they are */
    /* Knowledge distillation: a batch with soft targets (batch.soft) trains on
     * nn_distill_ce at temperature distill_t with weight distill_alpha; one without,
     * on the plain loss. */
    float distill_t, distill_alpha;
    /* A rank of a job (reducer->ranks > 1): its replicas' place among all of the
     * job's. all_replicas 0 or reducer NULL: this process alone. */
    const rpool_reducer *reducer;
    int first_replica;
    int all_replicas;
    /* A rank of a job: send the gradient in buckets as the backward finishes them
     * (the last layers' first), instead of after it. Same bits either way. */
    int overlap;
    /* Asked while the replicas' memory is first touched (NULL: never): nonzero stops
     * rpool_new with PT_ESTOPPED (nn_ctx_new_cancel). */
    nn_stop_fn stop;
    void *stop_ctx;
    /* Recompute the cheap outputs in the backward instead of keeping them (1), keep
     * them (0), or -1: recompute when keeping them would take more than a quarter of
     * the machine's memory (rpool_recompute_auto). */
    int recompute;
    /* The products in bf16 (nn_ctx_set_precision NN_BF16) on every replica: training,
     * validation and inference alike. */
    int bf16;
} rpool_config;

int rpool_new(const rpool_config *cfg, rpool **out, pt_err *e);
void rpool_free(rpool *s);

typedef struct rpool_result {
    double loss_sum;            /* summed per-example loss over the update's examples */
    long long examples;
    long long correct;          /* argmax == dominant label */
    int finite;                 /* 0: a loss or gradient was not finite; no step taken */
} rpool_result;

/* One optimizer update from A batches of up to R x B examples each. preds (may be
 * NULL) receives the argmax of every example, batch after batch, in order (room for
 * A x R x B). The step is skipped (weights untouched) when anything is not finite. */
int rpool_update(rpool *s, batch *const *batches, double lr, long long t, uint64_t seed,
                 rpool_result *res, int32_t *preds, pt_err *e);

/* The inference job: logits [n][classes] of n images (bytes, H x W x 3 each, packed)
 * into logits, replica r forwarding images [r*P, (r+1)*P) with P = predict_batch. */
int rpool_infer(rpool *s, const uint8_t *images, int n, float *logits, pt_err *e);

/* Per-replica counters since creation (seconds, examples, FLOPs). */
typedef struct rpool_counters {
    double busy;                /* computing (forward, backward, reduce, optimizer) */
    double wait;                /* waiting for the other replicas at the end of a job */
    double flops;
    long long examples;         /* trained examples */
    /* The inference team: sections replica 0 split its operators into (replica 0
     * only), and parts of them this replica ran (which member takes a part depends on
     * who is running at the time) */
    long long team_sections, team_parts;
} rpool_counters;

void rpool_get_counters(rpool *s, int r, rpool_counters *c);
/* Overlap (a rank of a job): buckets per update (0 without overlap), buckets sent
 * since creation, and how many of those were started while a replica's backward
 * pass still ran (the rest waited for its end). */
void rpool_get_overlap(const rpool *s, int *buckets, long long *sent, long long *early);
/* recompute -1's choice: 1 when `replicas` contexts keeping every output, keep_all
 * bytes each (nn_ctx_keep_all_bytes), would take more than a quarter of phys bytes. */
int rpool_recompute_auto(size_t keep_all, int replicas, size_t phys);
/* One sentence for the run's log: each replica's memory, whether it recomputes, and
 * why (NUL-terminated, cut to size). */
void rpool_memory_note(const rpool *s, char *buf, size_t size);
/* Bytes one replica's context holds (nn_ctx_bytes). */
size_t rpool_replica_bytes(const rpool *s);

/* A rank of a job without overlap steps only its slice of the optimizer, so each
 * rank's moments are current in its slice alone: this gathers them, so that every
 * rank holds all of them (before a checkpoint). Every rank calls it at the same
 * point; elsewhere it does nothing. */
int rpool_share_optimizer(rpool *s, pt_err *e);

int rpool_replicas(const rpool *s);
/* Classes: the model's logits per image. */
int rpool_classes(const rpool *s);

/* The update size U = all replicas x B x A. */
int rpool_update_size(const rpool *s);

#endif
