/* trainer — one training run from start to end, on the engine's run thread.
 *
 *   prepare   open the data (through the engine), scan labels, oversampling table,
 *             build the model, optimizer and replicas, calibrate the sgemm peak,
 *             restore a checkpoint when resuming, start the training pipeline
 *   epochs    updates of U = R x B x A examples; validation after every epoch;
 *             history.json, validation predictions and a checkpoint per epoch
 *   finish    test predictions, submission.csv, a last checkpoint
 *
 * The trainer publishes into the engine's shared state (snapshot, latest
 * validation results, class names) under the engine's lock, through trn_hooks, and
 * reads commands (pause, stop) at every update boundary. It never blocks the UI:
 * the lock is held only to copy small values.
 *
 * Run folder: config, history.json, valid_labels.json, valid_preds.json,
 * test_preds.json, submission.csv, checkpoint.ckpt, log.txt.
 *
 * Ownership: trn_run() owns everything it creates and frees it before returning.
 * trn_state's val arrays are malloc'd by the trainer and freed by trn_state_free().
 */
#ifndef PT_TRAINER_H
#define PT_TRAINER_H

#include "base/err.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "config.h"
#include "run.h"

typedef struct trn_val {
    int epoch;                  /* 0: none yet */
    long long n;
    int n_classes;
    int32_t *labels, *preds;
    float *conf;
    batch_src *src;
    long long *confusion;
} trn_val;

typedef struct trn_state {
    run_snapshot snap;
    trn_val val;
    char (*names)[RUN_NAME_MAX];
    int n_names;
} trn_state;

void trn_state_free(trn_state *s);

enum { TRN_GO = 0, TRN_PAUSE = 1, TRN_STOP = 2 };

typedef struct trn_hooks {
    void *ctx;
    trn_state *(*lock)(void *ctx);
    void (*unlock)(void *ctx);
    void (*log)(void *ctx, const char *line);
    /* The pending command, without blocking. */
    int (*control)(void *ctx);
    /* Block while paused; TRN_GO to continue or TRN_STOP. */
    int (*wait_resume)(void *ctx);
    /* The dataset and its folder, opened once by the engine. */
    int (*data)(void *ctx, const ds_dataset **d, pt_err *e);
} trn_hooks;

/* Runs the whole run; returns RUN_DONE, RUN_STOPPED or RUN_FAILED (e says why). */
run_state trn_run(const run_config *cfg, const trn_hooks *h, pt_err *e);

/* The replicas a run with cfg uses: cfg->replicas, or one per online core when it
 * is 0; 1 .. RUN_MAX_REPLICAS. */
int trn_replicas(const run_config *cfg);

/* The model's input side: cfg->image_size, or the dataset's image size (from its
 * folder name, else from the first training record). */
int trn_image_size(const run_config *cfg, const ds_dataset *ds, int *img, pt_err *e);

/* Single-core sgemm GFLOP/s, measured for about `seconds`. */
double trn_sgemm_peak(double seconds);

#endif
