/* Tests of core/train: schedule, optimizers, metrics, the replica strategy, the
 * samples builder, the run's progress and the checkpoint file. */
#include "tests/t.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/crc32c.h"
#include "base/le.h"
#include "base/rng.h"
#include "base/util.h"
#include "config.h"
#include "data/batch.h"
#include "nn/nn.h"
#include "nn/nn_models.h"
#include "run/checkpoint.h"
#include "train/ema.h"
#include "train/metrics.h"
#include "nn/optim.h"
#include "train/progress.h"
#include "data/feed.h"
#include "train/schedule.h"
#include "infer/infer.h"
#include "pool/rpool.h"

/* ---- schedule ----------------------------------------------------------------- */

TEST(schedule_warmup_then_exponential_matches_the_notebook)
{
    /* The notebook's example: 1000 updates, 1e-7 -> 1e-5 -> 1e-6, warmup 200. */
    sched s;
    sched_init(&s, SCHED_EXP, 1e-7, 1e-5, 1e-6, 0.2, 1.0, 1000);
    T_EQ_INT(s.warmup_steps, 200);
    T_NEAR(sched_lr(&s, 0), 1e-7, 1e-15);
    T_NEAR(sched_lr(&s, 100), 1e-7 + (1e-5 - 1e-7) * 100 / 200, 1e-15);
    T_NEAR(sched_lr(&s, 200), 1e-5, 1e-15);
    /* Halfway through the decay: max * (end/max)^0.5. */
    T_NEAR(sched_lr(&s, 600), 1e-5 * sqrt(0.1), 1e-15);
    T_NEAR(sched_lr(&s, 1000), 1e-6, 1e-15);
    /* Scaling multiplies everything. */
    sched_init(&s, SCHED_EXP, 1e-7, 1e-5, 1e-6, 0.2, 8.0, 1000);
    T_NEAR(sched_lr(&s, 200), 8e-5, 1e-14);
}

TEST(schedule_linear_cosine_and_no_warmup)
{
    sched s;
    sched_init(&s, SCHED_LINEAR, 0, 1.0, 0.1, 0.0, 1.0, 100);
    T_EQ_INT(s.warmup_steps, 0);
    T_NEAR(sched_lr(&s, 0), 1.0, 1e-12);
    T_NEAR(sched_lr(&s, 50), 0.55, 1e-12);
    T_NEAR(sched_lr(&s, 100), 0.1, 1e-12);
    T_NEAR(sched_lr(&s, 150), 0.1, 1e-12); /* clamped after the end */
    sched_init(&s, SCHED_COSINE, 0, 1.0, 0.0, 0.1, 1.0, 110);
    T_EQ_INT(s.warmup_steps, 11);
    T_NEAR(sched_lr(&s, 11), 1.0, 1e-12);
    T_NEAR(sched_lr(&s, 11 + 49 + 1), 0.5 * (1 + cos(M_PI * 50 / 99.0)), 1e-12);
    T_NEAR(sched_lr(&s, 110), 0.0, 1e-12);
    T_EQ_INT(sched_kind_parse("cosine"), SCHED_COSINE);
    T_EQ_INT(sched_kind_parse("exponential"), SCHED_EXP);
    T_EQ_INT(sched_kind_parse("step"), -1);
}

/* ---- optimizers --------------------------------------------------------------- */

TEST(optim_adam_first_steps_match_the_formula)
{
    opt o;
    T_REQUIRE(opt_init(&o, OPT_ADAM, 3, 0, 0) == 0);
    float w[3] = { 1.0f, -2.0f, 0.5f }, g[3] = { 0.1f, -3.0f, 0.0f };
    double lr = 0.01;
    /* Reference in double: Keras' Adam. */
    double m[3] = { 0 }, v[3] = { 0 }, wr[3] = { 1.0, -2.0, 0.5 };
    for (int t = 1; t <= 3; t++) {
        opt_step(&o, w, g, NULL, NULL, 0, 3, lr, t);
        double step = lr * sqrt(1 - pow(0.999, t)) / (1 - pow(0.9, t));
        for (int i = 0; i < 3; i++) {
            m[i] = 0.9 * m[i] + 0.1 * g[i];
            v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
            wr[i] -= step * m[i] / (sqrt(v[i]) + 1e-7);
        }
    }
    for (int i = 0; i < 3; i++)
        T_NEAR(w[i], wr[i], 1e-6);
    /* First step moves each weight by about lr against the gradient's sign. */
    T_CHECK(w[0] < 1.0f && w[1] > -2.0f && w[2] == 0.5f);
    opt_free(&o);
}

TEST(optim_sgd_momentum_mask_and_weight_decay)
{
    opt o;
    T_REQUIRE(opt_init(&o, OPT_SGD, 4, 0.9, 0.5) == 0);
    float w[4] = { 1, 1, 1, 1 }, g[4] = { 1, 1, 1, 1 };
    uint8_t trainable[4] = { 1, 1, 0, 1 }, decay[4] = { 0, 1, 1, 0 };
    opt_step(&o, w, g, trainable, decay, 0, 4, 0.1, 1);
    T_NEAR(w[0], 0.9, 1e-7);             /* v = -0.1 */
    T_NEAR(w[1], 1 - 0.05 - 0.1, 1e-7);  /* decayed by lr * wd * w, then v */
    T_NEAR(w[2], 1.0, 0);                /* frozen */
    opt_step(&o, w, g, trainable, decay, 0, 2, 0.1, 2); /* slice [0, 2) only */
    T_NEAR(w[0], 0.9 - 0.19, 1e-6);      /* v = 0.9 * -0.1 - 0.1 */
    T_NEAR(w[3], 0.9, 1e-7);             /* outside the slice: untouched */
    opt_free(&o);
}

/* ---- metrics ------------------------------------------------------------------ */

/* inf_mean_softmax: the log of the mean of two softmaxes, row by row, safe for large
 * logits. */
TEST(metrics_mean_softmax_averages_probabilities)
{
    /* Row 0: softmax (0.5, 0.5) and (0.75, 0.25): mean (0.625, 0.375). Row 1: equal
     * rows keep their softmax. Row 2: logits far beyond exp's range. */
    float a[6] = { 0.0f, 0.0f, 2.0f, -1.0f, 1000.0f, -1000.0f };
    float b[6] = { logf(3.0f), 0.0f, 2.0f, -1.0f, -1000.0f, 1000.0f };
    inf_mean_softmax(a, b, 3, 2);
    T_NEAR(exp(a[0]), 0.625, 1e-6);
    T_NEAR(exp(a[1]), 0.375, 1e-6);
    double s1 = 1.0 / (1.0 + exp(-3.0));
    T_NEAR(exp(a[2]), s1, 1e-6);
    T_NEAR(exp(a[3]), 1.0 - s1, 1e-6);
    T_NEAR(exp(a[4]), 0.5, 1e-6);
    T_NEAR(exp(a[5]), 0.5, 1e-6);
    /* Symmetric: swapping the views gives the same logits to the last bit. */
    float x[3] = { 0.3f, -2.0f, 4.0f }, y[3] = { 1.5f, 0.25f, -0.5f };
    float x2[3], y2[3];
    memcpy(x2, y, sizeof x2);
    memcpy(y2, x, sizeof y2);
    inf_mean_softmax(x, y, 1, 3);
    inf_mean_softmax(x2, y2, 1, 3);
    for (int c = 0; c < 3; c++)
        T_CHECK(x[c] == x2[c]);
}

TEST(metrics_macro_scores_follow_scikit_learn)
{
    /* y_true = [0 0 1 1 2 2], y_pred = [0 1 1 1 0 0]:
     * class 0: P 1/3 R 1/2; class 1: P 2/3 R 1; class 2: P 0 (never predicted) R 0.
     * sklearn: precision_score(macro) = (1/3 + 2/3 + 0) / 3 = 1/3,
     * recall = (0.5 + 1 + 0) / 3 = 0.5, f1 = (0.4 + 0.8 + 0) / 3 = 0.4. */
    int32_t y[6] = { 0, 0, 1, 1, 2, 2 }, p[6] = { 0, 1, 1, 1, 0, 0 };
    long long cm[16];
    met_confusion(y, p, 6, 4, cm);
    met_summary s;
    double prec[4], rec[4], f1[4];
    long long sup[4];
    met_from_confusion(cm, 4, &s, prec, rec, f1, sup);
    T_NEAR(s.acc, 3.0 / 6, 1e-12);
    T_NEAR(s.precision, 1.0 / 3, 1e-12);
    T_NEAR(s.recall, 0.5, 1e-12);
    T_NEAR(s.f1, 0.4, 1e-12);
    T_NEAR(f1[1], 0.8, 1e-12);
    T_EQ_INT(sup[2], 2);
    /* Class 3 appears nowhere: it does not dilute the macro average (as sklearn's
     * labels=None). A predicted-only class does count. */
    int32_t y2[3] = { 0, 0, 0 }, p2[3] = { 0, 0, 3 };
    met_confusion(y2, p2, 3, 4, cm);
    met_from_confusion(cm, 4, &s, NULL, NULL, NULL, NULL);
    T_NEAR(s.precision, (1.0 + 0.0) / 2, 1e-12);
    T_NEAR(s.recall, (2.0 / 3 + 0.0) / 2, 1e-12);
    T_EQ_INT(cm[0 * 4 + 3], 1);
}

/* ---- strategy ----------------------------------------------------------------- */

/* A BN-free net: exactly the same arithmetic whatever the batch split (batch
 * normalisation's statistics depend on the per-replica batch by definition). */
static nn_model *plain_net(int size, int classes)
{
    nn_model *m = nn_model_new(size, size, 3);
    int x = nn_input(m);
    x = nn_conv2d(m, x, 8, 3, 3, 1, NN_PAD_SAME, 1, 1);
    x = nn_relu(m, x);
    x = nn_maxpool(m, x, 2, 2, 0);
    x = nn_conv2d(m, x, 16, 3, 3, 2, NN_PAD_SAME, 1, 1);
    x = nn_relu(m, x);
    x = nn_gap(m, x);
    x = nn_dropout(m, x, 0.25f);
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

static void fill_batch(batch *b, int from, int n, int classes)
{
    rng r;
    b->n = n;
    for (int i = 0; i < n; i++) {
        rng_derive(&r, 99, (uint64_t)(from + i), 0);
        int lab = (from + i) % classes;
        uint8_t *img = batch_image(b, i);
        for (int j = 0; j < b->h * b->w * 3; j++)
            img[j] = (uint8_t)(rng_below(&r, 128) + (j % 3 == lab % 3 ? 100 : 0));
        b->label[i] = b->label2[i] = lab;
        b->mix[i] = 1.0f;
    }
}

/* Train 3 updates of 16 examples with the given split; returns the weights. */
static float *train_split(int R, int B, int A, size_t *np)
{
    const int size = 12, classes = 4;
    nn_model *m = plain_net(size, classes);
    if (!m)
        return NULL;
    opt o;
    opt_init(&o, OPT_ADAM, nn_param_count(m), 0, 0);
    rpool_config c = { .model = m, .optimizer = &o, .replicas = R, .batch_per_replica = B,
                       .grad_acc = A };
    rpool *s;
    pt_err e;
    if (rpool_new(&c, &s, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return NULL;
    }
    batch *bs[4];
    for (int a = 0; a < A; a++)
        bs[a] = batch_new(R * B, size, size);
    for (int t = 1; t <= 3; t++) {
        for (int a = 0; a < A; a++)
            fill_batch(bs[a], (t - 1) * 16 + a * R * B, R * B, classes);
        rpool_result res;
        if (rpool_update(s, bs, 1e-2, t, 5, &res, NULL, &e) != PT_OK || !res.finite ||
            res.examples != 16) {
            printf("  update failed: %s\n", e.msg);
            return NULL;
        }
    }
    for (int a = 0; a < A; a++)
        batch_free(bs[a]);
    rpool_free(s);
    *np = nn_param_count(m);
    float *w = malloc(*np * sizeof *w);
    memcpy(w, nn_params(m), *np * sizeof *w);
    opt_free(&o);
    nn_model_free(m);
    return w;
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)a[i] * a[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

TEST(strategy_replicas_and_accumulation_give_the_same_weights)
{
    size_t n1, n2, n3;
    float *w1 = train_split(1, 16, 1, &n1);
    float *w2 = train_split(2, 8, 1, &n2);
    float *w3 = train_split(1, 8, 2, &n3);
    T_REQUIRE(w1 && w2 && w3);
    T_REQUIRE(n1 == n2 && n1 == n3);
    double d12 = rel_diff(w1, w2, n1), d13 = rel_diff(w1, w3, n1);
    T_CHECKF(d12 < 1e-4, "R=1,B=16 vs R=2,B=8: relative difference %.3g", d12);
    T_CHECKF(d13 < 1e-4, "R=1,B=16 vs R=1,B=8,A=2: relative difference %.3g", d13);
    /* ... and the training really moved the weights (the comparison means something). */
    size_t n0;
    nn_model *m = plain_net(12, 4);
    n0 = nn_param_count(m);
    T_CHECK(rel_diff(w1, nn_params(m), n0) > 1e-3);
    nn_model_free(m);
    free(w1);
    free(w2);
    free(w3);
}

TEST(strategy_non_finite_loss_skips_the_step)
{
    const int size = 12, classes = 4;
    nn_model *m = plain_net(size, classes);
    T_REQUIRE(m);
    opt o;
    opt_init(&o, OPT_ADAM, nn_param_count(m), 0, 0);
    rpool_config c = { .model = m, .optimizer = &o, .replicas = 2, .batch_per_replica = 4,
                       .grad_acc = 1 };
    rpool *s;
    pt_err e;
    T_REQUIRE(rpool_new(&c, &s, &e) == PT_OK);
    batch *b = batch_new(8, size, size);
    fill_batch(b, 0, 8, classes);
    /* Poison one dense weight: every logit that uses it becomes NaN. */
    size_t np = nn_param_count(m);
    float *before = malloc(np * sizeof *before);
    nn_params(m)[np - classes - 1] = NAN;
    memcpy(before, nn_params(m), np * sizeof *before);
    rpool_result res;
    T_REQUIRE(rpool_update(s, &b, 1e-2, 1, 5, &res, NULL, &e) == PT_OK);
    T_EQ_INT(res.finite, 0);
    T_CHECK(memcmp(before, nn_params(m), (np - classes - 1) * sizeof *before) == 0);
    /* Fixed weight: the next update is finite and moves the weights. */
    nn_params(m)[np - classes - 1] = 0.01f;
    T_REQUIRE(rpool_update(s, &b, 1e-2, 1, 5, &res, NULL, &e) == PT_OK);
    T_EQ_INT(res.finite, 1);
    T_CHECK(memcmp(before, nn_params(m), (np - classes - 1) * sizeof *before) != 0);
    /* Prediction matches a single-context forward. */
    float *logits = malloc(8 * classes * sizeof(float));
    T_REQUIRE(rpool_infer(s, b->images, b->n, logits, &e) == PT_OK);
    nn_ctx *ctx = nn_ctx_new(m, 8, &e);
    float *in = malloc((size_t)8 * size * size * 3 * sizeof(float));
    for (int i = 0; i < 8 * size * size * 3; i++)
        in[i] = b->images[i] / 255.0f;
    const float *ref = nn_forward(ctx, in, 8, 0, 0, 0);
    for (int i = 0; i < 8 * classes; i++)
        T_REQUIRE(fabsf(ref[i] - logits[i]) < 1e-4f * (1 + fabsf(ref[i])));
    nn_ctx_free(ctx);
    free(in);
    free(logits);
    free(before);
    batch_free(b);
    rpool_free(s);
    opt_free(&o);
    nn_model_free(m);
}

TEST(optim_slow_mask_scales_the_backbones_learning_rate)
{
    /* Fine-tuning: where the mask is 1 the step is slow_scale times as large, decay
     * included; elsewhere it is what it was. */
    for (int kind = 0; kind < 2; kind++) {
        opt o;
        T_REQUIRE(opt_init(&o, kind ? OPT_SGD : OPT_ADAM, 4, 0.9, 0.5) == 0);
        float w[4] = { 1, 1, 1, 1 }, g[4] = { 0.5f, 0.5f, -2, -2 };
        uint8_t slow[4] = { 1, 0, 1, 0 }, decay[4] = { 1, 1, 1, 1 };
        opt_set_slow(&o, slow, 0.1, 0);
        opt_step(&o, w, g, NULL, decay, 0, 4, 0.01, 1);
        for (int i = 0; i < 4; i += 2)
            T_NEAR((1.0 - w[i]) / (1.0 - w[i + 1]), 0.1, 1e-4);
        T_CHECK(w[0] != w[1]);
        opt_free(&o);
    }
    /* No mask: every parameter moves alike. */
    opt o;
    T_REQUIRE(opt_init(&o, OPT_ADAM, 2, 0.9, 0.0) == 0);
    float w[2] = { 1, 1 }, g[2] = { 0.5f, 0.5f };
    opt_set_slow(&o, NULL, 0.1, 0);
    opt_step(&o, w, g, NULL, NULL, 0, 2, 0.01, 1);
    T_CHECK(w[0] == w[1] && w[0] < 1.0f);
    opt_free(&o);
}

TEST(optim_unfrozen_parameters_count_adams_steps_from_their_first)
{
    /* --freeze-epochs: the backbone is frozen for t0 updates while the head trains,
     * then joins with zero moments. Its steps must be those of a fresh Adam (times
     * the scale), as with PyTorch's per-parameter step count. Counted from update 1
     * instead, the bias correction is near 1 while v is still near zero: with a
     * steady gradient its 10th step came out 2.2 x too large, its 100th 1.4 x. */
    const long long t0 = 107, k = 20;
    opt o, fresh;
    T_REQUIRE(opt_init(&o, OPT_ADAM, 2, 0.9, 0.0) == 0);
    T_REQUIRE(opt_init(&fresh, OPT_ADAM, 1, 0.9, 0.0) == 0);
    float w[2] = { 1, 1 }, g[2] = { 0.25f, -0.5f };
    uint8_t head_only[2] = { 1, 0 }, backbone[2] = { 0, 1 };
    opt_set_slow(&o, NULL, 1.0, 0);
    for (long long t = 1; t <= t0; t++)
        opt_step(&o, w, g, head_only, NULL, 0, 2, 1e-3, t);
    T_CHECK(w[1] == 1.0f);
    opt_set_slow(&o, backbone, 0.1, t0);
    float head_before = w[0];
    for (long long t = t0 + 1; t <= t0 + k; t++)
        opt_step(&o, w, g, NULL, NULL, 0, 2, 1e-3, t);
    /* The fresh optimizer: the backbone's one parameter from its own step 1. */
    float wf = 1, gf = -0.5f;
    uint8_t all_slow = 1;
    opt_set_slow(&fresh, &all_slow, 0.1, 0);
    for (long long t = 1; t <= k; t++)
        opt_step(&fresh, &wf, &gf, NULL, NULL, 0, 1, 1e-3, t);
    T_CHECK(w[1] == wf);
    /* A steady gradient: every step is about 0.1 x lr. */
    T_NEAR(w[1] - 1.0, (double)k * 1e-4, 1e-6);
    /* The head goes on with its own count: about lr per step. */
    T_NEAR(head_before - w[0], (double)k * 1e-3, 1e-5);
    opt_free(&o);
    opt_free(&fresh);
}

/* ---- samples and progress ----------------------------------------------------- */

TEST(samples_one_builder_for_train_eval_and_preview_pipelines)
{
    run_config cfg;
    cfg_defaults(&cfg);
    cfg.workers = 3;
    cfg.prefetch = 5;
    cfg.shuffle_buffer = 100;
    cfg.deterministic = 0;
    cfg.stop_on_data_error = 1;
    cfg.seed = 7;
    feed *s;
    pt_err e;
    T_REQUIRE(feed_new(&cfg, &s, &e) == PT_OK);
    ds_split split;
    memset(&split, 0, sizeof split);
    pipe_config c;
    feed_pipe_config(s, FEED_TRAIN, &split, 1, 10, 64, 32, &c);
    T_CHECK(c.split == &split && c.labeled == 1 && c.n_classes == 10);
    T_EQ_INT(c.image_w, 64);
    T_EQ_INT(c.batch_size, 32);
    T_CHECK(c.repeat && c.drop_remainder && c.shuffle_shards);
    T_EQ_INT(c.shuffle_buffer, 100);
    T_EQ_INT(c.workers, 3);
    T_EQ_INT(c.prefetch, 5);
    T_EQ_INT(c.deterministic, 0);
    T_EQ_INT(c.stop_on_error, 1);
    T_CHECK(c.seed == 7);
    T_CHECK(c.augment != NULL && c.augment_ctx != NULL); /* the default chain */
    /* Evaluation reads the split once, in file order, whatever the training says. */
    feed_pipe_config(s, FEED_EVAL, &split, 0, 10, 64, 16, &c);
    T_CHECK(!c.repeat && !c.drop_remainder && c.interleave == 1 && c.deterministic == 1);
    T_CHECK(c.labeled == 0 && c.augment == NULL && c.shuffle_buffer <= 1);
    T_EQ_INT(c.workers, 3);
    T_EQ_INT(c.prefetch, 2);
    /* Previews: small and quick, augmented by feed_preview itself. */
    feed_pipe_config(s, FEED_PREVIEW, &split, 1, 10, 64, 8, &c);
    T_EQ_INT(c.workers, 1);
    T_EQ_INT(c.prefetch, 1);
    T_EQ_INT(c.shuffle_buffer, 256);
    T_CHECK(c.augment == NULL && !c.repeat);
    feed_free(s);

    /* "none" is an empty chain: no hook at all. */
    snprintf(cfg.augment, sizeof cfg.augment, "none");
    T_REQUIRE(feed_new(&cfg, &s, &e) == PT_OK);
    feed_pipe_config(s, FEED_TRAIN, &split, 1, 10, 64, 32, &c);
    T_CHECK(c.augment == NULL);
    feed_free(s);
    /* A bad spec is refused with the token named. */
    snprintf(cfg.augment, sizeof cfg.augment, "flip:0.5,wobble:1");
    T_EQ_INT(feed_new(&cfg, &s, &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "wobble") != NULL, "%s", e.msg);
}

TEST(progress_holds_one_epochs_results_and_names_once)
{
    run_config cfg;
    cfg_defaults(&cfg);
    cfg.replicas = 3;
    prg *p = prg_new(&cfg);
    T_REQUIRE(p != NULL);
    run_snapshot *snap = malloc(sizeof *snap);
    T_REQUIRE(snap != NULL);
    prg_snapshot(p, snap);
    T_EQ_INT(snap->state, RUN_IDLE);
    T_EQ_INT(snap->replicas, 3); /* the plan is visible before start */
    T_EQ_INT(snap->update_size, 3 * cfg.batch_per_replica * cfg.grad_acc);
    pt_err e;
    batch_src src;
    run_val_item it;
    int epoch;
    T_EQ_INT(prg_val_example(p, 0, &src, &it, &epoch, &e), PT_ENODATA);
    T_EQ_STR(e.msg, "no validation yet");

    prg_val v = { .epoch = 2, .n = 3, .n_classes = 2 };
    v.labels = malloc(3 * sizeof *v.labels);
    v.preds = malloc(3 * sizeof *v.preds);
    v.conf = malloc(3 * sizeof *v.conf);
    v.loss = malloc(3 * sizeof *v.loss);
    v.src = calloc(3, sizeof *v.src);
    v.confusion = calloc(4, sizeof *v.confusion);
    T_REQUIRE(v.labels && v.preds && v.conf && v.loss && v.src && v.confusion);
    for (int i = 0; i < 3; i++) {
        v.labels[i] = i % 2;
        v.preds[i] = 1;
        v.conf[i] = 0.5f + 0.1f * (float)i;
        v.loss[i] = 0.25f * (float)i;
        v.src[i].record = 10 + i;
    }
    v.confusion[1] = 2; /* true 0, predicted 1 */
    v.confusion[3] = 1;
    prg_set_val(p, &v);
    T_CHECK(v.labels == NULL && v.epoch == 0); /* taken */
    T_REQUIRE(prg_val_example(p, 2, &src, &it, &epoch, &e) == PT_OK);
    T_EQ_INT(epoch, 2);
    T_EQ_INT(src.record, 12);
    T_EQ_INT(it.label, 0);
    T_EQ_INT(it.pred, 1);
    T_NEAR(it.loss, 0.5, 1e-7);
    T_EQ_INT(prg_val_example(p, 3, &src, &it, &epoch, &e), PT_ENODATA);
    T_EQ_STR(e.msg, "validation example 3 is outside 0..2");
    int label[3], pred[3];
    float loss[3];
    T_EQ_INT(prg_val_preds(p, 1, 5, label, pred, NULL, loss), 2);
    T_EQ_INT(label[0], 1);
    T_NEAR(loss[1], 0.5, 1e-7);
    run_val_report rep;
    T_REQUIRE(prg_val_report(p, &rep) == PT_OK);
    T_EQ_INT(rep.epoch, 2);
    T_EQ_INT(rep.support[0], 2);
    T_NEAR(rep.recall[1], 1.0, 1e-12);
    run_val_report_free(&rep);

    char names[2][RUN_NAME_MAX] = { "daisy", "rose" };
    prg_set_names(p, names, 2);
    const char *first = prg_class_name(p, 1);
    T_EQ_STR(first, "rose");
    char other[2][RUN_NAME_MAX] = { "x", "y" };
    prg_set_names(p, other, 2); /* a handed-out name must not dangle */
    T_CHECK(prg_class_name(p, 1) == first);
    T_CHECK(prg_class_name(p, 2) == NULL);
    free(snap);
    prg_free(p);
}

/* The moving average against a double-precision one over 300 updates (the warm-up
 * bound (1 + t) / (10 + t) first, the decay after update 890 would take over: here a
 * decay of 0.9 takes over at update 80), and the swap is an exchange. */
TEST(ema_follows_tensorflows_decay_and_swaps_back)
{
    enum { NP = 7, NB = 3 };
    float p[NP], b[NB];
    double ref[NP + NB];
    rng r;
    rng_seed(&r, 5);
    for (int i = 0; i < NP; i++)
        ref[i] = p[i] = rng_uniform(&r, -1, 1);
    for (int i = 0; i < NB; i++)
        ref[NP + i] = b[i] = rng_uniform(&r, 1, 2);
    ema a;
    pt_err e;
    T_REQUIRE(ema_init(&a, 0.9, p, NP, b, NB, &e) == PT_OK);
    T_CHECK(ema_on(&a));
    T_CHECK(fabs(ema_decay_at(&a, 1) - 2.0 / 11.0) < 1e-12);
    T_CHECK(fabs(ema_decay_at(&a, 79) - 80.0 / 89.0) < 1e-12);
    T_CHECK(ema_decay_at(&a, 81) == 0.9);
    double worst = 0;
    for (long long t = 1; t <= 300; t++) {
        for (int i = 0; i < NP; i++)
            p[i] += (float)(0.05 * (rng_float(&r) - 0.5) + 0.002);
        for (int i = 0; i < NB; i++)
            b[i] += (float)(0.05 * (rng_float(&r) - 0.5));
        ema_update(&a, t, p, b);
        double d = (1.0 + t) / (10.0 + t) < 0.9 ? (1.0 + t) / (10.0 + t) : 0.9;
        for (int i = 0; i < NP + NB; i++) {
            double w = i < NP ? p[i] : b[i - NP];
            ref[i] = d * ref[i] + (1 - d) * w;
            double err = fabs(ref[i] - a.avg[i]);
            worst = err > worst ? err : worst;
        }
    }
    T_CHECKF(worst < 1e-5, "worst %g", worst);
    /* The average lags a drifting weight: it differs from the live weights. */
    T_CHECK(fabs(a.avg[0] - p[0]) > 1e-3);
    float p0[NP], b0[NB];
    memcpy(p0, p, sizeof p);
    memcpy(b0, b, sizeof b);
    ema_swap(&a, p, b);
    for (int i = 0; i < NP; i++)
        T_CHECK(fabs(p[i] - ref[i]) < 1e-5 && a.avg[i] == p0[i]);
    for (int i = 0; i < NB; i++)
        T_CHECK(fabs(b[i] - ref[NP + i]) < 1e-5 && a.avg[NP + i] == b0[i]);
    ema_swap(&a, p, b);
    T_CHECK(memcmp(p, p0, sizeof p) == 0 && memcmp(b, b0, sizeof b) == 0);
    ema_free(&a);
    T_CHECK(!ema_on(&a));
    /* Off: nothing allocated, update and swap leave the weights alone. */
    T_REQUIRE(ema_init(&a, 0, p, NP, b, NB, &e) == PT_OK);
    T_CHECK(!ema_on(&a));
    ema_update(&a, 1, p, b);
    ema_swap(&a, p, b);
    T_CHECK(memcmp(p, p0, sizeof p) == 0);
    ema_free(&a);
}

/* ---- checkpoint ------------------------------------------------------------------ */

/* A small checkpoint with every section, into path. */
static int small_checkpoint(const char *path, pt_err *e)
{
    static const float params[4] = { 1, -2, 3.5f, 0 }, buffers[2] = { 0.25f, 4 };
    static const float m[4] = { 0.1f, 0.2f, 0.3f, 0.4f }, v[4] = { 1e-3f, 2e-3f, 3e-3f, 4e-3f };
    static const long long confusion[4] = { 3, 1, 0, 2 };
    static const char history[] = "opaque rows";
    ckpt_data d = {
        .params = params, .n_params = 4, .buffers = buffers, .n_buffers = 2,
        .opt_m = m, .opt_v = v, .n_opt = 4, .confusion = confusion, .n_classes = 2,
        .history = history, .history_bytes = sizeof history, .config = "epochs = 3\n",
    };
    d.progress.update = 7;
    d.progress.epoch = 1;
    d.progress.elapsed = 2.5;
    return ckpt_save(path, &d, e);
}

TEST(checkpoint_loads_what_was_saved)
{
    char path[4200];
    util_path(path, sizeof path, "%s/checkpoint.ckpt", t_tmpdir());
    pt_err e;
    T_REQUIRE(small_checkpoint(path, &e) == PT_OK);
    float params[4], buffers[2], m[4], v[4];
    ckpt_loaded l;
    T_REQUIRE(ckpt_load(path, params, 4, buffers, 2, m, v, 4, &l, &e) == PT_OK);
    T_CHECK(params[1] == -2 && params[2] == 3.5f && buffers[1] == 4 && m[3] == 0.4f &&
            v[0] == 1e-3f);
    T_EQ_INT(l.progress.update, 7);
    T_CHECK(l.progress.elapsed == 2.5);
    T_CHECK(l.n_classes == 2 && l.confusion && l.confusion[0] == 3 && l.confusion[3] == 2);
    T_CHECK(l.history_bytes == 12 && memcmp(l.history, "opaque rows", 12) == 0);
    T_EQ_STR(l.config, "epochs = 3\n");
    ckpt_free_loaded(&l);
    /* Another model's sizes are refused, naming the section. */
    float more[5];
    T_EQ_INT(ckpt_load(path, more, 5, buffers, 2, m, v, 4, &l, &e), PT_EFORMAT);
    T_CHECKF(strstr(e.msg, "checkpoint section 1 holds 16 bytes, this model needs 20"), "%s", e.msg);
    T_CHECK(!l.confusion && !l.history && !l.config);
}

/* Found by fuzzing (tests/fuzz/regress/checkpoint/): a section that appears twice
 * (the config, the history or the confusion matrix) was allocated again over the
 * first copy, which leaked. A second copy of any section is now damage, reported at
 * its offset, with nothing left allocated. */
TEST(checkpoint_with_a_section_twice_is_refused)
{
    char path[4200];
    util_path(path, sizeof path, "%s/checkpoint.ckpt", t_tmpdir());
    pt_err e;
    T_REQUIRE(small_checkpoint(path, &e) == PT_OK);
    uint8_t *data;
    size_t len;
    T_REQUIRE(util_read_file(path, &data, &len, &e) == PT_OK);
    /* The last section is the config (tag 8): a copy of it goes after it. */
    const char *cfg = "epochs = 3\n";
    size_t sec = 12 + strlen(cfg), last = len - 4 - sec;
    T_REQUIRE(le_get_u32(data + last) == 8);
    uint8_t *twice = malloc(len + sec);
    T_REQUIRE(twice);
    memcpy(twice, data, len - 4);
    memcpy(twice + len - 4, data + last, sec);
    le_put_u32(twice + 12, le_get_u32(data + 12) + 1);
    le_put_u32(twice + len + sec - 4, crc32c(twice, len + sec - 4));
    T_REQUIRE(util_write_file_atomic(path, twice, len + sec, &e) == PT_OK);
    float params[4], buffers[2], m[4], v[4];
    ckpt_loaded l;
    T_EQ_INT(ckpt_load(path, params, 4, buffers, 2, m, v, 4, &l, &e), PT_EFORMAT);
    T_CHECKF(strstr(e.msg, path) && strstr(e.msg, "checkpoint section 8 appears twice") &&
                 e.offset == (long long)(len - 4),
             "%s (offset %lld)", e.msg, e.offset);
    T_CHECK(!l.confusion && !l.history && !l.config);
    free(twice);
    free(data);
}

/* --recompute: the choice auto makes, and a MobileNetV2 trained either way ends with
 * the same weights, the recomputing replicas holding less. */
TEST(strategy_recompute_is_chosen_by_memory_and_changes_no_bits)
{
    const size_t gib = (size_t)1 << 30;
    T_EQ_INT(rpool_recompute_auto(5 * gib, 2, 24 * gib), 1);   /* 512 px, 2 x 16 */
    T_EQ_INT(rpool_recompute_auto(gib, 2, 24 * gib), 0);       /* 224 px */
    T_EQ_INT(rpool_recompute_auto(3 * gib, 2, 24 * gib), 0);   /* exactly a quarter */
    T_EQ_INT(rpool_recompute_auto(5 * gib, 2, 0), 0);          /* memory unknown */
    const int size = 32, classes = 4, R = 2, B = 4;
    float *w[2] = { NULL, NULL };
    size_t bytes[2] = { 0, 0 }, np = 0;
    char note[2][512];
    for (int k = 0; k < 2; k++) {
        pt_err e;
        nn_model *m = nn_build_mobilenetv2(size, size, classes, 0.35f, 0.0f, &e);
        T_REQUIRE(m);
        nn_model_init_params(m, 5);
        np = nn_param_count(m);
        opt o;
        opt_init(&o, OPT_ADAM, np, 0, 0);
        rpool_config c = { .model = m, .optimizer = &o, .replicas = R, .batch_per_replica = B,
                           .grad_acc = 1, .recompute = k };
        rpool *s;
        T_REQUIRE(rpool_new(&c, &s, &e) == PT_OK);
        rpool_memory_note(s, note[k], sizeof note[k]);
        batch *b = batch_new(R * B, size, size);
        for (int t = 1; t <= 2; t++) {
            fill_batch(b, t * R * B, R * B, classes);
            rpool_result res;
            T_REQUIRE(rpool_update(s, &b, 1e-2, t, 5, &res, NULL, &e) == PT_OK);
        }
        batch_free(b);
        bytes[k] = rpool_replica_bytes(s);
        rpool_free(s);
        w[k] = malloc(np * sizeof *w[k]);
        memcpy(w[k], nn_params(m), np * sizeof *w[k]);
        opt_free(&o);
        nn_model_free(m);
    }
    T_CHECK(memcmp(w[0], w[1], np * sizeof *w[0]) == 0);
    T_CHECKF(bytes[1] < bytes[0] * 4 / 5, "keeping %zu bytes, recomputing %zu", bytes[0],
             bytes[1]);
    T_CHECKF(strstr(note[0], "every output kept") && strstr(note[1], "recomputed in the backward"),
             "%s | %s", note[0], note[1]);
    T_CHECK(strstr(note[1], "as --recompute says") != NULL);
    free(w[0]);
    free(w[1]);
}
