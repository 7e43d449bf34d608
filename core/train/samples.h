/* samples — the one place where a run's examples are turned into pipelines and
 * pictures: the pipeline settings for training, evaluation and previews (one
 * builder, from the configuration and the dataset), the augmentation chain
 * (parsed once), preview batches of original and augmented images, and single
 * validation images for the inspect view.
 *
 * A sam is read-only once made, so the trainer's pipeline workers, the engine's
 * sample thread and the trainer may use it at the same time.
 *
 * Ownership: sam_new() / sam_free(); the chain belongs to the sam and lives as
 * long as it. Previews and items are filled with malloc'd arrays the caller frees
 * (run_preview_free, run_val_item_free).
 */
#ifndef PT_SAMPLES_H
#define PT_SAMPLES_H

#include "base/err.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "data/pipeline.h"
#include "run.h"

typedef struct sam sam;

/* Checks and parses cfg's augmentation spec; PT_EUSAGE naming the bad token. */
int sam_new(const run_config *cfg, sam **out, pt_err *e);
void sam_free(sam *s);

typedef enum sam_use {
    SAM_TRAIN,      /* endless, shuffled, oversampled, augmented, whole updates */
    SAM_EVAL,       /* one pass in file order (predictions line up with the split) */
    SAM_PREVIEW,    /* a small shuffled batch, one worker, unaugmented (see sam_preview) */
} sam_use;

/* Pipeline settings for one use, with the run's classes, input side and batch
 * size. SAM_TRAIN leaves oversampling and the start batch to the caller;
 * SAM_EVAL reads `split` with labels when labeled is 1, ids when 0. */
void sam_pipe_config(const sam *s, sam_use use, const ds_split *split, int labeled,
                     int n_classes, int img, int batch_size, pipe_config *out);

/* A preview: n training images at img x img before and after the chain; the
 * count-th preview of a session (it picks the images and the random draws). */
int sam_preview(const sam *s, const ds_dataset *ds, int img, int n, uint64_t count,
                run_preview *out, pt_err *e);

/* The image of the validation record at src, decoded at item->h x item->w into
 * item->rgb (allocated here; the other fields are left as they are). */
int sam_val_image(const ds_dataset *ds, batch_src src, run_val_item *item, pt_err *e);

#endif
