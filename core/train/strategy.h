/* strategy — data-parallel training on R replica threads, like TPUStrategy's cores.
 *
 * One shared copy of the weights (the model's parameter array) is read by R replica
 * threads, each with its own nn_ctx (activations, gradients). An update takes A
 * global batches (gradient accumulation); replica r handles examples
 * [r*B, (r+1)*B) of each. Per replica, loss = sum of per-example losses / U with
 * U = R x B x A, as the seed notebook argues, so that summing gradients over
 * replicas and micro-batches gives the gradient of the mean loss over the update.
 * The sum is a reduce-scatter in shared memory: replica r adds up slice r of every
 * replica's gradient array and applies the optimizer to slice r of the weights (the
 * "all-gather" is free: the weights are shared). Sums run in replica order, so
 * results do not depend on thread timing. OpenBLAS is single-threaded inside each
 * replica: the replicas are the parallelism.
 *
 * Across processes (train/dist.h, a job of ranks started by mpirun), this process's
 * replicas are replicas [first_replica, first_replica + R) of all_replicas: each
 * rank is given its slice of every global batch, U counts every replica of the job,
 * and an update adds two steps before the optimizer: the per-replica figures
 * (loss, counts, finiteness) are gathered so every rank takes the same decision,
 * and the rank's summed gradient is summed across ranks (in rank order, the same
 * bits everywhere); the BN records too. With overlap, the gradient goes in buckets
 * as the backward finishes them (the last layers' first, as nn reports its
 * progress), each summed over the rank's replicas and started across the ranks by
 * the calling thread while the replicas compute the first layers' gradients, and
 * every rank then steps the whole optimizer on the identical sum. Without overlap
 * the optimizer is sliced across the ranks as across the replicas:
 * the rank's summed gradient is reduce-scattered, each rank steps its slice (split
 * among its replicas) and the weights are gathered; the moments stay each in its
 * rank until strat_share_optimizer(). With 1 replica per rank the sums are bit for
 * bit those of one process with as many replicas.
 *
 * Ownership: strat_new() borrows the model and optimizer (they must outlive it) and
 * owns its threads, contexts and buffers; strat_free() joins and frees them.
 * Callers run one strat_* call at a time (the trainer thread).
 */
#ifndef PT_STRATEGY_H
#define PT_STRATEGY_H

#include <stdint.h>

#include "base/err.h"
#include "data/batch.h"
#include "nn/nn.h"
#include "train/optim.h"

typedef struct strat strat;

typedef struct strat_config {
    nn_model *model;
    opt *optimizer;
    const uint8_t *decay_mask;  /* per parameter, may be NULL */
    int replicas;
    int batch_per_replica;      /* B */
    int grad_acc;               /* A */
    int predict_batch;          /* per replica, for strat_predict */
    float label_smoothing;      /* 0: the dataset's targets as they are */
    /* A rank of a job (dist_size() > 1): its replicas' place among all of the job's.
     * all_replicas 0: this process alone. */
    int first_replica;
    int all_replicas;
    /* A rank of a job: send the gradient in buckets as the backward finishes them
     * (the last layers' first), instead of after it. Same bits either way. */
    int overlap;
    /* Asked while the replicas' memory is first touched (NULL: never): nonzero stops
     * strat_new with PT_ESTOPPED (nn_ctx_new_cancel). */
    nn_stop_fn stop;
    void *stop_ctx;
    /* Recompute the cheap outputs in the backward instead of keeping them (1), keep
     * them (0), or -1: recompute when keeping them would take more than a quarter of
     * the machine's memory (strat_recompute_auto). */
    int recompute;
} strat_config;

int strat_new(const strat_config *cfg, strat **out, pt_err *e);
void strat_free(strat *s);

typedef struct strat_result {
    double loss_sum;            /* summed per-example loss over the update's examples */
    long long examples;
    long long correct;          /* argmax == dominant label */
    int finite;                 /* 0: a loss or gradient was not finite; no step taken */
} strat_result;

/* One optimizer update from A batches of up to R x B examples each. preds (may be
 * NULL) receives the argmax of every example, batch after batch, in order (room for
 * A x R x B). The step is skipped (weights untouched) when anything is not finite. */
int strat_update(strat *s, batch *const *batches, double lr, long long t, uint64_t seed,
                 strat_result *res, int32_t *preds, pt_err *e);

/* Inference: logits [b->n][classes] into out, the batch split across replicas in
 * slices of predict_batch. */
int strat_predict(strat *s, const batch *b, float *logits, pt_err *e);

/* Per-replica counters since creation (seconds, examples, FLOPs). */
typedef struct strat_counters {
    double busy;                /* computing (forward, backward, reduce, optimizer) */
    double wait;                /* waiting for the other replicas at the end of a job */
    double flops;
    long long examples;         /* trained examples */
} strat_counters;

void strat_get_counters(strat *s, int r, strat_counters *c);
/* Overlap (a rank of a job): buckets per update (0 without overlap), buckets sent
 * since creation, and how many of those were started while a replica's backward
 * pass still ran (the rest waited for its end). */
void strat_get_overlap(const strat *s, int *buckets, long long *sent, long long *early);
/* recompute -1's choice: 1 when `replicas` contexts keeping every output, keep_all
 * bytes each (nn_ctx_keep_all_bytes), would take more than a quarter of phys bytes. */
int strat_recompute_auto(size_t keep_all, int replicas, size_t phys);
/* One sentence for the run's log: each replica's memory, whether it recomputes, and
 * why (NUL-terminated, cut to size). */
void strat_memory_note(const strat *s, char *buf, size_t size);
/* Bytes one replica's context holds (nn_ctx_bytes). */
size_t strat_replica_bytes(const strat *s);

/* A rank of a job without overlap steps only its slice of the optimizer, so each
 * rank's moments are current in its slice alone: this gathers them, so that every
 * rank holds all of them (before a checkpoint). Every rank calls it at the same
 * point; elsewhere it does nothing. */
int strat_share_optimizer(strat *s, pt_err *e);

int strat_replicas(const strat *s);

/* The update size U = all replicas x B x A. */
int strat_update_size(const strat *s);

#endif
