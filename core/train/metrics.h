/* metrics — accuracy, macro precision / recall / F1 and the confusion matrix,
 * computed as scikit-learn does with average='macro': the mean over the classes
 * present in the true labels or the predictions; a class never predicted has
 * precision 0, a class never true has recall 0, and F1 = 2PR / (P + R), 0 when
 * P + R = 0. Plain functions over caller-owned arrays.
 */
#ifndef PT_METRICS_H
#define PT_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef struct met_summary {
    double acc, precision, recall, f1;
    long long n;
} met_summary;

/* cm is k x k, [true][pred], zeroed first. Labels/preds outside [0, k) are ignored. */
void met_confusion(const int32_t *labels, const int32_t *preds, size_t n, int k, long long *cm);

/* Macro metrics from a confusion matrix; the per-class arrays may be NULL. */
void met_from_confusion(const long long *cm, int k, met_summary *s, double *precision,
                        double *recall, double *f1, long long *support);

#endif
