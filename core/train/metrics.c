#include "train/metrics.h"

#include <math.h>
#include <string.h>

void met_confusion(const int32_t *labels, const int32_t *preds, size_t n, int k, long long *cm)
{
    memset(cm, 0, (size_t)k * (size_t)k * sizeof *cm);
    for (size_t i = 0; i < n; i++)
        if (labels[i] >= 0 && labels[i] < k && preds[i] >= 0 && preds[i] < k)
            cm[(size_t)labels[i] * (size_t)k + (size_t)preds[i]]++;
}

void met_from_confusion(const long long *cm, int k, met_summary *s, double *precision,
                        double *recall, double *f1, long long *support)
{
    long long total = 0, correct = 0;
    double sp = 0, sr = 0, sf = 0;
    int present = 0;
    for (int c = 0; c < k; c++) {
        long long tp = cm[(size_t)c * k + c], row = 0, col = 0;
        for (int j = 0; j < k; j++) {
            row += cm[(size_t)c * k + j];   /* true c */
            col += cm[(size_t)j * k + c];   /* predicted c */
        }
        total += row;
        correct += tp;
        double p = col > 0 ? (double)tp / col : 0.0;
        double r = row > 0 ? (double)tp / row : 0.0;
        double f = p + r > 0 ? 2 * p * r / (p + r) : 0.0;
        if (precision)
            precision[c] = p;
        if (recall)
            recall[c] = r;
        if (f1)
            f1[c] = f;
        if (support)
            support[c] = row;
        if (row > 0 || col > 0) {
            sp += p;
            sr += r;
            sf += f;
            present++;
        }
    }
    s->n = total;
    s->acc = total > 0 ? (double)correct / total : 0.0;
    s->precision = present ? sp / present : 0.0;
    s->recall = present ? sr / present : 0.0;
    s->f1 = present ? sf / present : 0.0;
}
