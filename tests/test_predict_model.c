/* What predict, classify and model make of a model file (issue 42, items 1, 2, 7 and
 * 9): a graph that fixes its input size runs at that size (and ONNX Runtime agrees),
 * another size is refused unless the graph can run at it, a feature extractor is
 * refused as a classifier and gives its vectors with --features, Ctrl-C keeps the
 * rows done, and the input convention a file states is the one used. The graphs are
 * written here (tests/onnx_writer.h) in tf2onnx's Keras layout; the shared data adds
 * the Keras MobileNetV2 backbone and the 4,317 photos. */
#include "tests/t.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "io/png.h"
#include "tests/fixtures.h"
#include "tests/onnx_writer.h"

#define PM_S 64
#define PM_K 5
#define PM_N 4
#define PM_NOTOP "weights/mobilenetv2-1.0-tfslim-float-notop.onnx"
#define PM_ZOO "weights/mobilenetv2-12-int8.onnx"

/* The CLI's stdout (malloc'd) and exit status; stderr into *err (malloc'd). */
static int pm_cli(const char *args, char **out, char **err)
{
    char cmd[20000], errf[4200];
    util_path(errf, sizeof errf, "%s/stderr.txt", t_tmpdir());
    util_path(cmd, sizeof cmd, "%s %s 2>'%s'", t_bin(), args, errf);
    int rc = t_run(cmd, out);
    *err = fx_slurp(errf);
    if (!*err)
        *err = strdup("");
    return rc;
}

/* DIR/img/0.png ... PM_N - 1: S x S pictures, each different, and their pixels
 * (malloc'd, NHWC bytes) into *px. 0, or -1. */
static int pm_pictures(const char *dir, int S, uint8_t **px)
{
    char path[4200];
    pt_err me;
    util_path(path, sizeof path, "%s/img", dir);
    if (util_mkdirs(path, &me) != PT_OK)
        return -1;
    uint8_t *all = malloc((size_t)PM_N * S * S * 3);
    for (int i = 0; all && i < PM_N; i++) {
        uint8_t *p = all + (size_t)i * S * S * 3;
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++) {
                uint8_t *q = p + ((size_t)y * S + x) * 3;
                q[0] = (uint8_t)((x * (7 + i) + y * 3) % 256);
                q[1] = (uint8_t)((y * 255 / S + 40 * i) % 256);
                q[2] = (uint8_t)(((x ^ y) * (i + 1) * 5) % 256);
            }
        pt_err e;
        util_path(path, sizeof path, "%s/img/%d.png", dir, i);
        if (png_write_rgb(path, p, S, S, &e) != PT_OK) {
            printf("  %s\n", e.msg);
            free(all);
            return -1;
        }
    }
    *px = all;
    return all ? 0 : -1;
}

/* The probabilities of each of the PM_N rows of predict's CSV (--top k: every class,
 * named "class N"), into p[row][class]. 0, or -1 (the reason printed). */
static int pm_parse(const char *csv, int k, double *p)
{
    const char *q = csv ? strchr(csv, '\n') : NULL;
    int rows = 0;
    while (q && q[1] && rows < PM_N) {
        q++;
        const char *f = strchr(q, ',');            /* label */
        f = f ? strchr(f + 1, ',') : NULL;         /* class */
        for (int t = 0; f && t < k; t++) {
            int cls = -1;
            if (sscanf(f + 1, "class %d", &cls) != 1 || cls < 0 || cls >= k)
                break;
            f = strchr(f + 1, ',');
            if (!f)
                break;
            p[rows * k + cls] = strtod(f + 1, NULL);
            f = strchr(f + 1, ',');
        }
        rows++;
        q = strchr(q, '\n');
    }
    if (rows != PM_N)
        printf("  %d rows in:\n%.500s\n", rows, csv ? csv : "");
    return rows == PM_N ? 0 : -1;
}

/* node with onnxruntime-node in tests/ort/node_modules; else skipped (said). */
static int pm_ort_ready(void)
{
    if (!t_need_tool("node"))
        return 0;
    if (!util_is_file("tests/ort/node_modules/onnxruntime-node/package.json")) {
        t_skip("onnxruntime-node is not installed in tests/ort/node_modules (make ort-deps)");
        return 0;
    }
    return 1;
}

/* ONNX Runtime's output (PM_N x k floats, malloc'd) of model on pixels px (NHWC
 * bytes 0-255, as the graph takes them), named out. NULL (said) when it fails. */
static float *pm_ort(const char *dir, const char *model, const uint8_t *px, int S, int k,
                     const char *out)
{
    char in[4200], outdir[4200], cmd[16000], path[4300];
    util_path(in, sizeof in, "%s/input.f32", dir);
    util_path(outdir, sizeof outdir, "%s/ort", dir);
    size_t n = (size_t)PM_N * S * S * 3;
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; x && i < n; i++)
        x[i] = px[i];
    pt_err e;
    int rc = x ? util_write_file_atomic(in, x, n * sizeof *x, &e) : -1;
    free(x);
    if (rc != PT_OK)
        return NULL;
    util_path(cmd, sizeof cmd, "node tests/ort/ort_run.js '%s' '%s' %d,%d,%d,3 '%s'", model, in,
              PM_N, S, S, outdir);
    char *text = NULL;
    rc = t_run(cmd, &text);
    if (rc != 0)
        printf("  %s: exit %d:\n%s\n", cmd, rc, text ? text : "");
    free(text);
    util_path(path, sizeof path, "%s/%s.f32", outdir, out);
    uint8_t *d = NULL;
    size_t len = 0;
    if (rc != 0 || util_read_file(path, &d, &len, &e) != PT_OK || len != (size_t)PM_N * k * 4) {
        printf("  %s: %zu bytes, %d x %d floats expected\n", path, len, PM_N, k);
        free(d);
        return NULL;
    }
    return (float *)d;
}

TEST(predict_model_fixed_size_graph_runs_at_its_size_as_onnxruntime_does)
{
    const char *dir = t_tmpdir();
    char model[4200], args[16000];
    uint8_t *px = NULL;
    util_path(model, sizeof model, "%s/keras64.onnx", dir);
    T_REQUIRE(ow_keras_net(model, PM_S, OW_GAP, PM_K, 7) == 0);
    T_REQUIRE(pm_pictures(dir, PM_S, &px) == 0);
    char *out = NULL, *err = NULL, *out64 = NULL, *err64 = NULL;
    /* model says the size and why. */
    util_path(args, sizeof args, "model '%s'", model);
    int rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 0 && strstr(out, "input size 64x64: declared by the graph") &&
             strstr(out, "at 64x64"), "exit %d:\n%s%s", rc, out, err);
    free(out);
    free(err);
    /* predict runs at 64 without being told: the same answers as --size 64. */
    util_path(args, sizeof args, "predict '%s' '%s/img' --top %d", model, dir, PM_K);
    rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 0 && strstr(err, "at 64x64: declared by the graph"), "exit %d:\n%s", rc, err);
    util_path(args, sizeof args, "predict '%s' '%s/img' --top %d --size 64", model, dir, PM_K);
    T_EQ_INT(pm_cli(args, &out64, &err64), 0);
    T_CHECKF(out && out64 && !strcmp(out, out64), "default:\n%s\n--size 64:\n%s", out, out64);
    double p[PM_N * PM_K] = { 0 };
    T_CHECK(pm_parse(out, PM_K, p) == 0);
    if (pm_ort_ready()) {
        float *want = pm_ort(dir, model, px, PM_S, PM_K, "probs");
        T_CHECK(want != NULL);
        double worst = 0;
        for (int i = 0; want && i < PM_N * PM_K; i++)
            worst = fmax(worst, fabs(p[i] - want[i]));
        T_CHECKF(want && worst < 1e-5, "worst |predict - ONNX Runtime| = %g", worst);
        free(want);
    }
    free(out);
    free(err);
    free(out64);
    free(err64);
    free(px);
}

TEST(predict_model_another_size_is_refused_where_the_graph_cannot_run_at_it)
{
    const char *dir = t_tmpdir();
    char flat[4200], gap[4200], args[16000];
    uint8_t *px = NULL;
    util_path(flat, sizeof flat, "%s/flat64.onnx", dir);
    util_path(gap, sizeof gap, "%s/gap64.onnx", dir);
    T_REQUIRE(ow_keras_net(flat, PM_S, OW_FLATTEN, PM_K, 3) == 0);
    T_REQUIRE(ow_keras_net(gap, PM_S, OW_GAP, PM_K, 3) == 0);
    T_REQUIRE(pm_pictures(dir, PM_S, &px) == 0);
    free(px);
    char *out = NULL, *err = NULL;
    /* A Flatten before the classifier: only at 64. */
    util_path(args, sizeof args, "predict '%s' '%s/img'", flat, dir);
    int rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 0 && strstr(err, "declared by the graph"), "exit %d:\n%s", rc, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "predict '%s' '%s/img' --size 96", flat, dir);
    rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 1 && strstr(err, "declares its input as 64x64 and cannot run at 96x96") &&
             strstr(err, "leave out --size") && !out[0], "exit %d:\n%s%s", rc, out, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "classify '%s' '%s/img/0.png' --size 96", flat, dir);
    rc = pm_cli(args, &out, &err);
    T_CHECKF(rc != 0 && strstr(err, "cannot run at 96x96"), "exit %d:\n%s%s", rc, out, err);
    free(out);
    free(err);
    /* Global pooling: another size runs, and predict says so. */
    util_path(args, sizeof args, "predict '%s' '%s/img' --size 96", gap, dir);
    rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 0 && strstr(err, "at 96x96: given by --size; the graph declares 64x64, and "
                                    "builds at 96x96 too"), "exit %d:\n%s", rc, err);
    free(out);
    free(err);
}

/* The lines of s. */
static int pm_lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

TEST(predict_model_feature_extractor_is_refused_and_gives_its_features)
{
    const char *dir = t_tmpdir();
    char notop[4200], gap[4200], args[16000], path[4300];
    uint8_t *px = NULL;
    util_path(notop, sizeof notop, "%s/notop.onnx", dir);
    util_path(gap, sizeof gap, "%s/gap.onnx", dir);
    T_REQUIRE(ow_keras_net(notop, PM_S, OW_NOTOP, 0, 11) == 0);
    T_REQUIRE(ow_keras_net(gap, PM_S, OW_GAP, PM_K, 11) == 0);
    T_REQUIRE(pm_pictures(dir, PM_S, &px) == 0);
    char *out = NULL, *err = NULL;
    util_path(args, sizeof args, "predict '%s' '%s/img'", notop, dir);
    int rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 1 && !out[0] && strstr(err, "a feature extractor, not a classifier") &&
             strstr(err, "--data DATASET") && strstr(err, "--features"), "exit %d:\n%s%s", rc,
             out, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "classify '%s' '%s/img/0.png'", notop, dir);
    rc = pm_cli(args, &out, &err);
    T_CHECKF(rc != 0 && !out[0] && strstr(err, "a feature extractor"), "exit %d:\n%s%s", rc, out,
             err);
    free(out);
    free(err);
    util_path(args, sizeof args, "model '%s'", notop);
    rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 0 && strstr(out, "a feature extractor"), "exit %d:\n%s%s", rc, out, err);
    free(out);
    free(err);
    /* --features: CSV, path then the 16 values, as ONNX Runtime gives them. */
    util_path(args, sizeof args, "predict '%s' '%s/img' --features", notop, dir);
    rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 0 && pm_lines(out) == PM_N + 1 && !strncmp(out, "path,f0,f1,", 11) &&
             strstr(out, ",f15\n"), "exit %d:\n%s%s", rc, out, err);
    if (pm_ort_ready()) {
        float *want = pm_ort(dir, notop, px, PM_S, 16, "features");
        double worst = want ? 0 : 1e9;
        const char *q = strchr(out, '\n');
        for (int i = 0; want && q && i < PM_N; i++) {
            q = strchr(q + 1, ',');
            for (int j = 0; q && j < 16; j++, q = strpbrk(q + 1, ",\n"))
                worst = fmax(worst, fabs(strtod(q + 1, NULL) - want[i * 16 + j]) /
                                        fmax(1.0, fabs(want[i * 16 + j])));
        }
        T_CHECKF(worst < 1e-5, "worst |features - ONNX Runtime's| = %g", worst);
        free(want);
    }
    free(out);
    free(err);
    /* --out X.npy: a float32 [N, 16] array and X.paths.txt. */
    util_path(args, sizeof args, "predict '%s' '%s/img' --features --out '%s/f.npy'", notop, dir,
              dir);
    rc = pm_cli(args, &out, &err);
    T_EQ_INT(rc, 0);
    util_path(path, sizeof path, "%s/f.npy", dir);
    char *npy = fx_slurp(path);
    T_CHECKF(npy && !memcmp(npy, "\x93NUMPY", 6) && strstr(npy + 10, "'shape': (4, 16)"),
             "%.80s", npy ? npy + 10 : "(none)");
    free(npy);
    util_path(path, sizeof path, "%s/f.paths.txt", dir);
    char *paths = fx_slurp(path);
    T_CHECKF(paths && pm_lines(paths) == PM_N && strstr(paths, "img/0.png\n"), "%s",
             paths ? paths : "(none)");
    free(paths);
    free(out);
    free(err);
    /* A classifier's features: what its MatMul reads (16 pooled values). */
    util_path(args, sizeof args, "predict '%s' '%s/img' --features", gap, dir);
    rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 0 && strstr(out, ",f15\n") && !strstr(out, ",f16") &&
             strstr(err, "what the graph's classifier reads"), "exit %d:\n%s%s", rc, out, err);
    free(out);
    free(err);
    free(px);
}

TEST(predict_model_keras_backbone_is_a_feature_extractor_taking_tf_input)
{
    T_NEED_DATA();
    char args[8000], *out = NULL, *err = NULL;
    util_path(args, sizeof args, "model '%s'", t_data(PM_NOTOP));
    int rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 0 && strstr(out, "input tf (2x - 1, in [-1, 1]): the file says \"Input: NHWC "
                                    "float RGB scaled to [-1, 1]") &&
             strstr(out, "a feature extractor"), "exit %d:\n%s%s", rc, out, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "predict '%s' '%s'", t_data(PM_NOTOP),
              t_data("flower-jpegs-128/daisy/100080576_f52e8ee070_n.jpg"));
    rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 1 && !out[0] && strstr(err, "a feature extractor"), "exit %d:\n%s%s", rc, out,
             err);
    free(out);
    free(err);
    /* The zoo's classifier is still one, and its convention still the default. */
    util_path(args, sizeof args, "model '%s'", t_data(PM_ZOO));
    rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 0 && strstr(out, "a classifier") && strstr(out, "input imagenet") &&
             strstr(out, "input size 224x224: declared by the graph"), "exit %d:\n%s%s", rc,
             out, err);
    free(out);
    free(err);
}

TEST(predict_model_keras_graph_that_says_nothing_is_called_a_guess)
{
    char *out = NULL, *err = NULL;
    int rc = pm_cli("model tests/data/import/keras_block.onnx --input-norm auto", &out, &err);
    T_CHECKF(rc == 0 && strstr(out, "a GUESS: the graph does not say") &&
             strstr(out, "--input-norm"), "exit %d:\n%s%s", rc, out, err);
    free(out);
    free(err);
}

/* Starts predict on the 4,317 photos (stdout into out), waits until watch (the file
 * the rows go to) holds more than the header, then sends SIGINT. The exit status. */
static int pm_interrupt(const char *const *argv, const char *out, const char *errf,
                        const char *watch)
{
    pid_t pid = fx_spawn(argv, NULL, out, errf);
    if (pid < 0)
        return -1;
    for (int i = 0; i < 1200; i++) {
        char *t = fx_slurp(watch);
        int lines = pm_lines(t);
        free(t);
        if (lines > 40)
            break;
        usleep(50000);
    }
    kill(pid, SIGINT);
    return fx_wait_exit(pid, 120);
}

TEST(predict_model_ctrl_c_keeps_the_rows_done)
{
    T_NEED_DATA();
    const char *dir = t_tmpdir();
    char csv[4200], partial[4300], outf[4200], errf[4200];
    util_path(csv, sizeof csv, "%s/preds.csv", dir);
    util_path(partial, sizeof partial, "%s.partial", csv);
    util_path(outf, sizeof outf, "%s/stdout.txt", dir);
    util_path(errf, sizeof errf, "%s/stderr.txt", dir);
    const char *argv[] = { t_bin(), "predict", t_data(PM_ZOO), t_data("flower-jpegs-128"),
                           "--out", csv, "--batch", "8", "--replicas", "1", NULL };
    int rc = pm_interrupt(argv, outf, errf, partial);
    char *err = fx_slurp(errf), *rows = fx_slurp(partial);
    long long n = -1, m = -1, r = -1;
    const char *s = err ? strstr(err, "predict: stopped after ") : NULL;
    if (s)
        sscanf(s, "predict: stopped after %lld of %lld images; %*s holds the %lld rows", &n, &m,
               &r);
    T_CHECKF(rc == 130 && m == 4317 && n > 40 && n < 4317 && r == n &&
             strstr(err, partial), "exit %d, stderr:\n%s", rc, err ? err : "");
    T_CHECKF(rows && pm_lines(rows) == r + 1 && !strncmp(rows, "path,label,", 11),
             "%lld rows said, %d lines in %s", r, pm_lines(rows), partial);
    T_CHECKF(!util_is_file(csv), "%s written by an interrupted run", csv);
    free(err);
    free(rows);
    /* To stdout: the rows are there as they are made. */
    const char *argv2[] = { t_bin(), "predict", t_data(PM_ZOO), t_data("flower-jpegs-128"),
                            "--batch", "8", "--replicas", "1", NULL };
    rc = pm_interrupt(argv2, outf, errf, outf);
    err = fx_slurp(errf);
    rows = fx_slurp(outf);
    n = r = -1;
    s = err ? strstr(err, "predict: stopped after ") : NULL;
    if (s)
        sscanf(s, "predict: stopped after %lld of %lld images; stdout holds the %lld rows", &n, &m,
               &r);
    T_CHECKF(rc == 130 && n > 40 && r == n && rows && pm_lines(rows) == r + 1,
             "exit %d, %d lines, stderr:\n%s", rc, pm_lines(rows), err ? err : "");
    free(err);
    free(rows);
}

TEST(predict_model_classify_and_model_name_a_folder_or_a_bad_image_once)
{
    const char *dir = t_tmpdir();
    char model[4200], args[16000], bad[4300];
    util_path(model, sizeof model, "%s/keras64.onnx", dir);
    util_path(bad, sizeof bad, "%s/notimage.jpg", dir);
    T_REQUIRE(ow_keras_net(model, PM_S, OW_GAP, PM_K, 5) == 0);
    pt_err e;
    T_REQUIRE(util_write_file_atomic(bad, "hi\n", 3, &e) == PT_OK);
    char *out = NULL, *err = NULL;
    util_path(args, sizeof args, "model '%s'", dir);
    int rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 1 && strstr(err, "a folder, not an .onnx file"), "exit %d:\n%s", rc, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "classify '%s' '%s'", dir, bad);
    rc = pm_cli(args, &out, &err);
    T_CHECKF(rc == 1 && strstr(err, "a folder, not an .onnx file"), "exit %d:\n%s", rc, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "classify '%s' '%s' '%s'", model, dir, bad);
    rc = pm_cli(args, &out, &err);
    char once[4400];
    util_path(once, sizeof once, "%s: %s", bad, bad);
    T_CHECKF(rc == 2 && strstr(err, "a folder, not an image file") && strstr(err, bad) &&
             !strstr(err, once), "exit %d:\n%s", rc, err);
    free(out);
    free(err);
}

TEST(predict_model_ctrl_c_on_a_dataset_split_keeps_the_rows_and_writes_no_submission)
{
    T_NEED_DATA();
    const char *dir = t_tmpdir();
    const long long train[2] = { 4, 4 };
    const char *ds = fx_dataset(dir, 2, train, NULL, 1500, 64, 250);
    T_REQUIRE(ds != NULL);
    char csv[4200], partial[4300], sub[4200], outf[4200], errf[4200];
    util_path(csv, sizeof csv, "%s/preds.csv", dir);
    util_path(partial, sizeof partial, "%s.partial", csv);
    util_path(sub, sizeof sub, "%s/submission.csv", dir);
    util_path(outf, sizeof outf, "%s/stdout.txt", dir);
    util_path(errf, sizeof errf, "%s/stderr.txt", dir);
    const char *argv[] = { t_bin(), "predict", t_data(PM_ZOO), ds, "--out", csv, "--submission",
                           sub, "--batch", "8", "--replicas", "1", NULL };
    int rc = pm_interrupt(argv, outf, errf, partial);
    char *err = fx_slurp(errf), *rows = fx_slurp(partial);
    long long n = -1, m = -1, r = -1;
    const char *s = err ? strstr(err, "predict: stopped after ") : NULL;
    if (s)
        sscanf(s, "predict: stopped after %lld of %lld images; %*s holds the %lld rows", &n, &m,
               &r);
    T_CHECKF(rc == 130 && m == 1500 && n > 40 && n < 1500 && r == n, "exit %d, stderr:\n%s", rc,
             err ? err : "");
    T_CHECKF(rows && pm_lines(rows) == r + 1 && !strncmp(rows, "id,label,", 9), "%lld rows said, "
             "%d lines in %s", r, pm_lines(rows), partial);
    T_CHECK(!util_is_file(csv) && !util_is_file(sub));
    free(err);
    free(rows);
}
