/* demo — the built-in demo dataset: procedural flowers in the competition's layout.
 *
 * Its parameters (class counts, size, seed...) are assets/demo-dataset.conf,
 * compiled into the program. demo_ensure() returns the dataset's folder, generating
 * it first when the cache lacks it: into a temporary folder, renamed into place when
 * complete, so a crash or a second process never sees half a dataset. The folder's
 * name carries a checksum of the parameters, so changing them regenerates.
 * Identical bytes on every machine for the same parameters.
 *
 * Ownership: plain values; nothing to free.
 */
#ifndef PT_DEMO_H
#define PT_DEMO_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Called as images are made; a nonzero return stops the generation (PT_ESTOPPED;
 * the cache is left without a half-made dataset). */
typedef int (*demo_progress_fn)(void *ctx, long long done, long long total);

/* cache_root: NULL for $XDG_CACHE_HOME/petal-tui (default ~/.cache/petal-tui).
 * path receives the dataset folder (holding classes.txt and tfrecords-jpeg-SxS). */
int demo_ensure(const char *cache_root, char *path, size_t n, demo_progress_fn progress,
                void *ctx, pt_err *e);

/* The default cache root. */
int demo_cache_root(char *out, size_t n);

/* Parameters as compiled in. */
typedef struct demo_params {
    uint64_t seed;
    int image_size, per_shard, quality;
    double val_fraction;
    int test_per_class;
    int n_classes;
    int counts[64];
} demo_params;

int demo_params_get(demo_params *p, pt_err *e);

#endif
