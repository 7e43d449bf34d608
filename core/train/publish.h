/* publish — what the run shows while it trains, into its progress (train/progress.h):
 * the state and message, the static facts once prepared, the progress after every
 * update, the history after an epoch, the replicas' telemetry (publish.c).
 *
 * Ownership: nothing here allocates; the progress lock is held only to copy.
 */
#ifndef PT_TRN_PUBLISH_H
#define PT_TRN_PUBLISH_H

#include <stddef.h>

#include "run.h"

typedef struct trn trn;

void trn_set_state(trn *r, run_state s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Once prepared: sizes, counts, class names. */
void trn_publish_static(trn *r);
/* After every update. */
void trn_publish_progress(trn *r, double lr, double loss, double acc);
/* After an epoch or a checkpoint. */
void trn_publish_history(trn *r);
/* The name of class c (the dataset's, the competition's, or "class N"). */
void trn_class_name(const trn *r, int c, char *buf, size_t n);
/* The run pauses: the replicas' figures go to zero (published at once), and
 * their smoothing starts afresh when it goes on. */
void trn_telemetry_idle(trn *r);
/* Seconds this run has trained (before a resume too), and this epoch has. */
double trn_elapsed(const trn *r);
double trn_epoch_elapsed(const trn *r);

#endif
