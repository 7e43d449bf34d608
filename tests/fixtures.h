/* Shared test fixtures: small datasets written with the real shard writer, whose
 * images encode their label (red = 10 + 20 * label), so tests can check that
 * images and labels stay together. */
#ifndef PT_FIXTURES_H
#define PT_FIXTURES_H

#include <stdint.h>

#include "run.h"

/* Writes OUT/tfrecords-jpeg-SxS/{train,val[,test]} with train_counts[k] and
 * val_counts[k] images of class k (val_counts may be NULL) and n_test unlabeled.
 * Returns the tfrecords-jpeg-SxS path (static buffer ring) or NULL. */
const char *fx_dataset(const char *out, int n_classes, const long long *train_counts,
                       const long long *val_counts, long long n_test, int size, int per_shard);

/* The label an image of fx_dataset encodes (-1 when unreadable). */
int fx_label_of(const uint8_t *rgb, int w, int h);

/* Runs the engine on c to its end (the runner's alarm ends a hang) and leaves the last
 * snapshot in s: the final state, or RUN_FAILED with the reason printed when the
 * engine cannot be created. */
run_state fx_run_to_end(const run_config *c, run_snapshot *s);

/* DIR/history.json without its train_timing lines (wall time differs between runs),
 * malloc'd; NULL when it cannot be read. */
char *fx_history_without_timing(const char *dir);

#endif
