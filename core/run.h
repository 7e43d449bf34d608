/* run — the plain data of a training run, shared by the engine (core/engine.h) and
 * the trainer (core/train/) without either depending on the other: limits, the
 * configuration, the run's state, per-epoch and per-replica figures, the snapshot
 * the UI reads, previews and validation results.
 *
 * Nothing here has behaviour beyond naming states and freeing the heap parts of
 * previews and validation copies: the options' names, defaults and parsing are in
 * config.h; the engine's life cycle in engine.h; the run itself in train/trainer.h.
 *
 * Ownership: every struct here is plain data. run_preview, run_val_report and
 * run_val_item hold heap arrays that their owner releases with run_*_free().
 */
#ifndef PT_RUN_H
#define PT_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define RUN_MAX_REPLICAS 16
#define RUN_MIN_IMAGE_SIZE 32   /* --image-size and shards --size: the smallest side they take */
#define RUN_MAX_CLASSES 1024
#define RUN_MAX_EPOCHS 1000
#define RUN_CURVE_POINTS 2048   /* per-update curve, thinned by 2 when full */
#define RUN_SPARK_POINTS 120    /* per-replica throughput history (one per ~0.5 s) */
#define RUN_NAME_MAX 48

/* ---- configuration ------------------------------------------------------------ */

typedef enum run_schedule { RUN_SCHED_EXP = 0, RUN_SCHED_LINEAR, RUN_SCHED_COSINE } run_schedule;
typedef enum run_optimizer { RUN_OPT_ADAM = 0, RUN_OPT_SGD } run_optimizer;
typedef enum run_init { RUN_INIT_HE = 0, RUN_INIT_TORCH } run_init;
typedef enum run_tta { RUN_TTA_NONE = 0, RUN_TTA_FLIP } run_tta;
typedef enum run_backbone_bn { RUN_BN_TRAIN = 0, RUN_BN_FROZEN } run_backbone_bn;
/* The products' number format: auto (bf16 where the CPU has AVX512_BF16 or AMX-BF16,
 * else fp32), float32 (the default), or mixed precision with bf16 operands (nn.h's
 * nn_precision). */
typedef enum run_precision { RUN_PREC_AUTO = 0, RUN_PREC_FP32, RUN_PREC_BF16 } run_precision;
/* What --early-stop and --keep best watch: validation macro F1 (higher is better) or
 * validation loss (lower is better). */
typedef enum run_monitor { RUN_MON_F1 = 0, RUN_MON_LOSS } run_monitor;
/* Which epoch's weights are the run's model (export, predict, submission.csv): auto is
 * best when --early-stop is on, else last (run_keeps_best). */
typedef enum run_keep { RUN_KEEP_AUTO = 0, RUN_KEEP_BEST, RUN_KEEP_LAST } run_keep;
/* What a distillation teacher sees (--teacher-view): each training image once,
 * un-augmented, before the first epoch (cached), or every augmented batch (live). */
typedef enum run_teacher_view { RUN_TEACHER_CACHED = 0, RUN_TEACHER_LIVE } run_teacher_view;
/* An ONNX model's input convention: the model's own (auto), or nn_norm's value + 1. */
typedef enum run_input_norm {
    RUN_NORM_AUTO = 0, RUN_NORM_IMAGENET, RUN_NORM_UNIT, RUN_NORM_TF, RUN_NORM_RAW, RUN_NORM_CAFFE
} run_input_norm;

#define RUN_MAX_BLOCKS 8        /* --widths: at most this many blocks (NN_SMALL_MAX_BLOCKS,
                                   nn_parse_widths() in nn/nn_models.h) */

typedef struct run_config {
    char data[4096];            /* dataset folder; "" = the built-in demo data */
    char out[4096];             /* run folder; "" = runs/NAME-DATE */
    char resume[4096];          /* run folder to continue; "" = a new run */
    char model[4096];           /* "small", "mobilenetv2" or a path to an .onnx file */
    double width;               /* mobilenetv2 width multiplier */
    char widths[64];            /* small: channels per block, "32,64,128,256" */
    int convs;                  /* small: conv layers per block, 1 or 2 */
    int residual;               /* small: ResNet basic blocks instead (convs not read) */
    run_init init;              /* how a net trained from scratch starts */
    double bn_momentum;         /* of BN's running statistics (Keras's convention) */
    int image_size;             /* model input side; 0 = the dataset's size */
    int epochs;
    int early_stop;             /* stop after N epochs without a better monitored value; 0 off */
    run_monitor monitor;        /* what early stopping and keep best watch */
    run_keep keep;              /* whose weights the run's model is (run_keeps_best) */
    int replicas;               /* 0 = number of cores */
    int batch_per_replica;
    int grad_acc;
    long long oversample;       /* target count N; 0 = off, -1 = the largest class */
    run_optimizer optimizer;
    double lr_start, lr_max, lr_end, warmup, lr_scaling;
    run_schedule schedule;
    double momentum;            /* SGD */
    double weight_decay;        /* decoupled, on conv/dense weights */
    double dropout;
    int freeze_backbone;
    int reinit;                 /* an ONNX model: its architecture with fresh weights */
    run_input_norm input_norm;  /* an ONNX model: how pixels become its input */
    run_backbone_bn backbone_bn; /* an ONNX model's batch norm: trained, or frozen */
    double label_smoothing;     /* of the training targets (not of validation's loss) */
    char teacher[4096];         /* knowledge distillation: a run folder, an .onnx classifier,
                                   an ensemble folder or a teacher_probs.csv; "" = off */
    char teacher_data[4096];    /* the dataset a cached teacher predicts; "" = the run's */
    double distill_t;           /* the temperature T of the teacher's and student's softmax */
    double distill_alpha;       /* the weight of the distillation term (1 - it: the labels') */
    run_teacher_view teacher_view;
    double ema;                 /* decay of the weights' moving average; 0 = off */
    run_tta tta;                /* test-time augmentation of validation and test */
    int freeze_epochs;          /* the first K epochs train only the new head */
    double backbone_lr_scale;   /* then the backbone's learning rate is this fraction */
    char augment[512];          /* augmentation chain spec; "none" = off */
    uint64_t seed;
    int deterministic;
    int shuffle_buffer;
    int workers;                /* pipeline decode threads; 0 = automatic */
    int overlap;                /* mpirun jobs: gradients sent during the backward (1),
                                   after it with the optimizer sliced (0), or -1: the
                                   first when the ranks span hosts, else the second */
    int prefetch;
    run_precision precision;    /* of the products: training, validation, predict */
    int recompute;              /* training: recompute cheap outputs in the backward (1),
                                   keep them (0), or -1: when keeping would take more
                                   than a quarter of the machine's memory */
    int stop_on_data_error;
    int checkpoint_every;       /* epochs between checkpoints (>= 1) */
} run_config;

/* ---- state and progress -------------------------------------------------------- */

typedef enum run_state {
    RUN_IDLE = 0,       /* created, not started */
    RUN_PREPARING,      /* scanning labels, building, calibrating */
    RUN_RUNNING,
    RUN_PAUSED,
    RUN_DONE,
    RUN_FAILED,
    RUN_STOPPED,
} run_state;

const char *run_state_name(run_state s);

/* 1 when the model option names an ONNX file (it ends in .onnx) rather than a
 * built-in net. */
int run_model_is_onnx(const char *model);

/* 1 when the run's model is its best validated epoch's weights (--keep best, or auto
 * with --early-stop on), 0 when it is the last epoch's. */
int run_keeps_best(const run_config *c);

/* The monitored value's name as history.json names it: "val_f1" or "val_loss". */
const char *run_monitor_key(run_monitor m);

/* 1 when value a is better than b for monitor m (a tie is not; NaN never is; any
 * finite value is better than a NaN b). */
int run_monitor_better(run_monitor m, double a, double b);

/* A short name for the model: "small", "mobilenetv2", or an ONNX file's name
 * without its folder and extension (for run folders and the header). Returns buf. */
const char *run_model_name(const run_config *c, char *buf, size_t n);

typedef struct run_epoch {
    int epoch;                  /* 1-based */
    int updates;
    double seconds;
    double train_loss, train_acc, train_precision, train_recall, train_f1;
    double val_loss, val_acc, val_precision, val_recall, val_f1;
} run_epoch;

/* How a run chose its model and why it stopped: the run folder's summary.json
 * (run/runfolder.h), written after every epoch and at the end, and read back with
 * the run (run_figures.outcome). */
typedef enum run_stop {
    RUN_STOP_NONE = 0,          /* still running (or killed) */
    RUN_STOP_EPOCHS,            /* every epoch done */
    RUN_STOP_EARLY,             /* --early-stop */
    RUN_STOP_USER,              /* stopped by the user (or after a non-finite loss) */
    RUN_STOP_COUNT
} run_stop;

typedef struct run_outcome {
    int keep_best;              /* the model is the best epoch's weights (1) or the last's */
    run_monitor monitor;
    int early_stop;             /* the patience N; 0 off */
    int epochs;                 /* epochs done */
    int kept_epoch;             /* the epoch whose weights are the model; 0 none yet */
    double kept_value;          /* the monitored value at it (NaN: none) */
    int best_epoch;             /* the best monitored value's epoch; 0 none */
    double best_value;
    int since_best;             /* epochs since it without improvement */
    run_stop stop;
    char reason[256];           /* the stop in words ("" while running) */
} run_outcome;

typedef struct run_replica {
    int rank;                   /* a job's rank running it (0 alone) */
    char host[32];              /* that rank's host, "" alone */
    double images_per_sec;      /* over the last few seconds */
    double busy_pct;            /* computing */
    double idle_pct;            /* waiting for input batches */
    double mxu_pct;             /* FLOPs executed / (busy time x sgemm peak) */
    float spark[RUN_SPARK_POINTS]; /* images/s history, oldest first */
    int spark_n;
} run_replica;

typedef struct run_snapshot {
    run_state state;
    char message[512];          /* what is happening, or why it failed */
    /* the run */
    char dataset[256];
    char run_dir[512];
    char model[64];
    char phase[64];             /* fine-tuning: which part trains, and how much of it */
    char distill[96];           /* --teacher: "distilling NAME T4 a0.9"; "" otherwise */
    char input_norm[48];        /* an ONNX model's input convention, for the header: "tf",
                                   "raw (auto)" (the model's own or the default); before
                                   the import the option's value; "" for a built-in net */
    int replicas, batch_per_replica, grad_acc, update_size, image_size;
    int n_classes;
    int epoch, epochs;          /* current (1-based) and total */
    long long step;             /* updates done in the current epoch */
    long long steps_per_epoch;
    long long update;           /* updates done in the whole run */
    long long total_steps;      /* updates in the whole run */
    double elapsed, eta;        /* seconds */
    double elapsed_resumed;     /* of elapsed, what was trained before this process
                                   resumed the run (0: not resumed) */
    double lr;
    double last_loss, last_acc;
    double running_loss, running_acc; /* this epoch so far */
    /* per-update curves (thinned to fit) */
    int curve_n, curve_stride;
    float curve_loss[RUN_CURVE_POINTS];
    float curve_acc[RUN_CURVE_POINTS];
    float curve_lr[RUN_CURVE_POINTS];
    /* per-epoch history */
    int history_n;
    run_epoch history[RUN_MAX_EPOCHS];
    /* hardware monitor */
    int ranks;                  /* processes of an mpirun job (1 alone) */
    double comm_ms;             /* a job's time in collectives per update (waits for the
                                   other ranks included), rank 0's, smoothed */
    int n_replicas;
    run_replica replica[RUN_MAX_REPLICAS];
    double total_images_per_sec;
    double sgemm_peak_gflops;   /* single-core, measured at start: the bf16 kernels' in
                                   bf16 (the compute estimate counts against it) */
    char blas_core[32];         /* what runs the products: OpenBLAS's core, or the bf16
                                   engine ("avx512_bf16", "amx", "emulated") */
    char precision[8];          /* "fp32" or "bf16" as resolved; "" before the plan */
    int queue_depth, queue_capacity;
    /* labels: original and oversampled train counts, val counts */
    int label_classes;
    long long train_counts[RUN_MAX_CLASSES];
    long long train_oversampled[RUN_MAX_CLASSES];
    long long val_counts[RUN_MAX_CLASSES];
    int oversampling;
    /* housekeeping */
    long long nonfinite_at;     /* update whose loss was not finite (run paused); 0 none */
    long long data_errors;
    long long checkpoints;
    char last_checkpoint[512];
} run_snapshot;

/* ---- a run read back from its folder ----------------------------------------
 * What the run folder module gives the comparison overlay, the runs list and --open
 * (runs.h: runs_open and the others): the curves, each point at three x
 * positions, and what the runs list shows. Freed with runs_close(). */

enum {
    RUN_S_TRAIN_LOSS = 0,
    RUN_S_VAL_LOSS,
    RUN_S_TRAIN_ACC,
    RUN_S_VAL_ACC,
    RUN_S_TRAIN_F1,
    RUN_S_VAL_F1,
    RUN_S_BATCH_LOSS,   /* per update */
    RUN_S_BATCH_ACC,
    RUN_S_BATCH_LR,
    RUN_SERIES_COUNT
};

enum { RUN_X_UPDATE = 0, RUN_X_EPOCH, RUN_X_TIME, RUN_X_COUNT };

#define RUN_MAX_OPTS 96

typedef struct run_series {
    int n;
    float *y;                   /* n values */
    float *x[RUN_X_COUNT];      /* n positions on each axis; NaN where unknown */
} run_series;

typedef struct run_opt {
    char key[40];
    char value[256];
} run_opt;

typedef struct run_figures {
    char path[4096];            /* as given */
    char name[256];             /* the folder's name (a file: its run folder's) */
    char writer[64];            /* "petal-tui", or the event files' writer */
    char model[128];            /* from config; "" unknown */
    char dataset[512];          /* from config ("demo" for the built-in data); "" unknown */
    char date[32];              /* "YYYY-MM-DD HH:MM" the run began (local time); "" */
    double started;             /* seconds since the epoch it began; 0 unknown */
    int epochs;                 /* epochs with figures */
    int epochs_planned;         /* from config; 0 unknown */
    double best_val_f1;         /* NaN when there is none */
    double best_val_acc;        /* NaN when there is none */
    int from_history;           /* the epoch curves came from history.json */
    long long event_files;      /* event files read */
    int torn;                   /* event files that end in a torn record (or are empty), as
                                   a crash or a writer still writing leaves them: read up to
                                   it */
    char note[600];             /* the first such end, for the log ("" none) */
    int run_folder;             /* a petal-tui run folder (it has a config) */
    char ended[300];            /* its log.txt's last line when that says how the run ended
                                   ("done: ...", "stopped ...", "failed: ..."); "" when the
                                   log ends otherwise: killed, or still running */
    int has_outcome;            /* its summary.json was read into outcome */
    run_outcome outcome;
    run_series s[RUN_SERIES_COUNT];
    int n_opts;
    run_opt opt[RUN_MAX_OPTS];    /* RUN/config's "key = value" lines, in order */
} run_figures;

/* ---- previews and validation results ----------------------------------------- */

typedef struct run_preview {
    int n, h, w;                /* n image pairs of h x w RGB */
    uint8_t *original;          /* n * h * w * 3 */
    uint8_t *augmented;         /* n * h * w * 3 */
    int *label;                 /* dominant label of each augmented image */
    uint64_t generation;        /* increases with every new preview */
} run_preview;

void run_preview_free(run_preview *p);

/* Validation results of the latest epoch. */
typedef struct run_val_report {
    int n_classes;
    long long n;                /* validation examples */
    int epoch;                  /* 0: none yet */
    double *precision, *recall, *f1;   /* per class */
    long long *support;
    long long *confusion;       /* n_classes x n_classes, [true][pred] */
} run_val_report;

void run_val_report_free(run_val_report *r);

/* One validation example: its image (decoded at h x w), true and predicted class. */
typedef struct run_val_item {
    int h, w;
    uint8_t *rgb;
    int label, pred;
    float confidence;           /* softmax probability of pred */
    float loss;                 /* cross-entropy: -log of the softmax probability of label */
} run_val_item;

void run_val_item_free(run_val_item *it);

/* Grad-CAM of one validation example (eng_explain_get): the image as the net saw
 * it, and for its predicted class (cam[0]) and its true class (cam[1]) the
 * class-activation map laid over it in a colour map; heat is cam[0]'s map alone. */
#define RUN_EXPLAIN_TOP 5
typedef struct run_explain {
    int h, w;
    uint8_t *photo, *cam[2], *heat;     /* h x w x 3 each, malloc'd */
    int cls[2];                         /* the classes of cam[0] and cam[1] */
    float prob[2];                      /* their softmax probabilities */
    int label, pred;
    float loss;
    int n_top;                          /* the most probable classes, most first */
    int top[RUN_EXPLAIN_TOP];
    float top_p[RUN_EXPLAIN_TOP];
    int epoch;                          /* the weights' epoch (the run's checkpoint) */
    char layer[128];                    /* the layer the maps are of, in words */
} run_explain;

void run_explain_free(run_explain *x);
/* A deep copy of x into out (zeroed first); PT_ENOMEM leaves out empty. */
int run_explain_copy(const run_explain *x, run_explain *out);
/* ---- the learning-rate finder --------------------------------------------------- */

/* fastai's lr_find: the rate grows exponentially from start_lr to end_lr over num_it
 * updates; each update's training loss and its smoothed value (core/train/lrfind.h
 * computes them, engine.h's eng_lrfind_get copies them out). A plain value. */
#define RUN_LRF_POINTS 100

typedef enum run_lrf_state {
    RUN_LRF_NONE = 0,           /* never started */
    RUN_LRF_PREPARING,          /* building the model, the replicas, the pipeline */
    RUN_LRF_RUNNING,            /* the updates */
    RUN_LRF_DONE,               /* ended: by the last update, 4x the best, or non-finite */
    RUN_LRF_FAILED,
    RUN_LRF_STOPPED             /* cancelled */
} run_lrf_state;

typedef struct run_lrfind {
    run_lrf_state state;
    int n;                      /* updates recorded */
    int num_it;                 /* planned updates */
    double start_lr, end_lr;
    double lr[RUN_LRF_POINTS], loss[RUN_LRF_POINTS], smooth[RUN_LRF_POINTS];
    int why_end;                /* 0 the last update, 1 smoothed loss over 4x its best,
                                   2 a non-finite loss (not recorded) */
    int found;                  /* 1: valley and steep hold the suggestions */
    double valley, steep;       /* the rates of fastai's two rules */
    double lr_max;              /* the valley as --lr-max: valley / --lr-scaling */
    int update_size;            /* examples per update */
    char message[256];          /* what it is doing; why it failed */
} run_lrfind;

#endif
