/* keep — early stopping and the best epoch's weights (--early-stop, --monitor,
 * --keep): after every epoch the monitored validation value (run.h's run_monitor) is
 * compared with the best so far; an improvement (a tie is none) writes that epoch's
 * weights, the ones validation measured (the moving average when --ema is on), to the
 * run folder's best.ckpt when the run keeps its best epoch; N epochs in a row without
 * one end the run (--early-stop N). The run's model (submission.csv here; export,
 * predict and inspect through run/runfolder.h's run_kept_file) is then the best
 * epoch's weights, while checkpoint.ckpt keeps the last epoch's state for --resume.
 * summary.json says which epoch was kept and why the run stopped.
 *
 * In a job of several ranks rank 0 alone validates: its value goes to every rank, so
 * that all stop at the same epoch; rank 0 alone writes files. A resumed run takes the
 * state back from its checkpoint (ckpt_best), or, from a checkpoint written before
 * it, from the history; a run that had stopped early starts a new count of N.
 *
 * Ownership: trn_keep lives inside the run's trn (train/trn.h) and holds no memory;
 * trn_keep_use_best() hands back a copy of the last weights that trn_keep_use_last()
 * puts back and frees.
 */
#ifndef PT_TRN_KEEP_H
#define PT_TRN_KEEP_H

#include <stddef.h>

#include "base/err.h"
#include "run.h"
#include "run/checkpoint.h"

typedef struct trn trn;

typedef struct trn_keep {
    int best_epoch;             /* the best monitored value's epoch; 0 none yet */
    long long best_update;      /* the update that epoch ended at */
    double best_value;          /* NaN: none */
    int since;                  /* epochs after it without improvement */
    int early;                  /* 1: --early-stop ends the run after this epoch */
    int noted;                  /* 1: said once that there is nothing to monitor */
} trn_keep;

/* At the end of the epoch row (r->loop.epoch counts it already): compare, keep, count,
 * decide; summary.json rewritten. PT_OK, or the error of a best.ckpt or summary.json
 * that could not be written, or of the collective. */
int trn_keep_epoch(trn *r, const run_epoch *row, pt_err *e);
/* 1 when the run watches its monitored value (--early-stop on, or --keep best): only
 * then does it write summary.json and early stopping's part of the checkpoint, so that
 * a run without either writes the files and bytes it always did. */
int trn_keep_watching(const trn *r);
/* The state a checkpoint carries; NULL when the run does not watch. */
const ckpt_best *trn_keep_state(const trn *r, ckpt_best *b);
/* The state back from a resumed run's checkpoint (l->has_best), or from its history
 * (r->curves, restored first); rank 0. A run that stopped early (done: 1 when its log
 * says it ended) is refused (PT_EUSAGE) unless asked for more: --epochs above its
 * own, or another --early-stop. Kept weights that are not in the folder (a run that
 * did not keep its best before, or was killed between best.ckpt and its checkpoint)
 * are written from the checkpoint when it is that epoch's end, else the best starts
 * again (said in the log). */
int trn_keep_restore(trn *r, const ckpt_loaded *l, int done, pt_err *e);
/* For the test predictions: the kept epoch's weights into the model when they are not
 * the last's (every rank: rank 0 reads best.ckpt and sends them). *saved: the last
 * weights to put back (NULL when nothing was changed). */
int trn_keep_use_best(trn *r, float **saved, pt_err *e);
void trn_keep_use_last(trn *r, float *saved);
/* summary.json with how the run stopped (reason in words; "" while running), when the
 * run watches or its folder has one already. */
int trn_keep_write_outcome(trn *r, run_stop stop, const char *reason, pt_err *e);
/* The run's model in words for the end message, "" when it is the last epoch's weights
 * by --keep last: "the model is epoch 4's weights (the best val_f1, 0.8123)". */
void trn_keep_text(const trn *r, char *buf, size_t n);
/* The epoch whose weights are the run's model (the last when nothing better was
 * kept). */
int trn_keep_epoch_kept(const trn *r);

#endif
