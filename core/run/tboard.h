/* tboard — a run's TensorBoard event files (io/tbevent.h) in its run folder's
 * train/ and validation/, written as Keras's TensorBoard callback writes them, so
 * that `tensorboard --logdir runs` shows every run and the competition's Keras
 * runs beside them. The tags are run/runfolder.h's run_tags[].
 *
 * train/: per update batch_loss, batch_sparse_categorical_accuracy and
 * batch_learning_rate at step = updates done; per epoch epoch_loss,
 * epoch_sparse_categorical_accuracy, epoch_precision, epoch_recall, epoch_f1_score
 * (macro), epoch_learning_rate (of the epoch's last update),
 * epoch_images_per_second and the image augmentation_preview, at step = the
 * 0-based epoch, as Keras's TensorBoard callback numbers epochs. validation/: the
 * same epoch_ figures of the validation pass, the image confusion_matrix, and
 * evaluation_loss_vs_iterations / evaluation_sparse_categorical_accuracy_vs_iterations
 * at step = updates done. A failure to write is logged once and ends the event
 * files, never the run.
 *
 * Ownership: tb_init() allocates the confusion matrix kept for the picture;
 * tb_close() closes the files and frees it (safe on a zeroed tb_run). The run
 * folder's path and the hooks' context are borrowed.
 */
#ifndef PT_TBOARD_H
#define PT_TBOARD_H

#include <stdint.h>

#include "base/err.h"
#include "io/tbevent.h"
#include "run.h"

/* What the pictures and the failure message need from the trainer. */
typedef struct tb_hooks {
    void *ctx;
    void (*log)(void *ctx, const char *line);
    void (*class_name)(void *ctx, int c, char *buf, size_t n);
    /* n augmented training images for the preview, the count-th preview */
    int (*preview)(void *ctx, int n, uint64_t count, run_preview *p, pt_err *e);
} tb_hooks;

typedef struct tb_run {
    tbe_writer *train, *val;
    int off;                    /* writing failed (or not this rank's): no more events */
    const char *dir;            /* the run folder (borrowed) */
    int n_classes;
    long long *val_cm;          /* the latest validation's confusion, n_classes^2 */
    int val_cm_epoch;           /* the epoch it is of (1-based); 0 none */
    tb_hooks h;
} tb_run;

/* The confusion matrix's room; PT_OK or PT_ENOMEM. */
int tb_init(tb_run *t, int n_classes);
/* Open train/'s file (a resumed run adds one beside the old); on = 0: write
 * nothing (a job's other ranks). */
void tb_open(tb_run *t, int on, const char *dir, const tb_hooks *h);
/* After every update (step = updates done). */
void tb_update(tb_run *t, long long update, double loss, double acc, double lr);
/* The latest validation's confusion matrix, for the next tb_epoch's picture. */
void tb_set_confusion(tb_run *t, const long long *cm, int epoch);
/* After an epoch's history is written: its figures (lr: of its last update), the
 * pictures; then both files flushed to disk. */
void tb_epoch(tb_run *t, const run_epoch *row, long long update, double lr,
              double images_per_sec);
/* Everything so far onto the disk (with a checkpoint). */
void tb_flush(tb_run *t);
void tb_close(tb_run *t);

#endif
