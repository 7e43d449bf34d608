/* The engine end to end on small real datasets: run outputs, determinism, exact
 * resume, pause, non-finite losses, bad data, the headless runner's exit codes. */
#include "tests/t.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "engine.h"
#include "nn/nn_models.h"
#include "run/checkpoint.h"
#include "tests/fixtures.h"


/* Start the run and stop it at an update boundary, as a user's stop would, once its
 * history holds `epochs` epochs and it is `step` updates into the next (or it ended
 * first). The caller checks the state. */
static run_state run_and_stop(const run_config *c, int epochs, long long step, run_snapshot *s)
{
    eng *g;
    pt_err e;
    if (eng_create(c, &g, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return RUN_FAILED;
    }
    eng_start(g);
    for (int i = 0; i < 30000; i++) {
        eng_snapshot_get(g, s);
        if ((s->history_n >= epochs && s->step >= step) || s->state == RUN_DONE ||
            s->state == RUN_FAILED)
            break;
        usleep(1000);
    }
    eng_stop(g);
    eng_wait(g, 120);
    eng_snapshot_get(g, s);
    eng_destroy(g);
    return s->state;
}

static run_snapshot snap; /* large: keep it off the stack */

TEST(engine_run_writes_history_predictions_submission_and_checkpoint)
{
    const char *dir = t_tmpdir();
    char out[4200];
    util_path(out, sizeof out, "%s/run", dir);
    run_config c;
    fx_small_config(&c, out);
    if (t_slow_mode())
        c.epochs = 1; /* under valgrind an update takes seconds */
    T_REQUIRE(fx_small_dataset()[0]);
    T_EQ_INT(fx_run_to_end(&c, &snap), RUN_DONE);
    T_EQ_INT(snap.history_n, c.epochs);
    T_EQ_INT(snap.update_size, 8);
    T_EQ_INT(snap.steps_per_epoch, 70 / 8);
    T_EQ_INT(snap.n_classes, 4);
    T_CHECK(snap.sgemm_peak_gflops > (t_slow_mode() ? 0 : 1));
    T_CHECK(snap.history[1].val_acc >= 0 && snap.history[1].val_acc <= 1);
    T_EQ_INT(snap.label_classes, 4);
    T_EQ_INT(snap.train_counts[0], 30);
    T_EQ_INT(snap.val_counts[3], 2);
    int stamped;
    char *last = fx_log_last_line(out, &stamped);
    T_CHECKF(last && stamped && !strcmp(last, snap.message) && !strncmp(last, "done: ", 6),
             "last line of log.txt: %s", last ? last : "(none)");
    free(last);

    char *h = fx_history_without_timing(out);
    T_REQUIRE(h);
    const char *keys[] = { "\"epoch\": 1", "train_loss", "train_acc", "train_precision",
                           "train_recall", "train_f1", "val_loss", "val_acc", "val_precision",
                           "val_recall", "val_f1" };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        T_CHECKF(strstr(h, keys[k]) != NULL, "history.json lacks %s", keys[k]);
    free(h);
    char path[4300], *txt;
    util_path(path, sizeof path, "cat '%s/history.json'", out);
    T_REQUIRE(t_run(path, &txt) == 0);
    T_CHECK(strstr(txt, "\"train_timing\"") != NULL);
    free(txt);
    /* submission.csv: header and one row per test record, in the test split's order. */
    util_path(path, sizeof path, "cat '%s/submission.csv'", out);
    T_REQUIRE(t_run(path, &txt) == 0);
    T_CHECK(strncmp(txt, "id,label\n", 9) == 0);
    int rows = 0;
    for (char *p = txt; (p = strchr(p, '\n')) != NULL; p++)
        rows++;
    T_EQ_INT(rows, 11);
    free(txt);
    util_path(path, sizeof path, "%s inspect --records 10 '%s/test' | grep -o 'id bytes\\[1\\] = \"[0-9a-f]*\"' | cut -d'\"' -f2 | head -3",
              t_bin(), fx_small_dataset());
    T_REQUIRE(t_run(path, &txt) == 0);
    char expect[64];
    util_fmt(expect, sizeof expect, "%.9s", txt);
    free(txt);
    util_path(path, sizeof path, "sed -n 2p '%s/submission.csv'", out);
    T_REQUIRE(t_run(path, &txt) == 0);
    T_CHECKF(strncmp(txt, expect, 9) == 0, "first submission row %s, first test id %s", txt, expect);
    free(txt);
    const char *files[] = { "config", "checkpoint.ckpt", "valid_labels.json", "valid_preds.jsonl",
                            "test_preds.json", "log.txt" };
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        util_path(path, sizeof path, "%s/%s", out, files[k]);
        T_CHECKF(util_is_file(path), "missing %s", files[k]);
    }
}

TEST(engine_same_seed_gives_identical_history)
{
    if (t_slow_mode()) {
        t_skip("several trainings: too slow under valgrind (ASan runs them in full)");
        return;
    }
    const char *dir = t_tmpdir();
    char a[4200], b[4200];
    util_path(a, sizeof a, "%s/a", dir);
    util_path(b, sizeof b, "%s/b", dir);
    run_config c;
    fx_small_config(&c, a);
    c.oversample = -1;
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    T_CHECK(snap.oversampling);
    fx_small_config(&c, b);
    c.oversample = -1;
    c.workers = 2; /* a different thread count must not matter */
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    char *ha = fx_history_without_timing(a), *hb = fx_history_without_timing(b);
    T_REQUIRE(ha && hb);
    T_CHECKF(strcmp(ha, hb) == 0, "histories differ:\n%s\n---\n%s", ha, hb);
    free(ha);
    free(hb);
}

TEST(engine_stopped_mid_run_and_resumed_ends_with_the_straight_history)
{
    if (t_slow_mode()) {
        t_skip("several trainings: too slow under valgrind (ASan runs them in full)");
        return;
    }
    const char *dir = t_tmpdir();
    char straight[4200], split[4200];
    util_path(straight, sizeof straight, "%s/straight", dir);
    util_path(split, sizeof split, "%s/split", dir);
    run_config c;
    fx_small_config(&c, straight);
    c.epochs = 3;
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    T_CHECKF(!strstr(snap.message, "since the resume") && snap.elapsed_resumed == 0, "%s",
             snap.message);

    /* Stop somewhere in epoch 2 (at an update boundary, as a user's stop would). */
    fx_small_config(&c, split);
    c.epochs = 3;
    T_REQUIRE(run_and_stop(&c, 1, 3, &snap) == RUN_STOPPED);
    T_CHECK(snap.history_n >= 1);

    fx_small_config(&c, "");
    c.epochs = 3;
    util_copy(c.resume, sizeof c.resume, split);
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    T_EQ_INT(snap.history_n, 3);
    /* The resumed run says what this process trained beside the whole: in the
     * end, and in the line of the epoch that spans the resume (only there). */
    T_CHECKF(strstr(snap.message, "s since the resume); val_acc") != NULL, "%s", snap.message);
    T_CHECK(snap.elapsed_resumed > 0 && snap.elapsed_resumed < snap.elapsed);
    char path[4300];
    util_path(path, sizeof path, "%s/log.txt", split);
    uint8_t *text;
    size_t len;
    T_REQUIRE(util_read_file(path, &text, &len, NULL) == PT_OK);
    const char *e2 = strstr((char *)text, "epoch 2/3 - "), *e3 = strstr((char *)text, "epoch 3/3 - ");
    T_CHECKF(e2 && e3 && strstr(e2, "s since the resume) - ") &&
                 strstr(e2, "s since the resume) - ") < e3 && !strstr(e3, "since the resume) - "),
             "%s", (char *)text);
    free(text);
    char *ha = fx_history_without_timing(straight), *hb = fx_history_without_timing(split);
    T_REQUIRE(ha && hb);
    T_CHECKF(strcmp(ha, hb) == 0, "straight and resumed histories differ:\n%s\n---\n%s", ha, hb);
    free(ha);
    free(hb);

    /* TensorBoard: the resumed run added a file beside each of the stopped run's; read
     * in name order they hold the straight run's figures, every update once. */
    const char *subs[2] = { "train", "validation" };
    const char *tags[3] = { "epoch_loss", "epoch_f1_score", "batch_loss" };
    for (int k = 0; k < 2; k++)
        for (int t = 0; t < 3 - k; t++) {
            char a[4300], b[4300];
            util_path(a, sizeof a, "%s/%s", straight, subs[k]);
            util_path(b, sizeof b, "%s/%s", split, subs[k]);
            long long sa[64], sb[64];
            double va[64], vb[64];
            int fa, fb;
            int na = fx_event_scalars(a, tags[t], sa, va, 64, &fa);
            int nb = fx_event_scalars(b, tags[t], sb, vb, 64, &fb);
            T_EQ_INT(fa, 1);
            T_EQ_INT(fb, 2);
            T_EQ_INT(na, t == 2 ? 3 * (70 / 8) : 3);
            T_EQ_INT(nb, na);
            for (int i = 0; i < na && i < nb && i < 64; i++)
                T_CHECKF(sa[i] == sb[i] && va[i] == vb[i], "%s/%s %d: step %lld %.9g vs %lld %.9g",
                         subs[k], tags[t], i, sa[i], va[i], sb[i], vb[i]);
        }
}

/* Two 2-epoch trainings of small_config with the same seed: one changed by change()
 * in dir/changed, one with the defaults in dir/default (their paths into changed and
 * plain, n bytes each). The training losses must be equal to the last digit (the
 * option changes what validation sees, never what trains) and the validation losses
 * must differ. */
static void train_with_and_without(const char *dir, void (*change)(run_config *),
                                   char *changed, char *plain, size_t n)
{
    run_config c;
    run_epoch h[2][2];
    util_path(changed, n, "%s/changed", dir);
    util_path(plain, n, "%s/default", dir);
    for (int k = 0; k < 2; k++) {
        fx_small_config(&c, k ? plain : changed);
        if (!k)
            change(&c);
        T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
        T_REQUIRE(snap.history_n == 2);
        memcpy(h[k], snap.history, sizeof h[k]);
    }
    for (int k = 0; k < 2; k++) {
        T_CHECKF(h[0][k].train_loss == h[1][k].train_loss, "epoch %d: %.9g vs %.9g", k + 1,
                 h[0][k].train_loss, h[1][k].train_loss);
        T_CHECKF(h[0][k].val_loss != h[1][k].val_loss, "epoch %d: %.9g both", k + 1,
                 h[0][k].val_loss);
        T_CHECK(isfinite(h[0][k].val_f1) && h[0][k].val_f1 >= 0 && h[0][k].val_f1 <= 1);
    }
}

static void ema_off(run_config *c)
{
    c->ema = 0;
}

/* --ema changes what validation sees, never what trains: the same seed with and
 * without the average gives the same training losses and different validation ones,
 * and the checkpoint holds the average beside the live weights. */
TEST(engine_ema_validates_the_average_and_checkpoints_it)
{
    if (t_slow_mode()) {
        t_skip("several trainings: too slow under valgrind (ASan runs them in full)");
        return;
    }
    run_config c;
    fx_small_config(&c, t_tmpdir());
    T_CHECK(c.ema == 0.99); /* the default */
    char on[4200], off[4200]; /* the default is on */
    train_with_and_without(t_tmpdir(), ema_off, off, on, sizeof on);
    /* The checkpoint: live weights for training on, the average for what validates. */
    int widths[RUN_MAX_BLOCKS], kinds[RUN_MAX_BLOCKS];
    pt_err e;
    int nw = nn_parse_widths("auto", 32, widths, kinds, &e);
    T_REQUIRE(nw > 0);
    nn_model *m = nn_build_small_widths(32, 32, 4, 0.2f, widths, kinds, nw, NN_SMALL_CONVS_PER_BLOCK, &e);
    T_REQUIRE(m != NULL);
    size_t np = nn_param_count(m), nb = nn_buffer_count(m);
    float *opt_m = malloc(np * sizeof(float)), *opt_v = malloc(np * sizeof(float));
    char path[4300];
    ckpt_loaded l;
    util_path(path, sizeof path, "%s/checkpoint.ckpt", on);
    T_REQUIRE(ckpt_load(path, nn_params(m), np, nn_buffers(m), nb, opt_m, opt_v, np, &l, &e) ==
              PT_OK);
    T_CHECK(l.ema != NULL && l.n_ema == np + nb);
    if (l.ema && l.n_ema == np + nb) {
        size_t differ = 0;
        for (size_t i = 0; i < np; i++)
            differ += l.ema[i] != nn_params(m)[i];
        T_CHECKF(differ > np / 2, "%zu of %zu parameters differ from the average", differ, np);
    }
    ckpt_free_loaded(&l);
    util_path(path, sizeof path, "%s/checkpoint.ckpt", off);
    T_REQUIRE(ckpt_load(path, nn_params(m), np, nn_buffers(m), nb, opt_m, opt_v, np, &l, &e) ==
              PT_OK);
    T_CHECK(l.ema == NULL);
    ckpt_free_loaded(&l);
    free(opt_m);
    free(opt_v);
    nn_model_free(m);
}

static void tta_flip(run_config *c)
{
    c->tta = RUN_TTA_FLIP;
}

/* --tta flip changes what validation sees (the mean of each image's and its mirror's
 * softmax), never what training does. */
TEST(engine_tta_flip_validates_images_and_their_mirrors)
{
    if (t_slow_mode()) {
        t_skip("two trainings: too slow under valgrind (ASan runs them in full)");
        return;
    }
    run_config c;
    fx_small_config(&c, t_tmpdir());
    T_CHECK(c.tta == RUN_TTA_NONE); /* the default */
    char flip[4200], none[4200];
    train_with_and_without(t_tmpdir(), tta_flip, flip, none, sizeof flip);
}

/* The run folder in out says what was built: its log the parameter count, its config
 * each of the lines in want (NULL-terminated). */
static void check_small_run_files(const char *out, int params, const char *const *want)
{
    char path[4300], line[128];
    uint8_t *text;
    size_t len;
    util_path(path, sizeof path, "%s/log.txt", out);
    T_REQUIRE(util_read_file(path, &text, &len, NULL) == PT_OK);
    snprintf(line, sizeof line, "model small: %d parameters", params);
    T_CHECKF(strstr((char *)text, line) != NULL, "no '%s' in\n%s", line, (char *)text);
    free(text);
    util_path(path, sizeof path, "%s/config", out);
    T_REQUIRE(util_read_file(path, &text, &len, NULL) == PT_OK);
    for (int i = 0; want[i]; i++)
        T_CHECKF(strstr((char *)text, want[i]) != NULL, "no '%s' in the config", want[i]);
    free(text);
}

/* --widths, --convs, --init and --bn-momentum reach the net: the parameter count is the one
 * the widths give, the run folder's config keeps them, and a resumed run rebuilds the
 * same net from it (its checkpoint would not load into another). */
TEST(engine_builds_small_from_widths_convs_init_and_bn_momentum_and_resumes_it)
{
    const char *dir = t_tmpdir();
    char out[4200];
    util_path(out, sizeof out, "%s/widths", dir);
    run_config c;
    fx_small_config(&c, out);
    c.epochs = 1;
    T_REQUIRE(cfg_set(&c, "widths", "8,16,16", NULL) == PT_OK);
    T_REQUIRE(cfg_set(&c, "init", "torch", NULL) == PT_OK);
    T_REQUIRE(cfg_set(&c, "bn-momentum", "0.9", NULL) == PT_OK);
    T_REQUIRE(cfg_set(&c, "convs", "2", NULL) == PT_OK);
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    /* Two 3x3 convs per block without bias, each with BN gamma + beta: 3->8, 8->8,
     * 8->16, 16->16, 16->16, 16->16; then dense 16->4 + bias. */
    const int params = 27 * 8 + 16 + 72 * 8 + 16 + 72 * 16 + 32 + 3 * (144 * 16 + 32) + 16 * 4 + 4;
    static const char *const want[] = { "widths = 8,16,16\n", "init = torch\n",
                                        "bn-momentum = 0.9\n", "convs = 2\n", NULL };
    check_small_run_files(out, params, want);
    c.epochs = 2;
    util_copy(c.resume, sizeof c.resume, out);
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    T_EQ_INT(snap.history_n, 2);
    /* A checkpoint of these widths does not load into the default net. */
    fx_small_config(&c, "");
    c.epochs = 3;
    util_copy(c.resume, sizeof c.resume, out);
    T_CHECK(fx_run_to_end(&c, &snap) == RUN_FAILED);
    T_CHECKF(strstr(snap.message, "checkpoint") != NULL, "%s", snap.message);
}

/* --residual yes reaches the net (ResNet basic blocks: two 3x3 convs, and a 1x1
 * shortcut where the channels or the stride change), the run folder's config keeps it,
 * and a resumed run rebuilds the same net from it. */
TEST(engine_builds_small_residual_and_resumes_it)
{
    char out[4200];
    util_path(out, sizeof out, "%s/residual", t_tmpdir());
    run_config c;
    fx_small_config(&c, out);
    c.epochs = 1;
    T_REQUIRE(cfg_set(&c, "widths", "8,16s", NULL) == PT_OK);
    T_REQUIRE(cfg_set(&c, "residual", "yes", NULL) == PT_OK);
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    /* Block 1, 3->8: 3x3 convs 3->8 and 8->8, 1x1 shortcut 3->8, each with BN gamma +
     * beta; block 2, 8->16 at stride 2: the same at 16; dense 16->4 + bias. */
    const int params = 27 * 8 + 72 * 8 + 3 * 8 + 3 * 16 + 72 * 16 + 144 * 16 + 8 * 16 + 3 * 32 +
                       16 * 4 + 4;
    static const char *const want[] = { "residual = yes\n", NULL };
    check_small_run_files(out, params, want);
    c.epochs = 2;
    util_copy(c.resume, sizeof c.resume, out);
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    T_EQ_INT(snap.history_n, 2);
}

TEST(engine_pause_resume_and_stop_from_another_thread)
{
    if (t_slow_mode()) {
        t_skip("several trainings: too slow under valgrind (ASan runs them in full)");
        return;
    }
    const char *dir = t_tmpdir();
    char out[4200];
    util_path(out, sizeof out, "%s/p", dir);
    run_config c;
    fx_small_config(&c, out);
    c.epochs = 50;
    eng *g;
    pt_err e;
    T_REQUIRE(eng_create(&c, &g, &e) == PT_OK);
    eng_snapshot_get(g, &snap);
    T_EQ_INT(snap.state, RUN_IDLE);
    eng_start(g);
    for (double t0 = util_now(); util_now() - t0 < 60;) {
        eng_snapshot_get(g, &snap);
        if (snap.state == RUN_RUNNING && snap.step > 1)
            break;
        usleep(1000);
    }
    T_REQUIRE(snap.state == RUN_RUNNING);
    /* Pausing writes a checkpoint. Waited for with a generous limit: a loaded
     * machine may take long, and how long it takes is a benchmark's business. */
    eng_pause(g);
    for (double t0 = util_now(); util_now() - t0 < 30;) {
        eng_snapshot_get(g, &snap);
        if (snap.state == RUN_PAUSED && snap.checkpoints > 0)
            break;
        usleep(1000);
    }
    T_EQ_INT(snap.state, RUN_PAUSED);
    T_CHECKF(snap.checkpoints > 0, "no checkpoint written on pause");
    /* Paused replicas do nothing, and their figures say so. */
    for (int q = 0; q < snap.n_replicas; q++)
        T_CHECKF(snap.replica[q].images_per_sec == 0 && snap.replica[q].busy_pct == 0,
                 "replica %d paused at %.0f img/s, busy %.0f%%", q,
                 snap.replica[q].images_per_sec, snap.replica[q].busy_pct);
    T_CHECK(snap.n_replicas == 2 && snap.total_images_per_sec == 0);
    long long step = snap.step + (long long)snap.epoch * 1000;
    usleep(200000);
    eng_snapshot_get(g, &snap);
    T_EQ_INT(snap.step + (long long)snap.epoch * 1000, step); /* nothing moves while paused */
    eng_resume(g);
    for (double t0 = util_now(); util_now() - t0 < 30;) {
        eng_snapshot_get(g, &snap);
        if (snap.step + (long long)snap.epoch * 1000 > step)
            break;
        usleep(1000);
    }
    T_CHECK(snap.step + (long long)snap.epoch * 1000 > step);
    eng_stop(g);
    T_CHECK(eng_wait(g, 60));
    eng_snapshot_get(g, &snap);
    T_EQ_INT(snap.state, RUN_STOPPED);
    eng_destroy(g);
}

TEST(engine_non_finite_loss_pauses_naming_the_step_headless_exits_3)
{
    const char *dir = t_tmpdir();
    char cmd[8192], *out;
    util_path(cmd, sizeof cmd,
              "%s --headless --data '%s' --out '%s/nan' --image-size 32 --replicas 2 "
              "--batch-per-replica 4 --epochs 2 --optimizer sgd --momentum 0.9 --lr-start 1e9 "
              "--lr-max 1e9 --lr-end 1e9 --augment none --workers 1",
              t_bin(), fx_small_dataset(), dir);
    int rc = t_run(cmd, &out);
    T_EQ_INT(rc, 3);
    T_CHECKF(strstr(out, "non-finite loss at update") && strstr(out, "(epoch 1, step "),
             "output: %s", out);
    free(out);
    char run[4200];
    util_path(run, sizeof run, "%s/nan", dir);
    int stamped;
    char *last = fx_log_last_line(run, &stamped);
    T_CHECKF(last && stamped && !strncmp(last, "stopped after a non-finite loss at update ", 42),
             "last line of log.txt: %s", last ? last : "(none)");
    free(last);
}

TEST(engine_headless_usage_and_data_errors_exit_codes)
{
    char cmd[8192], *out;
    util_path(cmd, sizeof cmd, "%s --headless --epochs 0", t_bin());
    T_EQ_INT(t_run(cmd, &out), 1);
    T_CHECK(strstr(out, "epochs wants a whole number from 1") != NULL);
    free(out);
    util_path(cmd, sizeof cmd, "%s --headless --model resnet", t_bin());
    T_EQ_INT(t_run(cmd, &out), 1);
    free(out);
    util_path(cmd, sizeof cmd, "%s --headless --data /nonexistent/dir", t_bin());
    T_EQ_INT(t_run(cmd, &out), 2);
    T_CHECK(strstr(out, "/nonexistent/dir") != NULL);
    free(out);
    /* A config file sets options; the command line wins. */
    const char *dir = t_tmpdir();
    char cfg[4200];
    util_path(cfg, sizeof cfg, "%s/cfg", dir);
    FILE *f = fopen(cfg, "w");
    fprintf(f, "# test\nepochs = 1\nbatch-per-replica = 4\nreplicas = 2\nimage-size = 32\n"
               "augment = none\nworkers = 1\nlr-max = 7e-3\n");
    fclose(f);
    util_path(cmd, sizeof cmd, "%s --headless --config '%s' --data '%s' --lr-max 5e-3 --out '%s/r'",
              t_bin(), cfg, fx_small_dataset(), dir);
    int rc = t_run(cmd, &out);
    T_EQ_INT(rc, 0);
    T_CHECKF(strstr(out, "epoch 1/1 - 8 updates") != NULL, "%s", out);
    free(out);
    util_path(cmd, sizeof cmd, "grep -c 'lr-max = 0.005' '%s/r/config'", dir);
    T_EQ_INT(t_run(cmd, &out), 0);
    free(out);
    /* A bad line in the config file names the file and the line. */
    f = fopen(cfg, "w");
    fprintf(f, "epochs = 1\nreplicas: 2\n");
    fclose(f);
    util_path(cmd, sizeof cmd, "%s --headless --config '%s'", t_bin(), cfg);
    T_EQ_INT(t_run(cmd, &out), 1);
    T_CHECK(strstr(out, "line 2") != NULL);
    free(out);
}

/* Starts a headless run of 200 epochs into out_dir with --checkpoint-every 1000 (the
 * maximum), so the first checkpoint due is the one after the last epoch, long after
 * the stop; waits until it is running, sends sig and returns the wait status. */
static int headless_run_stopped_by(int sig, const char *out_dir)
{
    const char *data = fx_small_dataset(); /* here: a child's cache would be lost with it */
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(t_bin(), t_bin(), "--headless", "--data", data, "--out", out_dir,
              "--image-size", "32", "--replicas", "2", "--batch-per-replica", "4", "--epochs",
              "200", "--checkpoint-every", "1000", "--workers", "1", (char *)NULL);
        _exit(127);
    }
    /* Running: the trainer logs the model as the last thing before its first
     * update (a stop from then on comes at an update boundary, with a checkpoint).
     * Waited for with a generous limit, not a fixed sleep. */
    char log[4300];
    util_path(log, sizeof log, "%s/log.txt", out_dir);
    for (double t0 = util_now(); util_now() - t0 < 60;) {
        uint8_t *text = NULL;
        size_t len = 0;
        int running = 0;
        if (util_is_file(log) && util_read_file(log, &text, &len, NULL) == PT_OK) {
            running = len > 0 && strstr((char *)text, " model small: ") != NULL;
            free(text);
        }
        if (running)
            break;
        usleep(50000);
    }
    kill(pid, sig);
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

TEST(engine_headless_sigint_writes_a_checkpoint_and_exits_130)
{
    /* No checkpoint is due during these runs: the only one that can exist is the
     * one the signal makes. */
    T_REQUIRE(fx_small_dataset()[0] != 0);
    const char *dir = t_tmpdir();
    char out_dir[4200], ckpt[4300];
    util_path(out_dir, sizeof out_dir, "%s/sig", dir);
    int st = headless_run_stopped_by(SIGINT, out_dir);
    T_CHECK(WIFEXITED(st));
    T_EQ_INT(WEXITSTATUS(st), 130);
    util_path(ckpt, sizeof ckpt, "%s/checkpoint.ckpt", out_dir);
    T_CHECK(util_is_file(ckpt));
    /* log.txt: every line dated, the last one how the run ended. */
    int stamped;
    char *last = fx_log_last_line(out_dir, &stamped);
    T_CHECKF(last && stamped && !strncmp(last, "stopped at update ", 18) &&
                 strstr(last, "; continue with --resume "),
             "last line of log.txt: %s (every line dated: %d)", last ? last : "(none)", stamped);
    free(last);
    /* SIGHUP (a dropped SSH session) does the same. */
    util_path(out_dir, sizeof out_dir, "%s/hup", dir);
    st = headless_run_stopped_by(SIGHUP, out_dir);
    T_CHECK(WIFEXITED(st));
    T_EQ_INT(WEXITSTATUS(st), 130);
    util_path(ckpt, sizeof ckpt, "%s/checkpoint.ckpt", out_dir);
    T_CHECK(util_is_file(ckpt));
}

TEST(engine_bad_records_are_counted_and_the_run_goes_on)
{
    /* Copy the dataset and damage one training shard's payload. */
    const char *dir = t_tmpdir();
    char cmd[8192], *out;
    util_path(cmd, sizeof cmd, "cp -r '%s' '%s/ds' && f=$(ls '%s'/ds/train/*.tfrec | head -1) && "
                               "printf 'XXXX' | dd of=\"$f\" bs=1 seek=200 conv=notrunc 2>/dev/null",
              fx_small_dataset(), dir, dir);
    T_REQUIRE(t_run(cmd, NULL) == 0);
    util_path(cmd, sizeof cmd,
              "%s --headless --data '%s/ds' --out '%s/r' --image-size 32 --replicas 2 "
              "--batch-per-replica 4 --epochs 1 --workers 1 --augment none",
              t_bin(), dir, dir);
    int rc = t_run(cmd, &out);
    T_EQ_INT(rc, 0);
    T_CHECKF(strstr(out, "data error: ") && strstr(out, ".tfrec: record 0 at byte 0: payload crc"),
             "%s", out);
    free(out);
    util_path(cmd, sizeof cmd,
              "%s --headless --data '%s/ds' --out '%s/r2' --image-size 32 --replicas 2 "
              "--batch-per-replica 4 --epochs 1 --workers 1 --stop-on-data-error",
              t_bin(), dir, dir);
    rc = t_run(cmd, &out);
    T_EQ_INT(rc, 2);
    T_CHECK(strstr(out, "payload crc mismatch") != NULL);
    free(out);
}

TEST(engine_preview_and_validation_inspection)
{
    if (t_slow_mode()) {
        t_skip("several trainings: too slow under valgrind (ASan runs them in full)");
        return;
    }
    const char *dir = t_tmpdir();
    char out[4200];
    util_path(out, sizeof out, "%s/v", dir);
    run_config c;
    fx_small_config(&c, out);
    c.epochs = 1;
    eng *g;
    pt_err e;
    T_REQUIRE(eng_create(&c, &g, &e) == PT_OK);
    /* A preview before the run starts. */
    eng_preview_request(g, 6);
    run_preview p;
    uint64_t seen = 0;
    int got = 0;
    for (double until = util_now() + 30; !got && util_now() < until;) {
        got = eng_preview_get(g, &seen, &p);
        if (!got)
            usleep(2000);
    }
    T_REQUIRE(got);
    T_EQ_INT(p.n, 6);
    T_EQ_INT(p.h, 32);
    T_CHECK(seen == p.generation);
    /* flip:0.5,affine:0.5 on this seeded preview changes at least one of the six. */
    T_CHECK(memcmp(p.original, p.augmented, (size_t)6 * 32 * 32 * 3) != 0);
    for (int i = 0; i < 6; i++)
        T_CHECK(p.label[i] >= 0 && p.label[i] < 4);
    run_preview_free(&p);
    T_EQ_INT(eng_preview_get(g, &seen, &p), 0); /* nothing newer */

    eng_start(g);
    T_REQUIRE(eng_wait(g, 300));
    run_val_report rep;
    T_REQUIRE(eng_val_report_get(g, &rep) == PT_OK);
    T_EQ_INT(rep.epoch, 1);
    T_EQ_INT(rep.n, 16);
    long long sum = 0;
    for (int i = 0; i < 16; i++)
        sum += rep.confusion[i];
    T_EQ_INT(sum, 16);
    T_EQ_INT(rep.support[0], 6);
    run_val_report_free(&rep);
    /* Each example's loss (inspect's top losses): their mean is the epoch's. */
    {
        float loss[16];
        int pred[16];
        float conf[16];
        T_EQ_INT(eng_val_preds(g, 0, 16, NULL, pred, conf, loss), 16);
        run_snapshot *shot = malloc(sizeof *shot);
        T_REQUIRE(shot != NULL);
        eng_snapshot_get(g, shot);
        double mean = 0;
        for (int i = 0; i < 16; i++) {
            T_CHECK(loss[i] >= 0 && isfinite(loss[i]));
            /* -log p(label) >= -log p(pred) = -log conf. */
            T_CHECK(loss[i] >= -logf(conf[i]) - 1e-5f);
            mean += loss[i] / 16.0;
        }
        T_NEAR(mean, shot->history[0].val_loss, 1e-5);
        free(shot);
    }
    run_val_item it;
    /* Images load on the engine's sample thread: the first ask only asks. */
    T_EQ_INT(eng_val_item_get(g, 3, &it, &e), 0);
    int loaded = 0;
    for (double until = util_now() + 60; (loaded = eng_val_item_get(g, 3, &it, &e)) == 0 &&
                                          util_now() < until;)
        usleep(2000);
    T_REQUIRE(loaded == 1);
    T_EQ_INT(it.h, 32);
    T_CHECK(it.label == fx_label_of(it.rgb, 32, 32));
    T_CHECK(it.confidence > 0 && it.confidence <= 1);
    /* Its Grad-CAM (inspect's Enter), made on the sample thread with the run
     * folder's model: the epoch's weights, so the same prediction and confidence. */
    run_explain x;
    T_EQ_INT(eng_explain_get(g, 3, &x, &e), 0);
    int made = 0;
    for (double until = util_now() + 60; (made = eng_explain_get(g, 3, &x, &e)) == 0 &&
                                          util_now() < until;)
        usleep(2000);
    T_REQUIRE(made == 1);
    T_EQ_INT(x.h, 32);
    T_EQ_INT(x.w, 32);
    T_EQ_INT(x.epoch, 1);
    T_EQ_INT(x.label, it.label);
    T_EQ_INT(x.pred, it.pred);
    T_NEAR(x.prob[0], it.confidence, 1e-4);
    T_CHECK(memcmp(x.photo, it.rgb, (size_t)32 * 32 * 3) == 0);
    T_CHECK(memcmp(x.cam[0], x.photo, (size_t)32 * 32 * 3) != 0); /* a map is laid over it */
    T_EQ_INT(x.n_top, 4);
    T_EQ_INT(x.top[0], x.pred);
    T_CHECK(strstr(x.layer, "x") != NULL);
    run_explain_free(&x);
    T_EQ_INT(eng_explain_get(g, 16, &x, &e), PT_ENODATA);
    run_val_item_free(&it);
    T_EQ_INT(eng_val_item_get(g, 16, &it, &e), PT_ENODATA);
    T_EQ_STR(eng_class_name(g, 2), "flower02");
    char line[1200];
    int lines = 0;
    while (eng_log_pop(g, line, sizeof line))
        lines++;
    T_CHECK(lines >= 3);
    eng_destroy(g);
}

TEST(engine_fine_tunes_an_imported_onnx_model_and_resumes_it)
{
    /* A PyTorch-exported net (tests/data/import) as the model: its classifier is
     * replaced by a head for the dataset's 4 classes, it trains, and a resumed run
     * rebuilds it from the file and continues from the checkpoint. */
    const char *dir = t_tmpdir();
    char out[4200];
    util_path(out, sizeof out, "%s/onnx", dir);
    run_config c;
    fx_small_config(&c, out);
    c.epochs = 1;
    util_copy(c.model, sizeof c.model, "tests/data/import/blocks.onnx");
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    T_EQ_STR(snap.model, "blocks");
    T_EQ_INT(snap.n_classes, 4);
    T_EQ_INT(snap.history_n, 1);
    T_CHECK(isfinite(snap.history[0].train_loss) && isfinite(snap.history[0].val_loss));
    char path[4300];
    uint8_t *text;
    size_t len;
    pt_err e;
    util_path(path, sizeof path, "%s/config", out);
    T_REQUIRE(util_read_file(path, &text, &len, &e) == PT_OK);
    T_CHECK(strstr((char *)text, "model = tests/data/import/blocks.onnx\n") != NULL);
    free(text);
    util_path(path, sizeof path, "%s/log.txt", out);
    T_REQUIRE(util_read_file(path, &text, &len, &e) == PT_OK);
    T_CHECKF(strstr((char *)text, "replaced Gemm") && strstr((char *)text, "new head of 4 classes"),
             "%s", (char *)text);
    free(text);
    if (!t_slow_mode()) {
        fx_small_config(&c, "");
        c.epochs = 2;
        util_copy(c.model, sizeof c.model, "tests/data/import/blocks.onnx");
        util_copy(c.resume, sizeof c.resume, out);
        T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
        T_EQ_INT(snap.history_n, 2);
    }

    /* Two phases: the head alone for an epoch, then everything at a tenth of the
     * learning rate for the backbone. */
    util_path(out, sizeof out, "%s/onnx-phases", dir);
    fx_small_config(&c, out);
    c.epochs = 2;
    c.freeze_epochs = 1;
    util_copy(c.model, sizeof c.model, "tests/data/import/blocks.onnx");
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    T_CHECKF(strstr(snap.phase, "backbone lr x0.1") != NULL, "%s", snap.phase);
    util_path(path, sizeof path, "%s/log.txt", out);
    T_REQUIRE(util_read_file(path, &text, &len, &e) == PT_OK);
    T_CHECKF(strstr((char *)text, "epoch 2 on: the whole net trains"), "%s", (char *)text);
    free(text);
    /* Stopped a few updates into the first unfrozen epoch and resumed, the run ends
     * as the straight one did: Adam counts the backbone's steps from where it was
     * unfrozen either way. */
    if (!t_slow_mode()) {
        char phases[4200];
        util_copy(phases, sizeof phases, out);
        util_path(out, sizeof out, "%s/onnx-phases-split", dir);
        fx_small_config(&c, out);
        c.epochs = 2;
        c.freeze_epochs = 1;
        util_copy(c.model, sizeof c.model, "tests/data/import/blocks.onnx");
        T_REQUIRE(run_and_stop(&c, 1, 3, &snap) == RUN_STOPPED);
        util_copy(c.resume, sizeof c.resume, out);
        T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
        char *ha = fx_history_without_timing(phases), *hb = fx_history_without_timing(out);
        T_REQUIRE(ha && hb);
        T_CHECKF(strcmp(ha, hb) == 0, "straight and resumed histories differ:\n%s\n---\n%s", ha,
                 hb);
        free(ha);
        free(hb);
    }

    /* --reinit: the file's architecture with fresh weights; refused where there are
     * no pretrained weights to keep or to freeze. */
    util_path(out, sizeof out, "%s/onnx-reinit", dir);
    fx_small_config(&c, out);
    c.reinit = 1;
    util_copy(c.model, sizeof c.model, "tests/data/import/blocks.onnx");
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_DONE);
    T_CHECK(isfinite(snap.history[0].train_loss));
    util_path(path, sizeof path, "%s/log.txt", out);
    T_REQUIRE(util_read_file(path, &text, &len, &e) == PT_OK);
    T_CHECKF(strstr((char *)text, "every weight initialised afresh"), "%s", (char *)text);
    free(text);
    eng *g;
    c.freeze_epochs = 1;
    T_EQ_INT(eng_create(&c, &g, &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "--freeze-epochs") != NULL, "%s", e.msg);
    fx_small_config(&c, "");
    c.reinit = 1;
    T_EQ_INT(eng_create(&c, &g, &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "applies to an ONNX model") != NULL, "%s", e.msg);

    /* A missing file is refused at once; a graph it cannot use fails the run with
     * the file and node named (this one has a Tanh). */
    fx_small_config(&c, "");
    util_copy(c.model, sizeof c.model, "tests/data/import/missing.onnx");
    T_EQ_INT(eng_create(&c, &g, &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "missing.onnx") != NULL, "%s", e.msg);
    util_path(out, sizeof out, "%s/onnx-bad", dir);
    fx_small_config(&c, out);
    util_copy(c.model, sizeof c.model, "tests/data/import/unsupported.onnx");
    T_REQUIRE(fx_run_to_end(&c, &snap) == RUN_FAILED);
    T_CHECKF(strstr(snap.message, "unsupported.onnx") && strstr(snap.message, "(Tanh)"),
             "%s", snap.message);
}

/* A file with these contents at dir/name (made with its folders). */
static int put_file(const char *dir, const char *name, const char *text)
{
    char path[4200];
    if (util_path(path, sizeof path, "%s/%s", dir, name) != 0)
        return -1;
    char *slash = strrchr(path, '/');
    *slash = '\0';
    if (util_mkdirs(path, NULL) != PT_OK)
        return -1;
    *slash = '/';
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -1;
}

/* What eng_create() and eng_check_run_folder() refuse before a run, and what they
 * accept with a warning. No run is started. */
TEST(engine_refuses_empty_folders_and_unusable_run_folders_before_a_run)
{
    const char *dir = t_tmpdir();
    char path[4200];
    run_config c;
    eng *g;
    pt_err e;
    /* A folder without a dataset. */
    fx_small_config(&c, "");
    util_path(c.data, sizeof c.data, "%s/empty", dir);
    T_REQUIRE(util_mkdirs(c.data, NULL) == PT_OK);
    T_EQ_INT(eng_create(&c, &g, &e), PT_ENODATA);
    T_CHECKF(strstr(e.msg, "/empty: no dataset here") != NULL, "%s", e.msg);
    /* Run folders: under a file, holding a run, and ones that will do. */
    T_REQUIRE(put_file(dir, "file", "") == 0);
    util_path(path, sizeof path, "%s/file/run", dir);
    fx_small_config(&c, path);
    T_EQ_INT(eng_check_run_folder(&c, &e), PT_EIO);
    T_CHECKF(strstr(e.msg, "--out ") && strstr(e.msg, "/file/run: cannot create the run folder: ") &&
                 strstr(e.msg, "/file: not a folder"),
             "%s", e.msg);
    T_REQUIRE(put_file(dir, "held/checkpoint.ckpt", "x") == 0);
    util_path(path, sizeof path, "%s/held", dir);
    fx_small_config(&c, path);
    T_EQ_INT(eng_check_run_folder(&c, &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "/held: holds a run already") != NULL, "%s", e.msg);
    util_path(path, sizeof path, "%s/new/deeper/run", dir);
    fx_small_config(&c, path);
    T_EQ_INT(eng_check_run_folder(&c, &e), PT_OK);
    T_CHECK(!util_is_dir(path)); /* only looked */
    /* A resumed run writes into its folder: one that is a file is refused. */
    fx_small_config(&c, "");
    util_path(c.resume, sizeof c.resume, "%s/file", dir);
    T_EQ_INT(eng_check_run_folder(&c, &e), PT_EIO);
    T_CHECKF(strstr(e.msg, "--resume ") && strstr(e.msg, "/file: not a folder"), "%s", e.msg);
}

TEST(engine_warns_of_an_image_size_that_upsamples_the_shards)
{
    static const struct {
        int data; /* 0: the demo's 128-px shards (not made for this); 1: the 32-px fixture */
        int size;
        const char *warning;
    } cases[] = {
        { 0, 512, "--image-size 512 upsamples the 128 px shards: 16x the compute per image for "
                  "no more detail" },
        { 0, 160, "--image-size 160 upsamples the 128 px shards: 1.56x the compute" },
        { 0, 128, "" }, /* the shards' own size */
        { 0, 77, "" },  /* smaller: decoded at 5/8 scale and resized down */
        { 0, 0, "" },   /* the dataset's */
        { 1, 48, "--image-size 48 upsamples the 32 px shards: 2.25x the compute" },
        { 1, 32, "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_config c;
        fx_small_config(&c, "");
        if (!cases[i].data)
            c.data[0] = '\0';
        c.image_size = cases[i].size;
        eng *g;
        pt_err e;
        T_REQUIRE(eng_create(&c, &g, &e) == PT_OK);
        const char *w = eng_warnings(g);
        if (cases[i].warning[0])
            T_CHECKF(strstr(w, cases[i].warning) == w && !strchr(w, '\n'), "%d: \"%s\"",
                     cases[i].size, w);
        else
            T_CHECKF(w[0] == '\0', "%d: \"%s\"", cases[i].size, w);
        eng_destroy(g);
    }
}

/* A stop while a large model's memory is first touched (gigabytes: seconds to a
 * minute) lands there, not after it, and a new run stopped before its first update
 * leaves no run folder behind (issue 30, defect 2). */
TEST(engine_a_stop_while_allocating_lands_there_and_keeps_no_folder)
{
    run_config c;
    char out[4200];
    util_path(out, sizeof out, "%s/stopped-early", t_tmpdir());
    fx_small_config(&c, out);
    util_copy(c.model, sizeof c.model, "mobilenetv2");
    c.image_size = 320;
    /* Two replicas: their contexts are built at once, one on a thread of its own, and
     * the stop must reach both. */
    c.replicas = 2;
    c.batch_per_replica = 16;
    eng *g;
    pt_err e;
    T_REQUIRE(eng_create(&c, &g, &e) == PT_OK);
    run_snapshot *s = calloc(1, sizeof *s);
    T_REQUIRE(s != NULL);
    eng_start(g);
    int seen = 0;
    for (int i = 0; i < 20000 && !seen; i++) {
        eng_snapshot_get(g, s);
        seen = strstr(s->message, "allocating the replicas' memory") != NULL;
        if (!seen && s->state != RUN_IDLE && s->state != RUN_PREPARING)
            break;
        usleep(2000);
    }
    T_CHECKF(seen, "never allocating: %s", s->message);
    eng_stop(g);
    T_CHECK(eng_wait(g, 120));
    eng_snapshot_get(g, s);
    T_CHECKF(s->state == RUN_STOPPED, "state %d: %s", (int)s->state, s->message);
    T_CHECKF(strstr(s->message, "stopped before training began, in the step: ") &&
                 strstr(s->message, "nothing kept"),
             "%s", s->message);
    T_CHECKF(!util_is_dir(out), "%s is still there", out);
    eng_destroy(g);
    free(s);
}
