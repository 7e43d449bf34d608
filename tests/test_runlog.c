/* runfolder (core/run/runfolder.h): a run's curves read back from a folder the test
 * makes with short demo runs, from the Keras-written event files of ../shared/data,
 * and from event files written here with protobuf-c in every form a scalar takes
 * (simple_value, float_val, double_val, tensor_content); bad input named by file,
 * record and offset; the runs list's scan and differing options; the validation
 * results --open shows; the CLI's refusals; and the curves' value cursor
 * (ui_chart_value_at). */
#include "tests/t.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine.h"
#include "runs.h"
#include "event.pb-c.h"
#include "io/tbevent.h"
#include "io/tfrecord.h"
#include "tests/fixtures.h"
#include "run/runfolder.h"
#include "ui/chart.h"

#define KERAS_RUNS "tf-written-tfrecords/tfevents-petals"
#define KERAS_RUN KERAS_RUNS "/20250321-152714"

/* The tag's scalars in the event files under dir (steps and values); their count. */
static int scalars(const char *dir, const char *tag, long long *steps, double *values, int max)
{
    return fx_event_scalars(dir, tag, steps, values, max, NULL);
}

TEST(runlog_reads_a_demo_run_folder_from_history_and_event_files)
{
    const char *parent = fx_demo_runs();
    T_REQUIRE(parent);
    char dir[4300];
    util_path(dir, sizeof dir, "%s/a", parent);
    run_figures *r;
    pt_err e;
    T_REQUIRE(run_load(dir, &r, &e) == PT_OK);
    T_EQ_STR(r->name, "a");
    T_EQ_STR(r->writer, "petal-tui");
    T_EQ_STR(r->model, "small");
    T_EQ_STR(r->dataset, "demo");
    T_CHECK(r->from_history);
    T_EQ_INT(r->epochs, 2);
    T_EQ_INT(r->epochs_planned, 2);
    T_EQ_INT(r->event_files, 2);
    T_CHECK(strlen(r->date) == 16);
    T_EQ_STR(run_opt_get(r, "image-size"), "32");

    /* The epochs' figures are the run's own (history.json in full precision; the
     * event files hold the same rounded to float), at the updates the validation
     * events name. */
    long long steps[8], it[8];
    double v[8], iv[8];
    char sub[4400];
    util_path(sub, sizeof sub, "%s/validation", dir);
    T_REQUIRE(scalars(sub, "epoch_f1_score", steps, v, 8) == 2);
    T_REQUIRE(scalars(sub, "evaluation_loss_vs_iterations", it, iv, 8) == 2);
    const run_series *f1 = &r->s[RUN_S_VAL_F1];
    T_REQUIRE(f1->n == 2);
    double best = -1;
    for (int i = 0; i < 2; i++) {
        T_NEAR(f1->y[i], v[i], 1e-6);
        T_EQ_INT(f1->x[RUN_X_EPOCH][i], i + 1);
        T_EQ_INT(f1->x[RUN_X_UPDATE][i], it[i]);
        T_CHECK(f1->x[RUN_X_TIME][i] > 0);
        best = v[i] > best ? v[i] : best;
    }
    T_CHECK(f1->x[RUN_X_TIME][1] > f1->x[RUN_X_TIME][0]);
    T_NEAR(r->best_val_f1, best, 1e-6);
    for (int k = 0; k < RUN_S_BATCH_LOSS; k++)
        T_EQ_INT(r->s[k].n, 2);

    /* Every update's loss, at its update; epochs and seconds placed by the
     * epochs' ends. */
    const run_series *bl = &r->s[RUN_S_BATCH_LOSS];
    T_EQ_INT(bl->n, it[1]);
    T_EQ_INT(r->s[RUN_S_BATCH_LR].n, it[1]);
    T_EQ_INT(bl->x[RUN_X_UPDATE][bl->n - 1], it[1]);
    T_NEAR(bl->x[RUN_X_EPOCH][bl->n - 1], 2, 1e-6);
    T_NEAR(bl->x[RUN_X_EPOCH][it[0] - 1], 1, 1e-6);
    T_NEAR(bl->x[RUN_X_TIME][bl->n - 1], f1->x[RUN_X_TIME][1], 1e-3);
    run_free(r);
}

TEST(runlog_reads_the_keras_event_files_and_refuses_a_folder_of_runs)
{
    T_NEED_DATA();
    run_figures *r;
    pt_err e;
    T_REQUIRE(run_load(t_data(KERAS_RUN), &r, &e) == PT_OK);
    T_EQ_STR(r->name, "20250321-152714");
    T_EQ_STR(r->writer, "tensorflow.core.util.events_writer");
    T_CHECK(!r->from_history);
    T_EQ_INT(r->event_files, 2);
    /* 30 epochs trained, validated every other one, 800 updates each (what the
     * validation's evaluation_loss_vs_iterations says: 800 after the first). */
    T_EQ_INT(r->epochs, 30);
    T_EQ_INT(r->s[RUN_S_TRAIN_LOSS].n, 30);
    T_EQ_INT(r->s[RUN_S_TRAIN_ACC].n, 30);
    T_EQ_INT(r->s[RUN_S_VAL_LOSS].n, 15);
    T_EQ_INT(r->s[RUN_S_VAL_F1].n, 0);
    T_CHECK(isnan(r->best_val_f1));
    T_CHECK(r->best_val_acc > 0.1 && r->best_val_acc < 1);
    T_EQ_INT(r->date[0] != 0, 1);
    const run_series *tl = &r->s[RUN_S_TRAIN_LOSS], *vl = &r->s[RUN_S_VAL_LOSS];
    T_EQ_INT(tl->y[0] == (float)3.56821465, 1);
    for (int i = 0; i < 30; i++) {
        T_EQ_INT(tl->x[RUN_X_EPOCH][i], i + 1);
        T_NEAR(tl->x[RUN_X_UPDATE][i], 800.0 * (i + 1), 1e-3);
        T_CHECK(tl->x[RUN_X_TIME][i] > 0 && (i == 0 || tl->x[RUN_X_TIME][i] >
                                                             tl->x[RUN_X_TIME][i - 1]));
    }
    T_EQ_INT(vl->x[RUN_X_EPOCH][1], 3);
    T_NEAR(vl->x[RUN_X_UPDATE][1], 2400, 1e-3);
    run_free(r);

    /* One of its files: the same run's train curve. */
    char path[4400];
    util_path(path, sizeof path, "%s/train/events.out.tfevents.1742585234.DESKTOP-25C2BHD.22116.0.v2",
              t_data(KERAS_RUN));
    T_REQUIRE(run_load(path, &r, &e) == PT_OK);
    T_EQ_STR(r->name, "20250321-152714");
    T_EQ_INT(r->s[RUN_S_TRAIN_LOSS].n, 30);
    T_EQ_INT(r->s[RUN_S_VAL_LOSS].n, 0);
    T_CHECK(isnan(r->s[RUN_S_TRAIN_LOSS].x[RUN_X_UPDATE][0])); /* no validation said */
    run_free(r);

    /* The folder of the four runs is not one run; a run with no curve is refused. */
    T_EQ_INT(run_load(t_data(KERAS_RUNS), &r, &e), PT_ENODATA);
    T_CHECKF(strstr(e.msg, "holds 4 runs (20250321-152615, 20250321-152714, 20250325-155448, ...), "
                           "not one") != NULL, "%s", e.msg);
    T_EQ_INT(run_load(t_data(KERAS_RUNS "/20250321-152615"), &r, &e), PT_ENODATA);
    T_CHECKF(strstr(e.msg, "no loss, accuracy or F1 in its 2 event files") != NULL, "%s", e.msg);
}

/* One event of a scalar in the given form (0 simple_value, 1 float_val, 2 double_val,
 * 3 a DT_DOUBLE tensor_content, 4 a DT_FLOAT tensor_content) into w. */
static int put_scalar(tfr_writer *w, const char *tag, long long step, double wall, double value,
                      int form)
{
    Tensorboard__TensorShapeProto shape = TENSORBOARD__TENSOR_SHAPE_PROTO__INIT;
    Tensorboard__TensorProto t = TENSORBOARD__TENSOR_PROTO__INIT;
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    float f = (float)value;
    double d = value;
    uint8_t content[8];
    v.tag = (char *)tag;
    if (form == 0) {
        v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
        v.simple_value = f;
    } else {
        t.tensor_shape = &shape;
        if (form == 1) {
            t.dtype = TENSORBOARD__DATA_TYPE__DT_FLOAT;
            t.n_float_val = 1;
            t.float_val = &f;
        } else if (form == 2) {
            t.dtype = TENSORBOARD__DATA_TYPE__DT_DOUBLE;
            t.n_double_val = 1;
            t.double_val = &d;
        } else if (form == 3) {
            t.dtype = TENSORBOARD__DATA_TYPE__DT_DOUBLE;
            memcpy(content, &d, 8); /* little-endian machines: the wire order */
            t.tensor_content.data = content;
            t.tensor_content.len = 8;
        } else {
            t.dtype = TENSORBOARD__DATA_TYPE__DT_FLOAT;
            memcpy(content, &f, 4);
            t.tensor_content.data = content;
            t.tensor_content.len = 4;
        }
        v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
        v.tensor = &t;
    }
    Tensorboard__Summary__Value *vs[1] = { &v };
    Tensorboard__Summary sum = TENSORBOARD__SUMMARY__INIT;
    sum.n_value = 1;
    sum.value = vs;
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = wall;
    ev.step = step;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
    ev.summary = &sum;
    uint8_t buf[512];
    size_t n = tensorboard__event__pack(&ev, buf);
    return tfr_write(w, buf, n, NULL);
}

/* dir/sub/events.out.tfevents.<t0>.test.1.v2 begun with file_version at t0. */
static tfr_writer *event_file(const char *dir, const char *sub, double t0)
{
    char d[4300], path[4400];
    util_path(d, sizeof d, "%s/%s", dir, sub);
    if (util_mkdirs(d, NULL) != PT_OK)
        return NULL;
    util_path(path, sizeof path, "%s/events.out.tfevents.%.0f.test.1.v2", d, t0);
    tfr_writer *w;
    if (tfr_writer_open(&w, path, NULL) != PT_OK)
        return NULL;
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = t0;
    ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
    ev.file_version = (char *)"brain.Event:2";
    uint8_t buf[128];
    size_t n = tensorboard__event__pack(&ev, buf);
    if (tfr_write(w, buf, n, NULL) != PT_OK) {
        tfr_writer_abort(w);
        return NULL;
    }
    return w;
}

/* run/train/ with an event file of n epoch_loss scalars (1, 1/2, ...), its path in path. */
static int loss_events(const char *run, int n, char *path, size_t size)
{
    tfr_writer *w = event_file(run, "train", 1700000000);
    if (!w)
        return -1;
    for (int i = 0; i < n; i++)
        if (put_scalar(w, "epoch_loss", i, 1700000000 + i, 1.0 / (i + 1), 0) != PT_OK) {
            tfr_writer_abort(w);
            return -1;
        }
    if (tfr_writer_close(w, NULL) != PT_OK)
        return -1;
    util_path(path, size, "%s/train/events.out.tfevents.1700000000.test.1.v2", run);
    return 0;
}

TEST(runlog_reads_scalars_as_simple_value_float_val_double_val_and_tensor_content)
{
    const char *dir = t_tmpdir();
    const double t0 = 1700000000;
    /* Train: the epoch loss in each form, one epoch each; validation after the
     * second and the fourth epoch, at 50 updates an epoch. */
    static const double loss[5] = { 2.5, 1.75, 1.125, 0.8125, 0.5 };
    static const double vloss[2] = { 1.5, 0.9 };
    tfr_writer *w = event_file(dir, "train", t0);
    T_REQUIRE(w);
    for (int i = 0; i < 5; i++)
        T_EQ_INT(put_scalar(w, "epoch_loss", i, t0 + 10 * (i + 1), loss[i], i), PT_OK);
    T_EQ_INT(tfr_writer_close(w, NULL), PT_OK);
    w = event_file(dir, "validation", t0 + 1);
    T_REQUIRE(w);
    for (int i = 0; i < 2; i++) {
        long long ep = 2 * i + 1; /* steps 1 and 3 */
        T_EQ_INT(put_scalar(w, "evaluation_loss_vs_iterations", 50 * (ep + 1), t0 + 10 * (ep + 1),
                            vloss[i], 4), PT_OK);
        T_EQ_INT(put_scalar(w, "epoch_loss", ep, t0 + 10 * (ep + 1), vloss[i], 2 * i), PT_OK);
    }
    T_EQ_INT(tfr_writer_close(w, NULL), PT_OK);

    run_figures *r;
    pt_err e;
    T_REQUIRE(run_load(dir, &r, &e) == PT_OK);
    T_EQ_INT(r->epochs, 5);
    const run_series *tl = &r->s[RUN_S_TRAIN_LOSS], *vl = &r->s[RUN_S_VAL_LOSS];
    T_REQUIRE(tl->n == 5 && vl->n == 2);
    for (int i = 0; i < 5; i++) {
        T_CHECKF(tl->y[i] == (float)loss[i], "form %d: %.9g != %.9g", i, tl->y[i], loss[i]);
        T_NEAR(tl->x[RUN_X_UPDATE][i], 50.0 * (i + 1), 1e-9);
        T_NEAR(tl->x[RUN_X_TIME][i], 10.0 * (i + 1), 1e-3);
    }
    T_CHECK(vl->y[0] == (float)vloss[0] && vl->y[1] == (float)vloss[1]);
    T_EQ_INT(vl->x[RUN_X_EPOCH][1], 4);
    T_NEAR(r->started, t0, 1e-9);
    run_free(r);
}

TEST(runlog_bad_input_is_named_by_file_record_and_offset)
{
    const char *dir = t_tmpdir();
    run_figures *r = NULL;
    pt_err e;
    char path[4400], sub[4300];
    util_path(path, sizeof path, "%s/none", dir);
    T_EQ_INT(run_load(path, &r, &e), PT_EIO);
    T_CHECKF(strstr(e.msg, "/none: no such file or folder") != NULL, "%s", e.msg);

    /* An empty folder is no run. */
    util_path(sub, sizeof sub, "%s/empty", dir);
    T_REQUIRE(util_mkdirs(sub, NULL) == PT_OK);
    T_EQ_INT(run_load(sub, &r, &e), PT_ENODATA);
    T_CHECKF(strstr(e.msg, "not a run: no history.json and no TensorBoard event files") != NULL,
             "%s", e.msg);

    /* A garbage event file: the first record's framing fails. */
    util_path(sub, sizeof sub, "%s/garbage/train", dir);
    T_REQUIRE(util_mkdirs(sub, NULL) == PT_OK);
    util_path(path, sizeof path, "%s/events.out.tfevents.1.x.1.v2", sub);
    static const char junk[] = "this is not a TFRecord file, only words in it; more words";
    T_REQUIRE(util_write_file_atomic(path, junk, sizeof junk - 1, NULL) == PT_OK);
    util_path(sub, sizeof sub, "%s/garbage", dir);
    T_CHECK(run_load(sub, &r, &e) < 0);
    T_CHECKF(strstr(e.msg, path) && strstr(e.msg, "record 0 at byte 0"), "%s", e.msg);

    /* A damaged record after good ones: its number and offset. */
    util_path(sub, sizeof sub, "%s/cut", dir);
    T_REQUIRE(loss_events(sub, 3, path, sizeof path) == 0);
    uint8_t *d;
    size_t n;
    T_REQUIRE(util_read_file(path, &d, &n, NULL) == PT_OK);
    d[n - 6] ^= 0x40; /* the last record's payload: its data CRC fails */
    T_REQUIRE(util_write_file_atomic(path, d, n, NULL) == PT_OK);
    free(d);
    T_CHECK(run_load(sub, &r, &e) < 0);
    T_CHECKF(strstr(e.msg, path) && strstr(e.msg, "record 3 at byte "), "%s", e.msg);

    /* history.json that breaks off in its second epoch. */
    util_path(sub, sizeof sub, "%s/hist", dir);
    T_REQUIRE(util_mkdirs(sub, NULL) == PT_OK);
    util_path(path, sizeof path, "%s/history.json", sub);
    static const char hist[] = "[\n {\"epoch\": 1, \"val_loss\": 0.5},\n {\"epoch\": 2, \"val_loss\": x}\n]\n";
    T_REQUIRE(util_write_file_atomic(path, hist, sizeof hist - 1, NULL) == PT_OK);
    T_EQ_INT(run_load(sub, &r, &e), PT_EFORMAT);
    long long at = (long long)(strchr(hist, 'x') - hist);
    char want[128];
    snprintf(want, sizeof want, "record 1 at byte %lld: history.json: expected a number or null",
             at);
    T_CHECKF(strstr(e.msg, path) && strstr(e.msg, want), "%s (wanted %s)", e.msg, want);
    T_CHECK(r == NULL);

    /* The command line: one line, exit status 2, before any screen. */
    char cmd[8192], *out;
    util_path(cmd, sizeof cmd, "%s --compare '%s/none' 2>&1 </dev/null", t_bin(), dir);
    T_EQ_INT(t_run(cmd, &out), 2);
    char line[4400];
    snprintf(line, sizeof line, "petal-tui: %s/none: no such file or folder\n", dir);
    T_CHECKF(!strcmp(out, line), "%s", out);
    free(out);
    util_path(cmd, sizeof cmd, "%s --compare '%s/hist' 2>&1 </dev/null", t_bin(), dir);
    T_EQ_INT(t_run(cmd, &out), 2);
    T_CHECKF(!strncmp(out, "petal-tui: ", 11) && strstr(out, want) && strchr(out, '\n') &&
                 !strchr(out, '\n')[1],
             "%s", out);
    free(out);
    util_path(cmd, sizeof cmd, "%s --open '%s/garbage' 2>&1 </dev/null", t_bin(), dir);
    T_EQ_INT(t_run(cmd, &out), 2);
    T_CHECKF(strstr(out, "record 0 at byte 0") && !strchr(out, '\n')[1], "%s", out);
    free(out);
    util_path(cmd, sizeof cmd, "%s --headless --compare '%s/hist' 2>&1", t_bin(), dir);
    T_EQ_INT(t_run(cmd, &out), 1);
    T_CHECKF(strstr(out, "--compare is for the workbench") != NULL, "%s", out);
    free(out);
}

/* A run killed mid-write: its event file ends inside a record, another was created and
 * never written. Both are what a crash leaves: the run opens with what came before,
 * and says so once (issue 30, defect 1). */
TEST(runlog_a_torn_event_file_end_reads_up_to_it)
{
    const char *dir = t_tmpdir();
    char sub[4300], path[4400];
    util_path(sub, sizeof sub, "%s/killed", dir);
    T_REQUIRE(loss_events(sub, 4, path, sizeof path) == 0);
    uint8_t *d;
    size_t n;
    T_REQUIRE(util_read_file(path, &d, &n, NULL) == PT_OK);
    T_REQUIRE(util_write_file_atomic(path, d, n - 7, NULL) == PT_OK); /* the last record torn */
    free(d);
    util_path(path, sizeof path, "%s/train/events.out.tfevents.1700000099.test.2.v2", sub);
    T_REQUIRE(util_write_file_atomic(path, "", 0, NULL) == PT_OK);
    run_figures *r = NULL;
    pt_err e;
    T_EQ_INT(run_load(sub, &r, &e), PT_OK);
    T_REQUIRE(r != NULL);
    T_EQ_INT(r->s[RUN_S_TRAIN_LOSS].n, 3);
    T_EQ_INT(r->torn, 2);
    T_CHECKF(strstr(r->note, "record 4 at byte ") && strstr(r->note, "truncated") &&
                 strstr(r->note, "read up to it"),
             "%s", r->note);
    run_free(r);
    /* The runs list keeps it, and --compare reads it (then wants a terminal). */
    run_figures **runs;
    int nr, skipped;
    T_EQ_INT(run_scan(dir, &runs, &nr, &skipped, &e), PT_OK);
    T_EQ_INT(nr, 1);
    T_EQ_INT(skipped, 0);
    run_free_list(runs, nr);
    char cmd[9000], *out;
    snprintf(cmd, sizeof cmd, "%s --compare '%s' 2>&1 </dev/null", t_bin(), sub);
    T_EQ_INT(t_run(cmd, &out), 1);
    T_CHECKF(strstr(out, "needs a terminal") != NULL, "%s", out);
    free(out);
}

/* dir/NAME with a history.json of the given validation F1s and a config. */
static int fake_run(const char *dir, const char *name, const double *f1, int n,
                    const char *config)
{
    char d[4300], path[4400], text[4096];
    util_path(d, sizeof d, "%s/%s", dir, name);
    if (util_mkdirs(d, NULL) != PT_OK)
        return -1;
    int k = snprintf(text, sizeof text, "[");
    for (int i = 0; i < n; i++)
        k += snprintf(text + k, sizeof text - (size_t)k,
                      "%s\n  {\"epoch\": %d, \"updates\": 10, \"train_loss\": %g, \"val_f1\": %g, "
                      "\"train_timing\": 2.5}",
                      i ? "," : "", i + 1, 1.0 / (i + 1), f1[i]);
    k += snprintf(text + k, sizeof text - (size_t)k, "\n]\n");
    util_path(path, sizeof path, "%s/history.json", d);
    if (util_write_file_atomic(path, text, (size_t)k, NULL) != PT_OK)
        return -1;
    util_path(path, sizeof path, "%s/config", d);
    return util_write_file_atomic(path, config, strlen(config), NULL) == PT_OK ? 0 : -1;
}

/* dir/name/log.txt holding text. */
static int put_log(const char *dir, const char *name, const char *text)
{
    char path[4400];
    util_path(path, sizeof path, "%s/%s/log.txt", dir, name);
    return util_write_file_atomic(path, text, strlen(text), NULL) == PT_OK ? 0 : -1;
}

/* --open of a run that did not finish says how far it got and how it ended, not
 * "finished" (issue 30, defect 4). */
TEST(runlog_an_unfinished_run_opens_as_stopped_with_how_far_it_got)
{
    const char *dir = t_tmpdir();
    static const double f1[2] = { 0.5, 0.7 };
    static const char cfg[] = "model = small\nepochs = 10\n";
    T_REQUIRE(fake_run(dir, "stopped", f1, 2, cfg) == 0);
    T_REQUIRE(put_log(dir, "stopped", "2026-11-27 10:00:00 epoch 2/10 - 10 updates\n"
                                      "2026-11-27 10:00:01 stopped at update 22; continue with "
                                      "--resume runs/stopped\n") == 0);
    T_REQUIRE(fake_run(dir, "killed", f1, 2, cfg) == 0);
    T_REQUIRE(put_log(dir, "killed", "2026-11-27 10:00:00 epoch 2/10 - 10 updates\n") == 0);
    T_REQUIRE(fake_run(dir, "early", f1, 0, cfg) == 0);
    T_REQUIRE(put_log(dir, "early", "2026-11-27 10:00:00 stopped at update 0; continue with "
                                    "--resume runs/early\n") == 0);
    T_REQUIRE(fake_run(dir, "done", f1, 2, "model = small\nepochs = 2\n") == 0);
    T_REQUIRE(put_log(dir, "done", "2026-11-27 10:00:00 done: 2 epochs in 5s\n") == 0);
    static const struct {
        const char *name;
        run_state state;
        int epoch, epochs;
        const char *says;
    } want[] = {
        { "stopped", RUN_STOPPED, 2, 10, "unfinished, 2 of 10 epochs, update 20; its log ends "
                                         "\"stopped at update 22" },
        { "killed", RUN_STOPPED, 2, 10, "its log has no end: killed, or still training" },
        { "early", RUN_STOPPED, 0, 10, "unfinished, 0 of 10 epochs" },
        { "done", RUN_DONE, 2, 2, "a finished run" },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char sub[4400];
        util_path(sub, sizeof sub, "%s/%s", dir, want[i].name);
        run_figures *r;
        pt_err e;
        T_REQUIRE(run_load(sub, &r, &e) == PT_OK);
        run_snapshot *s = calloc(1, sizeof *s);
        T_REQUIRE(s);
        eng_run_snapshot(r, s);
        T_CHECKF(s->state == want[i].state, "%s: state %d", want[i].name, (int)s->state);
        T_CHECKF(s->epoch == want[i].epoch && s->epochs == want[i].epochs, "%s: epoch %d/%d",
                 want[i].name, s->epoch, s->epochs);
        T_CHECKF(strstr(s->message, want[i].says) != NULL, "%s: %s", want[i].name, s->message);
        T_CHECK(s->state == RUN_DONE || (s->total_steps == 0 || s->update < s->total_steps));
        free(s);
        run_free(r);
    }
}

TEST(runlog_scan_lists_the_runs_and_the_options_that_differ)
{
    const char *dir = t_tmpdir();
    static const double fa[2] = { 0.5, 0.7 }, fb[3] = { 0.4, 0.8, 0.6 };
    T_REQUIRE(fake_run(dir, "one", fa, 2,
                       "# petal-tui configuration\nmodel = small\nepochs = 2\nlr-max = 0.002\n"
                       "out = runs/one\nseed = 1\n") == 0);
    T_REQUIRE(fake_run(dir, "two", fb, 3,
                       "model = small\nepochs = 3\nlr-max = 0.004\nout = runs/two\nseed = 1\n"
                       "ema = 0.99\n") == 0);
    char junk[4300];
    util_path(junk, sizeof junk, "%s/not-a-run", dir);
    T_REQUIRE(util_mkdirs(junk, NULL) == PT_OK);
    run_figures **runs;
    int n, skipped;
    pt_err e;
    T_REQUIRE(run_scan(dir, &runs, &n, &skipped, &e) == PT_OK);
    T_EQ_INT(n, 2);
    T_EQ_INT(skipped, 1);
    T_REQUIRE(n == 2);
    T_EQ_STR(runs[0]->name, "one");
    T_EQ_STR(runs[1]->name, "two");
    T_EQ_INT(runs[1]->epochs, 3);
    T_NEAR(runs[1]->best_val_f1, 0.8, 1e-6);
    T_NEAR(runs[1]->s[RUN_S_VAL_F1].x[RUN_X_UPDATE][2], 30, 1e-9);
    T_NEAR(runs[1]->s[RUN_S_VAL_F1].x[RUN_X_TIME][2], 7.5, 1e-6);
    T_EQ_STR(runs[0]->dataset, "");
    char diff[512];
    T_EQ_INT(run_diff_text(runs, n, 0, diff, sizeof diff), 3);
    T_EQ_STR(diff, "epochs=2 lr-max=0.002 ema=?");
    T_EQ_INT(run_diff_text(runs, n, 1, diff, sizeof diff), 3);
    T_EQ_STR(diff, "epochs=3 lr-max=0.004 ema=0.99");
    run_free_list(runs, n);
}

TEST(runlog_validation_results_of_a_demo_run)
{
    const char *parent = fx_demo_runs();
    T_REQUIRE(parent);
    char dir[4300];
    util_path(dir, sizeof dir, "%s/b", parent);
    run_val_report rep;
    int *lab, *pred;
    long long n;
    pt_err e;
    T_REQUIRE(runs_val_load(dir, 0, &rep, &lab, &pred, &n, &e) == PT_OK);
    T_EQ_INT(rep.epoch, 2);
    T_EQ_INT(rep.n, n);
    T_CHECK(n > 100 && rep.n_classes >= 2);
    /* The matrix counts every example once; its diagonal is the accuracy the
     * history names for the last epoch. */
    long long total = 0, right = 0, right2 = 0;
    for (int t = 0; t < rep.n_classes; t++)
        for (int p = 0; p < rep.n_classes; p++) {
            total += rep.confusion[t * rep.n_classes + p];
            if (t == p)
                right += rep.confusion[t * rep.n_classes + p];
        }
    for (long long i = 0; i < n; i++)
        right2 += lab[i] == pred[i];
    T_EQ_INT(total, n);
    T_EQ_INT(right, right2);
    run_figures *r;
    T_REQUIRE(run_load(dir, &r, &e) == PT_OK);
    T_NEAR((double)right / (double)n, r->s[RUN_S_VAL_ACC].y[1], 1e-6);
    run_free(r);
    run_val_report_free(&rep);
    free(lab);
    free(pred);
    /* A Keras-like folder has none. */
    T_EQ_INT(runs_val_load(t_tmpdir(), 0, &rep, &lab, &pred, &n, &e), PT_ENODATA);
}

TEST(runlog_chart_value_at_interpolates_between_points)
{
    static const float y[5] = { 1, 3, NAN, 5, 9 }, x[5] = { 0, 2, 3, 4, 8 };
    ui_chart_series s = { y, x, 0, 0, 5, UI_R_S1, 0, 0 };
    T_NEAR(ui_chart_value_at(&s, 0), 1, 1e-9);
    T_NEAR(ui_chart_value_at(&s, 1), 2, 1e-9);
    T_NEAR(ui_chart_value_at(&s, 3), 4, 1e-9); /* over the NaN: from 2 to 4 */
    T_NEAR(ui_chart_value_at(&s, 6), 7, 1e-9);
    T_CHECK(isnan(ui_chart_value_at(&s, 8.5)));
    T_CHECK(isnan(ui_chart_value_at(&s, -1)));
    ui_chart_series even = { y, NULL, 10, 10, 2, UI_R_S1, 0, 0 };
    T_NEAR(ui_chart_value_at(&even, 15), 2, 1e-9);
}
