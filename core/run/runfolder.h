/* runfolder — the run on disk (core/run/, prefix run_): the only code that knows a
 * run folder's file names and formats. Its file names (by run_file: RUN_F_*; the
 * names themselves are runfolder_impl.h's), the keys of history.json and the
 * TensorBoard tags of its event files (one table each, used by the writer and the
 * reader alike), the run handle (run_create: the folder of a new or resumed run;
 * run_open: one that exists) the trainer writes through, and the reader that gives a
 * finished (or running) run's figures back. ui/ and src/ reach it through the door,
 * core/runs.h.
 *
 * A run folder holds: config ("key = value" lines), history.json (an array of one
 * flat object per epoch, run_history_keys[] in that order), log.txt (lines after
 * the local date and time), valid_labels.json and valid_preds.jsonl (a line per
 * epoch), test_preds.json, submission.csv, checkpoint.ckpt (run/checkpoint.h),
 * classes.txt (the class names, one a line: what predict names its labels with),
 * model.onnx once exported, best.ckpt and summary.json (the best epoch's weights and
 * the kept epoch and stop reason: runfolder_outcome.c), and TensorBoard event files in train/ and validation/
 * (run_tags[], written by run/tboard.c as Keras's TensorBoard callback writes them).
 * An ensemble's folder holds report.json, valid_labels.json, valid_preds.jsonl and
 * submission.csv.
 *
 * Files: runfolder_format.c (the tables), runfolder_write.c (run_handle),
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
 * entry). Nothing is retried or guessed past an error: run_load() fails.
 *
 * Ownership: a run_handle is a plain value (its folder's path), nothing to free.
 * run_load() gives a run the caller frees with run_free(); every array in it
 * belongs to it. run_scan() gives an array of runs freed with run_free_list().
 * run_val_read() gives two arrays the caller frees with free(). run_int_list() gives
 * a malloc'd text.
 */
#ifndef PT_RUNFOLDER_H
#define PT_RUNFOLDER_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "run.h"

/* ---- names ---- */

/* The files (and the two folders of event files) of a run folder. Their names are
 * run_file_name()'s, known only here (core/run/); everyone else names them by these. */
typedef enum run_file {
    RUN_F_CONFIG,               /* "key = value" lines: the run's options */
    RUN_F_HISTORY,              /* history.json */
    RUN_F_LOG,                  /* log.txt */
    RUN_F_VALID_LABELS,         /* valid_labels.json */
    RUN_F_VALID_PREDS,          /* valid_preds.jsonl */
    RUN_F_TEST_PREDS,           /* test_preds.json */
    RUN_F_SUBMISSION,           /* submission.csv: id,label of the test split */
    RUN_F_CHECKPOINT,           /* checkpoint.ckpt (run/checkpoint.h) */
    RUN_F_CLASSES,              /* the run's class names, one a line, in label order */
    RUN_F_EXPORT,               /* the ONNX file export writes when no other is named */
    RUN_F_REPORT,               /* an ensemble's report.json */
    RUN_F_TRAIN_DIR,            /* the training event files */
    RUN_F_VAL_DIR,              /* the validation event files */
    RUN_F_SOURCE,               /* a copy of the ONNX file an imported model was built from */
    RUN_F_EXPORT_INT8,          /* the int8 ONNX file export --int8 writes when no other is
                                   named */
    RUN_F_BEST,                 /* best.ckpt: the best validated epoch's weights (--keep
                                   best), run/checkpoint.h's format without the optimizer */
    RUN_F_SUMMARY,              /* summary.json: the kept epoch and why the run stopped */
    RUN_F_ENSEMBLE,             /* ensemble.json: an ensemble folder's members (infer/ensemble.h) */
    RUN_F_COUNT
} run_file;

/* File f's name in a run folder ("history.json", ...). */
const char *run_file_name(run_file f);

/* ---- history.json: one object per epoch, these keys in this order ---- */

enum {
    RUN_H_EPOCH, RUN_H_UPDATES,
    RUN_H_TRAIN_LOSS, RUN_H_TRAIN_ACC, RUN_H_TRAIN_PRECISION, RUN_H_TRAIN_RECALL, RUN_H_TRAIN_F1,
    RUN_H_VAL_LOSS, RUN_H_VAL_ACC, RUN_H_VAL_PRECISION, RUN_H_VAL_RECALL, RUN_H_VAL_F1,
    RUN_H_TIMING,
    RUN_H_COUNT
};

typedef struct run_key {
    const char *name;
    size_t offset;              /* of its field in run_epoch */
    int is_int;                 /* an int field, written as an integer; else a double */
    int series;                 /* the RUN_S_* curve it is read back into; -1 none */
} run_key;

extern const run_key run_history_keys[RUN_H_COUNT];

/* Key k's value in row h, as a double. */
double run_history_get(const run_epoch *h, int k);

/* ---- the TensorBoard tags (train/ and validation/) ---- */

enum {
    RUN_T_BATCH_LOSS, RUN_T_BATCH_ACC, RUN_T_BATCH_LR,
    RUN_T_EPOCH_LOSS, RUN_T_EPOCH_ACC, RUN_T_EPOCH_PRECISION, RUN_T_EPOCH_RECALL, RUN_T_EPOCH_F1,
    RUN_T_EPOCH_LR, RUN_T_EPOCH_IMAGES_PER_SEC,
    RUN_T_EVAL_LOSS_ITER, RUN_T_EVAL_ACC_ITER,
    RUN_T_AUGMENTATION_PREVIEW, RUN_T_CONFUSION_MATRIX,
    RUN_T_COUNT
};

/* The tag petal-tui writes for each RUN_T_*. */
extern const char *const run_tags[RUN_T_COUNT];

/* The RUN_T_* a tag read back means (what petal-tui writes, and Keras's other
 * names for the same figure: epoch_accuracy, batch_accuracy, ...); -1 none. */
int run_tag_of(const char *tag);

/* ---- the run handle: a folder made for a run, or one read back ---- */

/* A run folder. run_create() gives the folder of a run being written; in a job of
 * several ranks only rank 0 writes it: on the others dir stays empty and every
 * writing function does nothing. run_open() gives a folder that exists, to read
 * (on = 0) or for a tool to write its outputs into (on = 1). A plain value: nothing
 * to free. */
typedef struct run_handle {
    char dir[4096];
    int on;                     /* 1: this process writes the folder */
    int made;                   /* 1: run_create created it (it did not exist) */
} run_handle;

/* The folder of a run of cfg: --resume's (it must exist), --out's (it must not
 * hold a run), or runs/MODEL-DATE; made, and the temporary files a killed run
 * left there removed (*stale: how many). Nothing when !on. */
int run_create(run_handle *w, int on, const run_config *cfg, int *stale, pt_err *e);
/* The folder at dir, which must exist (PT_EUSAGE naming it otherwise); on: 1 when
 * the caller writes into it. */
int run_open(run_handle *h, const char *dir, int on, pt_err *e);
/* 1 when the folder at dir holds a run already (its checkpoint): what --out must not
 * name. */
int run_holds_run(const char *dir);
/* Removes the folder with everything in it when run_create created it (a run stopped
 * before its first update); 1 when it did. */
int run_discard(run_handle *w);
/* The run's config read onto cfg (runfolder_paths.c), its paths made to work from any
 * working folder: the model is the run's own copy of its ONNX file (RUN_F_SOURCE) when
 * it has one; a relative data or model path (a run made before paths were stored
 * whole) that is not there from the working folder is tried from the run folder's
 * parent and grandparent (the working folder of a run made as runs/NAME or NAME). */
int run_config_read(const run_handle *h, run_config *cfg, pt_err *e);
/* Paths a new run stores whole: data and an ONNX model made absolute where they exist,
 * so that the run works from any folder. */
void run_config_absolute(run_config *cfg);
/* Copies the ONNX file a new run imports (cfg->model) into the folder as RUN_F_SOURCE,
 * so that predict, export and resume never need the original: the checkpoint holds the
 * trained weights, but the graph's structure is only in that file. Nothing for a
 * built-in net. */
int run_keep_source(const run_handle *w, const run_config *cfg, pt_err *e);
/* The path of file f in the folder; -1 too long. */
int run_path(const run_handle *w, run_file f, char *buf, size_t n);
/* 1 when the folder has file f (a folder for the two event-file folders). */
int run_has(const run_handle *h, run_file f);
/* File f's lines (util_read_lines: freed with util_free_list). */
int run_read_lines(const run_handle *h, run_file f, char ***lines, int *n, pt_err *e);
/* A line of log.txt, after the local date and time it is written at. */
void run_log_line(const run_handle *w, const char *line);
/* File f written atomically. */
int run_write_file(const run_handle *w, run_file f, const char *text, size_t len, pt_err *e);
/* history.json of the n rows. */
int run_write_history(const run_handle *w, const run_epoch *rows, int n, pt_err *e);
/* valid_preds.jsonl: this epoch's line, after the lines of earlier epochs. */
int run_append_valid_preds(const run_handle *w, int epoch, const int32_t *preds, long long n,
                           pt_err *e);
/* summary.json (run.h's run_outcome) written atomically. */
int run_write_outcome(const run_handle *w, const run_outcome *o, pt_err *e);
/* summary.json read back: PT_OK, PT_ENODATA when the folder has none (a run made
 * before it, or before its first epoch), PT_EFORMAT naming the file when it is not
 * one. */
int run_read_outcome(const char *run_dir, run_outcome *o, pt_err *e);
/* The weights file of the run's model: RUN_F_BEST when the run keeps its best epoch
 * (run_keeps_best) and has one, else RUN_F_CHECKPOINT. */
run_file run_kept_file(const run_handle *h, const run_config *cfg);

/* JSON list of n ints (malloc'd, *len bytes), NULL when out of memory. */
char *run_int_list(const int32_t *v, long long n, size_t *len);

/* ---- reading (the runs-on-disk door's side: core/runs.h) ---- */

/* Read the run at path (a run folder, a folder of event files, or one event file). */
int run_load(const char *path, run_figures **out, pt_err *e);
void run_free(run_figures *r);

/* The value of option key, or NULL when the run's config does not name it. */
const char *run_opt_get(const run_figures *r, const char *key);

/* The options whose values differ between the n runs (a key one run lacks counts
 * as differing), for run i as "key=value key=value ..." in its config's order,
 * leaving out the ones that always differ (out, resume) and data (a column of
 * its own). Writes at most len bytes; returns how many keys differ. */
int run_diff_text(run_figures *const *runs, int n, int i, char *buf, size_t len);

/* Every folder in parent that run_load() reads, sorted by name; the folders it
 * refuses are counted in *skipped (NULL: not counted) and left out. PT_OK with
 * *n == 0 when there is none; an error only when parent cannot be listed. */
int run_scan(const char *parent, run_figures ***runs, int *n, int *skipped, pt_err *e);
void run_free_list(run_figures **runs, int n);

/* The validation results of a petal-tui run folder's model, from its
 * valid_labels.json and the last line of valid_preds.jsonl (the kept epoch's line
 * when summary.json says the run keeps its best epoch): the labels and
 * predictions of its n examples, *k the class count (n_classes, or more when a label
 * or prediction is past it) and *epoch the line's epoch (1 when it names none).
 * PT_ENODATA when the folder has no such files (a Keras run) or no examples. The
 * figures of core/runs.h's runs_val_load are made from these. */
int run_val_read(const char *run_dir, int n_classes, int **labels, int **preds, long long *n,
                 int *k, int *epoch, pt_err *e);

/* RUN/log.txt's lines, without their leading date and time, through fn (oldest
 * first); the number of lines, or < 0 with e filled when there is no log. */
int run_log_lines(const char *run_dir, void (*fn)(void *ctx, const char *line), void *ctx,
                 pt_err *e);

#endif
