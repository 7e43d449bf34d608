/* Early stopping and the kept epoch's weights (--early-stop, --monitor, --keep): the
 * options and their refusals, a run on the demo data whose best epoch is not its last
 * (the learning rate grows 25,000-fold over the run, so that the net collapses to
 * chance after a few good epochs), what the run folder says about it, export, predict
 * and submission.csv holding the kept epoch's weights, --keep last, resuming after
 * an early stop and in the middle of a run. */
#include "tests/t.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "config.h"
#include "engine.h"
#include "run/runfolder.h"
#include "runs.h"
#include "tests/fixtures.h"

/* The demo data at 32 px, one replica and one decode thread (the same run every
 * time), Adam from 0.002 growing exponentially to 50 over the planned epochs. */
#define RECIPE                                                                        \
    "--image-size 32 --replicas 1 --workers 1 --lr-start 0.002 --lr-max 0.002 "     \
    "--warmup 0 --lr-end 50 --epochs 8"

/* The demo dataset's folder (`petal-tui demo`), made once. */
static const char *demo_data(void)
{
    static char dir[4200];
    if (!dir[0]) {
        char cmd[4300], *out = NULL;
        util_fmt(cmd, sizeof cmd, "%s demo 2>/dev/null", t_bin());
        if (t_run(cmd, &out) == 0 && out) {
            out[strcspn(out, "\n")] = '\0';
            util_copy(dir, sizeof dir, out);
        }
        free(out);
    }
    return dir;
}

/* A headless run of RECIPE plus extra into dir; its exit status, output in *out. */
static int train(const char *dir, const char *extra, char **out)
{
    char cmd[8400];
    util_fmt(cmd, sizeof cmd, "%s --headless --out '%s' " RECIPE " %s 2>&1", t_bin(), dir, extra);
    return t_run(cmd, out);
}

/* The RECIPE run with --early-stop 2, made once (the tests that read it share it). */
static const char *early_run(void)
{
    static char dir[4200];
    static int made; /* 1 made, -1 failed */
    if (made)
        return made > 0 ? dir : NULL;
    made = -1;
    util_path(dir, sizeof dir, "%s/early", t_tmpdir());
    char *out = NULL;
    int st = train(dir, "--early-stop 2", &out);
    if (st != 0)
        printf("  the early-stopping run ended with %d:\n%s\n", st, out ? out : "");
    else
        made = 1;
    free(out);
    return made > 0 ? dir : NULL;
}

/* Line `epoch` of RUN/valid_preds.jsonl's predictions (malloc'd "[...]"), or NULL. */
static char *valid_preds_of(const char *run, int epoch)
{
    char path[4300];
    util_path(path, sizeof path, "%s/valid_preds.jsonl", run);
    char *t = fx_slurp(path), *found = NULL;
    char want[48];
    util_fmt(want, sizeof want, "{\"epoch\":%d,\"preds\":", epoch);
    char *p = t ? strstr(t, want) : NULL;
    if (p) {
        p += strlen(want);
        size_t n = strcspn(p, "}");
        found = malloc(n + 1);
        if (found) {
            memcpy(found, p, n);
            found[n] = '\0';
        }
    }
    free(t);
    return found;
}

/* predict's labels of the validation split as "[a,b,...]" (malloc'd), the command's
 * stderr in *err (malloc'd); NULL when it failed. */
static char *predicted(const char *model, char **err)
{
    char cmd[9000], errf[4300], *out = NULL;
    util_path(errf, sizeof errf, "%s/predict.err", t_tmpdir());
    util_fmt(cmd, sizeof cmd, "%s predict '%s' '%s' --split val 2>'%s' | tail -n +2 | cut -d, -f2",
             t_bin(), model, demo_data(), errf);
    int st = t_run(cmd, &out);
    *err = fx_slurp(errf);
    if (st != 0 || !out) {
        free(out);
        return NULL;
    }
    size_t n = strlen(out);
    char *list = malloc(n + 3), *q = list;
    if (!list) {
        free(out);
        return NULL;
    }
    *q++ = '[';
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
        q += sprintf(q, "%s%s", q > list + 1 ? "," : "", l);
    *q++ = ']';
    *q = '\0';
    free(out);
    return list;
}

/* The history's val_f1 of every epoch (up to 16), from the run read back. */
static int val_f1s(const char *run, double *f1, int max)
{
    run_figures *r;
    if (runs_open(run, &r, NULL) != PT_OK)
        return -1;
    int n = 0;
    const run_series *s = &r->s[RUN_S_VAL_F1];
    for (int i = 0; i < s->n && n < max; i++)
        f1[n++] = s->y[i];
    runs_close(r);
    return n;
}

TEST(earlystop_options_are_checked_and_default_to_off)
{
    run_config c;
    cfg_defaults(&c);
    T_EQ_INT(c.early_stop, 0);
    T_EQ_INT(c.monitor, RUN_MON_F1);
    T_EQ_INT(c.keep, RUN_KEEP_AUTO);
    T_EQ_INT(run_keeps_best(&c), 0);
    pt_err e;
    T_EQ_INT(cfg_set(&c, "early-stop", "-1", &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "early-stop wants a whole number from 0") != NULL, "%s", e.msg);
    T_EQ_INT(cfg_set(&c, "monitor", "x", &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "monitor wants f1 or loss, not 'x'") != NULL, "%s", e.msg);
    T_EQ_INT(cfg_set(&c, "keep", "first", &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "keep wants auto, best or last, not 'first'") != NULL, "%s", e.msg);
    T_EQ_INT(c.early_stop, 0);
    /* auto: best exactly when early stopping is on. */
    T_EQ_INT(cfg_set(&c, "early-stop", "3", &e), PT_OK);
    T_EQ_INT(run_keeps_best(&c), 1);
    T_EQ_INT(cfg_set(&c, "keep", "last", &e), PT_OK);
    T_EQ_INT(run_keeps_best(&c), 0);
    T_EQ_INT(cfg_set(&c, "early-stop", "0", &e), PT_OK);
    T_EQ_INT(cfg_set(&c, "keep", "best", &e), PT_OK);
    T_EQ_INT(run_keeps_best(&c), 1);
    /* Better: higher F1, lower loss; a tie is not; NaN never is, and anything beats it. */
    T_CHECK(run_monitor_better(RUN_MON_F1, 0.5, 0.4) && !run_monitor_better(RUN_MON_F1, 0.4, 0.4));
    T_CHECK(run_monitor_better(RUN_MON_LOSS, 0.3, 0.4) && !run_monitor_better(RUN_MON_LOSS, 0.4, 0.4));
    T_CHECK(!run_monitor_better(RUN_MON_F1, NAN, 0.4) && run_monitor_better(RUN_MON_LOSS, 9, NAN));
    /* The command line refuses them before any run, exit 1, naming the option. */
    static const char *const bad[] = { "--early-stop -1", "--early-stop x", "--monitor x",
                                       "--keep x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[4300], *out = NULL;
        util_fmt(cmd, sizeof cmd, "%s --headless --out '%s/bad' %s 2>&1", t_bin(), t_tmpdir(),
                 bad[i]);
        int st = t_run(cmd, &out);
        T_CHECKF(st == 1 && out && strstr(out, "wants"),
                 "%s: exit %d: %s", bad[i], st, out ? out : "");
        free(out);
    }
    char cmd[4300], *help = NULL;
    util_fmt(cmd, sizeof cmd, "%s --help", t_bin());
    T_EQ_INT(t_run(cmd, &help), 0);
    T_CHECK(help && strstr(help, "--early-stop N") && strstr(help, "--monitor f1|loss") &&
            strstr(help, "--keep auto|best|last") && strstr(help, "auto = best when --early-stop"));
    free(help);
}

TEST(earlystop_stops_after_n_epochs_without_improvement_and_keeps_the_best)
{
    T_REQUIRE(demo_data()[0]);
    const char *run = early_run();
    T_REQUIRE(run);
    run_outcome o;
    pt_err e;
    T_REQUIRE(run_read_outcome(run, &o, &e) == PT_OK);
    double f1[16];
    int n = val_f1s(run, f1, 16);
    /* It stopped early, and its best epoch is not its last. */
    T_EQ_INT(o.stop, RUN_STOP_EARLY);
    T_EQ_INT(n, o.epochs);
    T_CHECKF(o.epochs < 8, "ran %d of 8 epochs", o.epochs);
    T_EQ_INT(o.keep_best, 1);
    T_EQ_INT(o.kept_epoch, o.best_epoch);
    T_CHECKF(o.best_epoch >= 1 && o.best_epoch == o.epochs - 2, "best epoch %d of %d",
             o.best_epoch, o.epochs);
    T_EQ_INT(o.since_best, 2);
    /* The best is the history's first highest val_f1, strictly above every later one. */
    for (int i = 0; i < n; i++)
        T_CHECKF(i + 1 == o.best_epoch ? fabs(f1[i] - o.best_value) < 1e-6
                                       : (i + 1 < o.best_epoch ? f1[i] <= o.best_value
                                                                : f1[i] < o.best_value),
                 "epoch %d val_f1 %g, best %g at %d", i + 1, f1[i], o.best_value, o.best_epoch);
    T_CHECK(f1[n - 1] < o.best_value);
    T_CHECK(strstr(o.reason, "early stop at epoch") && strstr(o.reason, "2 epochs without"));
    /* log.txt says it in words, and ends with the done line that says it too. */
    char path[4300];
    util_path(path, sizeof path, "%s/log.txt", run);
    char *log = fx_slurp(path);
    char want[200];
    util_fmt(want, sizeof want, "early stop at epoch %d of 8: 2 epochs without a better val_f1 "
                                "than epoch %d's", o.epochs, o.best_epoch);
    T_CHECKF(log && strstr(log, want), "log.txt lacks '%s'", want);
    free(log);
    int stamped;
    char *last = fx_log_last_line(run, &stamped);
    util_fmt(want, sizeof want, "the model is epoch %d's weights (the best val_f1", o.best_epoch);
    T_CHECKF(last && !strncmp(last, "done: ", 6) && strstr(last, "stopped early at epoch") &&
                 strstr(last, want),
             "last line: %s", last ? last : "");
    free(last);
    /* Read back with the run: the runs list's outcome. */
    run_figures *r;
    T_REQUIRE(runs_open(run, &r, &e) == PT_OK);
    T_EQ_INT(r->has_outcome, 1);
    T_EQ_INT(r->outcome.kept_epoch, o.best_epoch);
    runs_close(r);
}

TEST(earlystop_predict_export_and_submission_use_the_kept_epoch)
{
    T_REQUIRE(demo_data()[0]);
    const char *run = early_run();
    T_REQUIRE(run);
    run_outcome o;
    T_REQUIRE(run_read_outcome(run, &o, NULL) == PT_OK);
    char *kept = valid_preds_of(run, o.kept_epoch), *lastp = valid_preds_of(run, o.epochs);
    T_REQUIRE(kept && lastp);
    T_CHECK(strcmp(kept, lastp) != 0);
    /* predict on the run: validation's predictions of the kept epoch, and it says so. */
    char *err = NULL, *p = predicted(run, &err);
    char want[200];
    util_fmt(want, sizeof want, "the run's epoch %d weights (the best val_f1", o.kept_epoch);
    T_CHECKF(err && strstr(err, want), "predict's stderr: %s", err ? err : "");
    T_CHECKF(p && !strcmp(p, kept), "predict gave %.80s..., the kept epoch %.80s...",
             p ? p : "(failed)", kept);
    free(p);
    free(err);
    /* The workbench's inspect of the opened run: the kept epoch's results. */
    run_val_report rep;
    int *labels, *preds;
    long long n;
    pt_err e;
    T_REQUIRE(runs_val_load(run, 12, &rep, &labels, &preds, &n, &e) == PT_OK);
    T_EQ_INT(rep.epoch, o.kept_epoch);
    run_val_report_free(&rep);
    free(labels);
    free(preds);
    /* export: the kept epoch's weights, said; predicting with the file agrees. */
    char cmd[8400], *out = NULL, onnx[4300];
    util_path(onnx, sizeof onnx, "%s/kept.onnx", t_tmpdir());
    util_fmt(cmd, sizeof cmd, "%s export '%s' --out '%s' 2>&1", t_bin(), run, onnx);
    T_EQ_INT(t_run(cmd, &out), 0);
    util_fmt(want, sizeof want, "epoch %d (the best val_f1", o.kept_epoch);
    T_CHECKF(out && strstr(out, want), "export said: %s", out ? out : "");
    free(out);
    p = predicted(onnx, &err);
    T_CHECKF(p && !strcmp(p, kept), "the export predicts %.80s..., the kept epoch %.80s...",
             p ? p : "(failed)", kept);
    free(p);
    free(err);
    /* submission.csv: the test split as predict gives it with the kept weights. */
    char sub[4300];
    util_path(sub, sizeof sub, "%s/sub.csv", t_tmpdir());
    util_fmt(cmd, sizeof cmd, "%s predict '%s' '%s' --split test --submission '%s' >/dev/null 2>&1 "
                              "&& cmp '%s' '%s/submission.csv'",
             t_bin(), run, demo_data(), sub, sub, run);
    out = NULL;
    T_CHECKF(t_run(cmd, &out) == 0, "submission.csv is not the kept epoch's: %s", out ? out : "");
    free(out);
    free(kept);
    free(lastp);
}

TEST(earlystop_keep_last_is_the_last_epochs_weights)
{
    T_REQUIRE(demo_data()[0]);
    char dir[4300], *out = NULL;
    util_path(dir, sizeof dir, "%s/last", t_tmpdir());
    int st = train(dir, "--early-stop 2 --keep last", &out);
    T_CHECKF(st == 0, "exit %d: %s", st, out ? out : "");
    free(out);
    run_outcome o;
    T_REQUIRE(run_read_outcome(dir, &o, NULL) == PT_OK);
    /* The same decisions as with keep best (the same run), but the model is the last. */
    T_EQ_INT(o.stop, RUN_STOP_EARLY);
    T_EQ_INT(o.keep_best, 0);
    T_EQ_INT(o.kept_epoch, o.epochs);
    T_CHECK(o.best_epoch < o.epochs);
    char best[4400];
    util_path(best, sizeof best, "%s/best.ckpt", dir);
    T_CHECK(!util_is_file(best));
    char *lastp = valid_preds_of(dir, o.epochs), *err = NULL, *p = predicted(dir, &err);
    T_REQUIRE(lastp);
    T_CHECKF(p && !strcmp(p, lastp), "predict gave %.80s..., the last epoch %.80s...",
             p ? p : "(failed)", lastp);
    char want[100];
    util_fmt(want, sizeof want, "the run's epoch %d weights (the last)", o.epochs);
    T_CHECKF(err && strstr(err, want), "predict's stderr: %s", err ? err : "");
    free(p);
    free(err);
    free(lastp);
    /* Resumed with --keep best: the best epoch's weights are not there, so the best
     * is chosen again from the next epoch on, and kept from then. */
    char cmd[8400];
    util_fmt(cmd, sizeof cmd, "%s --headless --resume '%s' --keep best --epochs 12 2>&1", t_bin(),
             dir);
    out = NULL;
    st = t_run(cmd, &out);
    T_CHECKF(st == 0 && out && strstr(out, "are not in the run folder: the best epoch is chosen "
                                           "again from the next one"),
             "exit %d: %s", st, out ? out : "");
    free(out);
    run_outcome k;
    T_REQUIRE(run_read_outcome(dir, &k, NULL) == PT_OK);
    T_EQ_INT(k.keep_best, 1);
    T_CHECK(k.best_epoch > o.epochs && k.kept_epoch == k.best_epoch);
    T_CHECK(util_is_file(best));
    const char *run = early_run();
    if (run) {
        run_outcome b;
        T_REQUIRE(run_read_outcome(run, &b, NULL) == PT_OK);
        T_EQ_INT(b.epochs, o.epochs);
        T_EQ_INT(b.best_epoch, o.best_epoch);
    }
}

TEST(earlystop_resumed_after_an_early_stop_goes_on)
{
    T_REQUIRE(demo_data()[0]);
    const char *run = early_run();
    T_REQUIRE(run);
    char dir[4300], cmd[9000], *out = NULL;
    util_path(dir, sizeof dir, "%s/again", t_tmpdir());
    util_fmt(cmd, sizeof cmd, "cp -r '%s' '%s'", run, dir);
    T_REQUIRE(t_run(cmd, &out) == 0);
    free(out);
    run_outcome before, after;
    T_REQUIRE(run_read_outcome(dir, &before, NULL) == PT_OK);
    /* As it was, it is finished: refused, saying how to go on. */
    util_fmt(cmd, sizeof cmd, "%s --headless --resume '%s' 2>&1", t_bin(), dir);
    out = NULL;
    int st = t_run(cmd, &out);
    T_CHECKF(st == 1 && out && strstr(out, "the run stopped early at epoch") &&
                 strstr(out, "--epochs N with N above 8, or another --early-stop, continues it"),
             "exit %d: %s", st, out ? out : "");
    free(out);
    util_fmt(cmd, sizeof cmd, "%s --headless --resume '%s' --epochs 12 2>&1", t_bin(), dir);
    out = NULL;
    st = t_run(cmd, &out);
    T_CHECKF(st == 0, "exit %d: %s", st, out ? out : "");
    T_CHECKF(out && strstr(out, "the run had stopped early at epoch") &&
                 strstr(out, "it goes on, and 2 more without one stop it again"),
             "%s", out ? out : "");
    free(out);
    T_REQUIRE(run_read_outcome(dir, &after, NULL) == PT_OK);
    /* It trained on: a new count of 2 after the stop (the net is at chance by now, so
     * it stops again two epochs later), the best epoch still the one before. */
    T_EQ_INT(after.epochs, before.epochs + 2);
    T_EQ_INT(after.stop, RUN_STOP_EARLY);
    T_EQ_INT(after.best_epoch, before.best_epoch);
    T_EQ_INT(after.kept_epoch, before.kept_epoch);
    double f1[16];
    T_EQ_INT(val_f1s(dir, f1, 16), after.epochs);
}

static run_snapshot snap; /* large: keep it off the stack */

/* RECIPE's kind of run in a configuration, on a small dataset of the fixtures (70
 * training images of 4 classes, 35 updates of 2 an epoch: quick enough in process
 * under valgrind, and long enough that a stop asked for early in an epoch lands in
 * it; the learning rate grows to 1, which is enough to lose the first epoch's F1 at
 * this batch), --early-stop 2, into out. */
static void recipe(run_config *c, const char *out)
{
    static const long long tc[4] = { 30, 12, 20, 8 }, vc[4] = { 6, 3, 5, 2 };
    static char data[4096];
    if (!data[0]) {
        const char *d = fx_dataset(t_tmpdir(), 4, tc, vc, 6, 32, 25);
        if (d)
            util_copy(data, sizeof data, d);
    }
    cfg_defaults(c);
    util_copy(c->data, sizeof c->data, data);
    util_copy(c->out, sizeof c->out, out);
    c->image_size = 32;
    c->replicas = 1;
    c->batch_per_replica = 2;
    c->workers = 1;
    c->shuffle_buffer = 32;
    c->lr_start = c->lr_max = 0.002;
    c->warmup = 0;
    c->lr_end = 1;
    c->epochs = 8;
    c->early_stop = 2;
}

TEST(earlystop_stopped_mid_run_and_resumed_decides_as_a_straight_run)
{
    char straight[4300], dir[4300];
    util_path(straight, sizeof straight, "%s/straight", t_tmpdir());
    util_path(dir, sizeof dir, "%s/cut", t_tmpdir());
    run_config c;
    recipe(&c, straight);
    T_REQUIRE(c.data[0]);
    T_EQ_INT(fx_run_to_end(&c, &snap), RUN_DONE);
    run_outcome s;
    T_REQUIRE(run_read_outcome(straight, &s, NULL) == PT_OK);
    printf("  straight: %d epochs, best %d (val_f1 %.4f), %s\n", s.epochs, s.best_epoch,
           s.best_value, s.reason);
    double f1[16];
    int nf = val_f1s(straight, f1, 16);
    for (int i = 0; i < nf; i++)
        printf("%s%.4f%s", i ? ", " : "  val_f1: ", f1[i], i == nf - 1 ? "\n" : "");
    T_EQ_INT(s.stop, RUN_STOP_EARLY);
    T_REQUIRE(s.best_epoch < s.epochs);
    /* Stopped in the epoch after the best, as a user's stop would: the count of one
     * epoch without improvement must come back from the checkpoint. */
    recipe(&c, dir);
    eng *g;
    pt_err e;
    T_REQUIRE(eng_create(&c, &g, &e) == PT_OK);
    eng_start(g);
    for (int i = 0; i < 600000; i++) {
        eng_snapshot_get(g, &snap);
        if ((snap.history_n >= s.best_epoch + 1 && snap.step >= 1) || snap.state == RUN_DONE ||
            snap.state == RUN_FAILED)
            break;
        usleep(1000);
    }
    eng_stop(g);
    eng_wait(g, -1);
    eng_snapshot_get(g, &snap);
    eng_destroy(g);
    T_EQ_INT(snap.state, RUN_STOPPED);
    run_outcome cut;
    T_REQUIRE(run_read_outcome(dir, &cut, NULL) == PT_OK);
    T_EQ_INT(cut.stop, RUN_STOP_USER);
    T_EQ_INT(cut.since_best, 1);
    T_EQ_INT(cut.best_epoch, s.best_epoch);
    /* Resumed: the same epochs, the same best, the same stop and kept weights. */
    run_config r;
    cfg_defaults(&r);
    T_REQUIRE(runs_read_config(dir, &r, &e) == PT_OK);
    util_copy(r.resume, sizeof r.resume, dir);
    r.out[0] = '\0';
    T_EQ_INT(fx_run_to_end(&r, &snap), RUN_DONE);
    run_outcome o;
    T_REQUIRE(run_read_outcome(dir, &o, NULL) == PT_OK);
    T_EQ_INT(o.stop, RUN_STOP_EARLY);
    T_EQ_INT(o.epochs, s.epochs);
    T_EQ_INT(o.best_epoch, s.best_epoch);
    T_NEAR(o.best_value, s.best_value, 1e-9);
    char *x = fx_history_without_timing(straight), *y = fx_history_without_timing(dir);
    T_CHECK(x && y && !strcmp(x, y));
    free(x);
    free(y);
    char *ka = valid_preds_of(straight, s.kept_epoch), *kb = valid_preds_of(dir, o.kept_epoch);
    T_CHECK(ka && kb && !strcmp(ka, kb));
    free(ka);
    free(kb);
    char pa[4400], pb[4400], *fa, *fb;
    util_path(pa, sizeof pa, "%s/submission.csv", straight);
    util_path(pb, sizeof pb, "%s/submission.csv", dir);
    fa = fx_slurp(pa);
    fb = fx_slurp(pb);
    T_CHECK(fa && fb && !strcmp(fa, fb));
    free(fa);
    free(fb);
}

TEST(earlystop_monitor_loss_keeps_the_lowest_validation_loss)
{
    T_REQUIRE(demo_data()[0]);
    char dir[4300], *out = NULL;
    util_path(dir, sizeof dir, "%s/loss", t_tmpdir());
    char cmd[8400];
    util_fmt(cmd, sizeof cmd,
             "%s --headless --out '%s' --image-size 32 --replicas 1 --workers 1 --epochs 4 "
             "--monitor loss --keep best 2>&1",
             t_bin(), dir);
    int st = t_run(cmd, &out);
    T_CHECKF(st == 0, "exit %d: %s", st, out ? out : "");
    free(out);
    run_outcome o;
    T_REQUIRE(run_read_outcome(dir, &o, NULL) == PT_OK);
    T_EQ_INT(o.stop, RUN_STOP_EPOCHS);
    T_EQ_INT(o.epochs, 4);
    T_EQ_INT(o.early_stop, 0);
    T_EQ_INT(o.monitor, RUN_MON_LOSS);
    run_figures *r;
    T_REQUIRE(runs_open(dir, &r, NULL) == PT_OK);
    const run_series *s = &r->s[RUN_S_VAL_LOSS];
    int best = 0;
    for (int i = 1; i < s->n; i++)
        if (s->y[i] < s->y[best])
            best = i;
    T_EQ_INT(s->n, 4);
    T_EQ_INT(o.kept_epoch, best + 1);
    T_NEAR(o.kept_value, s->y[best], 1e-5);
    runs_close(r);
}
