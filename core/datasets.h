/* datasets — the datasets on disk: the door ui/ and src/ use for a dataset (engine.h
 * is the live run, runs.h the runs on disk, infer/infer.h a trained model's answers).
 * Behind it, core/data/ owns the formats: the built-in demo dataset, a dataset's
 * folder and splits, TFRecord shards and their tf.train.Example records.
 *
 * Ownership: paths are the caller's, borrowed for the call; what a call fills is
 * plain values unless it says otherwise.
 */
#ifndef PT_DATASETS_H
#define PT_DATASETS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"

/* ---- the demo dataset ---- */

/* Called as the demo's images are made; nonzero stops the generation (PT_ESTOPPED). */
typedef int (*datasets_progress_fn)(void *ctx, long long done, long long total);

/* The built-in demo dataset's folder into path, generating it first when the cache
 * lacks it (data/demo.h's demo_ensure). cache_root: NULL for $XDG_CACHE_HOME/petal-tui
 * (default ~/.cache/petal-tui). */
int datasets_demo(const char *cache_root, char *path, size_t n, datasets_progress_fn progress,
                  void *ctx, pt_err *e);

/* ---- what a dataset holds ---- */

/* The report `petal-tui inspect` prints of path (a TFRecord file, a folder of them, or
 * a dataset folder) into out (core/data/inspect.c): records, CRCs, features, image
 * sizes, class counts, every error with its file, record and byte offset.
 * show_records: per-record detail for the first N records of each file (-1: 3 for a
 * single file, 0 otherwise). *damaged: 1 when the report found damage. An error,
 * nothing written, when path is neither file nor folder (PT_EUSAGE) or a folder with
 * no dataset and no TFRecord files (PT_ENODATA). */
int datasets_inspect(const char *path, int show_records, FILE *out, int *damaged, pt_err *e);

/* ---- shards from class folders (core/data/shards.h's shd_from_folders) ---- */

/* The splits, in the order a dataset and the counts below keep them. */
enum { DATASETS_TRAIN = 0, DATASETS_VAL = 1, DATASETS_TEST = 2, DATASETS_NSPLITS = 3 };

/* How a photo becomes a square: crop (the largest centred square, 0, the default),
 * pad, stretch. */
enum { DATASETS_FIT_CROP = 0, DATASETS_FIT_PAD = 1, DATASETS_FIT_STRETCH = 2 };
/* "crop", "pad", "stretch" -> the fit; -1 when unknown. */
int datasets_fit_parse(const char *name);
const char *datasets_fit_name(int fit);

/* A photo that could not be taken, and why (the rest go on). */
typedef void (*datasets_skip_fn)(void *ctx, const pt_err *why);

typedef struct datasets_shards_config {
    const char *src_dir, *out_dir;
    int size;
    int fit;                /* DATASETS_FIT_* */
    int keep_aspect;        /* short side size, long side in proportion; fit must be crop */
    double val_frac, test_frac;
    int per_shard;
    int quality;
    int workers;
    uint64_t seed;
    datasets_progress_fn progress;
    datasets_skip_fn on_skip;
    void *cb_ctx;
} datasets_shards_config;

typedef struct datasets_shards_result {
    long long written[DATASETS_NSPLITS];
    long long skipped;
    int shards[DATASETS_NSPLITS];
    char root[4096];        /* the tfrecords-jpeg-SxS folder */
} datasets_shards_result;

/* SRC/<class>/ photos into out_dir's competition layout: stratified, seeded splits,
 * each photo fitted to size, and classes.txt. Nothing is left on failure. */
int datasets_shards_from_folders(const datasets_shards_config *c, datasets_shards_result *r,
                                 pt_err *e);

/* ---- a dataset opened (core/data/dataset.h's ds_open), for predict and ensemble ---- */

/* A dataset and its splits, by name only: a ds_dataset from datasets_open() is freed
 * with datasets_close(); a split is the dataset's (valid while it is open). */
typedef struct ds_dataset ds_dataset;
typedef struct ds_split ds_split;

/* The dataset folder at path with its DATASETS_* splits; want_size > 0 picks the
 * tfrecords-jpeg-SxS folder of that size where there are several. */
int datasets_open(const char *path, int want_size, ds_dataset **out, pt_err *e);
void datasets_close(ds_dataset *d);
/* The folder holding the split folders. */
const char *datasets_root(const ds_dataset *d);
/* Split s (DATASETS_*) of d: its records (counted from the shard names) and shards. */
const ds_split *datasets_split(const ds_dataset *d, int s);
long long datasets_split_records(const ds_dataset *d, int s);
int datasets_split_shards(const ds_dataset *d, int s);
/* The class names its classes.txt gives, in label order (the dataset's, valid while it
 * is open): their count, or 0 when it has no classes.txt (names and count then unknown
 * before its labels are read). */
int datasets_class_names(const ds_dataset *d, char *const **names);

#endif
