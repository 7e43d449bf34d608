/* runfolder — the run folder's format, in one place: its file names, the keys of
 * history.json and the TensorBoard tags of its event files (one table each, used
 * by the writer and the reader alike), the writer the trainer fills it through,
 * and the reader that gives a finished (or running) run's figures back.
 *
 * A run folder holds: config ("key = value" lines), history.json (an array of one
 * flat object per epoch, rf_history_keys[] in that order), log.txt (lines after
 * the local date and time), valid_labels.json and valid_preds.jsonl (a line per
 * epoch), test_preds.json, submission.csv, checkpoint.ckpt (run/checkpoint.h),
 * classes.txt (the class names, one a line: what predict names its labels with),
 * and TensorBoard event files in train/ and validation/ (rf_tags[], written by
 * run/tboard.c as Keras's TensorBoard callback writes them).
 *
 * Files: runfolder_format.c (the tables), runfolder_write.c (rf_writer),
 * runfolder_read.c (history.json, config, a run as a whole, the runs list),
 * runfolder_events.c (the event files read back), runfolder_val.c (validation
 * results and log.txt read back).
 *
 * Reading. A run is a petal-tui run folder, or the event files another writer
 * made (Keras's TensorBoard callback: a folder with train/ and validation/, or one
 * such folder, or one event file). What is read:
 *   - the per-epoch curves: train and validation loss, accuracy and macro F1,
 *     from history.json when there is one, else from the event files' epoch_*
 *     scalars (Keras's step s is the end of epoch s + 1);
 *   - the per-update curves (batch_loss, batch_sparse_categorical_accuracy,
 *     batch_learning_rate of train/) when the event files hold them;
 *   - three x positions of every point: the update it was taken at, the epoch
 *     (an epoch's figure sits at its end: 1, 2, ...; an update at its fraction of
 *     the epochs), and the wall-clock seconds since the run began. history.json
 *     gives the updates and the seconds of each epoch; event files give wall
 *     times, and the updates through evaluation_*_vs_iterations (the update
 *     count at a validation), interpolated between validations at a constant
 *     number of updates per epoch. An x that cannot be known is NaN (the point
 *     is left out on that axis);
 *   - what the runs list shows: model, dataset, date, epochs, the best
 *     validation F1 (and accuracy), and the options of RUN/config.
 * The event files are read with io/tbevent (scalars as simple_value or as
 * float / double tensors); their damage is an error naming the file, the record
 * and its byte offset, as is a malformed history.json (its record is the epoch's
 * entry). Nothing is retried or guessed past an error: rf_load() fails.
 *
 * Ownership: an rf_writer is a plain value (its folder's path), nothing to free.
 * rf_load() gives a run the caller frees with rf_free(); every array in it
 * belongs to it. rf_scan() gives an array of runs freed with rf_free_list().
 * rf_val_load() fills a run_val_report (free it with run_val_report_free()) and
 * two arrays the caller frees with free(). rf_int_list() gives a malloc'd text.
 */
#ifndef PT_RUNFOLDER_H
#define PT_RUNFOLDER_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "run.h"

/* ---- names ---- */

#define RF_CONFIG "config"
#define RF_HISTORY "history.json"
#define RF_LOG "log.txt"
#define RF_VALID_LABELS "valid_labels.json"
#define RF_VALID_PREDS "valid_preds.jsonl"
#define RF_TEST_PREDS "test_preds.json"
#define RF_SUBMISSION "submission.csv"
#define RF_CHECKPOINT "checkpoint.ckpt"
#define RF_CLASSES "classes.txt"     /* the run's class names, one a line, in label order */
#define RF_TRAIN_DIR "train"
#define RF_VAL_DIR "validation"

/* ---- history.json: one object per epoch, these keys in this order ---- */

enum {
    RF_H_EPOCH, RF_H_UPDATES,
    RF_H_TRAIN_LOSS, RF_H_TRAIN_ACC, RF_H_TRAIN_PRECISION, RF_H_TRAIN_RECALL, RF_H_TRAIN_F1,
    RF_H_VAL_LOSS, RF_H_VAL_ACC, RF_H_VAL_PRECISION, RF_H_VAL_RECALL, RF_H_VAL_F1,
    RF_H_TIMING,
    RF_H_COUNT
};

typedef struct rf_key {
    const char *name;
    size_t offset;              /* of its field in run_epoch */
    int is_int;                 /* an int field, written as an integer; else a double */
    int series;                 /* the RUN_S_* curve it is read back into; -1 none */
} rf_key;

extern const rf_key rf_history_keys[RF_H_COUNT];

/* Key k's value in row h, as a double. */
double rf_history_get(const run_epoch *h, int k);

/* ---- the TensorBoard tags (train/ and validation/) ---- */

enum {
    RF_T_BATCH_LOSS, RF_T_BATCH_ACC, RF_T_BATCH_LR,
    RF_T_EPOCH_LOSS, RF_T_EPOCH_ACC, RF_T_EPOCH_PRECISION, RF_T_EPOCH_RECALL, RF_T_EPOCH_F1,
    RF_T_EPOCH_LR, RF_T_EPOCH_IMAGES_PER_SEC,
    RF_T_EVAL_LOSS_ITER, RF_T_EVAL_ACC_ITER,
    RF_T_AUGMENTATION_PREVIEW, RF_T_CONFUSION_MATRIX,
    RF_T_COUNT
};

/* The tag petal-tui writes for each RF_T_*. */
extern const char *const rf_tags[RF_T_COUNT];

/* The RF_T_* a tag read back means (what petal-tui writes, and Keras's other
 * names for the same figure: epoch_accuracy, batch_accuracy, ...); -1 none. */
int rf_tag_of(const char *tag);

/* ---- writing (the trainer's side) ---- */

/* A run folder being written. In a job of several ranks only rank 0 has one: on
 * the others dir stays empty and every writing function does nothing. */
typedef struct rf_writer {
    char dir[4096];
    int on;                     /* 1: this process writes the folder */
    int made;                   /* 1: rf_make created it (it did not exist) */
} rf_writer;

/* The folder of a run of cfg: --resume's (it must exist), --out's (it must not
 * hold a run), or runs/MODEL-DATE; made, and the temporary files a killed run
 * left there removed (*stale: how many). Nothing when !on. */
int rf_make(rf_writer *w, int on, const run_config *cfg, int *stale, pt_err *e);
/* Removes the folder with everything in it when rf_make created it (a run stopped
 * before its first update); 1 when it did. */
int rf_discard(rf_writer *w);
/* path of NAME in the folder (the folder's name when NAME is NULL); -1 too long. */
int rf_path(const rf_writer *w, const char *name, char *buf, size_t n);
/* A line of log.txt, after the local date and time it is written at. */
void rf_log_line(const rf_writer *w, const char *line);
/* NAME written atomically. */
int rf_write_text(const rf_writer *w, const char *name, const char *text, size_t len,
                  pt_err *e);
/* history.json of the n rows. */
int rf_write_history(const rf_writer *w, const run_epoch *rows, int n, pt_err *e);
/* valid_preds.jsonl: this epoch's line, after the lines of earlier epochs. */
int rf_append_valid_preds(const rf_writer *w, int epoch, const int32_t *preds, long long n,
                          pt_err *e);
/* JSON list of n ints (malloc'd, *len bytes), NULL when out of memory. */
char *rf_int_list(const int32_t *v, long long n, size_t *len);

/* ---- reading (the engine's side: eng_run_* in core/engine.h) ---- */

/* Read the run at path (a run folder, a folder of event files, or one event file). */
int rf_load(const char *path, run_figures **out, pt_err *e);
void rf_free(run_figures *r);

/* The value of option key, or NULL when the run's config does not name it. */
const char *rf_opt_get(const run_figures *r, const char *key);

/* The options whose values differ between the n runs (a key one run lacks counts
 * as differing), for run i as "key=value key=value ..." in its config's order,
 * leaving out the ones that always differ (out, resume) and data (a column of
 * its own). Writes at most len bytes; returns how many keys differ. */
int rf_diff_text(run_figures *const *runs, int n, int i, char *buf, size_t len);

/* Every folder in parent that rf_load() reads, sorted by name; the folders it
 * refuses are counted in *skipped (NULL: not counted) and left out. PT_OK with
 * *n == 0 when there is none; an error only when parent cannot be listed. */
int rf_scan(const char *parent, run_figures ***runs, int *n, int *skipped, pt_err *e);
void rf_free_list(run_figures **runs, int n);

/* The validation results of a petal-tui run folder's last epoch, from its
 * valid_labels.json and the last line of valid_preds.jsonl: the report (per-class
 * precision, recall, F1, support and the confusion matrix, epoch set) and the
 * labels and predictions of its n examples. PT_ENODATA when the folder has no
 * such files (a Keras run). */
int rf_val_load(const char *run_dir, int n_classes, run_val_report *rep, int **labels,
                int **preds, long long *n, pt_err *e);

/* RUN/log.txt's lines, without their leading date and time, through fn (oldest
 * first); the number of lines, or < 0 with e filled when there is no log. */
int rf_log_lines(const char *run_dir, void (*fn)(void *ctx, const char *line), void *ctx,
                 pt_err *e);

#endif
