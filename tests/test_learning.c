/* Tests that catch a learning defect, each against the real code and an independent
 * reference: a whole run learns an easy dataset; weight decay is the decoupled kind
 * (AdamW / SGDW), on the parameters meant; the replica strategy's gradient is the
 * gradient of the mean loss over the update in absolute terms; dropout drops at its
 * rate and rescales; the initial weights have the intended distributions. */
#include "tests/t.h"

#include <stdlib.h>

#include "base/rng.h"
#include "base/util.h"
#include "data/batch.h"
#include "engine.h"
#include "nn/nn.h"
#include "nn/nn_import.h"
#include "tests/fixtures.h"
#include "run/checkpoint.h"
#include "nn/optim.h"
#include "pool/rpool.h"

static run_snapshot snap; /* large: keep it off the stack */

/* ---- 1. a short run learns the fixture ------------------------------------------- */

/* What it catches: anything that stops the whole path from learning while every
 * unit still "works": a gradient or update of the wrong sign or scale, labels that
 * come apart from their images between the pipeline and the loss, a replica that
 * trains on another's examples, validation that reads the wrong weights or BN
 * statistics, a schedule that leaves the learning rate at 0.
 *
 * The fixture's label is its red level (10 + 20 x label out of 255), in flat images
 * whose green channel varies with the record: easy, but only if the net learns to
 * read red. Two things set the length of the run. Batch normalisation's running
 * statistics move by 1% per update (Keras's momentum 0.99) and validation uses them:
 * below about 250 updates they still lag the batch statistics by more than the
 * classes are apart and validation predicts one class for everything, however well
 * the net trains. And in training, BN over a small per-replica batch normalises the
 * red level away (4 images per replica trained to about 60%). So: 16x16 images (the
 * dataset's own size, image-size 0: the option itself takes 32 or more, at 4x the
 * cost), 2 replicas x 8, 320 updates. Seeds 42, 1042, 2042, 1, 7, 123, 2024 and
 * 99999 all ended at validation accuracy 1.00, loss 0.04 to 0.13, the training loss
 * down to 0.20-0.46 x its first epoch's; about 3 s. */
static const long long LEARN_TC[4] = { 64, 64, 64, 64 };
static const long long LEARN_VC[4] = { 8, 8, 8, 8 };

TEST(learn_small_model_learns_the_fixture_end_to_end)
{
    if (t_slow_mode()) {
        t_skip("320 updates: too slow under valgrind; ASan runs it in full");
        return;
    }
    const char *data = fx_dataset(t_tmpdir(), 4, LEARN_TC, LEARN_VC, 0, 16, 128);
    T_REQUIRE(data);
    char out[4200];
    util_path(out, sizeof out, "%s/run", t_tmpdir());
    run_config c;
    cfg_defaults(&c);
    util_copy(c.data, sizeof c.data, data);
    util_copy(c.out, sizeof c.out, out);
    util_copy(c.model, sizeof c.model, "small");
    c.image_size = 0;           /* the dataset's 16x16 */
    c.epochs = 20;              /* 16 updates each */
    c.replicas = 2;
    c.batch_per_replica = 8;
    c.workers = 1;
    c.shuffle_buffer = 256;
    c.checkpoint_every = 1000;  /* only the last one */
    c.seed = 42;
    snprintf(c.augment, sizeof c.augment, "none");
    /* Everything else is the default: Adam, lr 1e-4 -> 2e-3 -> 1e-4, dropout 0.2. */
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    T_EQ_INT(snap.history_n, 20);
    T_EQ_INT(snap.steps_per_epoch, 16);
    const run_epoch *first = &snap.history[0], *last = &snap.history[snap.history_n - 1];
    T_CHECKF(last->val_acc >= 0.95, "validation accuracy %.3f after %d epochs (loss %.3f)",
             last->val_acc, snap.history_n, last->val_loss);
    T_CHECKF(last->val_loss < 0.3, "validation loss %.3f (chance: ln 4 = 1.386)", last->val_loss);
    T_CHECKF(last->train_loss < 0.7 * first->train_loss, "training loss %.3f -> %.3f",
             first->train_loss, last->train_loss);
}

/* ---- 2. weight decay: decoupled, on conv and dense weights ----------------------- */

/* Reference optimizers in double, straight from the formulas (Keras's Adam with its
 * epsilon outside the bias correction; Keras's SGD momentum v = mu v - lr g, w += v).
 * decoupled: w -= lr * wd * w beside the gradient's step (AdamW, SGDW; what the
 * options' help and the man page promise); otherwise L2: wd * w added to the gradient
 * before the moments see it (PyTorch's Adam(weight_decay) and SGD(weight_decay)). */
typedef struct ref_opt {
    int adam, decoupled;
    double mu, wd;
    double w[8], m[8], v[8];
} ref_opt;

static void ref_step(ref_opt *o, const float *g, const uint8_t *decay, int n, double lr, int t)
{
    for (int i = 0; i < n; i++) {
        double gi = g[i], w = o->w[i];
        if (!o->decoupled && decay[i])
            gi += o->wd * w;
        if (o->decoupled && decay[i])
            w -= lr * o->wd * w;
        if (o->adam) {
            o->m[i] = 0.9 * o->m[i] + 0.1 * gi;
            o->v[i] = 0.999 * o->v[i] + 0.001 * gi * gi;
            double step = lr * sqrt(1.0 - pow(0.999, t)) / (1.0 - pow(0.9, t));
            w -= step * o->m[i] / (sqrt(o->v[i]) + 1e-7);
        } else {
            o->m[i] = o->mu * o->m[i] - lr * gi;
            w += o->m[i];
        }
        o->w[i] = w;
    }
}

/* What it catches: decay added to the gradient (L2: Adam then normalises it away and
 * SGD's momentum accumulates it), decay that ignores the learning rate or uses the
 * first step's, decay applied where the mask is 0 or skipped where it is 1, decay
 * leaking into the moments. 5 steps with a changing learning rate and gradients. */
TEST(learn_weight_decay_is_decoupled_adamw_and_sgdw)
{
    enum { N = 8, STEPS = 5 };
    const double wd = 0.4, lrs[STEPS] = { 0.01, 0.03, 0.02, 0.05, 0.015 };
    const uint8_t decay[N] = { 1, 1, 1, 1, 1, 0, 0, 1 };
    for (int kind = 0; kind < 2; kind++) {
        const int adam = kind == 0;
        const double mu = 0.9;
        opt o;
        T_REQUIRE(opt_init(&o, adam ? OPT_ADAM : OPT_SGD, N, mu, wd) == 0);
        ref_opt dec = { .adam = adam, .decoupled = 1, .mu = mu, .wd = wd };
        ref_opt l2 = { .adam = adam, .decoupled = 0, .mu = mu, .wd = wd };
        ref_opt none = { .adam = adam, .decoupled = 1, .mu = mu, .wd = 0.0 };
        float w[N];
        rng r;
        rng_seed(&r, 5);
        for (int i = 0; i < N; i++) {
            w[i] = rng_uniform(&r, 0.5f, 2.0f) * (i % 2 ? -1.0f : 1.0f);
            dec.w[i] = l2.w[i] = none.w[i] = w[i];
        }
        for (int t = 1; t <= STEPS; t++) {
            float g[N];
            for (int i = 0; i < N; i++)
                g[i] = rng_uniform(&r, 0.05f, 1.0f) * (rng_below(&r, 2) ? -1.0f : 1.0f);
            opt_step(&o, w, g, NULL, decay, 0, N, lrs[t - 1], t);
            ref_step(&dec, g, decay, N, lrs[t - 1], t);
            ref_step(&l2, g, decay, N, lrs[t - 1], t);
            ref_step(&none, g, decay, N, lrs[t - 1], t);
        }
        const char *name = adam ? "adam" : "sgd";
        const double tol = 2e-6; /* float against double over 5 steps */
        double worst_l2 = 0.0, worst_none = 0.0;
        for (int i = 0; i < N; i++) {
            T_CHECKF(fabs(w[i] - dec.w[i]) <= tol * (1 + fabs(dec.w[i])),
                     "%s w[%d] = %.9g, decoupled decay wants %.9g", name, i, w[i], dec.w[i]);
            /* The moments are the gradient's alone. */
            T_CHECKF(fabs(o.m[i] - dec.m[i]) <= tol * (1 + fabs(dec.m[i])),
                     "%s m[%d] = %.9g, wants %.9g", name, i, o.m[i], dec.m[i]);
            if (adam)
                T_CHECKF(fabs(o.v[i] - dec.v[i]) <= tol * (1 + fabs(dec.v[i])),
                         "%s v[%d] = %.9g, wants %.9g", name, i, o.v[i], dec.v[i]);
            if (decay[i]) {
                worst_l2 = fmax(worst_l2, fabs(l2.w[i] - dec.w[i]));
                worst_none = fmax(worst_none, fabs(none.w[i] - dec.w[i]));
            } else {
                /* Undecayed: the three references agree, and so must the optimizer. */
                T_CHECK(l2.w[i] == dec.w[i] && none.w[i] == dec.w[i]);
            }
        }
        /* The comparison can tell the alternatives apart: L2 and no decay both end
         * thousands of tolerances away (0.03 to 0.12 here). */
        T_CHECKF(worst_l2 > 500 * tol, "%s: L2 is only %.3g from decoupled", name, worst_l2);
        T_CHECKF(worst_none > 500 * tol, "%s: no decay is only %.3g from decay", name,
                 worst_none);
        opt_free(&o);
    }
}

/* Trains exactly one update (8 training records, 2 replicas x 4) with the given
 * weight decay and reads the run's last checkpoint: weights, BN statistics, Adam's
 * moments. 0 on success. */
static int one_update_run(const char *data, const char *model, double wd, const char *out,
                          float *params, size_t np, float *bufs, size_t nb, float *m, float *v)
{
    run_config c;
    cfg_defaults(&c);
    util_copy(c.data, sizeof c.data, data);
    util_copy(c.out, sizeof c.out, out);
    util_copy(c.model, sizeof c.model, model);
    c.image_size = 0; /* the dataset's */
    c.epochs = 1;
    c.replicas = 2;
    c.batch_per_replica = 4;
    c.workers = 1;
    c.seed = 42;
    c.lr_start = c.lr_max = c.lr_end = 0.01;
    c.warmup = 0;
    c.weight_decay = wd;
    snprintf(c.augment, sizeof c.augment, "none");
    if (fx_run_to_end(&c, &snap) != RUN_DONE || snap.update != 1) {
        printf("  run %s: %s, %lld updates\n", out, snap.message, snap.update);
        return -1;
    }
    char path[4300];
    util_path(path, sizeof path, "%s/checkpoint.ckpt", out);
    ckpt_loaded l;
    pt_err e;
    if (ckpt_load(path, params, np, bufs, nb, m, v, np, &l, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return -1;
    }
    ckpt_free_loaded(&l);
    return 0;
}

/* The trainer's decay mask, seen from outside: the same one update with and without
 * weight decay. The gradient is computed before the step, so both runs compute the
 * same one bit for bit and the weights can differ only by the decay: by -lr * wd * w0
 * where it applies and not at all elsewhere.
 *
 * What is meant (trainer.c, run.h, the man page): conv and dense weights decay,
 * depthwise and grouped convs included; biases, BN gamma and beta do not (the usual
 * exclusion of 1-D parameters, as in timm and Keras's examples). A parameter whose
 * initial value is 0 cannot show decay, and the built-in nets start their biases and
 * BN betas at 0, so the models are two pretrained ONNX fixtures, whose every kind of
 * parameter starts non-zero: blocks.onnx (convs with and without bias, a depthwise
 * conv, BN) and flat.onnx (a dense layer with its bias, before the new head).
 *
 * What it catches: a mask that decays biases or BN, or misses any conv (depthwise
 * included) or dense weights; a trainer that does not hand the mask (or the decay) to
 * the optimizer; decay that reaches Adam's moments (identical in both runs). */
TEST(learn_weight_decay_mask_is_conv_and_dense_weights_only)
{
    static const long long tc[4] = { 2, 2, 2, 2 };
    const double lr = 0.01, wd = 0.5;
    const struct { const char *path; int size; } models[2] = {
        { "tests/data/import/blocks.onnx", 32 },
        { "tests/data/import/flat.onnx", 8 },  /* its dense layer takes a 4x4x4 map */
    };
    /* Parameters seen non-zero at the start, by kind: each kind must be covered. */
    enum { CONV_W, DW_W, CONV_B, DENSE_W, DENSE_B, BN_G, BN_B, KINDS };
    static const char *const kind_name[KINDS] = { "conv weight", "depthwise weight", "conv bias",
                                                  "dense weight", "dense bias", "BN gamma",
                                                  "BN beta" };
    size_t covered[KINDS] = { 0 };
    for (int k = 0; k < 2; k++) {
        const char *data = fx_dataset(t_tmpdir(), 4, tc, NULL, 0, models[k].size, 8);
        T_REQUIRE(data);
        /* The initial weights, as the trainer imports them. */
        pt_err e;
        nn_import_opts o = { .h = models[k].size, .w = models[k].size, .n_classes = 4,
                             .dropout = 0.2f, .norm = NN_NORM_IMAGENET, .reinit = 0, .seed = 42 };
        nn_import_info info;
        nn_model *m0 = nn_import_onnx_file(models[k].path, &o, &info, &e);
        if (!m0)
            printf("  %s\n", e.msg);
        T_REQUIRE(m0);
        const size_t np = nn_param_count(m0), nb = nn_buffer_count(m0);
        float *p[2], *b[2], *mm[2], *vv[2];
        for (int r = 0; r < 2; r++) {
            p[r] = malloc(np * sizeof(float));
            mm[r] = malloc(np * sizeof(float));
            vv[r] = malloc(np * sizeof(float));
            b[r] = malloc((nb ? nb : 1) * sizeof(float));
            T_REQUIRE(p[r] && mm[r] && vv[r] && b[r]);
            char out[4200];
            util_path(out, sizeof out, "%s/wd%d", t_tmpdir(), r);
            T_REQUIRE(one_update_run(data, models[k].path, r ? wd : 0.0, out, p[r], np, b[r], nb,
                                     mm[r], vv[r]) == 0);
        }
        const float *w0 = nn_params_const(m0);
        uint8_t *want = calloc(np, 1);
        T_REQUIRE(want);
        for (int i = 0; i < nn_node_count(m0); i++) {
            nn_node_info ni;
            T_REQUIRE(nn_node_get(m0, i, &ni) == PT_OK);
            int kw = -1, kb = -1;
            if (ni.op == NN_OP_CONV) {
                kw = ni.groups > 1 ? DW_W : CONV_W;
                kb = CONV_B;
            } else if (ni.op == NN_OP_DENSE) {
                kw = DENSE_W;
                kb = DENSE_B;
            } else if (ni.op == NN_OP_BN) {
                kw = BN_G;
                kb = BN_B;
            }
            if (kw < 0)
                continue;
            if (ni.op != NN_OP_BN)
                memset(want + ni.param_offset, 1, ni.weight_count);
            for (size_t j = 0; j < ni.weight_count + ni.bias_count; j++)
                if (w0[ni.param_offset + j] != 0.0f)
                    covered[j < ni.weight_count ? kw : kb]++;
        }
        const double c = lr * wd;
        size_t bad_decay = 0, bad_still = 0, decayed = 0, first_bad = np;
        for (size_t i = 0; i < np; i++) {
            double d = (double)p[1][i] - p[0][i];
            if (want[i]) {
                decayed += d != 0.0;
                if (fabs(d + c * w0[i]) > 1e-6 * (fabs(w0[i]) + lr)) {
                    bad_decay++;
                    first_bad = first_bad < i ? first_bad : i;
                }
            } else if (d != 0.0) {
                bad_still++;
                first_bad = first_bad < i ? first_bad : i;
            }
        }
        T_CHECKF(bad_decay == 0 && bad_still == 0,
                 "%s: %zu decayed parameters off -lr*wd*w0, %zu undecayed ones moved; first "
                 "at %zu",
                 models[k].path, bad_decay, bad_still, first_bad);
        T_CHECK(decayed > 0);
        T_CHECK(memcmp(mm[0], mm[1], np * sizeof(float)) == 0);
        T_CHECK(memcmp(vv[0], vv[1], np * sizeof(float)) == 0);
        T_CHECK(memcmp(b[0], b[1], nb * sizeof(float)) == 0);
        free(want);
        for (int r = 0; r < 2; r++) {
            free(p[r]);
            free(b[r]);
            free(mm[r]);
            free(vv[r]);
        }
        nn_model_free(m0);
    }
    for (int k = 0; k < KINDS; k++)
        T_CHECKF(covered[k] > 0, "no non-zero %s in the models: its decay would not show",
                 kind_name[k]);
}

/* ---- 3. the replica strategy's gradient, in absolute terms ----------------------- */

/* A two-layer perceptron small enough to differentiate by hand in double:
 * input 4x4x3 -> dense(HID) -> ReLU -> dense(K). No BN, no dropout: the same
 * arithmetic however the update is split. */
enum { MLP_S = 4, MLP_IN = MLP_S * MLP_S * 3, MLP_HID = 6, MLP_K = 5 };

/* The loss of one example (softmax cross-entropy against its smoothed two-label
 * target, as the batch holds it) and, when g is not NULL, scale x its gradient with
 * respect to the parameters added into g. P is laid out as nn_params(): W1 [IN][HID],
 * b1, W2 [HID][K], b2. */
static double mlp_example(const double *P, const uint8_t *img, int la, int lb, double mix,
                          double smooth, double scale, double *g)
{
    const double *W1 = P, *b1 = W1 + MLP_IN * MLP_HID, *W2 = b1 + MLP_HID;
    const double *b2 = W2 + MLP_HID * MLP_K;
    double x[MLP_IN], a[MLP_HID], h[MLP_HID], z[MLP_K], p[MLP_K], t[MLP_K];
    for (int i = 0; i < MLP_IN; i++)
        x[i] = img[i] / 255.0;
    for (int j = 0; j < MLP_HID; j++) {
        a[j] = b1[j];
        for (int i = 0; i < MLP_IN; i++)
            a[j] += x[i] * W1[i * MLP_HID + j];
        h[j] = a[j] > 0 ? a[j] : 0;
    }
    double mx = -1e300;
    for (int k = 0; k < MLP_K; k++) {
        z[k] = b2[k];
        for (int j = 0; j < MLP_HID; j++)
            z[k] += h[j] * W2[j * MLP_K + k];
        mx = fmax(mx, z[k]);
    }
    double s = 0;
    for (int k = 0; k < MLP_K; k++)
        s += exp(z[k] - mx);
    double loss = 0;
    for (int k = 0; k < MLP_K; k++) {
        p[k] = exp(z[k] - mx) / s;
        t[k] = smooth / MLP_K + (1 - smooth) * (mix * (k == la) + (1 - mix) * (k == lb));
        loss -= t[k] * log(p[k]);
    }
    if (!g)
        return loss;
    double *gW1 = g, *gb1 = gW1 + MLP_IN * MLP_HID, *gW2 = gb1 + MLP_HID;
    double *gb2 = gW2 + MLP_HID * MLP_K;
    double dh[MLP_HID] = { 0 };
    for (int k = 0; k < MLP_K; k++) {
        double dz = scale * (p[k] - t[k]); /* the targets sum to 1 */
        gb2[k] += dz;
        for (int j = 0; j < MLP_HID; j++) {
            gW2[j * MLP_K + k] += h[j] * dz;
            dh[j] += W2[j * MLP_K + k] * dz;
        }
    }
    for (int j = 0; j < MLP_HID; j++) {
        double da = a[j] > 0 ? dh[j] : 0;
        gb1[j] += da;
        for (int i = 0; i < MLP_IN; i++)
            gW1[i * MLP_HID + j] += x[i] * da;
    }
    return loss;
}

/* What it catches: a loss normalised by anything but the update's size U = R x B x A
 * (the per-replica batch B, the global batch R x B, nothing), gradients averaged over
 * replicas or micro-batches instead of summed, a replica or micro-batch left out of
 * the reduction or counted twice, mixed and smoothed targets handled wrongly. The
 * strategy's summed gradient is read back through plain SGD (momentum 0, lr 1, no
 * decay): w1 = w0 - g. The reference differentiates the mean loss over the update's
 * 2 x 3 x 3 = 18 examples in double, by hand; finite differences check the reference
 * itself. R, B and A are all different and not 1, so each wrong divisor is off by a
 * factor of at least 2. */
TEST(learn_strategy_gradient_is_that_of_the_mean_loss)
{
    enum { R = 2, B = 3, A = 3, U = R * B * A };
    const float smooth = 0.1f;
    nn_model *m = nn_model_new(MLP_S, MLP_S, 3);
    int x = nn_dense(m, nn_input(m), MLP_HID);
    x = nn_relu(m, x);
    x = nn_dense(m, x, MLP_K);
    pt_err e;
    T_REQUIRE(nn_model_finalize(m, x, &e) == PT_OK);
    nn_model_init_params(m, 17);
    const size_t np = nn_param_count(m);
    T_REQUIRE(np == (size_t)(MLP_IN * MLP_HID + MLP_HID + MLP_HID * MLP_K + MLP_K));
    /* Non-zero biases, so that their gradients are checked through a general point. */
    rng r;
    rng_seed(&r, 3);
    float *P = nn_params(m);
    for (int j = 0; j < MLP_HID; j++)
        P[MLP_IN * MLP_HID + j] = rng_uniform(&r, -0.2f, 0.2f);
    for (int k = 0; k < MLP_K; k++)
        P[np - MLP_K + k] = rng_uniform(&r, -0.3f, 0.3f);
    double *P0 = malloc(np * sizeof *P0), *gref = calloc(np, sizeof *gref);
    T_REQUIRE(P0 && gref);
    for (size_t i = 0; i < np; i++)
        P0[i] = P[i];

    batch *bs[A];
    for (int a = 0; a < A; a++) {
        bs[a] = batch_new(R * B, MLP_S, MLP_S);
        T_REQUIRE(bs[a]);
        bs[a]->n = R * B;
        for (int i = 0; i < R * B; i++) {
            for (int j = 0; j < MLP_IN; j++)
                batch_image(bs[a], i)[j] = (uint8_t)rng_below(&r, 256);
            bs[a]->label[i] = (int32_t)rng_below(&r, MLP_K);
            bs[a]->label2[i] = (int32_t)rng_below(&r, MLP_K);
            bs[a]->mix[i] = i % 3 == 0 ? 1.0f : rng_uniform(&r, 0.3f, 1.0f); /* some mixed */
        }
    }
    /* The reference: the gradient of (1 / U) x the sum of the U examples' losses. */
    double loss_ref = 0;
    for (int a = 0; a < A; a++)
        for (int i = 0; i < R * B; i++)
            loss_ref += mlp_example(P0, batch_image(bs[a], i), bs[a]->label[i], bs[a]->label2[i],
                                    bs[a]->mix[i], smooth, 1.0 / U, gref);
    /* ... which finite differences of the mean loss confirm. */
    double fd_err = 0, gmax = 0;
    for (size_t i = 0; i < np; i++) {
        const double h = 1e-5, keep = P0[i];
        double lp = 0, lm = 0;
        P0[i] = keep + h;
        for (int a = 0; a < A; a++)
            for (int j = 0; j < R * B; j++)
                lp += mlp_example(P0, batch_image(bs[a], j), bs[a]->label[j], bs[a]->label2[j],
                                  bs[a]->mix[j], smooth, 0, NULL);
        P0[i] = keep - h;
        for (int a = 0; a < A; a++)
            for (int j = 0; j < R * B; j++)
                lm += mlp_example(P0, batch_image(bs[a], j), bs[a]->label[j], bs[a]->label2[j],
                                  bs[a]->mix[j], smooth, 0, NULL);
        P0[i] = keep;
        fd_err = fmax(fd_err, fabs((lp - lm) / (2 * h) / U - gref[i]));
        gmax = fmax(gmax, fabs(gref[i]));
    }
    T_REQUIRE(gmax > 1e-2);
    T_CHECKF(fd_err < 1e-6 * gmax, "the reference gradient is off its finite differences by %.3g",
             fd_err);

    opt o;
    T_REQUIRE(opt_init(&o, OPT_SGD, np, 0.0, 0.0) == 0);
    rpool_config sc = { .model = m, .optimizer = &o, .replicas = R, .batch_per_replica = B,
                        .grad_acc = A, .label_smoothing = smooth };
    rpool *s;
    T_REQUIRE(rpool_new(&sc, &s, &e) == PT_OK);
    rpool_result res;
    T_REQUIRE(rpool_update(s, bs, 1.0, 1, 9, &res, NULL, &e) == PT_OK);
    T_CHECK(res.finite);
    T_EQ_INT(res.examples, U);
    T_NEAR(res.loss_sum, loss_ref, 1e-5 * loss_ref);
    double worst = 0, scale_num = 0, scale_den = 0;
    size_t at = 0;
    for (size_t i = 0; i < np; i++) {
        double g = P0[i] - (double)P[i]; /* lr 1, no momentum, no decay */
        double err = fabs(g - gref[i]);
        if (err > worst) {
            worst = err;
            at = i;
        }
        scale_num += g * gref[i];
        scale_den += gref[i] * gref[i];
    }
    /* float forward/backward against double: about 1e-7 of the largest gradient. */
    T_CHECKF(worst < 1e-4 * gmax + 1e-7,
             "gradient %zu: strategy %.9g, mean-loss reference %.9g (largest %.3g); the "
             "strategy's gradient is %.4g x the reference's",
             at, P0[at] - (double)P[at], gref[at], gmax, scale_num / scale_den);
    rpool_free(s);
    opt_free(&o);
    for (int a = 0; a < A; a++)
        batch_free(bs[a]);
    free(P0);
    free(gref);
    nn_model_free(m);
}

/* ---- 4. dropout at rates other than one half ------------------------------------- */

/* What it catches: keep and drop probabilities swapped (invisible at rate 0.5, where
 * every other dropout test runs), kept units scaled by 1 / rate or not at all, an
 * expectation not preserved, a backward that does not use the forward's mask and
 * scale, dropout active in inference. 64 examples x 1024 units per rate: the zero
 * fraction's standard error is 0.0016 at rate 0.2 and 0.8. */
TEST(learn_dropout_drops_at_its_rate_and_rescales)
{
    enum { H = 8, W = 8, C = 16, N = 64, K = 3, LEN = H * W * C };
    const float rates[2] = { 0.2f, 0.8f };
    float *in = malloc((size_t)N * LEN * sizeof *in), *dl = malloc((size_t)N * K * sizeof *dl);
    T_REQUIRE(in && dl);
    rng r;
    rng_seed(&r, 8);
    for (size_t i = 0; i < (size_t)N * LEN; i++)
        in[i] = rng_uniform(&r, 0.5f, 1.5f);
    for (int i = 0; i < N * K; i++)
        dl[i] = rng_uniform(&r, -1.0f, 1.0f);
    for (int k = 0; k < 2; k++) {
        const double rate = rates[k];
        nn_model *m = nn_model_new(H, W, C);
        int drop = nn_dropout(m, nn_input(m), rates[k]);
        int out = nn_dense(m, drop, K);
        T_REQUIRE(nn_model_finalize(m, out, NULL) == PT_OK);
        nn_model_init_params(m, 1);
        nn_model_set_input_grad(m, 1);
        nn_ctx *c = nn_ctx_new(m, N, NULL);
        T_REQUIRE(c);
        T_REQUIRE(nn_forward(c, in, N, 1, 2024, 0) != NULL);
        const float *y = nn_ctx_output(c, drop);
        const double keep = 1.0 / (1.0 - rate);
        size_t zeros = 0, bad_scale = 0;
        double sum_x = 0, sum_y = 0;
        for (size_t i = 0; i < (size_t)N * LEN; i++) {
            sum_x += in[i];
            sum_y += y[i];
            if (y[i] == 0.0f)
                zeros++;
            else if (fabs(y[i] - in[i] * keep) > 1e-6 * fabs(in[i] * keep))
                bad_scale++;
        }
        const double frac = (double)zeros / ((double)N * LEN);
        const double se = sqrt(rate * (1 - rate) / ((double)N * LEN));
        T_CHECKF(fabs(frac - rate) < 5 * se, "rate %.1f: %.4f of the units dropped", rate, frac);
        T_CHECKF(bad_scale == 0, "rate %.1f: %zu kept units not scaled by 1 / (1 - rate)", rate,
                 bad_scale);
        /* The expectation: mean(y) ~ mean(x). Relative standard error of the mean of y
         * is about sqrt(rate / (1 - rate) / units) (0.8% at rate 0.8). */
        const double rel_se = sqrt(rate / (1 - rate) / ((double)N * LEN));
        T_CHECKF(fabs(sum_y / sum_x - 1) < 5 * rel_se, "rate %.1f: mean %.4f x the input's", rate,
                 sum_y / sum_x);
        /* Backward: the input's gradient is the output's gradient through the same mask
         * and scale. dy = dlogits x W^T. */
        nn_zero_grads(c);
        T_REQUIRE(nn_backward(c, dl) == PT_OK);
        const float *gx = nn_ctx_input_grad(c), *Wt = nn_params(m);
        T_REQUIRE(gx);
        double gerr = 0;
        for (int n = 0; n < N; n++)
            for (int j = 0; j < LEN; j++) {
                double dy = 0;
                for (int o = 0; o < K; o++)
                    dy += (double)dl[n * K + o] * Wt[(size_t)j * K + o];
                double mask = y[n * LEN + j] == 0.0f ? 0.0 : keep;
                gerr = fmax(gerr, fabs(gx[n * LEN + j] - dy * mask));
            }
        T_CHECKF(gerr < 1e-5, "rate %.1f: input gradient off the masked one by %.3g", rate, gerr);
        /* Inference: the identity. */
        T_REQUIRE(nn_forward(c, in, N, 0, 2024, 0) != NULL);
        T_CHECK(memcmp(nn_ctx_output(c, drop), in, (size_t)N * LEN * sizeof *in) == 0);
        nn_ctx_free(c);
        nn_model_free(m);
    }
    free(in);
    free(dl);
}

/* ---- 5. the initial weights' distributions --------------------------------------- */

/* Sample moments of n values: mean, standard deviation, kurtosis (m4 / m2^2). */
static void moments(const float *v, size_t n, double scale, double *mean, double *sd, double *kurt)
{
    double s1 = 0, s2 = 0, s4 = 0;
    for (size_t i = 0; i < n; i++)
        s1 += v[i] / scale;
    *mean = s1 / (double)n;
    for (size_t i = 0; i < n; i++) {
        double d = v[i] / scale - *mean;
        s2 += d * d;
        s4 += d * d * d * d;
    }
    s2 /= (double)n;
    *sd = sqrt(s2);
    *kurt = s4 / (double)n / (s2 * s2);
}

/* What it catches: a conv's fan_in that ignores its groups (kh x kw x cin for a
 * depthwise conv, as Keras computes it from the kernel's shape, gives a std sqrt(cin)
 * times too small) or counts cout; He's factor 2 lost; the truncation's std
 * correction dropped (0.88 x the std) or the truncation dropped; uniform or untruncated
 * normal in place of the truncated normal; Glorot's limit with the wrong fans; biases,
 * BN gamma and beta, running mean and variance not at 0, 1, 0, 0 and 1.
 *
 * Default scheme (nn.h, nn_model.c): conv weights truncated normal at two standard
 * deviations with std sqrt(2 / fan_in) after truncation, fan_in = kh x kw x cin /
 * groups (Keras he_normal, with PyTorch's fan_in for grouped convs); dense Glorot
 * uniform, limit sqrt(6 / (fan_in + fan_out)). Each layer's standard deviation is
 * held to 5 standard errors of its sample; all convs' standardised weights pooled
 * (about 30,000) tell the truncated normal's shape by its kurtosis: 2.366 at +-2
 * (uniform 1.8, normal 3). */
TEST(learn_init_matches_he_and_glorot_for_grouped_and_depthwise_convs)
{
    nn_model *m = nn_model_new(16, 16, 8);
    int x = nn_input(m);
    int conv = nn_conv2d(m, x, 32, 3, 3, 1, NN_PAD_SAME, 1, 1);   /* fan_in 72, bias */
    x = nn_relu(m, conv);
    x = nn_conv2d(m, x, 64, 3, 3, 1, NN_PAD_SAME, 8, 0);          /* grouped: fan_in 36 */
    x = nn_batchnorm(m, x);
    x = nn_conv2d(m, x, 128, 5, 5, 2, NN_PAD_SAME, 64, 0);        /* depthwise x2: 25 */
    x = nn_conv2d(m, x, 128, 3, 3, 1, NN_PAD_SAME, 128, 1);       /* depthwise: 9, bias */
    x = nn_batchnorm(m, x);
    x = nn_conv2d_ex(m, x, 96, 1, 3, 1, 1, 0, 1, 0, 1, 2, 0);     /* 1x3, 2 groups: 192 */
    x = nn_conv2d(m, x, 48, 1, 1, 1, 0, 1, 0);                    /* pointwise: 96 */
    x = nn_batchnorm(m, x);
    x = nn_maxpool(m, x, 2, 2, 0);
    x = nn_relu(m, nn_dense(m, x, 64));                           /* 4x4x48 = 768 -> 64 */
    x = nn_relu(m, nn_dense(m, x, 64));                           /* 64 -> 64 */
    x = nn_dense(m, x, 10);                                       /* 64 -> 10 */
    pt_err e;
    T_REQUIRE(nn_model_finalize(m, x, &e) == PT_OK);
    static const double want_fan_in[] = { 72, 36, 25, 9, 192, 96 };
    static const double want_dense[][2] = { { 768, 64 }, { 64, 64 }, { 64, 10 } };
    const size_t np = nn_param_count(m);
    float *pooled = malloc(np * sizeof *pooled);
    T_REQUIRE(pooled);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        nn_model_init_params(m, seed);
        const float *P = nn_params_const(m), *Bf = nn_buffers(m);
        size_t pn = 0;
        int nconv = 0, nbn = 0, ndense = 0;
        for (int i = 0; i < nn_node_count(m); i++) {
            nn_node_info ni;
            T_REQUIRE(nn_node_get(m, i, &ni) == PT_OK);
            const float *w = P + ni.param_offset;
            const size_t n = ni.weight_count;
            size_t nonzero = 0; /* conv and dense biases, BN beta */
            for (size_t j = 0; j < ni.bias_count; j++)
                nonzero += w[n + j] != 0.0f;
            T_CHECKF(nonzero == 0, "node %d (%s): %zu of %zu biases not 0", i, nn_op_name(ni.op),
                     nonzero, ni.bias_count);
            if (ni.op == NN_OP_CONV) {
                T_REQUIRE(nconv < (int)(sizeof want_fan_in / sizeof want_fan_in[0]));
                const double fan_in = want_fan_in[nconv++];
                const double sd_want = sqrt(2.0 / fan_in);
                double mean, sd, kurt, mx = 0;
                moments(w, n, sd_want, &mean, &sd, &kurt);
                for (size_t j = 0; j < n; j++) {
                    mx = fmax(mx, fabs(w[j]) / sd_want);
                    pooled[pn++] = w[j] / (float)sd_want;
                }
                /* The truncated normal's sample std has a standard error of
                 * sd * sqrt((kurtosis - 1) / (4 n)). */
                const double se = sqrt((2.366 - 1) / (4.0 * (double)n));
                T_CHECKF(fabs(sd - 1) < 5 * se,
                         "seed %llu conv node %d (%dx%d, groups %d): std %.4f x sqrt(2 / %g)",
                         (unsigned long long)seed, i, ni.kh, ni.kw, ni.groups, sd, fan_in);
                T_CHECKF(fabs(mean) < 5 / sqrt((double)n), "conv node %d: mean %.4f std", i, mean);
                /* Truncated at 2 standard deviations of the normal before truncation. */
                T_CHECKF(mx <= 2.0 / 0.87962566103423978 * (1 + 1e-6), "conv node %d: %.3f std",
                         i, mx);
                T_CHECKF(n < 1000 || mx > 0.95 * 2.0 / 0.87962566103423978,
                         "conv node %d: largest %.3f std, the truncation is at 2.274", i, mx);
            } else if (ni.op == NN_OP_DENSE) {
                T_REQUIRE(ndense < 3);
                const double fan_in = want_dense[ndense][0], fan_out = want_dense[ndense++][1];
                T_REQUIRE((double)n == fan_in * fan_out && ni.c == (int)fan_out);
                const double lim = sqrt(6.0 / (fan_in + fan_out));
                double mean, sd, kurt, mx = 0;
                moments(w, n, lim, &mean, &sd, &kurt);
                for (size_t j = 0; j < n; j++)
                    mx = fmax(mx, fabs(w[j]) / lim);
                T_CHECKF(mx <= 1.0 && mx > 0.95, "dense node %d: largest %.4f x Glorot's limit", i,
                         mx);
                /* Uniform on [-lim, lim]: std lim / sqrt(3), kurtosis 1.8. */
                const double se = sqrt((1.8 - 1) / (4.0 * (double)n)) / sqrt(3.0);
                T_CHECKF(fabs(sd - 1 / sqrt(3.0)) < 5 * se, "dense node %d: std %.4f x the limit",
                         i, sd);
                T_CHECKF(n < 4000 || fabs(kurt - 1.8) < 0.1, "dense node %d: kurtosis %.3f, "
                         "uniform's is 1.8", i, kurt);
            } else if (ni.op == NN_OP_BN) {
                nbn++;
                int bad = 0;
                for (int j = 0; j < ni.c; j++)
                    bad += w[j] != 1.0f || Bf[ni.buffer_offset + (size_t)j] != 0.0f ||
                           Bf[ni.buffer_offset + (size_t)ni.c + (size_t)j] != 1.0f;
                T_CHECKF(bad == 0, "BN node %d: %d of %d channels not gamma 1, running mean 0, "
                         "running var 1", i, bad, ni.c);
            }
        }
        T_EQ_INT(nconv, 6);
        T_EQ_INT(nbn, 3);
        T_EQ_INT(ndense, 3);
        double mean, sd, kurt;
        moments(pooled, pn, 1.0, &mean, &sd, &kurt);
        T_CHECKF(fabs(kurt - 2.366) < 0.1,
                 "seed %llu: kurtosis %.3f of %zu conv weights; the normal truncated at +-2 has "
                 "2.366 (uniform 1.8, normal 3)",
                 (unsigned long long)seed, kurt, pn);
        T_CHECKF(fabs(sd - 1) < 0.02, "seed %llu: pooled conv std %.4f x He's",
                 (unsigned long long)seed, sd);
    }
    free(pooled);
    nn_model_free(m);
}
