/* `petal-tui ensemble --export` (issue 46): the members' graphs side by side in one ONNX
 * file, run by ONNX Runtime (tests/ort/ort_run.js, `make ort-deps`) on exactly the
 * pixels petal-tui's members predict (S x S PNG files: predict takes an image of its
 * side as it is), against the ensemble's own probabilities (ens_files). Demo runs
 * trained here; demo photos rendered by fx_demo_jpeg. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/image.h"
#include "data/jpeg.h"
#include "datasets.h"
#include "infer/ensemble.h"
#include "io/png.h"
#include "tests/fixtures.h"
#include "tests/t.h"

#define EX_ORT_DIR "tests/ort"
#define EX_N 24
/* Measured (2026-11-29, onnxruntime-node 1.30.0, these runs and photos): members of two
 * sides, max |dp| 0.043 (ONNX's linear Resize of 48 to 32 px does not average as
 * petal-tui's decode-time resize does); crops on one side, 4.8e-4 (petal-tui resizes
 * the crops in bytes, the graph in float); one side without crops, 3.2e-7. */
#define EX_MIXED_TOL 0.1
#define EX_CROPS_TOL 2e-3

/* The demo runs a, b (32 px) and c (48 px). */
typedef struct ex_fix {
    char a[4200], b[4200], c[4200];
} ex_fix;

static const ex_fix *ex_fixture(void)
{
    static ex_fix f;
    static int made;
    if (made)
        return made > 0 ? &f : NULL;
    made = -1;
    const char *runs = fx_demo_runs();
    if (!runs)
        return NULL;
    util_path(f.a, sizeof f.a, "%s/a", runs);
    util_path(f.b, sizeof f.b, "%s/b", runs);
    util_path(f.c, sizeof f.c, "%s/c48", t_tmpdir());
    char cmd[8192], *out;
    util_path(cmd, sizeof cmd, "%s --headless --out '%s' --image-size 48 --epochs 1 "
              "--replicas 1 --workers 1", t_bin(), f.c);
    int rc = t_run(cmd, &out);
    if (rc != 0)
        printf("  run c48: exit %d:\n%s\n", rc, out);
    free(out);
    if (rc == 0)
        made = 1;
    return made > 0 ? &f : NULL;
}

/* node and onnxruntime-node are there (else the test is skipped, saying which not). */
static int ex_ort_ready(void)
{
    if (!t_need_tool("node"))
        return 0;
    if (!util_is_file(EX_ORT_DIR "/node_modules/onnxruntime-node/package.json")) {
        t_skip("onnxruntime-node is not installed in " EX_ORT_DIR "/node_modules (make "
               "ort-deps: npm ci)");
        return 0;
    }
    return 1;
}

/* EX_N demo photos decoded to S x S (centre crop, as predict decodes a JPEG), written
 * as PNG files (paths into files, malloc'd); their pixels, malloc'd. */
static uint8_t *ex_pixels(int S, char **files)
{
    uint8_t *rgb = malloc((size_t)EX_N * S * S * 3);
    jpg_codec *c = jpg_codec_new();
    int ok = rgb && c;
    for (int i = 0; ok && i < EX_N; i++) {
        uint8_t *jpg;
        size_t len;
        int w, h;
        pt_err e;
        char path[4200];
        util_path(path, sizeof path, "%s/%02d.png", t_tmpdir(), i);
        ok = fx_demo_jpeg(i % 12, 46 + (uint64_t)i, 96, &jpg, &len) == 0;
        if (!ok)
            break;
        uint8_t *px = rgb + (size_t)i * S * S * 3;
        ok = jpg_decode_into(c, jpg, len, px, S, S, 1, 0, &w, &h, &e) == PT_OK &&
             png_write_rgb(path, px, S, S, &e) == PT_OK && (files[i] = strdup(path));
        free(jpg);
    }
    jpg_codec_free(c);
    if (!ok) {
        free(rgb);
        return NULL;
    }
    return rgb;
}

/* ONNX Runtime's probabilities and logits of model on the pixels (EX_N x S x S x 3
 * bytes), k classes: malloc'd, or NULL (said). */
static float *ex_ort(const char *model, const uint8_t *rgb, int S, int k, float **logits)
{
    size_t plane = (size_t)S * S, n = (size_t)EX_N * 3 * plane;
    float *x = malloc(n * sizeof *x);
    char in[4200], dir[4200], cmd[16000], path[4300];
    util_path(in, sizeof in, "%s/input.f32", t_tmpdir());
    util_path(dir, sizeof dir, "%s/ort", t_tmpdir());
    for (size_t i = 0; x && i < EX_N; i++)
        for (int c = 0; c < 3; c++)
            for (size_t q = 0; q < plane; q++)
                x[(i * 3 + c) * plane + q] = rgb[(i * plane + q) * 3 + c];
    pt_err e;
    int rc = x ? util_write_file_atomic(in, x, n * sizeof *x, &e) : -1;
    free(x);
    util_path(cmd, sizeof cmd, "node " EX_ORT_DIR "/ort_run.js '%s' '%s' %d,3,%d,%d '%s'", model,
              in, EX_N, S, S, dir);
    char *text = NULL;
    if (rc == 0 && (rc = t_run(cmd, &text)) != 0)
        printf("  %s: exit %d:\n%s\n", cmd, rc, text ? text : "");
    free(text);
    uint8_t *p = NULL, *l = NULL;
    size_t np = 0, nl = 0;
    util_path(path, sizeof path, "%s/probabilities.f32", dir);
    int got = rc == 0 && util_read_file(path, &p, &np, &e) == PT_OK;
    util_path(path, sizeof path, "%s/logits.f32", dir);
    got = got && util_read_file(path, &l, &nl, &e) == PT_OK;
    if (!got || np != (size_t)EX_N * k * 4 || nl != np) {
        printf("  ONNX Runtime gave %zu and %zu bytes for %d x %d\n", np, nl, EX_N, k);
        free(p);
        free(l);
        return NULL;
    }
    *logits = (float *)l; /* little-endian float32, as this host's (tests run on x86 / arm) */
    return (float *)p;
}

typedef struct ex_diff {
    double dp;              /* the largest |probability difference| */
    double dlog;            /* the largest |logit - log(petal-tui's probability)| */
    int top1_same;
} ex_diff;

/* The ensemble x exported and run by ONNX Runtime on S x S pixels against ens_files on
 * the same pixels. 0, or -1 (said). */
static int ex_compare(ens *x, const char *name, ex_diff *d)
{
    const int S = ens_image_size(x), k = ens_classes(x);
    char model[4200], *files[EX_N] = { 0 };
    util_path(model, sizeof model, "%s/%s.onnx", t_tmpdir(), name);
    pt_err e;
    if (ens_export(x, model, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return -1;
    }
    uint8_t *rgb = ex_pixels(S, files);
    prd_results r = { 0 };
    ens_opts o = { .batch = 8, .replicas = 1, .workers = 1, .bf16 = 0 };
    float *lg = NULL, *pr = NULL;
    int rc = rgb && ens_files(x, files, EX_N, &o, &r, NULL, &e) == PT_OK && r.n == EX_N &&
                     r.n_failed == 0 ? 0 : -1;
    if (rc)
        printf("  ens_files: %s\n", e.msg);
    if (rc == 0 && !(pr = ex_ort(model, rgb, S, k, &lg)))
        rc = -1;
    *d = (ex_diff){ 0 };
    for (int i = 0; rc == 0 && i < EX_N; i++) {
        int a = 0, b = 0;
        for (int c = 0; c < k; c++) {
            double p = r.probs[(size_t)i * k + c], q = pr[(size_t)i * k + c];
            d->dp = fmax(d->dp, fabs(p - q));
            d->dlog = fmax(d->dlog, fabs(lg[(size_t)i * k + c] - log(fmax(p, 1e-30))));
            a = p > r.probs[(size_t)i * k + a] ? c : a;
            b = q > pr[(size_t)i * k + b] ? c : b;
        }
        d->top1_same += a == b;
    }
    if (rc == 0)
        printf("  %s: %d images at %d px: max |dp| %.2g, max |logit - log p| %.2g, top-1 the "
               "same on %d\n", name, EX_N, S, d->dp, d->dlog, d->top1_same);
    prd_results_free(&r);
    free(rgb);
    free(pr);
    free(lg);
    for (int i = 0; i < EX_N; i++)
        free(files[i]);
    return rc;
}

TEST(ens_export_agrees_with_onnx_runtime)
{
    const ex_fix *f = ex_fixture();
    T_REQUIRE(f != NULL);
    if (!ex_ort_ready())
        return;
    pt_err e;
    ens *x;
    /* Members of one side, one with the mirror image: the graph is the members' own. */
    const char *same[2] = { f->a, f->b };
    const double w2[2] = { 0.6, 0.4 };
    const int tta2[2] = { ENS_TTA_NONE, ENS_TTA_FLIP };
    T_REQUIRE(ens_open(same, 2, w2, tta2, &x, &e) == PT_OK);
    ex_diff d;
    T_REQUIRE(ex_compare(x, "same-side", &d) == 0);
    T_CHECKF(d.dp <= 1e-4 && d.top1_same == EX_N, "max |dp| %g, top-1 %d of %d", d.dp,
             d.top1_same, EX_N);
    T_CHECKF(d.dlog <= 1e-3, "logits are not the log of the probabilities: %g", d.dlog);
    ens_close(x);
    /* Two sides (S = 48: the 32 px members see a resize of the 48 px image) and crops:
     * the in-graph Resize is not the decode-time one (ONNX's linear Resize does not
     * average when it shrinks; petal-tui's crops are resized in bytes). */
    const char *mixed[3] = { f->a, f->b, f->c };
    const int tta3[3] = { ENS_TTA_NONE, ENS_TTA_FLIP | ENS_TTA_CROPS, ENS_TTA_CROPS };
    T_REQUIRE(ens_open(mixed, 3, NULL, tta3, &x, &e) == PT_OK);
    T_EQ_INT(ens_image_size(x), 48);
    T_REQUIRE(ex_compare(x, "two-sides", &d) == 0);
    T_CHECKF(d.dp <= EX_MIXED_TOL && d.top1_same >= EX_N - 2, "max |dp| %g, top-1 %d of %d",
             d.dp, d.top1_same, EX_N);
    ens_close(x);
    /* crops alone, one side: only the bytes' rounding of the resized crops differs. */
    const char *one[1] = { f->b };
    const int tta1[1] = { ENS_TTA_FLIP | ENS_TTA_CROPS };
    T_REQUIRE(ens_open(one, 1, NULL, tta1, &x, &e) == PT_OK);
    T_REQUIRE(ex_compare(x, "crops", &d) == 0);
    T_CHECKF(d.dp <= EX_CROPS_TOL, "max |dp| %g", d.dp);
    ens_close(x);
}

TEST(ens_export_from_the_command_line_and_predict_refuses_it)
{
    const ex_fix *f = ex_fixture();
    char demo[4200];
    pt_err e;
    T_REQUIRE(f != NULL && datasets_demo(NULL, demo, sizeof demo, NULL, NULL, &e) == PT_OK);
    char args[20000], dir[4200], model[4200], *out;
    util_path(dir, sizeof dir, "%s/ens", t_tmpdir());
    util_path(model, sizeof model, "%s/ens.onnx", t_tmpdir());
    util_path(args, sizeof args, "%s ensemble '%s' '%s' --tta none,crops --weights fit "
              "--data '%s' --out '%s' --export '%s' --replicas 1", t_bin(), f->a, f->c, demo,
              dir, model);
    T_EQ_INT(t_run(args, &out), 0);
    char want[4400];
    util_fmt(want, sizeof want, "exported: %s (2 members side by side, input 48 x 48)\n",
             model);
    T_CHECKF(out && strstr(out, want), "%s", out ? out : "");
    free(out);
    T_CHECK(util_is_file(model));
    /* petal-tui's importer has no Resize or Slice: predict says what the file is. */
    util_path(args, sizeof args, "%s predict '%s' '%s' 2>&1", t_bin(), model, demo);
    T_EQ_INT(t_run(args, &out), 1);
    T_CHECKF(out && strstr(out, "is an ensemble's export (`petal-tui ensemble --export`") &&
                 strstr(out, "run it with ONNX Runtime"), "%s", out ? out : "");
    free(out);
}

/* prd_opts.tta_crops is the mean of predict's probabilities of the five crops made
 * explicitly: each 7/8 of the side (prd_crop_side), at the centre and the corners,
 * resized back by img_resize, written as PNG files of the model's side. */
TEST(ens_crops_are_the_mean_of_the_five_crops_predicted)
{
    const ex_fix *f = ex_fixture();
    T_REQUIRE(f != NULL);
    pt_err e;
    ens *crops, *none;
    const char *run[1] = { f->a };
    const int tc[1] = { ENS_TTA_CROPS }, tn[1] = { ENS_TTA_NONE };
    T_REQUIRE(ens_open(run, 1, NULL, tc, &crops, &e) == PT_OK);
    T_REQUIRE(ens_open(run, 1, NULL, tn, &none, &e) == PT_OK);
    const int S = ens_image_size(crops), c = prd_crop_side(S), far = S - c;
    T_EQ_INT(c, 28);
    char *files[EX_N] = { 0 }, *views[5 * EX_N] = { 0 };
    uint8_t *rgb = ex_pixels(S, files), *view = malloc((size_t)S * S * 3);
    T_REQUIRE(rgb && view);
    const int at[5][2] = { { far / 2, far / 2 }, { 0, 0 }, { far, 0 }, { 0, far }, { far, far } };
    img_scratch sc = { 0 };
    for (int i = 0; i < EX_N; i++)
        for (int v = 0; v < 5; v++) {
            char p[4200];
            util_path(p, sizeof p, "%s/%02d-crop%d.png", t_tmpdir(), i, v);
            T_REQUIRE(img_resize(rgb + (size_t)i * S * S * 3, S * 3, at[v][0], at[v][1], c, c,
                                 view, S, S, &sc) == 0 &&
                      png_write_rgb(p, view, S, S, &e) == PT_OK);
            views[i * 5 + v] = strdup(p);
        }
    img_scratch_free(&sc);
    ens_opts o = { .batch = 8, .replicas = 1, .workers = 1, .bf16 = 0 };
    prd_results rc, rn;
    T_REQUIRE(ens_files(crops, files, EX_N, &o, &rc, NULL, &e) == PT_OK);
    T_REQUIRE(ens_files(none, views, 5 * EX_N, &o, &rn, NULL, &e) == PT_OK);
    const int k = rc.k;
    double worst = 0, moved = 0;
    for (int i = 0; i < EX_N; i++)
        for (int j = 0; j < k; j++) {
            double mean = 0;
            for (int v = 0; v < 5; v++)
                mean += rn.probs[(size_t)(i * 5 + v) * k + j] / 5;
            worst = fmax(worst, fabs(mean - rc.probs[(size_t)i * k + j]));
            moved = fmax(moved, fabs(mean - rn.probs[(size_t)i * 5 * k + j]));
        }
    T_CHECKF(worst <= 1e-6, "crops differ from the mean of the crops predicted by %g", worst);
    T_CHECKF(moved > 1e-4, "the five crops gave the centre crop's probabilities (%g)", moved);
    prd_results_free(&rc);
    prd_results_free(&rn);
    for (int i = 0; i < EX_N; i++)
        free(files[i]);
    for (int i = 0; i < 5 * EX_N; i++)
        free(views[i]);
    free(rgb);
    free(view);
    ens_close(crops);
    ens_close(none);
}
