/* series — a run's curves as one type both ways: run_series (run.h).
 *
 * A run read back from its folder gives its curves as series, each point at three
 * x positions (update, epoch, seconds). ser_from_snapshot() gives a live run's the
 * same way: the per-update curves (thinned, a point at update (i + 1) * stride)
 * and the epochs' figures, their x from the epochs' ends (cumulative updates and
 * seconds) and, inside the epoch under way, its pace so far. So the workbench
 * draws live and compared curves through one path. ser_to_snapshot() goes back:
 * a run read from its folder into the snapshot the workbench's other panels show
 * (--open).
 *
 * The engine's wrappers (engine.h: eng_snapshot_series, eng_series_free,
 * eng_run_snapshot) are what the UI calls; their bodies are in series.c.
 *
 * Ownership: ser_from_snapshot() fills the caller's set of RUN_SERIES_COUNT
 * series; its arrays are allocated at their largest on the first call (the set
 * zeroed before it) and reused by later ones; ser_free() releases them. A set
 * from a run's folder is the run's (runs_close()), never ser_free()'s.
 * ser_to_snapshot() writes into the caller's snapshot and keeps nothing.
 */
#ifndef PT_SERIES_H
#define PT_SERIES_H

#include "run.h"

/* The live run's curves of s into set: RUN_S_BATCH_LOSS/ACC/LR from the
 * per-update curves, RUN_S_TRAIN_* and RUN_S_VAL_* from the epochs' history (NaN
 * where an epoch has no such figure). PT_OK, or PT_ENOMEM with set left empty. */
int ser_from_snapshot(const run_snapshot *s, run_series set[RUN_SERIES_COUNT]);

/* Release a set ser_from_snapshot() filled (zeroed after). */
void ser_free(run_series set[RUN_SERIES_COUNT]);

/* The snapshot of a finished run from what its folder gave: state done, the
 * epochs' figures, the per-update curves (averaged down to the snapshot's points),
 * the totals, its model, dataset and folder. Fields it does not name keep their
 * values (the engine's class names and counts). */
void ser_to_snapshot(const run_figures *r, run_snapshot *s);

#endif
