/* runs — the runs on disk: the door ui/ and src/ include for what a run folder holds
 * and for event files (engine.h is the live run, datasets.h the datasets on disk). Behind it, core/run/ owns the
 * folder's file names and formats; nothing above it builds a path inside a run folder.
 *
 * Read back: a run (a petal-tui run folder, a folder of Keras event files, or one
 * event file) with its curves and options for --open, --compare and the runs list;
 * the runs in a parent folder; a run folder's validation results, log lines and class
 * names. Written: a run's model exported as ONNX; the outputs of a command that
 * writes a folder as a run folder has them (ensemble). What is read, and its errors,
 * are core/run/runfolder.h's.
 *
 * Ownership: runs_open() gives a run freed with runs_close(); runs_scan() a list freed
 * with runs_free(). runs_val_load() fills a report (run_val_report_free) and two
 * arrays the caller frees with free(); runs_class_names() a list freed with
 * util_free_list(). Paths are the caller's, borrowed for the call.
 */
#ifndef PT_RUNS_H
#define PT_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "run.h"

/* ---- a run read back ---- */

/* Read the run at path (a run folder, a folder of event files, or one event file). */
int runs_open(const char *path, run_figures **out, pt_err *e);
void runs_close(run_figures *r);
/* The value of option key of the run's config, or NULL when it does not name it. */
const char *runs_opt(const run_figures *r, const char *key);
/* The options whose values differ between the n runs, for run i as "key=value ..."
 * (at most len bytes); how many keys differ. */
int runs_diff_text(run_figures *const *runs, int n, int i, char *buf, size_t len);
/* Every run folder in parent, sorted by name; those refused are counted in *skipped
 * (may be NULL). PT_OK with *n == 0 when there is none. */
int runs_scan(const char *parent, run_figures ***runs, int *n, int *skipped, pt_err *e);
void runs_free(run_figures **runs, int n);

/* ---- a petal-tui run folder's parts ---- */

/* The validation results of a run folder's model: its last epoch's, or its kept
 * epoch's when it keeps its best (--keep best) (PT_ENODATA when it has none:
 * a Keras run): the report (per-class precision, recall, F1, support, the confusion
 * matrix, its epoch) and the n labels and predictions. */
int runs_val_load(const char *run_dir, int n_classes, run_val_report *rep, int **labels,
                  int **preds, long long *n, pt_err *e);
/* The run's log lines without their date and time, oldest first, through fn; how
 * many, or < 0 with e filled when there is no log. */
int runs_log_lines(const char *run_dir, void (*fn)(void *ctx, const char *line), void *ctx,
                   pt_err *e);
/* The class names the run trained with, in label order; PT_ENODATA when the folder
 * keeps none (a run made before it kept them, a Keras run). */
int runs_class_names(const char *run_dir, char ***names, int *n, pt_err *e);
/* The path of the run's configuration file (whether or not it is there yet); 1 when
 * it is there, 0 when not, -1 when the path is too long. */
int runs_config_path(const char *run_dir, char *buf, size_t n);

/* ---- event files (TensorBoard's: a run's, or what TensorFlow and Keras write) ----
 * Read through io/tbevent.h (bodies in core/runs_events.c): the scalars and images
 * in file order. A reader from runs_events_open() is freed with runs_events_close();
 * an item's tag and image bytes are the reader's, valid until the next call. */

/* What an event file's name starts with. */
#define RUNS_EVENT_FILE_PREFIX "events.out.tfevents."

typedef struct runs_events runs_events;

typedef struct runs_event {
    int is_image;               /* 0: a scalar (value); 1: an image */
    const char *tag;
    long long step;
    double value;
    int width, height;
    const uint8_t *image;       /* the encoded bytes (PNG, JPEG, ...) */
    size_t image_len;
} runs_event;

/* The event files at path: path itself when it is a file, else every file named
 * RUNS_EVENT_FILE_PREFIX* in it and its subfolders, a folder's files first, each
 * sorted by name. PT_ENODATA when none. The list is freed with util_free_list(). */
int runs_events_find(const char *path, char ***files, int *n, pt_err *e);
/* PT_EPARSE when the file does not start as a TensorBoard event file. */
int runs_events_open(const char *file, runs_events **out, pt_err *e);
void runs_events_close(runs_events *r);
/* The next scalar or image: 1; 0 at the end; < 0 an error (e says which and where;
 * the next call goes on after it when the framing holds). */
int runs_events_next(runs_events *r, runs_event *it, pt_err *e);
/* The first record's file_version and writer ("" when it named none). */
const char *runs_events_version(const runs_events *r);
const char *runs_events_writer(const runs_events *r);
/* Records read, and summaries skipped as neither scalar nor image. */
long long runs_events_records(const runs_events *r);
long long runs_events_skipped(const runs_events *r);
/* The file extension an image's bytes call for: "png", "jpg" or "img". */
const char *runs_event_image_ext(const runs_event *it);

/* ---- written ---- */

/* The run's config read onto cfg with its paths made to work from here: its own copy
 * of an imported model's ONNX file, relative paths of older runs found
 * (run/runfolder.h's run_config_read). */
int runs_read_config(const char *run_dir, run_config *cfg, pt_err *e);
/* A new run's data and ONNX model paths made absolute where they exist. */
void runs_config_absolute(run_config *cfg);

/* What runs_export wrote. */
typedef struct runs_export_info {
    char path[4200];        /* the file written */
    long long bytes;
    int classes, image_size, epoch, update;
    int ema;                /* 1: the moving average of the weights was written */
    char weights[200];      /* which of the run's epochs epoch is (--keep), in words: "the
                               best val_f1, 0.8123, of 7 epochs", "the last" */
    double seconds;         /* opening the run (calibrating) and writing the file */
    long long calibrated;   /* runs_export_int8: the training images calibrated on */
} runs_export_info;

/* Writes run_dir's trained net (the weights validation used, the class names and
 * image size in its metadata) as an ONNX file at out, or in the run folder as its
 * model.onnx when out is NULL or "" (core/infer/runmodel.h's rm_export). info (may be
 * NULL) says what was written. Runs on the caller's thread: about a second for the
 * largest built-in net. */
int runs_export(const char *run_dir, const char *out, runs_export_info *info, pt_err *e);
/* The same quantized to int8 (ONNX's QDQ form, for ONNX Runtime's int8 kernels), in the
 * run folder as its model-int8.onnx when out is NULL or "", calibrated on calib (>= 1)
 * of its training images, or all when fewer (core/infer/runmodel.h's rm_export_int8).
 * RUNS_CALIB_DEFAULT is export --int8's default. */
#define RUNS_CALIB_DEFAULT 256
int runs_export_int8(const char *run_dir, const char *out, int calib, runs_export_info *info,
                     pt_err *e);
/* The same into the run folder, saying what was written in msg ("RUN/model.onnx: 5
 * classes, 224 px, epoch 10, ..."). */
int runs_export_msg(const char *run_dir, char *msg, size_t n, pt_err *e);
/* 1 when run_dir's model.onnx holds another update than its checkpoint (the run moved
 * on since the export), with msg saying both and the command that refreshes it. */
int runs_export_stale(const char *run_dir, char *msg, size_t n);

/* The validation outputs of a command that predicts as a run would (ensemble), into
 * the folder dir (made already): its report.json (report_len bytes of JSON), and
 * the labels and predictions of n examples as a run folder's validation results
 * (epoch 1), which runs_val_load and the workbench's --open read back. */
int runs_write_val_outputs(const char *dir, const char *report, size_t report_len,
                           const int32_t *labels, const int32_t *preds, long long n,
                           pt_err *e);
/* The path of the submission file (id,label of a test split) in dir; -1 too long. */
int runs_submission_path(const char *dir, char *buf, size_t n);
/* Whether the folder dir may take an ensemble's outputs (its --out), asked before
 * anything is predicted or written. PT_OK when it does not exist, holds none of the
 * outputs, or holds a previous ensemble's (its report.json): *replaces is then 1, and
 * they are replaced. PT_EUSAGE naming dir and what to do when it holds a training run
 * (whose validation results and submission would be replaced), holds some of the
 * outputs' files without being an ensemble's folder, or is a file. */
int runs_ensemble_out(const char *dir, int *replaces, pt_err *e);
/* Removes a previous ensemble's outputs from dir (those it has), so that none is left
 * beside the new ones that this ensemble does not write. */
int runs_ensemble_clear(const char *dir, pt_err *e);

#endif
