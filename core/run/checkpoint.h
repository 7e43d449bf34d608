/* checkpoint — everything needed to continue a run exactly, in one file.
 *
 * Layout: magic "PETALCK1", u32 version, u32 section count, then sections
 * (u32 tag, u64 length, bytes), then u32 CRC32C of everything before it. Sections
 * hold the weights, the BN running statistics, the optimizer's moments, the
 * progress counters (update, epoch, position in the epoch, pipeline batches
 * consumed), the moving average of the weights when there is one (--ema), the partial
 * epoch's metric accumulators, early stopping's state (ckpt_best) and the per-epoch
 * history, so
 * a resumed run ends with the same history as a straight one.
 *
 * The file is written to a temporary name, fsync'd and renamed over the old one:
 * a crash leaves the previous checkpoint intact. Loading checks the magic, the
 * CRC, every section's size against what the caller expects, and that no section
 * appears twice.
 *
 * Ownership: ckpt_data points at caller-owned arrays for saving; ckpt_load() fills
 * caller-owned arrays of the sizes given and mallocs the variable parts (history,
 * confusion matrix) which ckpt_free_loaded() releases.
 */
#ifndef PT_CHECKPOINT_H
#define PT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct ckpt_progress {
    int64_t update;             /* optimizer updates done (the global step) */
    int64_t epoch;              /* epochs completed */
    int64_t update_in_epoch;    /* updates done in the current epoch */
    int64_t batches_consumed;   /* training pipeline position */
    uint64_t seed;
    double epoch_seconds;       /* time already spent in the current epoch */
    double elapsed;             /* time of the whole run so far */
    double loss_sum;            /* current epoch's accumulators */
    int64_t examples, correct;
} ckpt_progress;

/* Early stopping's and --keep best's state at the checkpoint (train/keep.c), so that a
 * resumed run takes the decisions a straight one would. */
typedef struct ckpt_best {
    int64_t best_epoch;         /* the best monitored value's epoch; 0 none yet */
    int64_t best_update;        /* the update it ended at */
    int64_t since;              /* epochs after it without improvement */
    int64_t monitor;            /* run.h's run_monitor the value is of */
    double best_value;
    int64_t stopped_early;      /* 1: --early-stop ended the run at this checkpoint */
    int64_t epochs, early_stop; /* the run's --epochs and --early-stop then */
} ckpt_best;

typedef struct ckpt_data {
    const float *params;
    size_t n_params;
    const float *buffers;
    size_t n_buffers;
    const float *opt_m, *opt_v; /* opt_v may be NULL (SGD) */
    size_t n_opt;
    ckpt_progress progress;
    const long long *confusion; /* the current epoch's train confusion, k x k */
    int n_classes;
    const void *history;        /* opaque records (the engine's per-epoch rows) */
    size_t history_bytes;
    const char *config;         /* the run's configuration text */
    const float *ema;           /* the weights' moving average (parameters, then buffers); */
    size_t n_ema;               /* NULL: none */
    const ckpt_best *best;      /* NULL: none */
} ckpt_data;

int ckpt_save(const char *path, const ckpt_data *d, pt_err *e);

typedef struct ckpt_loaded {
    ckpt_progress progress;
    long long *confusion;       /* n_classes x n_classes, malloc'd */
    int n_classes;
    void *history;              /* malloc'd */
    size_t history_bytes;
    char *config;               /* malloc'd, NUL-terminated */
    float *ema;                 /* malloc'd; NULL when the file has none */
    size_t n_ema;
    int has_best;               /* 1: best holds the file's ckpt_best */
    ckpt_best best;
} ckpt_loaded;

/* params/buffers/opt arrays must have the sizes given; opt_v may be NULL, and opt_m
 * too (with n_opt 0) when the optimizer's moments are not wanted (inference): the
 * sections are then skipped unchecked. */
int ckpt_load(const char *path, float *params, size_t n_params, float *buffers,
              size_t n_buffers, float *opt_m, float *opt_v, size_t n_opt, ckpt_loaded *out,
              pt_err *e);
void ckpt_free_loaded(ckpt_loaded *l);

/* Checks a checkpoint file whole (magic, CRC32C, version, every section within the
 * file) without a model to load it into, and returns its progress: what a run
 * folder's checkpoint.ckpt holds, for tests and tools. */
int ckpt_peek(const char *path, ckpt_progress *progress, pt_err *e);
/* The class count of the run that wrote it (its confusion matrix's side), after the
 * same whole-file checks: what a model must be built with to load it. */
int ckpt_peek_classes(const char *path, int *n_classes, pt_err *e);

#endif
