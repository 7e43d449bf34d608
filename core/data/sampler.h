/* sampler — oversampling of imbalanced classes, as the seed notebook does it.
 *
 * For a target count N, class k with count c_k gets the repeat factor
 * r_k = N / c_k when c_k < N, and 1 otherwise. Each example of class k then appears
 * floor(r_k) times, plus once more with probability r_k - floor(r_k). With N equal
 * to the largest class every class comes out close to N.
 *
 * Ownership: smp_table is a plain struct with one malloc'd array; smp_free()
 * releases it. Everything else works on caller-owned arrays.
 */
#ifndef PT_SAMPLER_H
#define PT_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"

typedef struct smp_table {
    int n_classes;
    long long target;       /* N */
    double *repeat;         /* r_k per class */
} smp_table;

/* counts[k] for k < n_classes. target <= 0 means "the largest class". */
int smp_build(smp_table *t, const long long *counts, int n_classes, long long target);
void smp_free(smp_table *t);

/* How many times this example appears (0, 1, 2, ...). Labels outside the table
 * appear once. */
int smp_draw(const smp_table *t, int label, rng *r);

/* The notebook's approximate epoch size: int(sum_k c_k * r_k). */
long long smp_expected_total(const smp_table *t, const long long *counts);

/* Count each class in one oversampled pass over labels (seeded). */
void smp_count_pass(const smp_table *t, const int32_t *labels, size_t n, uint64_t seed,
                    long long *out_counts);

/* Count labels (values outside [0, n_classes) are ignored). */
void smp_count_labels(const int32_t *labels, size_t n, int n_classes, long long *out_counts);

#endif
