/* plan — the trainer's first phase: what preparing a run decides and builds.
 *
 *   trn_plan    the numbers: classes, input side, replicas and the update's shape (this
 *               rank's and the job's), updates per epoch, the label counts, the
 *               oversampling table, the learning-rate schedule, the sgemm peak
 *   trn_parts   what computes: the model, its optimizer and masks, the moving average,
 *               the replica pool, the training pipeline
 *
 * trn_prepare runs the named steps of its table in order (open the data, scan labels,
 * plan the updates, make the run folder, build the model, start the replicas, ...);
 * the first error ends it. Once prepared, the plan is read-only; the parts change only
 * through their own modules' functions (an update, a freeze, a checkpoint's restore).
 *
 * Ownership: both live inside the run's trn (train/trn.h); trn_parts_free frees what
 * the parts hold (safe on a partly prepared run), trn_plan_free the oversampling table.
 */
#ifndef PT_TRN_PLAN_H
#define PT_TRN_PLAN_H

#include "base/err.h"
#include "data/dataset.h"
#include "data/pipeline.h"
#include "data/sampler.h"
#include "nn/nn.h"
#include "nn/optim.h"
#include "pool/rpool.h"
#include "run.h"
#include "train/ema.h"
#include "train/schedule.h"
#include "train/teacher.h"

typedef struct trn trn;

typedef struct trn_plan {
    int n_classes;
    int image_size;             /* the net's input side */
    int replicas;               /* this process's */
    int batch_per_replica;
    int grad_acc;               /* batches accumulated per update */
    int predict_batch;          /* per replica in prediction (the training contexts') */
    int update_size;            /* examples per update: job_replicas x batch x grad_acc */
    int rank, ranks;            /* this process in its job (train/dist.h): 0 and 1 alone */
    int job_replicas;           /* the replicas of every rank together */
    int first_replica;          /* this rank's first replica's index in the job */
    int max_replicas;           /* the most replicas of any rank */
    long long updates_per_epoch, total_updates;
    long long epoch_examples;   /* training examples of an epoch (oversampled) */
    int oversampling;           /* 1: oversampler is built */
    smp_table oversampler;
    long long train_counts[RUN_MAX_CLASSES], train_oversampled[RUN_MAX_CLASSES],
        val_counts[RUN_MAX_CLASSES];
    long long readable[DS_NSPLITS]; /* records the label scan could read, per split */
    sched schedule;
    double sgemm_peak;          /* single-core GFLOP/s, for the telemetry's MXU figure: the
                                   bf16 kernel's when bf16 */
    int bf16;                   /* --precision resolved on this CPU */
} trn_plan;

typedef struct trn_parts {
    nn_model *model;
    opt optimizer;
    int optimizer_ready;        /* 1: optimizer is initialised (to free) */
    ema average;                /* what validation and predictions use (--ema) */
    uint8_t *decay_mask;        /* 1 for the parameters weight decay applies to */
    uint8_t *slow_mask;         /* --freeze-epochs: 1 for the backbone's parameters */
    rpool *pool;
    pipeline *pipeline;         /* the training examples */
    tch *teacher;               /* --teacher (train/distill.h), or NULL */
    float *soft;                /* its soft targets: A x this rank's R x B x classes */
} trn_parts;

/* The steps before the first update, in order; PT_ESTOPPED when a stop was asked
 * (the step it landed in named in r->loop.stopped_in). */
int trn_prepare(trn *r, pt_err *e);
/* --freeze-epochs: the head alone for the first K epochs, then the whole net with
 * the backbone's learning rate scaled (called when prepared and after each epoch). */
void trn_set_freeze(trn *r);
/* 1 when the user asked the run to stop (nn_stop_fn; ctx is the trn). */
int trn_stop_asked(void *ctx);

void trn_plan_free(trn_plan *p);
void trn_parts_free(trn_parts *p);

#endif
