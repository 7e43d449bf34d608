/* loop — the trainer's second phase: the updates. Per update: the pause point (pause,
 * stop, each with a checkpoint), A batches from the pipeline, the replica pool's step,
 * the training figures and what is published; at the end of an epoch: validation
 * (train/validate.h), history, the epoch's log lines and a checkpoint
 * (train/persist.h); on a non-finite loss: skip the update, pause, ask.
 *
 * Ownership: trn_loop lives inside the run's trn (train/trn.h); train_cm and preds
 * are allocated by the plan's figures step and freed by trn_loop_free.
 */
#ifndef PT_TRN_LOOP_H
#define PT_TRN_LOOP_H

#include <stdint.h>

#include "base/err.h"

typedef struct trn trn;

typedef struct trn_loop {
    long long update;           /* updates done */
    int epoch;                  /* epochs completed */
    long long in_epoch;         /* updates done in the current epoch */
    double epoch_time_before;   /* of the current epoch, before a resume */
    double elapsed_before;      /* of the run, before a resume */
    double epoch_start, run_start; /* when this process began the epoch / the run */
    /* the current epoch's training figures */
    double loss_sum;
    long long examples, correct;
    long long *train_cm;        /* n_classes x n_classes, label-major */
    int32_t *preds;             /* an update's predictions, update_size of them */
    const char *stopped_in;     /* the preparing step a stop landed in (NULL: none) */
} trn_loop;

/* The epochs, from where the run stands to cfg->epochs or a stop: *stopped is 1 on
 * a stop asked for, 2 after a non-finite loss the user chose to stop on; an early
 * stop (--early-stop) sets r->keep.early and leaves *stopped 0. */
int trn_train(trn *r, int *stopped, pt_err *e);

void trn_loop_free(trn_loop *l);

/* An update's grad_acc batches from the run's pipeline into batches (the caller
 * releases them); PT_ENODATA when the stream ended, or the pipeline's error. */
typedef struct batch batch;
int trn_next_batches(trn *r, batch **batches, pt_err *e);

#endif
