/* shards — writing datasets in the competition's layout.
 *
 *   OUT/classes.txt
 *   OUT/tfrecords-jpeg-SxS/train/NN-SxS-COUNT.tfrec   (records: image, class, id)
 *   OUT/tfrecords-jpeg-SxS/val/...                    (image, class, id)
 *   OUT/tfrecords-jpeg-SxS/test/...                   (image, id: unlabeled)
 *
 * shd_from_folders() builds that from a folder of class sub-folders of JPEGs and PNGs
 * (any sizes, data/imgfile.h): a stratified, seeded split, each photo fitted to
 * S x S (centre crop by default; pad or stretch) or kept in its shape with the short
 * side S (keep_aspect; the folder keeps the name tfrecords-jpeg-SxS), re-encoded. A sub-folder with no images is no class (on_skip says so); when
 * no image at all (or no training image) could be read, nothing is written.
 * shd_write_dataset() is the general writer it uses: the caller supplies the items
 * and a function that draws each one's pixels (the demo generator uses it too).
 * Images are produced in parallel, shard by shard, so memory holds one shard's
 * JPEGs at a time. The whole tfrecords-jpeg-SxS folder is written under a temporary
 * name and renamed into place at the end: a dataset is complete or absent.
 *
 * Ownership: callers own their item arrays; nothing returned needs freeing.
 */
#ifndef PT_SHARDS_H
#define PT_SHARDS_H

#include <stdint.h>

#include "base/err.h"
#include "base/rng.h"
#include "data/dataset.h"
#include "data/jpeg.h"

#define SHD_ID_LEN 9 /* hex digits, as the competition's ids */

typedef struct shd_item {
    int split;              /* DS_TRAIN, DS_VAL, DS_TEST */
    int label;              /* class (written for train and val) */
    char id[SHD_ID_LEN + 1];
    const char *path;       /* source file, when there is one */
    uint64_t seed;          /* variation, for generated images */
} shd_item;

/* Draw item's pixels: size x size RGB into rgb. Called from worker threads, each
 * with its own codec. Return PT_OK, or an error (the item is then skipped). */
typedef int (*shd_draw_fn)(void *ctx, const shd_item *item, jpg_codec *codec, uint8_t *rgb,
                           int size, pt_err *e);
/* The same at a size the drawer chooses: *w x *h RGB into *rgb, a buffer of *cap bytes
 * that the writer owns and the drawer grows with realloc when too small. */
typedef int (*shd_draw_any_fn)(void *ctx, const shd_item *item, jpg_codec *codec,
                               uint8_t **rgb, size_t *cap, int *w, int *h, pt_err *e);
/* Called after each shard; a nonzero return stops the writing (PT_ESTOPPED, and
 * nothing is left behind). */
typedef int (*shd_progress_fn)(void *ctx, long long done, long long total);
typedef void (*shd_skip_fn)(void *ctx, const pt_err *why);

typedef struct shd_writer_config {
    const char *out_dir;
    int size;
    int per_shard;          /* records per shard (the last may hold fewer); >= 1 */
    int quality;            /* JPEG quality, 1..100 */
    int workers;
    const char *const *class_names;
    int n_classes;
    shd_draw_fn draw;
    shd_draw_any_fn draw_any; /* when set, instead of draw: records of any size */
    void *draw_ctx;
    shd_progress_fn progress;
    shd_skip_fn on_skip;
    void *cb_ctx;
} shd_writer_config;

typedef struct shd_result {
    long long written[DS_NSPLITS];
    long long skipped;
    int shards[DS_NSPLITS];
    char root[4096];        /* the tfrecords-jpeg-SxS folder */
} shd_result;

/* Items are written in the order given, split by split. */
int shd_write_dataset(const shd_writer_config *cfg, const shd_item *items, long long n,
                      shd_result *res, pt_err *e);

typedef struct shd_folder_config {
    const char *src_dir, *out_dir;
    int size;
    int fit;                /* imf_fit_mode: crop (0, the default), pad, stretch */
    int keep_aspect;        /* short side size, long side in proportion; fit must be crop */
    double val_frac, test_frac;
    int per_shard;
    int quality;
    int workers;
    uint64_t seed;
    shd_progress_fn progress;
    shd_skip_fn on_skip;
    void *cb_ctx;
} shd_folder_config;

int shd_from_folders(const shd_folder_config *cfg, shd_result *res, pt_err *e);

/* Fisher-Yates shuffle of items with r (seeded by the caller). */
void shd_shuffle(shd_item *items, long long n, rng *r);

/* Deterministic, unique 9-hex-digit ids for n items: id of item i from (seed, i). */
void shd_make_ids(shd_item *items, long long n, uint64_t seed);

/* Stratified split of per-class item counts: how many of class k's n_k go to val and
 * test (rounded, at least one each when the fraction is > 0 and n_k >= 3). */
void shd_split_counts(long long n_k, double val_frac, double test_frac, long long *n_val,
                      long long *n_test);

#endif
