#include "data/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int smp_build(smp_table *t, const long long *counts, int n_classes, long long target)
{
    memset(t, 0, sizeof *t);
    if (n_classes <= 0)
        return -1;
    t->repeat = malloc((size_t)n_classes * sizeof *t->repeat);
    if (!t->repeat)
        return -1;
    t->n_classes = n_classes;
    if (target <= 0)
        for (int k = 0; k < n_classes; k++)
            if (counts[k] > target)
                target = counts[k];
    t->target = target;
    for (int k = 0; k < n_classes; k++)
        t->repeat[k] = (counts[k] > 0 && counts[k] < target) ? (double)target / counts[k] : 1.0;
    return 0;
}

void smp_free(smp_table *t)
{
    free(t->repeat);
    t->repeat = NULL;
    t->n_classes = 0;
}

int smp_draw(const smp_table *t, int label, rng *r)
{
    if (!t || label < 0 || label >= t->n_classes)
        return 1;
    double rep = t->repeat[label];
    double whole = floor(rep);
    int k = (int)whole;
    if (rng_double(r) < rep - whole)
        k++;
    return k;
}

long long smp_expected_total(const smp_table *t, const long long *counts)
{
    double sum = 0;
    for (int k = 0; k < t->n_classes; k++)
        sum += (double)counts[k] * t->repeat[k];
    return (long long)sum;
}

void smp_count_labels(const int32_t *labels, size_t n, int n_classes, long long *out_counts)
{
    memset(out_counts, 0, (size_t)n_classes * sizeof *out_counts);
    for (size_t i = 0; i < n; i++)
        if (labels[i] >= 0 && labels[i] < n_classes)
            out_counts[labels[i]]++;
}

void smp_count_pass(const smp_table *t, const int32_t *labels, size_t n, uint64_t seed,
                    long long *out_counts)
{
    memset(out_counts, 0, (size_t)t->n_classes * sizeof *out_counts);
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        int k = smp_draw(t, labels[i], &r);
        if (labels[i] >= 0 && labels[i] < t->n_classes)
            out_counts[labels[i]] += k;
    }
}
