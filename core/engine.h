/* engine — the one API that the workbench (ui/) and the headless runner (src/) use.
 *
 * An engine trains one model on one dataset with one configuration. eng_create()
 * checks the configuration and finds the data (cheap); eng_start() begins the run
 * on background threads: preparing (label scan, model build, sgemm calibration),
 * then epochs of updates with validation after each, then test predictions and the
 * run folder's outputs. Every call below is safe from any thread. Commands (start,
 * pause, resume, stop, preview requests) return at once; their effect is seen in
 * the next snapshot. Pause takes effect at the next update boundary and writes a
 * checkpoint; resume continues exactly where the run stopped.
 *
 * The engine never touches the terminal. The UI reads eng_snapshot() about ten
 * times a second: a consistent copy taken under a short lock.
 *
 * Ownership: eng_create() returns an engine that eng_destroy() stops, joins and
 * frees. Snapshots, previews, inspect items and validation reports are copies the
 * caller owns (the eng_*_free functions release the ones with heap parts).
 */
#ifndef PT_ENGINE_H
#define PT_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define ENG_MAX_REPLICAS 16
#define ENG_MAX_CLASSES 1024
#define ENG_MAX_EPOCHS 1000
#define ENG_CURVE_POINTS 2048   /* per-update curve, thinned by 2 when full */
#define ENG_SPARK_POINTS 120    /* per-replica throughput history (one per ~0.5 s) */
#define ENG_NAME_MAX 48

/* ---- configuration ------------------------------------------------------------ */

typedef enum eng_schedule { ENG_SCHED_EXP = 0, ENG_SCHED_LINEAR, ENG_SCHED_COSINE } eng_schedule;
typedef enum eng_optimizer { ENG_OPT_ADAM = 0, ENG_OPT_SGD } eng_optimizer;

typedef struct eng_config {
    char data[4096];            /* dataset folder; "" = the built-in demo data */
    char out[4096];             /* run folder; "" = runs/NAME-DATE */
    char resume[4096];          /* run folder to continue; "" = a new run */
    char model[32];             /* "small" or "mobilenetv2" */
    double width;               /* mobilenetv2 width multiplier */
    int image_size;             /* model input side; 0 = the dataset's size */
    int epochs;
    int replicas;               /* 0 = number of cores */
    int batch_per_replica;
    int grad_acc;
    long long oversample;       /* target count N; 0 = off, -1 = the largest class */
    eng_optimizer optimizer;
    double lr_start, lr_max, lr_end, warmup, lr_scaling;
    eng_schedule schedule;
    double momentum;            /* SGD */
    double weight_decay;        /* decoupled, on conv/dense weights */
    double dropout;
    int freeze_backbone;
    char augment[512];          /* augmentation chain spec; "none" = off */
    uint64_t seed;
    int deterministic;
    int shuffle_buffer;
    int workers;                /* pipeline decode threads; 0 = automatic */
    int prefetch;
    int stop_on_data_error;
    int checkpoint_every;       /* epochs between checkpoints (>= 1) */
} eng_config;

/* The defaults every front end starts from. */
void eng_config_defaults(eng_config *c);

/* Set one option by its long name without dashes (as on the command line and in
 * config files): "model", "epochs", "lr-max", ... PT_EUSAGE with a message naming
 * the key when the key or the value is bad. */
int eng_config_set(eng_config *c, const char *key, const char *value, pt_err *e);

/* Write the configuration as "key = value" lines (the run folder's config). */
int eng_config_format(const eng_config *c, char *buf, size_t n);

/* The keys eng_config_set() knows, for --help and the configure dialog. */
size_t eng_config_keys(const char **keys, size_t max);

/* ---- life cycle --------------------------------------------------------------- */

typedef struct eng eng;

int eng_create(const eng_config *cfg, eng **out, pt_err *e);
int eng_start(eng *g);
void eng_pause(eng *g);
void eng_resume(eng *g);
/* Stop the run: finishes the current update, writes a checkpoint, ends the threads. */
void eng_stop(eng *g);
/* Block until the run has ended (done, failed or stopped), or timeout seconds
 * (< 0: forever). 1 ended, 0 timed out. */
int eng_wait(eng *g, double timeout);
void eng_destroy(eng *g);

/* ---- what the UI reads -------------------------------------------------------- */

typedef enum eng_state {
    ENG_IDLE = 0,       /* created, not started */
    ENG_PREPARING,      /* scanning labels, building, calibrating */
    ENG_RUNNING,
    ENG_PAUSED,
    ENG_DONE,
    ENG_FAILED,
    ENG_STOPPED,
} eng_state;

const char *eng_state_name(eng_state s);

typedef struct eng_epoch {
    int epoch;                  /* 1-based */
    int updates;
    double seconds;
    double train_loss, train_acc, train_precision, train_recall, train_f1;
    double val_loss, val_acc, val_precision, val_recall, val_f1;
} eng_epoch;

typedef struct eng_replica {
    double images_per_sec;      /* over the last few seconds */
    double busy_pct;            /* computing */
    double idle_pct;            /* waiting for input batches */
    double mxu_pct;             /* FLOPs executed / (busy time x sgemm peak) */
    float spark[ENG_SPARK_POINTS]; /* images/s history, oldest first */
    int spark_n;
} eng_replica;

typedef struct eng_snapshot {
    eng_state state;
    char message[512];          /* what is happening, or why it failed */
    /* the run */
    char dataset[256];
    char run_dir[512];
    char model[64];
    int replicas, batch_per_replica, grad_acc, update_size, image_size;
    int n_classes;
    int epoch, epochs;          /* current (1-based) and total */
    long long step;             /* updates done in the current epoch */
    long long steps_per_epoch;
    long long update;           /* updates done in the whole run */
    long long total_steps;      /* updates in the whole run */
    double elapsed, eta;        /* seconds */
    double lr;
    double last_loss, last_acc;
    double running_loss, running_acc; /* this epoch so far */
    /* per-update curves (thinned to fit) */
    int curve_n, curve_stride;
    float curve_loss[ENG_CURVE_POINTS];
    float curve_acc[ENG_CURVE_POINTS];
    float curve_lr[ENG_CURVE_POINTS];
    /* per-epoch history */
    int history_n;
    eng_epoch history[ENG_MAX_EPOCHS];
    /* hardware monitor */
    int n_replicas;
    eng_replica replica[ENG_MAX_REPLICAS];
    double total_images_per_sec;
    double sgemm_peak_gflops;   /* single-core, measured at start */
    char blas_core[32];
    int queue_depth, queue_capacity;
    /* labels: original and oversampled train counts, val counts */
    int label_classes;
    long long train_counts[ENG_MAX_CLASSES];
    long long train_oversampled[ENG_MAX_CLASSES];
    long long val_counts[ENG_MAX_CLASSES];
    int oversampling;
    /* housekeeping */
    long long nonfinite_at;     /* update whose loss was not finite (run paused); 0 none */
    long long data_errors;
    long long checkpoints;
    char last_checkpoint[512];
} eng_snapshot;

/* Copy the current state (about 150 KB; the caller owns it). */
void eng_snapshot_get(eng *g, eng_snapshot *out);

/* Class names are fixed once preparing is done (before that: NULL). */
const char *eng_class_name(eng *g, int k);

/* Log lines (epoch summaries, data errors, checkpoints), oldest first. 1 when a
 * line was copied into buf, 0 when there is none. */
int eng_log_pop(eng *g, char *buf, size_t n);

/* ---- previews and inspection -------------------------------------------------- */

typedef struct eng_preview {
    int n, h, w;                /* n image pairs of h x w RGB */
    uint8_t *original;          /* n * h * w * 3 */
    uint8_t *augmented;         /* n * h * w * 3 */
    int *label;                 /* dominant label of each augmented image */
    uint64_t generation;        /* increases with every new preview */
} eng_preview;

/* Ask for a fresh batch of n augmented training images (made on a background
 * thread; works before start too). */
void eng_preview_request(eng *g, int n);
/* The newest preview if its generation is above *seen: copies it into out (caller
 * frees with eng_preview_free), updates *seen, returns 1. Otherwise 0. */
int eng_preview_get(eng *g, uint64_t *seen, eng_preview *out);
void eng_preview_free(eng_preview *p);

/* Validation results of the latest epoch. */
typedef struct eng_val_report {
    int n_classes;
    long long n;                /* validation examples */
    int epoch;                  /* 0: none yet */
    double *precision, *recall, *f1;   /* per class */
    long long *support;
    long long *confusion;       /* n_classes x n_classes, [true][pred] */
} eng_val_report;

int eng_val_report_get(eng *g, eng_val_report *out);
void eng_val_report_free(eng_val_report *r);

/* One validation example: its image (decoded at h x w), true and predicted class. */
typedef struct eng_val_item {
    int h, w;
    uint8_t *rgb;
    int label, pred;
    float confidence;           /* softmax probability of pred */
} eng_val_item;

/* Labels, predictions and confidences of validation examples [first, first + n)
 * of the latest epoch (no I/O: for filtering and listing). Any of the arrays may be
 * NULL. Returns how many were copied (0 when no validation has run yet). */
long long eng_val_preds(eng *g, long long first, int n, int *label, int *pred, float *conf);

/* index in [0, n). Returns PT_OK, or an error when no validation has run yet. */
int eng_val_item_get(eng *g, long long index, eng_val_item *out, pt_err *e);
void eng_val_item_free(eng_val_item *it);

#endif
