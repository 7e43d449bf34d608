/* ensemble_fit — the members' weights fitted on labeled predictions (see
 * infer/ensemble.h): the mixture weights of least log loss by EM, and a K-fold
 * cross-validation of that fit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "infer/ensemble_impl.h"

/* A member's probability of a record's label is taken as at least this, so that a
 * member sure of a wrong answer still has a finite log loss. */
#define ENS_P_FLOOR 1e-30
/* The fit stops when no weight moves by more than this in an iteration, or after
 * ENS_FIT_MAX iterations (EM converges linearly; a flat optimum can take many). */
#define ENS_FIT_TOL 1e-10
#define ENS_FIT_MAX 20000

void ens_mix(const double *member_probs, int n, const double *w, prd_results *r)
{
    size_t len = (size_t)r->n * (size_t)r->k;
    memset(r->probs, 0, len * sizeof *r->probs);
    for (int i = 0; i < n; i++)
        for (size_t q = 0; q < len; q++)
            r->probs[q] += w[i] * member_probs[(size_t)i * len + q];
}

int ens_fit_weights(const prd_results *r, const double *member_probs, int n,
                    const long long *rows, long long m, double *w)
{
    const size_t len = (size_t)r->n * (size_t)r->k;
    if (!rows)
        m = r->n;
    for (int i = 0; i < n; i++)
        w[i] = 1.0 / n;
    int it = 0;
    for (double moved = 1; moved > ENS_FIT_TOL && it < ENS_FIT_MAX; it++) {
        /* w_i <- mean over records of w_i p_i(y) / sum_j w_j p_j(y): each step lowers
         * the log loss of the mean (the EM of a mixture with fixed components). */
        double acc[ENS_MAX] = { 0 };
        long long used = 0;
        for (long long t = 0; t < m; t++) {
            long long j = rows ? rows[t] : t;
            int y = r->items[j].label;
            if (y < 0 || y >= r->k)
                continue;
            double p[ENS_MAX], sum = 0;
            for (int i = 0; i < n; i++) {
                p[i] = w[i] * fmax(member_probs[(size_t)i * len + (size_t)j * r->k + y],
                                   ENS_P_FLOOR);
                sum += p[i];
            }
            for (int i = 0; i < n; i++)
                acc[i] += p[i] / sum;
            used++;
        }
        if (used == 0)
            break;
        moved = 0;
        for (int i = 0; i < n; i++) {
            double next = acc[i] / used;
            moved = fmax(moved, fabs(next - w[i]));
            w[i] = next;
        }
    }
    /* A weight EM drove to 0 is kept just above it: weights are positive. */
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += (w[i] = fmax(w[i], 1e-12));
    for (int i = 0; i < n; i++)
        w[i] /= sum;
    return it;
}

int ens_cv(const prd_results *r, const double *member_probs, int n, int folds, uint64_t seed,
           inf_score *out, pt_err *e)
{
    const long long N = r->n;
    const int k = r->k;
    const size_t len = (size_t)N * (size_t)k;
    if (folds < 2 || N < folds)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "a cross-validation of %d folds needs at least %d records, not %lld",
                       folds, folds, N);
    long long *order = malloc((size_t)N * sizeof *order), *train = malloc((size_t)N * sizeof *train);
    double *oof = malloc((len ? len : 1) * sizeof *oof);
    if (!order || !train || !oof) {
        free(order);
        free(train);
        free(oof);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    /* A fixed seeded order (Fisher-Yates), fold f the records at f, f + folds, ... */
    rng g;
    rng_seed(&g, seed);
    for (long long j = 0; j < N; j++)
        order[j] = j;
    for (long long j = N - 1; j > 0; j--) {
        long long s = (long long)rng_below(&g, (uint64_t)j + 1), t = order[j];
        order[j] = order[s];
        order[s] = t;
    }
    for (int f = 0; f < folds; f++) {
        long long m = 0;
        for (long long t = 0; t < N; t++)
            if (t % folds != f)
                train[m++] = order[t];
        double w[ENS_MAX];
        ens_fit_weights(r, member_probs, n, train, m, w);
        for (long long t = f; t < N; t += folds) {
            long long j = order[t];
            for (int c = 0; c < k; c++) {
                double p = 0;
                for (int i = 0; i < n; i++)
                    p += w[i] * member_probs[(size_t)i * len + (size_t)j * k + c];
                oof[(size_t)j * k + c] = p;
            }
        }
    }
    inf_score_probs(r, oof, NULL, out);
    free(order);
    free(train);
    free(oof);
    return PT_OK;
}
