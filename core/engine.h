/* engine — the live run: one of the doors the workbench (ui/) and the headless
 * runner (src/) use (runs.h is the runs on disk, datasets.h the datasets on disk,
 * infer/infer.h a trained model's answers); also what starting a run needs.
 *
 * An engine trains one model on one dataset with one configuration. eng_create()
 * checks the configuration and finds the data (cheap); eng_start() begins the run
 * on background threads: preparing (label scan, model build, sgemm calibration),
 * then epochs of updates with validation after each, then test predictions and the
 * run folder's outputs. Every call below is safe from any thread. Commands (start,
 * pause, resume, stop, preview requests) return at once; their effect is seen in
 * the next snapshot. Pause takes effect at the next update boundary and writes a
 * checkpoint; resume continues exactly where the run stopped. The command is the
 * latest one given, not a queue: pause, resume and stop say what the user wants
 * now.
 *
 * The engine never touches the terminal. The UI reads eng_snapshot_get() about
 * ten times a second: a consistent copy taken under a short lock.
 *
 * Ownership: eng_create() returns an engine that eng_destroy() stops, joins and
 * frees. Snapshots, previews, inspect items and validation reports are copies the
 * caller owns (the run_*_free functions of run.h release the ones with heap parts).
 */
#ifndef PT_ENGINE_H
#define PT_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "config.h"
#include "run.h"

/* ---- life cycle --------------------------------------------------------------- */

typedef struct eng eng;

/* Checks the options and that the dataset folder holds a dataset (it is opened
 * here; the demo data is made later, on the run's thread). */
int eng_create(const run_config *cfg, eng **out, pt_err *e);
/* Whether the run folder that a run with cfg makes or reuses when it starts can
 * be: it can be created and written, and a new run's --out does not hold a run
 * already. For callers that want the answer before anything else happens (the
 * workbench before its screen opens); the run makes the folder all the same. */
int eng_check_run_folder(const run_config *cfg, pt_err *e);
/* What eng_create() found questionable but accepted, one line per warning (no
 * "petal-tui: ", no final newline); "" when nothing. Valid until eng_destroy(). */
const char *eng_warnings(const eng *g);
int eng_start(eng *g);
void eng_pause(eng *g);
void eng_resume(eng *g);
/* Stop the run: finishes the current update, writes a checkpoint, ends the threads. */
void eng_stop(eng *g);
/* Why the run failed: its error code with e filled (the one-line "FILE: what" of
 * err.h, without the snapshot's "failed: "), or PT_OK while it has not failed. */
int eng_failure(eng *g, pt_err *e);
/* Block until the run has ended (done, failed or stopped), or timeout seconds
 * (< 0: forever). 1 ended, 0 timed out. */
int eng_wait(eng *g, double timeout);
void eng_destroy(eng *g);

/* ---- what the UI reads -------------------------------------------------------- */

/* Copy the current state (about 150 KB; the caller owns it). */
void eng_snapshot_get(eng *g, run_snapshot *out);

/* Class names are fixed once preparing is done (before that: NULL). */
const char *eng_class_name(eng *g, int k);

/* Log lines (epoch summaries, data errors, checkpoints), oldest first. 1 when a
 * line was copied into buf, 0 when there is none. */
int eng_log_pop(eng *g, char *buf, size_t n);

/* ---- previews and inspection -------------------------------------------------- */

/* Ask for a fresh batch of n augmented training images (made on a background
 * thread; works before start too). */
void eng_preview_request(eng *g, int n);
/* The newest preview if its generation is above *seen: copies it into out (caller
 * frees with run_preview_free), updates *seen, returns 1. Otherwise 0. */
int eng_preview_get(eng *g, uint64_t *seen, run_preview *out);
/* 1 with e filled when the latest preview that was asked for could not be made
 * (the data cannot be opened, no image decodes); 0 when it was made, or none has
 * finished yet. */
int eng_preview_error(eng *g, pt_err *e);

/* A preview as one PNG sheet at path (picture/grid.h's grid: originals on the left,
 * the same images augmented on the right, g's class names under each tile; cols 0:
 * the grid's choice). Its size in *w x *h. An error with e filled when the file
 * cannot be written; when the sheet could not be made (out of memory, a sheet over
 * the grid's size) grid_compose's code with e's message empty, as preview has
 * never said more. Body in core/engine_sheet.c. */
int eng_preview_sheet(eng *g, const run_preview *p, int cols, const char *path, int *w, int *h,
                      pt_err *e);

/* Validation results of the latest epoch (epoch 0 in out: none yet). */
int eng_val_report_get(eng *g, run_val_report *out);

/* Labels, predictions, confidences and losses (cross-entropy) of validation
 * examples [first, first + n) of the latest epoch (no I/O: for filtering and listing). Any of the arrays may be
 * NULL. Returns how many were copied (0 when no validation has run yet). */
long long eng_val_preds(eng *g, long long first, int n, int *label, int *pred, float *conf,
                        float *loss);

/* The image of validation example index (in [0, n)) with its labels. Images load
 * on the engine's sample thread, like previews, so this never blocks on a file:
 * 1 when out was filled (free it with run_val_item_free), 0 while the image is
 * still loading (the call asked for it: call again later), or an error (< 0)
 * when there is no validation yet, index is outside it, or the record could not
 * be read. */
int eng_val_item_get(eng *g, long long index, run_val_item *out, pt_err *e);

/* Grad-CAM of validation example index of the latest epoch: its image as
 * eng_val_item_get() gives it, through the run folder's model (the weights of the
 * last checkpoint, as validation used them), for its predicted and its true class.
 * Made on the sample thread, like the images: 1 when out was filled (free it with
 * run_explain_free), 0 while it is being made (the call asked for it: call again
 * later), or an error (< 0, e says why: no validation, no checkpoint yet, a model
 * that cannot be read). Only the latest index asked for is made. */
int eng_explain_get(eng *g, long long index, run_explain *out, pt_err *e);
/* ---- the learning-rate finder (core/train/lrfind.h) -------------------------------
 * fastai's lr_find before a run: 100 updates of the run's own model, optimizer,
 * replicas and pipeline, the rate growing from 1e-7 to 10, on a thread of its own;
 * its model and state are its own and freed at its end, so the run that eng_start
 * begins afterwards is the same, bit for bit, as one begun without it. */

/* Starts the finder (a finder under way goes on; a finished one's result is replaced).
 * PT_EUSAGE with e filled once a run has started, for --resume, and in an mpirun job. */
int eng_lrfind_start(eng *g, pt_err *e);
/* Cancels it (seen at the next update; eng_lrfind_get then says RUN_LRF_STOPPED).
 * eng_start and eng_destroy cancel a finder under way and wait for it. */
void eng_lrfind_stop(eng *g);
/* A copy of its progress and result (state RUN_LRF_NONE before any start). */
void eng_lrfind_get(eng *g, run_lrfind *out);
/* The curve (smoothed loss against the rate, log x, the suggestions marked) as a PNG
 * at path. An error with e filled when it cannot be written or f has fewer than 2
 * points. Body in core/engine_lrfind.c. */
int eng_lrfind_plot(const run_lrfind *f, const char *path, pt_err *e);

/* ---- curves: live and finished runs as one series type ---------------------------
 * The workbench draws a live run's curves and the compared runs' the same way: as
 * run_series (run.h), each point at three x positions. Bodies in core/series.c. */

/* The live run's curves of snapshot s into set (RUN_SERIES_COUNT series: the
 * per-update ones from its curves, the epochs' from its history; the x positions
 * from the epochs' ends and the pace of the epoch under way). The set starts
 * zeroed; its arrays are made on the first call, reused by later ones, and freed by
 * eng_series_free(). PT_OK, or PT_ENOMEM. */
int eng_snapshot_series(const run_snapshot *s, run_series set[RUN_SERIES_COUNT]);
void eng_series_free(run_series set[RUN_SERIES_COUNT]);
/* The snapshot that shows a finished run read back (runs.h: runs_open()) in the
 * workbench (--open): its state, epochs, per-update curves, totals and names. Fields
 * it does not name keep their values. */
void eng_run_snapshot(const run_figures *r, run_snapshot *s);

/* ---- what starting a run needs (bodies in core/engine_job.c) ----------------------
 * main() and the headless runner start a run as one rank of an Open MPI job (or as a
 * process alone: then every eng_job_ call acts as for a job of one rank), report the
 * OpenBLAS kernels in use, and print the learning rate schedule a config gives. */

/* 1 when mpirun (or another MPI launcher) started this process; from the
 * environment alone, no MPI call. */
int eng_job_launched(void);
/* Joins the job when launched; a no-op otherwise. PT_EIO when MPI cannot start. */
int eng_job_init(pt_err *e);
/* Leaves the job normally (every rank calls it). */
void eng_job_finalize(void);
/* Ends the whole job now with this exit status; returns only when not in a job. */
void eng_job_abort(int status);
/* In a job; this process's rank (0 when not); "rank 1 of 2 on HOST" ("" when not). */
int eng_job_on(void);
int eng_job_rank(void);
const char *eng_job_who(void);

/* The name of the OpenBLAS kernels the library runs ("Haswell", "Prescott", ...). */
const char *eng_blas_corename(void);

/* --precision on this CPU (trainer.h's trn_precision_bf16): 1 bf16, 0 fp32; and in
 * words ("bf16 operands, fp32 sums (avx512_bf16 on this CPU)", ...). */
int eng_precision_bf16(run_precision p);
void eng_precision_text(run_precision p, char *buf, size_t n);

/* The learning rate per update (core/train/schedule.h's, as a run uses it): a plain
 * value, nothing to free. kind is one of eng_lr_kind_parse()'s answers. */
typedef struct eng_lr_schedule {
    int kind;
    double lr_start, lr_max, lr_end;
    double warmup;          /* fraction of all updates */
    double lr_scaling;
    long long total;        /* updates in the whole run */
    long long warmup_steps;
} eng_lr_schedule;

/* "exp", "exponential", "linear", "cosine" -> kind; -1 when unknown. */
int eng_lr_kind_parse(const char *name);
const char *eng_lr_kind_name(int kind);
void eng_lr_init(eng_lr_schedule *s, int kind, double lr_start, double lr_max, double lr_end,
                 double warmup, double lr_scaling, long long total_updates);
double eng_lr_at(const eng_lr_schedule *s, long long update);

#endif
