/* --input-norm where a user meets it: refused for the built-in nets, printed by
 * `petal-tui model`, honoured by classify and predict, in the run log, the snapshot,
 * the run folder's config (so a resumed run and predict build the net it trained),
 * and written into the front of an export (predict on the export = predict on the
 * run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine.h"
#include "fixtures.h"
#include "nn/nn.h"
#include "nn/nn_import.h"
#include "t.h"
#include "infer/netcfg.h"
#include "infer/runmodel.h"

#define IN_ONNX "tests/data/import/blocks.onnx"    /* a PyTorch-exported net, no own front */
#define IN_EXPORT "tests/data/export/small-8-16.onnx" /* a petal-tui export */

/* The CLI's stdout and stderr together (malloc'd) and its exit status; fmt takes
 * a and b as two strings. */
static int in_cli(char **out, const char *fmt, const char *a, const char *b)
{
    char args[9000], cmd[10000];
    snprintf(args, sizeof args, fmt, a ? a : "", b ? b : "");
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", t_bin(), args);
    return t_run(cmd, out);
}

/* The same with stdout only (predict's CSV without its progress). */
static int in_cli_stdout(char **out, const char *fmt, const char *a, const char *b)
{
    char args[9000], cmd[10000];
    snprintf(args, sizeof args, fmt, a ? a : "", b ? b : "");
    snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", t_bin(), args);
    return t_run(cmd, out);
}

/* A demo-flower JPEG at 32 px in the scratch folder (a static path). */
static const char *in_image(void)
{
    static char path[4200];
    uint8_t *buf;
    size_t len;
    if (fx_demo_jpeg(1, 5, 32, &buf, &len) != 0)
        return NULL;
    util_path(path, sizeof path, "%s/flower.jpg", t_tmpdir());
    int rc = util_write_file_atomic(path, buf, len, NULL);
    free(buf);
    return rc == PT_OK ? path : NULL;
}

TEST(input_norm_refused_for_a_built_in_net_unless_it_is_theirs)
{
    run_config c;
    cfg_defaults(&c);
    eng *g = NULL;
    pt_err e;
    /* The built-in nets take pixels in [0, 1]: auto and unit are theirs. */
    const char *models[2] = { "small", "mobilenetv2" };
    for (int i = 0; i < 2; i++) {
        util_copy(c.model, sizeof c.model, models[i]);
        T_REQUIRE(cfg_set(&c, "input-norm", "tf", NULL) == PT_OK);
        T_EQ_INT(eng_create(&c, &g, &e), PT_EUSAGE);
        T_CHECKF(strstr(e.msg, "--input-norm tf applies to an ONNX model") &&
                     strstr(e.msg, models[i]) && strstr(e.msg, "[0, 1]"),
                 "%s", e.msg);
        T_REQUIRE(cfg_set(&c, "input-norm", "caffe", NULL) == PT_OK);
        T_EQ_INT(eng_create(&c, &g, &e), PT_EUSAGE);
        T_CHECKF(strstr(e.msg, "--input-norm caffe") != NULL, "%s", e.msg);
        const char *theirs[2] = { "auto", "unit" };
        for (int k = 0; k < 2; k++) {
            T_REQUIRE(cfg_set(&c, "input-norm", theirs[k], NULL) == PT_OK);
            T_CHECKF(eng_create(&c, &g, &e) == PT_OK, "%s %s: %s", models[i], theirs[k], e.msg);
            eng_destroy(g);
            g = NULL;
        }
    }
    /* An ONNX model takes every one; before the run the header shows the option's
     * value, a built-in net's nothing. */
    util_copy(c.model, sizeof c.model, IN_ONNX);
    T_REQUIRE(cfg_set(&c, "input-norm", "caffe", NULL) == PT_OK);
    T_CHECKF(eng_create(&c, &g, &e) == PT_OK, "%s", e.msg);
    run_snapshot *s = malloc(sizeof *s);
    T_REQUIRE(s != NULL);
    eng_snapshot_get(g, s);
    T_EQ_STR(s->input_norm, "caffe");
    eng_destroy(g);
    util_copy(c.model, sizeof c.model, "small");
    T_REQUIRE(eng_create(&c, &g, &e) == PT_EUSAGE);
    c.input_norm = RUN_NORM_AUTO;
    T_REQUIRE(eng_create(&c, &g, &e) == PT_OK);
    eng_snapshot_get(g, s);
    T_EQ_STR(s->input_norm, "");
    eng_destroy(g);
    free(s);
}

/* The snapshot after the import: what was used, "(auto)" when the model chose. */
TEST(input_norm_snapshot_says_what_the_import_used)
{
    static const long long train[2] = { 4, 4 }, val[2] = { 2, 2 };
    const char *data = fx_dataset(t_tmpdir(), 2, train, val, 0, 32, 8);
    T_REQUIRE(data != NULL);
    const char *norms[2] = { "auto", "tf" }, *want[2] = { "imagenet (auto)", "tf" };
    run_snapshot *s = malloc(sizeof *s);
    T_REQUIRE(s != NULL);
    for (int i = 0; i < 2; i++) {
        run_config c;
        cfg_defaults(&c);
        util_copy(c.data, sizeof c.data, data);
        util_path(c.out, sizeof c.out, "%s/run-%s", t_tmpdir(), norms[i]);
        util_copy(c.model, sizeof c.model, IN_ONNX);
        T_REQUIRE(cfg_set(&c, "input-norm", norms[i], NULL) == PT_OK);
        c.epochs = 1;
        c.replicas = 1;
        c.batch_per_replica = 4;
        c.image_size = 32;
        c.workers = 1;
        T_REQUIRE(fx_run_to_end(&c, s) == RUN_DONE);
        T_EQ_STR(s->input_norm, want[i]);
    }
    free(s);
}

/* `petal-tui model` says which convention and why; classify and model take
 * --input-norm (and --norm, its old name with its old values). */
TEST(input_norm_cli_model_prints_it_and_classify_honours_it)
{
    char *out = NULL;
    T_EQ_INT(in_cli(&out, "model " IN_ONNX " --size 32%s%s", NULL, NULL), 0);
    T_CHECKF(strstr(out, "\ninput imagenet ((x - ImageNet mean) / ImageNet std): the default"),
             "%s", out);
    free(out);
    T_EQ_INT(in_cli(&out, "model " IN_ONNX " --size 32 --input-norm tf%s%s", NULL, NULL), 0);
    T_CHECKF(strstr(out, "\ninput tf (2x - 1, in [-1, 1]): as asked\n"), "%s", out);
    free(out);
    T_EQ_INT(in_cli(&out, "model " IN_ONNX " --size 32 --norm signed%s%s", NULL, NULL), 0);
    T_CHECKF(strstr(out, "\ninput tf (2x - 1, in [-1, 1]): as asked\n"), "%s", out);
    free(out);
    T_EQ_INT(in_cli(&out, "model " IN_ONNX " --size 32 --norm none%s%s", NULL, NULL), 0);
    T_CHECKF(strstr(out, "\ninput unit (x, in [0, 1]): as asked\n"), "%s", out);
    free(out);
    /* A petal-tui export normalises its input itself. */
    T_EQ_INT(in_cli(&out, "model " IN_EXPORT "%s%s", NULL, NULL), 0);
    T_CHECKF(strstr(out, "\ninput raw (255x, pixels 0-255): a petal-tui export"), "%s", out);
    free(out);
    T_EQ_INT(in_cli(&out, "model " IN_ONNX " --input-norm signed%s%s", NULL, NULL), 1);
    T_CHECKF(strstr(out, "input-norm wants auto, imagenet, unit, tf, raw or caffe, not 'signed'"),
             "%s", out);
    free(out);
    T_EQ_INT(in_cli(&out, "classify " IN_ONNX " x.jpg --norm bogus%s%s", NULL, NULL), 1);
    T_CHECKF(strstr(out, "wants auto, imagenet, unit, tf, raw or caffe, not 'bogus'"), "%s", out);
    free(out);

    /* The same image through each convention: auto is imagenet here, tf is not. */
    const char *img = in_image();
    T_REQUIRE(img != NULL);
    char *by[3] = { NULL, NULL, NULL };
    const char *opts[3] = { "", "--input-norm imagenet", "--input-norm tf" };
    for (int i = 0; i < 3; i++)
        T_EQ_INT(in_cli(&by[i], "classify " IN_ONNX " %s --size 32 --top 4 %s", img, opts[i]), 0);
    T_REQUIRE(by[0] && by[1] && by[2]);
    T_CHECKF(strchr(by[0], '%') != NULL, "%s", by[0]);
    T_CHECKF(!strcmp(by[0], by[1]), "auto:\n%s\nimagenet:\n%s", by[0], by[1]);
    T_CHECKF(strcmp(by[1], by[2]) != 0, "imagenet and tf agree:\n%s", by[1]);
    for (int i = 0; i < 3; i++)
        free(by[i]);
}

/* An .onnx file's convention in predict: auto is the export's own (raw); another
 * changes the probabilities. */
TEST(input_norm_predict_of_an_onnx_file)
{
    const char *img = in_image();
    T_REQUIRE(img != NULL);
    char *by[3] = { NULL, NULL, NULL };
    const char *opts[3] = { "", "--input-norm raw", "--input-norm imagenet" };
    for (int i = 0; i < 3; i++)
        T_EQ_INT(in_cli_stdout(&by[i], "predict " IN_EXPORT " %s --top 3 %s", img, opts[i]), 0);
    T_REQUIRE(by[0] && by[1] && by[2]);
    T_CHECKF(strstr(by[0], "flower.jpg,") != NULL, "%s", by[0]);
    T_CHECKF(!strcmp(by[0], by[1]), "auto:\n%s\nraw:\n%s", by[0], by[1]);
    T_CHECKF(strcmp(by[1], by[2]) != 0, "raw and imagenet agree:\n%s", by[1]);
    for (int i = 0; i < 3; i++)
        free(by[i]);
    char *out;
    T_EQ_INT(in_cli(&out, "predict " IN_EXPORT " %s --input-norm bgr%s", img, NULL), 1);
    T_CHECKF(strstr(out, "not 'bgr'") != NULL, "%s", out);
    free(out);
}

/* The probabilities columns of predict's CSV rows, with their labels. */
static int csv_rows(const char *csv, int *label, double *p, int max)
{
    int n = 0;
    for (const char *q = csv ? strchr(csv, '\n') : NULL; q && q[1] && n < max;
         q = strchr(q + 1, '\n')) {
        const char *c1 = strchr(q + 1, ','), *c3 = NULL;
        if (!c1)
            break;
        label[n] = atoi(c1 + 1);
        const char *c2 = strchr(c1 + 1, ',');
        c3 = c2 ? strchr(c2 + 1, ',') : NULL;
        if (!c3)
            break;
        p[n++] = atof(c3 + 1);
    }
    return n;
}

/* The logits of nets built from two configs of the same run on one input. */
static double logits_gap(const run_config *a, const run_config *b, int img, int k)
{
    pt_err e;
    nn_model *ma = netcfg_build(a, img, k, NULL, &e), *mb = netcfg_build(b, img, k, NULL, &e);
    double gap = -1;
    size_t px = (size_t)img * img * 3;
    float *x = malloc(px * sizeof *x);
    nn_ctx *ca = ma ? nn_ctx_new_infer(ma, 1, &e) : NULL;
    nn_ctx *cb = mb ? nn_ctx_new_infer(mb, 1, &e) : NULL;
    if (x && ca && cb) {
        for (size_t i = 0; i < px; i++)
            x[i] = (float)((i * 37) % 255) / 255.0f;
        const float *ya = nn_forward(ca, x, 1, 0, 0, 0);
        float *keep = ya ? malloc((size_t)k * sizeof *keep) : NULL;
        if (keep) {
            memcpy(keep, ya, (size_t)k * sizeof *keep);
            const float *yb = nn_forward(cb, x, 1, 0, 0, 0);
            gap = yb ? 0 : -1;
            for (int j = 0; yb && j < k; j++)
                gap = fmax(gap, fabs((double)keep[j] - yb[j]));
            free(keep);
        }
    }
    nn_ctx_free(ca);
    nn_ctx_free(cb);
    nn_model_free(ma);
    nn_model_free(mb);
    free(x);
    return gap;
}

/* A headless run of an ONNX model with --input-norm tf: its log and config say so,
 * the net rebuilt from the config (resume, predict) is the one it trained, predict
 * refuses another convention for it, and its export predicts as it does. */
TEST(input_norm_onnx_run_logs_resumes_exports_and_predicts_alike)
{
    static const long long train[3] = { 8, 8, 8 }, val[3] = { 4, 4, 4 };
    char dir[4096];
    util_copy(dir, sizeof dir, t_tmpdir());
    const char *data = fx_dataset(dir, 3, train, val, 0, 32, 16);
    T_REQUIRE(data != NULL);
    char run[4200], cmd[16384], *out = NULL;
    util_path(run, sizeof run, "%s/run-tf", dir);
    util_path(cmd, sizeof cmd,
              "%s --headless --data '%s' --out '%s' --model " IN_ONNX " --input-norm tf "
              "--image-size 32 --epochs 1 --replicas 1 --workers 1 --batch-per-replica 8 2>&1",
              t_bin(), data, run);
    int rc = t_run(cmd, &out);
    T_CHECKF(rc == 0, "exit %d:\n%s", rc, out);
    free(out);
    T_REQUIRE(rc == 0);
    char path[4400];
    util_path(path, sizeof path, "%s/log.txt", run);
    char *text = fx_slurp(path);
    T_CHECKF(text && strstr(text, "input tf (2x - 1, in [-1, 1]): as asked"), "%s",
             text ? text : "(no log)");
    free(text);
    util_path(path, sizeof path, "%s/config", run);
    run_config back, tf, imagenet;
    cfg_defaults(&back);
    pt_err e;
    T_REQUIRE(cfg_read_file(&back, path, &e) == PT_OK);
    T_EQ_INT(back.input_norm, RUN_NORM_TF);

    /* What a resumed run (and predict) builds from the config: tf's net, not the
     * default's. */
    tf = back;
    tf.input_norm = RUN_NORM_TF;
    imagenet = back;
    imagenet.input_norm = RUN_NORM_AUTO;
    T_CHECK(logits_gap(&back, &tf, 32, 3) == 0);
    T_CHECK(logits_gap(&back, &imagenet, 32, 3) > 1e-4);
    rm_model m;
    T_REQUIRE(rm_open(run, 0, &m, &e) == PT_OK);
    T_EQ_INT(m.norm, NN_NORM_TF);
    T_CHECKF(strstr(m.norm_why, "the run's --input-norm tf"), "%s", m.norm_why);
    rm_close(&m);
    T_EQ_INT(rm_open_norm(run, 0, RUN_NORM_IMAGENET, &m, &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, run) && strstr(e.msg, "--input-norm is for an .onnx file"), "%s",
             e.msg);
    T_EQ_INT(in_cli(&out, "predict '%s' '%s' --split val --input-norm tf", run, data), 1);
    T_CHECKF(strstr(out, "trained with") != NULL, "%s", out);
    free(out);

    /* Resumed for a second epoch: the log says tf again. */
    util_path(cmd, sizeof cmd,
              "%s --headless --resume '%s' --epochs 2 2>&1", t_bin(), run);
    rc = t_run(cmd, &out);
    T_CHECKF(rc == 0, "exit %d:\n%s", rc, out);
    free(out);
    util_path(path, sizeof path, "%s/log.txt", run);
    text = fx_slurp(path);
    const char *first = text ? strstr(text, "input tf (2x - 1") : NULL;
    T_CHECKF(first && strstr(first + 1, "input tf (2x - 1, in [-1, 1]): as asked"), "%s",
             text ? text : "(no log)");
    free(text);

    /* The export carries tf in its front: predict on it = predict on the run. */
    char model[4400];
    util_path(model, sizeof model, "%s/model.onnx", dir);
    T_EQ_INT(in_cli(&out, "export '%s' --out '%s'", run, model), 0);
    free(out);
    char *by_run = NULL, *by_export = NULL;
    T_EQ_INT(in_cli_stdout(&by_run, "predict '%s' '%s' --split val --top 3", run, data), 0);
    T_EQ_INT(in_cli_stdout(&by_export, "predict '%s' '%s' --split val --top 3", model, data), 0);
    int la[64], lb[64];
    double pa[64], pb[64];
    int na = csv_rows(by_run, la, pa, 64), nb = csv_rows(by_export, lb, pb, 64);
    T_EQ_INT(na, 12);
    T_EQ_INT(nb, na);
    double worst = 0;
    int differ = 0;
    for (int i = 0; i < na && i < nb; i++) {
        differ += la[i] != lb[i];
        worst = fmax(worst, fabs(pa[i] - pb[i]));
    }
    printf("  tf run vs its export on %d val images: %d labels differ, top probability within "
           "%.2g\n", na, differ, worst);
    T_CHECKF(differ == 0 && worst <= 1e-5, "run:\n%s\nexport:\n%s", by_run, by_export);
    free(by_run);
    free(by_export);
}
