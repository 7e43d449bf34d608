/* progress — the one copy of a run's state that crosses threads: the snapshot
 * (state, message, figures, curves, history, telemetry, label counts), the latest
 * validation results and the class names, behind one lock of their own. It only
 * holds and copies; what goes in is computed elsewhere (the replicas' figures by
 * train/telemetry.h, the curves by train/curves.h) and published by the trainer
 * (train/publish.c).
 *
 * One writer of run progress: the trainer (core/train/), through prg_lock() /
 * prg_unlock() and prg_set_val(). The engine only sets the life-cycle state
 * around a run (prg_set_state: preparing at start, a message while the demo data
 * is generated) and copies things out for the UI (prg_snapshot, prg_val_*).
 * Every function is safe from any thread; the lock is held only to copy.
 *
 * Ownership: prg_new() / prg_free(). prg_set_val() takes the arrays it is given
 * (malloc'd by the caller) and frees them when newer results replace them. Copies
 * handed out (reports, names) belong to the caller.
 */
#ifndef PT_PROGRESS_H
#define PT_PROGRESS_H

#include <stdint.h>

#include "base/err.h"
#include "data/batch.h"
#include "run.h"

typedef struct prg prg;

/* The validation results of one epoch, in the validation split's order. */
typedef struct prg_val {
    int epoch;                  /* 0: none yet */
    long long n;
    int n_classes;
    int32_t *labels, *preds;
    float *conf;
    float *loss;                /* each example's cross-entropy (-log p of its label) */
    batch_src *src;             /* where each example's record is */
    long long *confusion;       /* n_classes x n_classes, [true][pred] */
} prg_val;

/* A new progress for a run of cfg, showing what the run will use before it starts
 * (state idle, model, dataset, replicas, batch sizes). NULL when out of memory. */
prg *prg_new(const run_config *cfg);
void prg_free(prg *p);

/* ---- writers ---- */

/* The snapshot, locked, for the trainer to write run progress into. */
run_snapshot *prg_lock(prg *p);
void prg_unlock(prg *p);

void prg_set_state(prg *p, run_state s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Replace the message only (the state stays). */
void prg_set_message(prg *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Publish an epoch's validation results; takes v's arrays (v is left empty). */
void prg_set_val(prg *p, prg_val *v);

/* Publish the class names (n of them, copied). */
void prg_set_names(prg *p, char (*names)[RUN_NAME_MAX], int n);

/* ---- readers ---- */

void prg_snapshot(prg *p, run_snapshot *out);
run_state prg_state(prg *p);

/* Class k's name once published, else NULL. Names never change after they are
 * published, so the pointer stays valid until prg_free(). */
const char *prg_class_name(prg *p, int k);

/* The latest epoch's report (epoch 0: none yet). PT_ENOMEM when a copy failed. */
int prg_val_report(prg *p, run_val_report *out);

/* Labels, predictions, confidences and losses of examples [first, first + n); any
 * array may be NULL. Returns how many were copied (0 before the first validation). */
long long prg_val_preds(prg *p, long long first, int n, int *label, int *pred, float *conf,
                        float *loss);

/* Where example index of the latest epoch lives and what was predicted for it.
 * *epoch receives the epoch the results belong to. PT_ENODATA (message says why)
 * when there are no results or index is outside them. */
int prg_val_example(prg *p, long long index, batch_src *src, run_val_item *item, int *epoch,
                    pt_err *e);

/* The run folder (the snapshot's run_dir: "" until the run has made it) into buf. */
void prg_run_dir(prg *p, char *buf, size_t n);

/* Frees v's arrays and leaves it empty. */
void prg_val_free(prg_val *v);

#endif
