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
#include "config.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "data/pipeline.h"
#include "infer/runmodel.h"
#include "nn/nn.h"
#include "nn/optim.h"
#include "pool/rpool.h"
#include "tests/fixtures.h"
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

/* ---- the replica pool: soft targets slice with the batch ---- */

static nn_model *tiny_net(int size, int classes)
{
    nn_model *m = nn_model_new(size, size, 3);
    int x = nn_input(m);
    x = nn_conv2d(m, x, 8, 3, 3, 2, NN_PAD_SAME, 1, 1);
    x = nn_relu(m, x);
    x = nn_gap(m, x);
    x = nn_dense(m, x, classes);
    pt_err e;
    if (nn_model_finalize(m, x, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        nn_model_free(m);
        return NULL;
    }
    nn_model_init_params(m, 11);
    return m;
}

/* Examples from..from+n: images and labels from their index, mixed pairs, and soft
 * targets of their own (rows summing to 1). */
static void fill_examples(batch *b, float *soft, int from, int n, int k)
{
    b->n = n;
    for (int i = 0; i < n; i++) {
        rng r;
        rng_derive(&r, 7, (uint64_t)(from + i), 0);
        uint8_t *img = batch_image(b, i);
        for (int j = 0; j < b->h * b->w * 3; j++)
            img[j] = (uint8_t)rng_below(&r, 256);
        b->label[i] = (from + i) % k;
        b->label2[i] = (from + i + 1) % k;
        b->mix[i] = (from + i) % 3 ? 1.0f : 0.6f;
        double s = 0;
        for (int c = 0; c < k; c++)
            s += soft[i * k + c] = (float)(rng_double(&r) + 0.05);
        for (int c = 0; c < k; c++)
            soft[i * k + c] = (float)(soft[i * k + c] / s);
    }
    b->soft = soft;
}

/* Two updates of 16 examples split R x B x A; the weights and the reported loss. */
static float *train_distilled(int R, int B, int A, size_t *np, double *loss)
{
    enum { S = 8, K = 3 };
    nn_model *m = tiny_net(S, K);
    if (!m)
        return NULL;
    opt o;
    opt_init(&o, OPT_ADAM, nn_param_count(m), 0, 0);
    rpool_config c = { .model = m, .optimizer = &o, .replicas = R, .batch_per_replica = B,
                       .grad_acc = A, .label_smoothing = 0.1f, .distill_t = 3.0f,
                       .distill_alpha = 0.8f };
    rpool *s;
    pt_err e;
    float *w = NULL;
    batch *bs[2] = { NULL, NULL };
    float soft[2][16 * K];
    *loss = 0;
    if (rpool_new(&c, &s, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        opt_free(&o);
        nn_model_free(m);
        return NULL;
    }
    for (int a = 0; a < A; a++)
        bs[a] = batch_new(R * B, S, S);
    int ok = 1;
    for (int t = 1; ok && t <= 2; t++) {
        for (int a = 0; a < A; a++)
            fill_examples(bs[a], soft[a], (t - 1) * 16 + a * R * B, R * B, K);
        rpool_result res;
        ok = rpool_update(s, bs, 1e-2, t, 5, &res, NULL, &e) == PT_OK && res.finite &&
             res.examples == 16;
        *loss += res.loss_sum;
    }
    if (ok) {
        *np = nn_param_count(m);
        w = malloc(*np * sizeof *w);
        memcpy(w, nn_params(m), *np * sizeof *w);
    }
    for (int a = 0; a < A; a++)
        batch_free(bs[a]);
    rpool_free(s);
    opt_free(&o);
    nn_model_free(m);
    return w;
}

TEST(distill_replicas_and_accumulation_give_the_same_loss_and_weights)
{
    size_t n1 = 0, n2 = 0, n3 = 0;
    double l1, l2, l3;
    float *w1 = train_distilled(1, 16, 1, &n1, &l1);
    float *w2 = train_distilled(2, 8, 1, &n2, &l2);
    float *w3 = train_distilled(2, 4, 2, &n3, &l3);
    T_REQUIRE(w1 && w2 && w3 && n1 == n2 && n1 == n3);
    T_NEAR(l2, l1, 1e-5 * fabs(l1));
    T_NEAR(l3, l1, 1e-5 * fabs(l1));
    double d2 = 0, d3 = 0, moved = 0;
    nn_model *m0 = tiny_net(8, 3);
    T_REQUIRE(m0);
    for (size_t i = 0; i < n1; i++) {
        d2 = fmax(d2, fabs(w1[i] - w2[i]));
        d3 = fmax(d3, fabs(w1[i] - w3[i]));
        moved = fmax(moved, fabs(w1[i] - nn_params(m0)[i]));
    }
    T_CHECKF(d2 < 1e-5 && d3 < 1e-5, "weights differ by %.3g (2 replicas), %.3g (+ accumulation)",
             d2, d3);
    T_CHECKF(moved > 1e-3, "the updates moved nothing (%.3g)", moved);
    nn_model_free(m0);
    free(w1);
    free(w2);
    free(w3);
}

/* ---- distilled runs on the small dataset ---- */

/* A 1-epoch teacher run on fx_small_dataset, made once per test process. */
static const char *teacher_run(void)
{
    static char dir[4200];
    static int made; /* 1 made, -1 failed */
    if (made)
        return made > 0 ? dir : NULL;
    made = -1;
    util_path(dir, sizeof dir, "%s/teacher", t_tmpdir());
    run_config c;
    fx_small_config(&c, dir);
    c.epochs = 1;
    run_snapshot s;
    if (fx_run_to_end(&c, &s) != RUN_DONE) {
        printf("  the teacher run: %s\n", s.message);
        return NULL;
    }
    made = 1;
    return dir;
}

/* The run's epoch's train_loss from its history.json (NAN when it is not there). */
static double history_train_loss(const char *dir, int epoch)
{
    char path[4200];
    util_path(path, sizeof path, "%s/history.json", dir);
    char *text = fx_slurp(path);
    double v = NAN;
    char want[64];
    snprintf(want, sizeof want, "\"epoch\": %d,", epoch);
    const char *at = text ? strstr(text, want) : NULL;
    at = at ? strstr(at, "\"train_loss\": ") : NULL;
    if (at)
        v = strtod(at + strlen("\"train_loss\": "), NULL);
    free(text);
    return v;
}

/* teacher_probs.csv's rows: shard file, record, label, k probabilities. */
typedef struct csv_row {
    char shard[128];
    long long record;
    int label;
    double p[8];
} csv_row;

static int read_teacher_csv(const char *dir, int k, csv_row *rows, int max, char *header,
                            size_t hn)
{
    char path[4200];
    util_path(path, sizeof path, "%s/teacher_probs.csv", dir);
    char *text = fx_slurp(path);
    if (!text)
        return -1;
    int n = 0, head = 1;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (head) {
            if (header)
                util_copy(header, hn, line);
            head = 0;
            continue;
        }
        if (n == max)
            break;
        csv_row *r = &rows[n++];
        char *f = strchr(line, ',');
        if (!f)
            break;
        *f = '\0';
        util_copy(r->shard, sizeof r->shard, line);
        char *end;
        r->record = strtoll(f + 1, &end, 10);
        r->label = (int)strtol(end + 1, &end, 10);
        for (int c = 0; c < k; c++)
            r->p[c] = strtod(end + 1, &end);
    }
    free(text);
    return n;
}

/* The student's logits of every training record in a training-mode forward (batch
 * statistics), as (shard file, record) with them: the run's own weights (lr 0: the
 * initial ones), its images as validation makes them (the same as training's for
 * this 32 px dataset at 32 px, augmentation none). */
static int student_logits(const char *run, int n_max, float *logits, char (*shard)[128],
                          long long *record, int32_t *label)
{
    rm_model m = { 0 };
    pt_err e;
    ds_dataset *ds = NULL;
    int n = -1;
    if (rm_open(run, 0, &m, &e) != PT_OK || ds_open(fx_small_dataset(), 0, &ds, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        rm_close(&m);
        return -1;
    }
    pipe_config pc;
    rm_pipe_config(&m, &pc);
    pc.split = &ds->split[DS_TRAIN];
    pc.labeled = 1;
    pc.n_classes = m.n_classes;
    pc.batch_size = n_max;
    pc.interleave = 1;
    pc.workers = 1;
    pipeline *pl = NULL;
    batch *b = NULL;
    nn_ctx *ctx = NULL;
    float *in = NULL;
    if (pipe_create(&pc, &pl, &e) == PT_OK && pipe_next(pl, &b, &e) == 1 &&
        (ctx = nn_ctx_new(m.net, b->n, &e)) &&
        (in = malloc((size_t)b->n * b->h * b->w * 3 * sizeof *in))) {
        for (size_t i = 0; i < (size_t)b->n * b->h * b->w * 3; i++)
            in[i] = (float)b->images[i] * (1.0f / 255.0f);
        const float *z = nn_forward(ctx, in, b->n, 1, 1, 0);
        if (z) {
            n = b->n;
            memcpy(logits, z, (size_t)n * m.n_classes * sizeof *logits);
            for (int i = 0; i < n; i++) {
                const char *path = ds->split[DS_TRAIN].shards[b->src[i].shard].path;
                const char *slash = strrchr(path, '/');
                util_copy(shard[i], sizeof shard[i], slash ? slash + 1 : path);
                record[i] = b->src[i].record;
                label[i] = b->label[i];
            }
        }
    } else {
        printf("  %s\n", e.msg);
    }
    free(in);
    nn_ctx_free(ctx);
    if (b)
        pipe_release(pl, b);
    pipe_destroy(pl);
    ds_free(ds);
    rm_close(&m);
    return n;
}

/* The small dataset's 70 training images in one update at learning rate 0: the loss
 * the run reports for it is the formula computed here from the student's initial
 * weights' logits and the teacher's cached probabilities. */
/* One update of the small dataset's 70 training images at learning rate 0, augmentation
 * none, dropout 0, no moving average: the update's loss is the loss of the student's
 * initial weights on every record once. */
static void one_update_config(run_config *c, const char *dir, const char *teacher)
{
    fx_small_config(c, dir);
    c->epochs = 1;
    c->replicas = 1;
    c->batch_per_replica = 70;
    c->lr_start = c->lr_max = c->lr_end = 0;
    c->ema = 0;
    c->dropout = 0;
    c->label_smoothing = 0.1;
    /* The one update is every record once only in file order: a shuffle buffer draws
     * across the epoch's end. */
    c->shuffle_buffer = 0;
    snprintf(c->augment, sizeof c->augment, "none");
    util_copy(c->teacher, sizeof c->teacher, teacher);
    c->distill_t = 3;
    c->distill_alpha = 0.7;
}

TEST(distill_run_loss_is_the_formula)
{
    enum { N = 70, K = 4 };
    const char *teacher = teacher_run();
    T_REQUIRE(teacher);
    char dir[4200];
    util_path(dir, sizeof dir, "%s/student", t_tmpdir());
    run_config c;
    one_update_config(&c, dir, teacher);
    run_snapshot s;
    T_REQUIRE(fx_run_to_end(&c, &s) == RUN_DONE);
    T_CHECKF(strstr(s.message, "distilled from ") != NULL, "%s", s.message);
    T_CHECKF(!strcmp(s.distill, "distilling teacher T3 a0.7"), "header: '%s'", s.distill);
    const double reported = history_train_loss(dir, 1);
    T_REQUIRE(isfinite(reported));

    static csv_row rows[N + 1];
    T_REQUIRE(read_teacher_csv(dir, K, rows, N + 1, NULL, 0) == N);
    static float z[N * K];
    static char shard[N][128];
    long long record[N];
    int32_t label[N];
    T_REQUIRE(student_logits(dir, N, z, shard, record, label) == N);
    const double T = 3, alpha = 0.7, sm = 0.1;
    double sum = 0, ce_only = 0;
    for (int i = 0; i < N; i++) {
        const csv_row *r = NULL;
        for (int j = 0; j < N && !r; j++)
            if (!strcmp(rows[j].shard, shard[i]) && rows[j].record == record[i])
                r = &rows[j];
        T_REQUIRE(r && r->label == label[i]);
        /* p_T = p^(1/T) / sum; log q_T and log q from the logits */
        double pt[K], s1 = 0, mz = -INFINITY, e1 = 0, eT = 0;
        for (int j = 0; j < K; j++) {
            s1 += pt[j] = pow(r->p[j], 1 / T);
            mz = fmax(mz, z[i * K + j]);
        }
        for (int j = 0; j < K; j++) {
            e1 += exp(z[i * K + j] - mz);
            eT += exp((z[i * K + j] - mz) / T);
        }
        double kl = 0, ce = 0;
        for (int j = 0; j < K; j++) {
            pt[j] /= s1;
            const double log_q = z[i * K + j] - mz - log(e1);
            const double log_qt = (z[i * K + j] - mz) / T - log(eT);
            if (pt[j] > 0)
                kl += pt[j] * (log(pt[j]) - log_qt);
            ce -= ((j == label[i]) * (1 - sm) + sm / K) * log_q;
        }
        sum += alpha * T * T * kl + (1 - alpha) * ce;
        ce_only += ce;
    }
    const double formula = sum / N;
    printf("  reported %.9g, formula %.9g\n", reported, formula);
    /* float32 forward passes whose batch-norm sums may run in another order: 1e-5 of
     * it (3e-8 seen) */
    T_CHECKF(fabs(reported - formula) <= 1e-5 * formula,
             "the run reports %.9g, the formula gives %.9g", reported, formula);
    /* ... and the teacher's term counts: the labels' loss alone is another number */
    T_CHECKF(fabs(ce_only / N - formula) > 1e-2, "CE %.6g, formula %.6g", ce_only / N,
             formula);
}

/* A distilled run of the small dataset (1 epoch, the quick config, 2 replicas, mixup
 * and grad-acc 2), made once per test process. */
static const char *student_run(void)
{
    static char dir[4200];
    static int made;
    if (made)
        return made > 0 ? dir : NULL;
    made = -1;
    const char *teacher = teacher_run();
    if (!teacher)
        return NULL;
    util_path(dir, sizeof dir, "%s/mixed", t_tmpdir());
    run_config c;
    fx_small_config(&c, dir);
    c.epochs = 1;
    c.grad_acc = 2;
    snprintf(c.augment, sizeof c.augment, "flip:0.5,mixup:0.5,cutmix:0.5");
    util_copy(c.teacher, sizeof c.teacher, teacher);
    run_snapshot s;
    if (fx_run_to_end(&c, &s) != RUN_DONE) {
        printf("  the distilled run: %s\n", s.message);
        return NULL;
    }
    made = 1;
    return dir;
}

/* teacher_probs.csv is `petal-tui predict TEACHER DATA --split train` row by row (its
 * six decimals). */
/* `petal-tui predict MODEL DATA --split train --top 4`'s probabilities of the small
 * dataset's training records, in file order, by class (six decimals): their count, or
 * -1 (said) when predict failed or wrote something else. */
static int predict_train(const char *model, double (*p)[4], int max)
{
    char cmd[12000], *out = NULL;
    util_path(cmd, sizeof cmd, "%s predict '%s' '%s' --split train --top 4 --replicas 1", t_bin(),
              model, fx_small_dataset());
    int n = t_run(cmd, &out) == 0 ? 0 : -1;
    char *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); n >= 0 && line;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "id,", 3) == 0 || strchr(line, ',') == NULL ||
            strncmp(line, "petal-tui", 9) == 0)
            continue;
        /* id,label,class,probability,top2_class,top2_probability,... */
        char *f[16];
        int nf = 0;
        for (char *s2 = NULL, *tok = strtok_r(line, ",", &s2); tok && nf < 16;
             tok = strtok_r(NULL, ",", &s2))
            f[nf++] = tok;
        /* f[1]: the predicted class's index, f[2] its name */
        if (n == max || nf != 10 || atoi(f[1]) != atoi(f[2] + strlen("flower"))) {
            n = -1;
            break;
        }
        for (int t = 0; t < 4; t++)
            p[n][atoi(f[2 + 2 * t] + strlen("flower")) & 3] = strtod(f[3 + 2 * t], NULL);
        n++;
    }
    if (n < 0)
        printf("  %s:\n%s\n", cmd, out);
    free(out);
    return n;
}

/* teacher_probs.csv is `petal-tui predict TEACHER DATA --split train` row by row (its
 * six decimals). */
TEST(distill_teacher_probs_are_predicts_on_the_training_split)
{
    enum { N = 70, K = 4 };
    const char *run = student_run();
    T_REQUIRE(run);
    static csv_row rows[N + 1];
    char header[512];
    T_REQUIRE(read_teacher_csv(run, K, rows, N + 1, header, sizeof header) == N);
    T_EQ_STR(header, "shard_file,record,label,flower00,flower01,flower02,flower03");
    static double p[N + 1][4];
    T_REQUIRE(predict_train(teacher_run(), p, N + 1) == N);
    double worst = 0;
    for (int i = 0; i < N; i++)
        for (int c = 0; c < K; c++)
            worst = fmax(worst, fabs(p[i][c] - rows[i].p[c]));
    T_CHECKF(worst <= 5.1e-7, "predict and teacher_probs.csv differ by %.3g", worst);
}

/* A second teacher of the same classes (another seed), made once. */
static const char *teacher2_run(void)
{
    static char dir[4200];
    static int made;
    if (made)
        return made > 0 ? dir : NULL;
    made = -1;
    util_path(dir, sizeof dir, "%s/teacher2", t_tmpdir());
    run_config c;
    fx_small_config(&c, dir);
    c.epochs = 1;
    c.seed = 7;
    run_snapshot s;
    if (fx_run_to_end(&c, &s) != RUN_DONE) {
        printf("  the second teacher: %s\n", s.message);
        return NULL;
    }
    made = 1;
    return dir;
}

/* An ensemble folder as the teacher: its members' probabilities weighted as
 * ensemble.json says (0.25 and 0.75 here), predict's for each. */
TEST(distill_from_an_ensemble_folder_weighs_its_members)
{
    enum { N = 70, K = 4 };
    const char *a = teacher_run(), *b = teacher2_run();
    T_REQUIRE(a && b);
    char ens_dir[4200], dir[4200], cmd[16000], *out = NULL;
    util_path(ens_dir, sizeof ens_dir, "%s/ens", t_tmpdir());
    util_path(cmd, sizeof cmd, "%s ensemble '%s' '%s' --data '%s' --weights 0.25,0.75 --out '%s'",
              t_bin(), a, b, fx_small_dataset(), ens_dir);
    int rc = t_run(cmd, &out);
    T_CHECKF(rc == 0, "%s:\n%s", cmd, out);
    free(out);
    T_REQUIRE(rc == 0);
    util_path(dir, sizeof dir, "%s/from-ens", t_tmpdir());
    run_config c;
    fx_small_config(&c, dir);
    c.epochs = 1;
    util_copy(c.teacher, sizeof c.teacher, ens_dir);
    run_snapshot s;
    T_REQUIRE(fx_run_to_end(&c, &s) == RUN_DONE);
    T_CHECKF(!strcmp(s.distill, "distilling ens T4 a0.9"), "header: '%s'", s.distill);
    static csv_row rows[N + 1];
    T_REQUIRE(read_teacher_csv(dir, K, rows, N + 1, NULL, 0) == N);
    static double pa[N + 1][4], pb[N + 1][4];
    T_REQUIRE(predict_train(a, pa, N + 1) == N && predict_train(b, pb, N + 1) == N);
    double worst = 0, apart = 0;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < K; k++) {
            worst = fmax(worst, fabs(0.25 * pa[i][k] + 0.75 * pb[i][k] - rows[i].p[k]));
            apart = fmax(apart, fabs(pa[i][k] - pb[i][k]));
        }
    T_CHECKF(worst <= 6e-7, "the weighted mean of predict's and teacher_probs.csv differ by %.3g",
             worst);
    T_CHECKF(apart > 1e-2, "the two teachers agree to %.3g: the weights are not tested", apart);
    char txt[4200], *text;
    util_path(txt, sizeof txt, "%s/teacher.txt", dir);
    T_REQUIRE((text = fx_slurp(txt)) != NULL);
    T_CHECKF(strstr(text, "weight 0.25") && strstr(text, "weight 0.75"), "%s", text);
    free(text);
}

/* Refusals exit 1 with a message: a missing teacher, one of other classes, a file
 * that is not a model, T and alpha out of range. */
TEST(distill_refuses_a_wrong_teacher_and_bad_options)
{
    const char *teacher = teacher_run();
    T_REQUIRE(teacher);
    /* A teacher of 3 classes for the 4-class dataset. */
    static const long long tc[3] = { 8, 8, 8 }, vc[3] = { 2, 2, 2 };
    char other[4200], three[4200];
    util_path(three, sizeof three, "%s/three", t_tmpdir());
    const char *ds3 = fx_dataset(three, 3, tc, vc, 0, 32, 25);
    T_REQUIRE(ds3);
    util_path(other, sizeof other, "%s/three-run", t_tmpdir());
    run_config c;
    fx_small_config(&c, other);
    util_copy(c.data, sizeof c.data, ds3);
    c.epochs = 1;
    run_snapshot s;
    T_REQUIRE(fx_run_to_end(&c, &s) == RUN_DONE);
    char notes[4200];
    util_path(notes, sizeof notes, "%s/config", teacher);
    const struct {
        const char *teacher, *extra, *says;
    } cases[] = {
        { "/nonexistent/teacher", "", "--teacher: no such run folder, .onnx file or ensemble folder" },
        { other, "", "its 3 classes (flower00, flower01, flower02) differ from the 4 of the dataset" },
        { notes, "", "--teacher: not a run folder, an .onnx file or an ensemble folder" },
        { teacher, "--distill-t 0", "distill-t wants a number from 0.05 to 100, not '0'" },
        { teacher, "--distill-alpha 1.5", "distill-alpha wants a number from 0 to 1, not '1.5'" },
        { teacher, "--teacher-view sometimes", "teacher-view wants cached or live" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[16000], out_dir[4200], *out = NULL;
        util_path(out_dir, sizeof out_dir, "%s/refused-%zu", t_tmpdir(), i);
        util_path(cmd, sizeof cmd,
                  "%s --headless --data '%s' --out '%s' --image-size 32 --epochs 1 "
                  "--replicas 1 --workers 1 --teacher '%s' %s",
                  t_bin(), fx_small_dataset(), out_dir, cases[i].teacher, cases[i].extra);
        int rc = t_run(cmd, &out);
        T_CHECKF(rc == 1 && strstr(out, cases[i].says), "case %zu: exit %d, wanted '%s' in:\n%s",
                 i, rc, cases[i].says, out);
        T_CHECKF(!util_is_dir(out_dir), "case %zu left %s", i, out_dir);
        free(out);
    }
}

/* A resumed distilled run reads teacher_probs.csv back (the same file after it), and
 * one given another teacher is refused, its config unchanged. */
TEST(distill_resume_reuses_the_cache_and_refuses_another_teacher)
{
    const char *run = student_run();
    T_REQUIRE(run);
    char csv[4200], *before, *after, cmd[16000], *out = NULL;
    util_path(csv, sizeof csv, "%s/teacher_probs.csv", run);
    T_REQUIRE((before = fx_slurp(csv)) != NULL);
    util_path(cmd, sizeof cmd, "%s --headless --resume '%s' --epochs 2", t_bin(), run);
    int rc = t_run(cmd, &out);
    T_CHECKF(rc == 0 && strstr(out, "read back from the run's teacher_probs.csv") &&
                 !strstr(out, "predicted 70 training images"),
             "exit %d:\n%s", rc, out);
    free(out);
    T_REQUIRE((after = fx_slurp(csv)) != NULL);
    T_CHECK(strcmp(before, after) == 0);
    T_CHECK(isfinite(history_train_loss(run, 2)));
    /* Another teacher: the student of the first test is a run of the same classes. */
    const char *other = teacher2_run();
    T_REQUIRE(other);
    util_path(cmd, sizeof cmd, "%s --headless --resume '%s' --epochs 3 --teacher '%s'", t_bin(),
              run, other);
    rc = t_run(cmd, &out);
    T_CHECKF(rc == 1 && strstr(out, "holds the probabilities of the teacher"), "exit %d:\n%s", rc,
             out);
    free(out);
    char config[4200], *text;
    util_path(config, sizeof config, "%s/config", run);
    T_REQUIRE((text = fx_slurp(config)) != NULL);
    T_CHECKF(!strstr(text, "teacher2"), "the refused teacher went into the config");
    free(text);
    free(before);
    free(after);
}

/* The workbench's header says it distils and from whom, before the start and while
 * the run trains (seen through shared/tools/tui-text, a private tmux). */
TEST(distill_workbench_header_names_the_teacher)
{
    T_NEED_TOOL("tmux");
    char tool[4200];
    util_path(tool, sizeof tool, "%s/../tools/tui-text", t_data(""));
    if (!util_is_file(tool))
        T_NEED_TOOL("tui-text"); /* skipped, saying so, without shared/tools */
    const char *teacher = teacher_run();
    T_REQUIRE(teacher);
    char before[4200], during[4200], out_dir[4200], cmd[20000];
    util_path(before, sizeof before, "%s/before.txt", t_tmpdir());
    util_path(during, sizeof during, "%s/during.txt", t_tmpdir());
    util_path(out_dir, sizeof out_dir, "%s/workbench", t_tmpdir());
    util_path(cmd, sizeof cmd,
              "'%s' --cols 160 --rows 30 --wait 2 --shot '%s' --keys s --sleep 3 --shot '%s' "
              "--keys q -- %s --no-sixel --data '%s' --image-size 32 --epochs 500 --replicas 1 "
              "--workers 1 --teacher '%s' --distill-t 2 --out '%s'",
              tool, before, during, t_bin(), fx_small_dataset(), teacher, out_dir);
    char *out = NULL;
    t_run(cmd, &out);
    free(out);
    char *a = fx_slurp(before), *b = fx_slurp(during);
    T_REQUIRE(a && b);
    const char *want = "| distilling teacher T2 a0.9 ";
    T_CHECKF(strstr(a, want) && strchr(a, '\n') > strstr(a, want), "before the start:\n%s", a);
    T_CHECKF(strstr(b, want) && strchr(b, '\n') > strstr(b, want) && strstr(b, "RUNNING"),
             "while training:\n%s", b);
    free(a);
    free(b);
}

/* --teacher-view live on un-augmented 32 px images at the teacher's 32 px sees what the
 * cache holds: the same one-update loss as the cached view's, and no teacher_probs.csv. */
TEST(distill_live_view_equals_the_cache_when_nothing_is_augmented)
{
    const char *teacher = teacher_run();
    T_REQUIRE(teacher);
    char cached[4200], live[4200];
    util_path(cached, sizeof cached, "%s/cached", t_tmpdir());
    util_path(live, sizeof live, "%s/live", t_tmpdir());
    run_config c;
    run_snapshot s;
    one_update_config(&c, cached, teacher);
    T_REQUIRE(fx_run_to_end(&c, &s) == RUN_DONE);
    one_update_config(&c, live, teacher);
    c.teacher_view = RUN_TEACHER_LIVE;
    T_REQUIRE(fx_run_to_end(&c, &s) == RUN_DONE);
    T_CHECKF(strstr(s.message, "(T 3, alpha 0.7, live)") != NULL, "%s", s.message);
    double a = history_train_loss(cached, 1), b = history_train_loss(live, 1);
    printf("  cached %.9g, live %.9g\n", a, b);
    T_CHECKF(isfinite(a) && fabs(a - b) <= 1e-6 * a, "cached %.9g, live %.9g", a, b);
    char csv[4200];
    util_path(csv, sizeof csv, "%s/teacher_probs.csv", live);
    T_CHECK(!util_is_file(csv));
    /* With mixup the live teacher sees the mixed images: another loss, still finite. */
    util_path(live, sizeof live, "%s/live-mixed", t_tmpdir());
    one_update_config(&c, live, teacher);
    c.teacher_view = RUN_TEACHER_LIVE;
    c.replicas = 2;
    c.batch_per_replica = 35;
    snprintf(c.augment, sizeof c.augment, "mixup:1,flip:0.5");
    T_REQUIRE(fx_run_to_end(&c, &s) == RUN_DONE);
    b = history_train_loss(live, 1);
    T_CHECKF(isfinite(b) && fabs(a - b) > 1e-3 * a, "cached %.9g, live with mixup %.9g", a, b);
}

/* The index of the training shard whose file is named name, or -1. */
static int find_in_split(const ds_dataset *ds, const char *name)
{
    for (int i = 0; i < ds->split[DS_TRAIN].n_shards; i++) {
        const char *p = ds->split[DS_TRAIN].shards[i].path, *slash = strrchr(p, '/');
        if (!strcmp(slash ? slash + 1 : p, name))
            return i;
    }
    return -1;
}

/* tch_fill of a cached teacher: an unmixed example's row is its record's p_T, a mixed
 * one's mix x p_T(a) + (1 - mix) x p_T(b) of its two records; a record the cache has
 * not, or one of another label, is refused. */
TEST(distill_cached_targets_mix_the_two_records_as_the_labels)
{
    enum { N = 70, K = 4 };
    const char *teacher = student_run() ? teacher_run() : NULL;
    T_REQUIRE(teacher);
    static csv_row rows[N + 1];
    T_REQUIRE(read_teacher_csv(student_run(), K, rows, N + 1, NULL, 0) == N);
    ds_dataset *ds = NULL;
    pt_err e;
    T_REQUIRE(ds_open(fx_small_dataset(), 0, &ds, &e) == PT_OK);
    char n0[] = "flower00", n1[] = "flower01", n2[] = "flower02", n3[] = "flower03";
    char *names[K] = { n0, n1, n2, n3 };
    tch_opts o = { .path = teacher, .t = 2, .replicas = 1, .batch = 8, .workers = 1 };
    tch *t = NULL;
    int predicted = 0;
    T_REQUIRE(tch_open(&o, ds, fx_small_dataset(), names, K, &t, &e) == PT_OK);
    T_CHECK(tch_prepare(t, &ds->split[DS_TRAIN], N, NULL, 0, 0, &predicted, &e) == PT_OK &&
            predicted == 1);
    batch *b = batch_new(2, 32, 32);
    T_REQUIRE(b);
    const csv_row *ra = &rows[3], *rb = &rows[40];
    b->n = 2;
    for (int i = 0; i < 2; i++) {
        b->src[i].shard = find_in_split(ds, ra->shard);
        b->src[i].record = ra->record;
        b->label[i] = ra->label;
        b->mix[i] = 1.0f;
        b->src2[i] = b->src[i];
    }
    b->src2[1].shard = find_in_split(ds, rb->shard);
    b->src2[1].record = rb->record;
    b->label2[1] = rb->label;
    b->mix[1] = 0.3f;
    float soft[2 * K];
    T_REQUIRE(tch_fill(t, b, soft, &e) == PT_OK);
    double pa[K], pb[K], sa = 0, sb = 0;
    for (int c = 0; c < K; c++) {
        sa += pa[c] = pow(ra->p[c], 1 / 2.0);
        sb += pb[c] = pow(rb->p[c], 1 / 2.0);
    }
    for (int c = 0; c < K; c++) {
        T_NEAR(soft[c], pa[c] / sa, 2e-6);
        T_NEAR(soft[K + c], 0.3 * pa[c] / sa + 0.7 * pb[c] / sb, 2e-6);
    }
    b->label[0] = (ra->label + 1) % K;
    T_CHECK(tch_fill(t, b, soft, &e) == PT_EUSAGE && strstr(e.msg, "another dataset?"));
    b->label[0] = ra->label;
    b->src[0].record = 100000;
    T_CHECK(tch_fill(t, b, soft, &e) == PT_EUSAGE && strstr(e.msg, "no row"));
    batch_free(b);
    tch_close(t);
    ds_free(ds);
}
