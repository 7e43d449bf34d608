/* trn — one training run's state: what the engine lent it, and each phase's part as a
 * value of its own struct, declared in that phase's header:
 *
 *   plan      train/plan.h      sizes, counts, schedule (trn_plan); model, optimizer,
 *                               pool, pipeline (trn_parts)
 *   loop      train/loop.h      progress through the updates and the epoch's figures
 *   valid     train/validate.h  the validation pass's timing
 *   persist   train/persist.h   the run folder, log, checkpoints, event files
 *   keep      train/keep.h      early stopping and the best epoch's weights
 *
 * and the parts with owners of their own (the curves, the telemetry), read by every
 * phase and changed only through their functions. Only the trainer's files include
 * this; the engine knows the trainer through train/trainer.h.
 *
 * Ownership: one trn per trn_run(), which frees every part at its end. The
 * environment (env, cfg, ds) is borrowed.
 */
#ifndef PT_TRN_H
#define PT_TRN_H

#include "data/dataset.h"
#include "run.h"
#include "train/curves.h"
#include "train/keep.h"
#include "train/loop.h"
#include "train/persist.h"
#include "train/plan.h"
#include "train/telemetry.h"
#include "train/trainer.h"
#include "train/validate.h"

typedef struct trn {
    const run_config *cfg;
    const trn_env *env;
    const ds_dataset *ds;
    trn_plan plan;
    trn_parts parts;
    trn_loop loop;
    trn_valid valid;
    trn_persist persist;
    trn_keep keep;
    crv curves;                 /* the history and the per-update curves (curves.h) */
    tlm telemetry;              /* the replicas' hardware figures (telemetry.h) */
    int finder;                 /* 1: the learning-rate finder's (lrfind.h): no run folder */
} trn;

#endif
