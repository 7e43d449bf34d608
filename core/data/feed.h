/* feed — how a run's images are fed, in one place: the examples turned into
 * pipelines and pictures. The pipeline settings for training, evaluation and
 * previews (one builder, from the configuration and the dataset), the augmentation
 * chain (parsed once), and what the UI shows through the engine: preview batches
 * of original and augmented images, and single validation images for the inspect
 * view. (Oversampling, which examples an epoch draws, is data/sampler.h's.)
 *
 * A feed is read-only once made, so the trainer's pipeline workers, the engine's
 * sample thread and the trainer may use it at the same time.
 *
 * Ownership: feed_new() / feed_free(); the chain belongs to the feed and lives as
 * long as it. Previews and items are filled with malloc'd arrays the caller frees
 * (run_preview_free, run_val_item_free).
 */
#ifndef PT_FEED_H
#define PT_FEED_H

#include "base/err.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "data/pipeline.h"
#include "run.h"

typedef struct feed feed;

/* Checks and parses cfg's augmentation spec; PT_EUSAGE naming the bad token. */
int feed_new(const run_config *cfg, feed **out, pt_err *e);
void feed_free(feed *s);

typedef enum feed_use {
    FEED_TRAIN,      /* endless, shuffled, oversampled, augmented, whole updates */
    FEED_EVAL,       /* one pass in file order (predictions line up with the split) */
    FEED_PREVIEW,    /* a small shuffled batch, one worker, unaugmented (see feed_preview) */
} feed_use;

/* Pipeline settings for one use, with the run's classes, input side and batch
 * size. FEED_TRAIN leaves oversampling and the start batch to the caller;
 * FEED_EVAL reads `split` with labels when labeled is 1, ids when 0. */
void feed_pipe_config(const feed *s, feed_use use, const ds_split *split, int labeled,
                      int n_classes, int img, int batch_size, pipe_config *out);

/* A preview: n training images at img x img before and after the chain; the
 * count-th preview of a session (it picks the images and the random draws). */
int feed_preview(const feed *s, const ds_dataset *ds, int img, int n, uint64_t count,
                 run_preview *out, pt_err *e);

/* The image of the validation record at src, decoded at item->h x item->w into
 * item->rgb (allocated here; the other fields are left as they are). */
int feed_val_image(const ds_dataset *ds, batch_src src, run_val_item *item, pt_err *e);

#endif
