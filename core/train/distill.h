/* distill — the trainer's side of knowledge distillation (--teacher): the teacher
 * opened and its cache made while the run prepares (train/teacher.h), each update's
 * batches given their soft targets before the replicas take them, and the words the
 * log, the header and the run's end say about it.
 *
 * Ownership: the teacher and the soft targets' buffer are the run's parts
 * (trn_parts.teacher, trn_parts.soft), freed by trn_parts_free.
 */
#ifndef PT_TRN_DISTILL_H
#define PT_TRN_DISTILL_H

#include "base/err.h"
#include "data/batch.h"

typedef struct trn trn;

/* The prepare step: without --teacher nothing. Opens the teacher, says so in the log
 * and the snapshot, and (cached) predicts the training split or reads the run's
 * teacher_probs.csv back on a resume. */
int trn_distill_prepare(trn *r, pt_err *e);
/* The update's A batches get their soft targets (batch.soft); nothing without a
 * teacher. trn_distill_release clears them before the batches go back. */
int trn_distill_fill(trn *r, batch **batches, pt_err *e);
void trn_distill_release(trn *r, batch **batches);
/* "distilled from PATH (T 4, alpha 0.9, cached)" or "" without a teacher. */
void trn_distill_text(const trn *r, char *buf, size_t n);

#endif
