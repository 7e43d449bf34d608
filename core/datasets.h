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

#include "base/err.h"

/* ---- the demo dataset ---- */

/* Called as the demo's images are made; nonzero stops the generation (PT_ESTOPPED). */
typedef int (*datasets_progress_fn)(void *ctx, long long done, long long total);

/* The built-in demo dataset's folder into path, generating it first when the cache
 * lacks it (data/demo.h's demo_ensure). cache_root: NULL for $XDG_CACHE_HOME/petal-tui
 * (default ~/.cache/petal-tui). */
int datasets_demo(const char *cache_root, char *path, size_t n, datasets_progress_fn progress,
                  void *ctx, pt_err *e);

#endif
