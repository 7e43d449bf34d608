/* Knowledge distillation (--teacher): the loss (nn_distill_ce) against its definition
 * and finite differences, the teacher's tempered probabilities, and distilled runs on
 * the small demo dataset: the loss the trainer reports is the formula, the cache is
 * predict's probabilities, the refusals, resume, replicas and accumulation. */
#include "tests/t.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/util.h"
#include "nn/nn.h"
#include "train/teacher.h"

/* ---- the loss ---- */

/* The loss straight from its definition, in double, by another road than
 * nn_loss.c's: explicit target vectors, log of the softmax's ratio, KL as
 * sum p log(p / q). */
static double direct_loss(const float *z, int n, int k, const int32_t *a, const int32_t *b,
                          const float *mix, double sm, const float *soft, double T, double alpha,
                          double *grad)
{
    double total = 0;
    for (int i = 0; i < n; i++) {
        const float *zi = z + i * k;
        double den = 0, den_t = 0;
        for (int j = 0; j < k; j++) {
            den += exp((double)zi[j]);
            den_t += exp((double)zi[j] / T);
        }
        double ce = 0, kl = 0;
        for (int j = 0; j < k; j++) {
            double w = mix ? mix[i] : 1.0;
            double tgt = (1 - sm) * ((j == a[i]) * w + (j == (b ? b[i] : a[i])) * (1 - w)) + sm / k;
            double q = exp((double)zi[j]) / den, qt = exp((double)zi[j] / T) / den_t;
            ce -= tgt * log(q);
            if (soft[i * k + j] > 0)
                kl += soft[i * k + j] * log(soft[i * k + j] / qt);
            grad[i * k + j] = alpha * T * (qt - soft[i * k + j]) + (1 - alpha) * (q - tgt);
        }
        total += alpha * T * T * kl + (1 - alpha) * ce;
    }
    return total;
}

TEST(distill_loss_is_the_formula_and_its_gradient_the_derivative)
{
    enum { N = 5, K = 6 };
    rng g;
    rng_seed(&g, 46);
    float z[N * K], soft[N * K], d[N * K];
    for (int i = 0; i < N * K; i++)
        z[i] = (float)(rng_double(&g) * 8 - 4);
    /* Teacher rows: random, one with a class of probability 0 (0 log 0 = 0). */
    for (int i = 0; i < N; i++) {
        double s = 0, p[K];
        for (int j = 0; j < K; j++)
            s += p[j] = (i == 2 && j == 3) ? 0.0 : rng_double(&g) + 0.01;
        for (int j = 0; j < K; j++)
            soft[i * K + j] = (float)(p[j] / s);
    }
    int32_t a[N] = { 0, 5, 2, 2, 1 }, b[N] = { 3, 5, 1, 2, 4 };
    float mix[N] = { 0.7f, 1.0f, 0.25f, 1.0f, 0.5f };
    const float Ts[3] = { 1.0f, 4.0f, 0.5f }, alphas[3] = { 0.9f, 0.0f, 1.0f };
    for (int m = 0; m < 6; m++) {
        const float T = Ts[m % 3], alpha = alphas[m / 2 % 3], sm = m & 1 ? 0.1f : 0.0f;
        const float scale = 0.125f;
        double L, grad[N * K];
        int32_t pred[N];
        T_REQUIRE(nn_distill_ce(z, N, K, a, b, mix, sm, soft, T, alpha, scale, &L, d, pred,
                                NULL) == PT_OK);
        const double ref = direct_loss(z, N, K, a, b, mix, sm, soft, T, alpha, grad);
        T_CHECKF(fabs(L - ref) <= 1e-9 * fabs(ref) + 1e-12, "T %g alpha %g: loss %.12g, direct %.12g",
                 (double)T, (double)alpha, L, ref);
        double max_direct = 0, max_fd = 0;
        for (int i = 0; i < N * K; i++) {
            max_direct = fmax(max_direct, fabs(d[i] - scale * grad[i]));
            const float keep = z[i];
            double Lp, Lm;
            z[i] = keep + 1e-3f;
            const double hp = (double)z[i] - keep;
            nn_distill_ce(z, N, K, a, b, mix, sm, soft, T, alpha, 1.0f, &Lp, NULL, NULL, NULL);
            z[i] = keep - 1e-3f;
            const double hm = keep - (double)z[i];
            nn_distill_ce(z, N, K, a, b, mix, sm, soft, T, alpha, 1.0f, &Lm, NULL, NULL, NULL);
            z[i] = keep;
            const double num = scale * (Lp - Lm) / (hp + hm);
            max_fd = fmax(max_fd, fabs(num - d[i]) / fmax(fabs(num), 1e-3));
        }
        T_CHECKF(max_direct < 1e-6, "T %g alpha %g: gradient off the direct one by %.3g",
                 (double)T, (double)alpha, max_direct);
        T_CHECKF(max_fd < 2e-3, "T %g alpha %g smoothing %g: finite differences off by %.3g",
                 (double)T, (double)alpha, (double)sm, max_fd);
    }
    /* alpha 0 is today's loss, bit for bit. */
    double L0, L1;
    float d0[N * K];
    T_REQUIRE(nn_distill_ce(z, N, K, a, b, mix, 0.1f, soft, 4.0f, 0.0f, 0.5f, &L1, d, NULL,
                            NULL) == PT_OK);
    T_REQUIRE(nn_softmax_ce_smooth(z, N, K, a, b, mix, 0.1f, 0.5f, &L0, d0, NULL, NULL) == PT_OK);
    T_CHECK(L0 == L1 && memcmp(d0, d, sizeof d) == 0);
    /* Refusals: no soft targets, T <= 0, alpha outside [0, 1]. */
    pt_err e;
    T_CHECK(nn_distill_ce(z, N, K, a, b, mix, 0, NULL, 4, 0.5f, 1, &L0, d, NULL, &e) == PT_EUSAGE);
    T_CHECK(nn_distill_ce(z, N, K, a, b, mix, 0, soft, 0, 0.5f, 1, &L0, d, NULL, &e) == PT_EUSAGE);
    T_CHECK(nn_distill_ce(z, N, K, a, b, mix, 0, soft, 4, 1.5f, 1, &L0, d, NULL, &e) == PT_EUSAGE);
}

TEST(distill_temper_is_the_softmax_of_log_p_over_t)
{
    const double p[4] = { 0.7, 0.2, 0.1, 0.0 };
    float out[4];
    tch_temper(p, 4, 1.0, out);
    for (int j = 0; j < 4; j++)
        T_NEAR(out[j], p[j], 1e-7);
    tch_temper(p, 4, 4.0, out);
    /* softmax(log p / 4) = p^(1/4) / sum p^(1/4); 0 stays 0 */
    double s = pow(0.7, 0.25) + pow(0.2, 0.25) + pow(0.1, 0.25);
    for (int j = 0; j < 3; j++)
        T_NEAR(out[j], pow(p[j], 0.25) / s, 1e-7);
    T_CHECK(out[3] == 0.0f);
}
