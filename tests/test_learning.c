/* Tests that catch a learning defect, each against the real code and an independent
 * reference: a whole run learns an easy dataset. */
#include "tests/t.h"

#include "base/util.h"
#include "engine.h"
#include "tests/fixtures.h"

static run_snapshot snap; /* large: keep it off the stack */

static run_state run_to_end(const run_config *c, run_snapshot *s)
{
    eng *g;
    pt_err e;
    if (eng_create(c, &g, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return RUN_FAILED;
    }
    eng_start(g);
    eng_wait(g, -1); /* the runner's alarm ends a hang */
    eng_snapshot_get(g, s);
    eng_destroy(g);
    return s->state;
}

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
    T_REQUIRE(run_to_end(&c, &snap) == RUN_DONE);
    T_EQ_INT(snap.history_n, 20);
    T_EQ_INT(snap.steps_per_epoch, 16);
    const run_epoch *first = &snap.history[0], *last = &snap.history[snap.history_n - 1];
    T_CHECKF(last->val_acc >= 0.95, "validation accuracy %.3f after %d epochs (loss %.3f)",
             last->val_acc, snap.history_n, last->val_loss);
    T_CHECKF(last->val_loss < 0.3, "validation loss %.3f (chance: ln 4 = 1.386)", last->val_loss);
    T_CHECKF(last->train_loss < 0.7 * first->train_loss, "training loss %.3f -> %.3f",
             first->train_loss, last->train_loss);
}
