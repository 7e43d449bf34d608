/* trainer — one training run from start to end, on the engine's run thread.
 *
 *   prepare   open the data (through the engine), scan labels, oversampling table,
 *             build the model, optimizer and replicas, calibrate the sgemm peak,
 *             restore a checkpoint when resuming, start the training pipeline
 *   epochs    updates of replicas x batch x accumulation examples (the job's);
 *             validation after every epoch; history.json, validation predictions
 *             and a checkpoint per epoch
 *   finish    test predictions (the kept epoch's weights: train/keep.h),
 *             submission.csv, summary.json (the kept epoch, why the run stopped)
 *
 * The trainer is the one writer of run progress: it publishes the snapshot, the
 * latest validation results and the class names into the run's progress (see
 * progress.h), and reads commands (pause, stop) at every update boundary through
 * trn_hooks. It never blocks the UI: the progress lock is held only to copy.
 * It decides what a non-finite loss means (skip the update, pause, keep the last
 * good checkpoint); the engine only waits for the user's answer.
 *
 * Phases, each owning its state behind its own struct and header (train/trn.h
 * holds them together): plan.h (prepare, as the named steps of its steps[] table:
 * trn_plan's sizes and counts, trn_parts' model, optimizer, pool and pipeline),
 * loop.h (the updates and epochs: trn_loop), validate.h (validation and test
 * predictions: trn_valid), persist.h (the log, run folder, checkpoint and event
 * files: trn_persist); publish.h says what is published into progress while
 * training, rank.h what a rank of a job does; trainer.c runs the phases in turn and
 * ends the run. The curves (curves.h) and the replicas' telemetry (telemetry.h) own
 * their fields.
 *
 * Run folder: its format (config, history.json, valid_labels.json,
 * valid_preds.jsonl, test_preds.json, submission.csv, checkpoint.ckpt, log.txt,
 * best.ckpt and summary.json (train/keep.h), and TensorBoard's train/ and
 * validation/ event files) is runfolder.h's. The
 * event files are written as the run trains, flushed with every epoch and
 * checkpoint; a resumed run adds a file to each.
 *
 * Ownership: trn_run() owns everything it creates and frees it before returning;
 * the environment's pointers are borrowed for the run's length.
 */
#ifndef PT_TRAINER_H
#define PT_TRAINER_H

#include "base/err.h"
#include "data/dataset.h"
#include "run.h"
#include "train/progress.h"
#include "data/feed.h"

enum { TRN_GO = 0, TRN_PAUSE = 1, TRN_STOP = 2 };

/* What the engine gives a run: its configuration (and that configuration as the
 * run folder's text), where progress goes, how images are fed (data/feed.h), and hooks back. */
typedef struct trn_env {
    const run_config *cfg;
    const char *cfg_text;       /* "key = value" lines, written to the run folder */
    prg *progress;
    const feed *feed;
    void *ctx;                  /* the hooks' first argument */
    void (*log)(void *ctx, const char *line);
    /* The pending command, without blocking. */
    int (*control)(void *ctx);
    /* Block while paused; TRN_GO to continue or TRN_STOP. pause = 1 pauses first
     * (the trainer's own decision, after a non-finite loss). */
    int (*wait)(void *ctx, int pause);
    /* The dataset and its folder, opened once by the engine. */
    int (*data)(void *ctx, const ds_dataset **d, pt_err *e);
} trn_env;

/* Runs the whole run and publishes its end in the progress; returns RUN_DONE,
 * RUN_STOPPED or RUN_FAILED (e says why). */
run_state trn_run(const trn_env *env, pt_err *e);

/* --precision on this CPU: 1 for bf16 (asked for, or auto where the CPU has a bf16
 * instruction), 0 for fp32. */
int trn_precision_bf16(run_precision p);
/* What it resolves to, in words for the log and the header's tooltip: "bf16 operands,
 * fp32 sums (avx512_bf16 on this CPU)", "fp32 (auto: this CPU has no AVX512_BF16 or
 * AMX-BF16)", ... into buf. */
void trn_precision_text(run_precision p, char *buf, size_t n);
/* Single-core GFLOP/s of the products, measured for about `seconds`: OpenBLAS's sgemm,
 * or with bf16 the bf16 kernels' (nn_bf16). */
double trn_sgemm_peak(double seconds, int bf16);

#endif
