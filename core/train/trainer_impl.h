/* trainer_impl — internals shared by the trainer's files (trainer.c, evaluate.c,
 * trainer_folder.c, trainer_publish.c, trainer_dist.c); not for other modules.
 * The parts with owners of their own (the run folder's writer, curves, telemetry,
 * TensorBoard) are held here as values: the trainer's files read them and change
 * them only through their functions (a job's replica map and the other ranks'
 * figures go into the telemetry through tlm_set_home and tlm_set_figures).
 *
 * A rank of a job (train/dist.h, trainer_dist.c): every rank runs the whole loop
 * in step with the others and holds the same weights, optimizer, progress and
 * training figures; rank 0 alone writes the run folder (every file-writing
 * function below does nothing on another rank) and decides pauses and stops.
 *
 * Ownership: one trn per trn_run(), which allocates every array below and frees
 * them all at its end. The environment (env, cfg, ds) is borrowed.
 */
#ifndef PT_TRAINER_IMPL_H
#define PT_TRAINER_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "data/pipeline.h"
#include "data/sampler.h"
#include "nn/nn.h"
#include "train/curves.h"
#include "train/ema.h"
#include "nn/optim.h"
#include "run/runfolder.h"
#include "train/schedule.h"
#include "pool/rpool.h"
#include "run/tboard.h"
#include "train/telemetry.h"
#include "train/trainer.h"

typedef struct trn {
    const run_config *cfg;
    const trn_env *env;
    const ds_dataset *ds;
    int n_classes, img;
    int R, B, A, P, U;
    int rank, ranks;            /* this process in its job (train/dist.h): 0 and 1 alone */
    int G, g0;                  /* the job's replicas, and this rank's first one's index */
    int Rmax;                   /* the most replicas of any rank */
    long long updates_per_epoch, total_updates;
    long long epoch_examples;   /* training examples of an epoch (oversampled) */
    smp_table smp;
    int oversampling;
    long long train_counts[RUN_MAX_CLASSES], train_os[RUN_MAX_CLASSES], val_counts[RUN_MAX_CLASSES];
    nn_model *model;
    opt optim;
    int optim_ready;
    ema avg;                    /* what validation and predictions use (--ema) */
    uint8_t *decay;
    uint8_t *slow;              /* --freeze-epochs: 1 for the backbone's parameters */
    rpool *st;
    pipeline *train;
    sched sch;
    double peak;
    run_handle folder;           /* the run folder (rank 0's; empty on the others) */

    /* progress */
    long long update;           /* updates done */
    int epoch;                  /* epochs completed */
    long long in_epoch;         /* updates done in the current epoch */
    double epoch_time_before;   /* of the current epoch, before a resume */
    double elapsed_before;      /* of the run, before a resume */
    double t_epoch, t_run;      /* when this process began the epoch / the run */
    double loss_sum;
    long long examples, correct;
    long long *train_cm;
    int32_t *preds;
    /* bad records: counted by the pipelines' worker threads as they meet them */
    atomic_llong data_errors;
    /* Each bad record is logged once a run: the pipeline repeats its shards every
     * pass, and meets the same ones again (hashes of the messages logged, under
     * err_lock; past 256 different ones, the rest are logged each time). */
    pthread_mutex_t err_lock;
    uint64_t err_seen[256];
    int n_err_seen;
    long long readable[DS_NSPLITS]; /* records the label scan could read, per split */
    const char *stopped_in;     /* the preparing step a stop landed in (NULL: none) */

    crv curves;                 /* the history and the per-update curves (curves.h) */

    tlm tel;                    /* the replicas' hardware figures (telemetry.h) */
    double val_seconds;         /* the last validation's, for the ETA */
    char last_ckpt[512];
    long long checkpoints;

    tb_run tb;                  /* the TensorBoard event files (tboard.h) */
} trn;

/* ---- trainer.c ---- */

/* The pipelines' on_error: count the bad record and log it (any thread). */
void trn_data_error(void *ctx, const pt_err *err);

/* ---- trainer_dist.c: a run as one rank of a job (each call a no-op alone) ---- */

/* Every rank's configuration checked against rank 0's, and the replicas counted:
 * G, g0. */
int trn_dist_join(trn *r, pt_err *e);
/* Rank 0's weights, optimizer, moving average, progress and training figures to
 * every rank (after a resume: the others never read the checkpoint). */
int trn_dist_share_state(trn *r, pt_err *e);
/* Whether the gradient travels during the backward pass (--overlap): as set, or for
 * auto, when the ranks span more than one host. Across hosts the overlap hides the
 * network's time; on one host the exchange is quick and the sliced optimizer of
 * --no-overlap costs less than the overlap's copies and polling (bench/RESULTS.md,
 * "Data parallel"). The same answer on every rank: the config and the host list are
 * the job's. */
int trn_dist_overlap(const trn *r);
/* The command every rank obeys: the strongest of every rank's (stop over pause over
 * go), so a signal to any rank stops them all. */
int trn_dist_control(trn *r, int c, pt_err *e);
/* After a pause's wait on rank 0: its decision to every rank. */
int trn_dist_decision(trn *r, int c, pt_err *e);
/* This update's (label, prediction) pairs of every rank into train_cm. */
int trn_dist_train_cm(trn *r, batch *const *batches, pt_err *e);
/* Every few updates (about twice a second, as rank 0 paces it): every rank's
 * replica figures and host to rank 0, for its monitor. */
int trn_dist_telemetry(trn *r, pt_err *e);
/* The weights (and BN statistics) checked identical on every rank: a checksum each,
 * compared; a mismatch is an error naming the ranks. */
int trn_dist_check_weights(trn *r, pt_err *e);
/* A prediction batch as rank 0 sees it: every rank's slice, in rank order (n is 0
 * on the other ranks). Buffers made on first use, kept for the pass. */
typedef struct trn_gathered {
    int n;
    int32_t *label;
    batch_src *src;
    char (*id)[BATCH_ID_MAX];
    float *logits;
    uint8_t *pack, *all;        /* the examples as sent, and as received on rank 0 */
} trn_gathered;
int trn_dist_gather(trn *r, const batch *b, const float *logits, trn_gathered *g, pt_err *e);
void trn_gathered_free(trn_gathered *g);

/* ---- trainer_publish.c: what the run shows while it trains (train/progress.h) ---- */

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

/* ---- trainer_folder.c: the trainer's side of the run folder (run/runfolder.h) ---- */

/* A line for the log panel and the run folder's log.txt (there after the local
 * date and time). */
void trn_log(trn *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* How the run ended, as the last line of log.txt alone (the snapshot's message
 * says it on screen and on the headless runner's output). */
void trn_log_end(trn *r, const char *line);
/* The run folder made (rank 0), the temporary files a killed run left logged. */
int trn_make_run_dir(trn *r, pt_err *e);
int trn_save_checkpoint(trn *r, const char *why, pt_err *e);
/* Resuming: weights, optimizer, progress and history from the run's checkpoint. */
int trn_restore_checkpoint(trn *r, pt_err *e);

/* ---- evaluate.c ---- */

/* Validation pass after an epoch: fills row's val figures, writes the epoch's
 * predictions and publishes the results. PT_ESTOPPED when asked to stop. */
int trn_validate(trn *r, run_epoch *row, pt_err *e);
/* Test predictions: submission.csv and test_preds.json. */
int trn_predict_test(trn *r, pt_err *e);

#endif
