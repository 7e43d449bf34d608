/* ONNX import of tf2onnx's Keras layout (issue 29, first step): an NHWC input read
 * through a Transpose, asymmetric SAME pads, a Transpose back and ReduceMean as the
 * pooling, a graph with no classifier (a feature extractor). Fixtures (no shared data
 * needed) and how they were made: tests/data/import/make_keras_fixtures.py, whose
 * references PyTorch computed (ONNX Runtime agrees with them to 1.2e-7). With the
 * shared data: the float MobileNetV2 backbone tf2onnx wrote from Keras, its features
 * against ONNX Runtime's on real photos. */
#include "tests/t.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/jpeg.h"
#include "nn/nn_import.h"

#define KERAS_MNV2 "weights/mobilenetv2-1.0-tfslim-float-notop.onnx"

/* The worst of |mine - want| / max(1, largest |want| of the example) over n examples
 * of k values each: ONNX Runtime's tolerance convention (tests/test_ort.c). */
static double worst_rel(const float *mine, const float *want, int n, int k)
{
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        double big = 1.0;
        for (int j = 0; j < k; j++)
            big = fmax(big, fabs((double)want[i * k + j]));
        for (int j = 0; j < k; j++) {
            double d = fabs((double)mine[i * k + j] - want[i * k + j]) / big;
            worst = d > worst ? d : worst;
        }
    }
    return worst;
}

/* The fixture's features for its saved NHWC input (2 examples of 9 x 9) against
 * PyTorch's: the worst relative difference (1e9 when it could not run). */
static double keras_fixture(const char *name, int n_classes, int *classes, nn_import_info *info)
{
    char path[256];
    pt_err e;
    nn_import_opts o = { .h = 9, .w = 9, .n_classes = n_classes, .norm = NN_NORM_UNIT, .seed = 1 };
    snprintf(path, sizeof path, "tests/data/import/%s.onnx", name);
    nn_model *m = nn_import_onnx_file(path, &o, info, &e);
    T_CHECKF(m != NULL, "%s", e.msg);
    if (!m)
        return 1e9;
    *classes = nn_model_classes(m);
    uint8_t *in = NULL, *out = NULL;
    size_t li = 0, lo = 0;
    snprintf(path, sizeof path, "tests/data/import/%s.in", name);
    T_CHECK(util_read_file(path, &in, &li, &e) == PT_OK);
    snprintf(path, sizeof path, "tests/data/import/%s.out", name);
    T_CHECK(util_read_file(path, &out, &lo, &e) == PT_OK);
    double worst = 1e9;
    nn_ctx *c = nn_ctx_new(m, 2, &e);
    if (n_classes == 0 && in && out && c && li == 2 * 9 * 9 * 3 * 4 &&
        lo == 2 * (size_t)*classes * 4) {
        float *x = malloc(li), *want = malloc(lo);
        memcpy(x, in, li); /* little-endian floats, as this host */
        memcpy(want, out, lo);
        const float *y = nn_forward(c, x, 2, 0, 0, 0);
        if (y)
            worst = worst_rel(y, want, 2, *classes);
        free(x);
        free(want);
    } else if (n_classes > 0 && c) {
        float x[2 * 9 * 9 * 3] = { 0 };
        worst = nn_forward(c, x, 2, 0, 0, 0) ? 0.0 : 1e9;
    }
    nn_ctx_free(c);
    nn_model_free(m);
    free(in);
    free(out);
    return worst;
}

TEST(import_keras_nhwc_fixtures_give_pytorchs_features)
{
    int k = 0;
    nn_import_info info;
    /* ReduceMean over NHWC [1, 2], keepdims 0 (opset 13). */
    double d = keras_fixture("keras_block", 0, &k, &info);
    T_EQ_INT(k, 6);
    T_CHECKF(d < 1e-5, "keras_block: worst relative difference %g", d);
    T_EQ_INT(info.cut_from, -1);
    /* keepdims 1, a Transpose of the pooled [N, 1, 1, C] back, ReduceMean over NCHW
     * [2, 3] with its axes an input (opset 18). */
    d = keras_fixture("keras_keep", 0, &k, &info);
    T_EQ_INT(k, 6);
    T_CHECKF(d < 1e-5, "keras_keep: worst relative difference %g", d);
    /* No classifier: the new head follows the graph's output. */
    d = keras_fixture("keras_block", 3, &k, &info);
    T_EQ_INT(k, 3);
    T_CHECK(d == 0.0);
    T_EQ_INT(info.feature_c, 6);
    T_CHECKF(strstr(info.cut, "no classifier") && strstr(info.cut, "'features'"), "%s", info.cut);
}

TEST(import_keras_refuses_other_readers_of_an_nhwc_value)
{
    pt_err e;
    nn_import_info info;
    nn_import_opts o = { .h = 9, .w = 9, .norm = NN_NORM_UNIT };
    T_CHECK(nn_import_onnx_file("tests/data/import/keras_bad.onnx", &o, &info, &e) == NULL);
    T_CHECKF(strstr(e.msg, "keras_bad.onnx") && strstr(e.msg, "'not_a_pool' (Relu)") &&
                 strstr(e.msg, "Transpose back"),
             "%s", e.msg);
}

TEST(import_keras_mobilenetv2_float_backbone)
{
    T_NEED_DATA();
    pt_err e;
    nn_import_info info;
    /* As the file is: the 1280 features, at 224 and (fully convolutional) at 160. */
    nn_import_opts o = { .h = 224, .w = 224, .norm = NN_NORM_TF, .seed = 1 };
    nn_model *m = nn_import_onnx_file(t_data(KERAS_MNV2), &o, &info, &e);
    T_REQUIRE(m != NULL);
    T_EQ_INT(nn_model_classes(m), 1280);
    T_CHECK(!info.quantized);
    T_EQ_INT(info.cut_from, -1);
    nn_model_free(m);
    o.h = o.w = 160;
    m = nn_import_onnx_file(t_data(KERAS_MNV2), &o, &info, &e);
    T_REQUIRE(m != NULL);
    T_EQ_INT(nn_model_classes(m), 1280);
    nn_model_free(m);
    /* With a new head of 5 classes after the pooled features. */
    o.n_classes = 5;
    o.dropout = 0.2f;
    m = nn_import_onnx_file(t_data(KERAS_MNV2), &o, &info, &e);
    T_REQUIRE(m != NULL);
    T_EQ_INT(nn_model_classes(m), 5);
    T_EQ_INT(info.feature_c, 1280);
    T_CHECKF(strstr(info.cut, "no classifier") != NULL, "%s", info.cut);
    nn_model_free(m);
}

/* A float32 little-endian file of n values; 0 or -1. */
static int put_f32(const char *path, const float *v, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(v, sizeof *v, n, f); /* this host is little-endian (as the fixtures) */
    return fclose(f) == 0 && w == n ? 0 : -1;
}

#define ORT_DIR "tests/ort"
#define PHOTOS 3

TEST(import_keras_mobilenetv2_features_equal_onnxruntimes)
{
    T_NEED_DATA();
    T_NEED_TOOL("node");
    if (!util_is_file(ORT_DIR "/node_modules/onnxruntime-node/package.json")) {
        t_skip("onnxruntime-node is not installed in " ORT_DIR "/node_modules (make ort-deps)");
        return;
    }
    const int S = 224, K = 1280;
    static const char *const photos[PHOTOS] = { "daisy/100080576_f52e8ee070_n.jpg",
                                                "dandelion", "tulip" };
    pt_err e;
    nn_import_info info;
    nn_import_opts o = { .h = S, .w = S, .norm = NN_NORM_TF, .seed = 1 };
    nn_model *m = nn_import_onnx_file(t_data(KERAS_MNV2), &o, &info, &e);
    T_REQUIRE(m != NULL);
    size_t px = (size_t)S * S * 3;
    float *x = malloc(PHOTOS * px * sizeof *x), *xs = malloc(PHOTOS * px * sizeof *xs);
    uint8_t *rgb = malloc(px);
    jpg_codec *jc = jpg_codec_new();
    T_REQUIRE(x && xs && rgb && jc);
    for (int i = 0; i < PHOTOS; i++) {
        /* The first photo of a class folder where only the folder is named. */
        char path[4200];
        util_path(path, sizeof path, "%s/%s", t_data("flower-jpegs-320"), photos[i]);
        if (!strchr(photos[i], '/')) {
            char **names = NULL;
            int n = 0;
            T_REQUIRE(util_list_dir(path, UTIL_LIST_FILES, &names, &n, &e) == PT_OK && n > 0);
            util_path(path, sizeof path, "%s/%s/%s", t_data("flower-jpegs-320"), photos[i],
                      names[0]);
            util_free_list(names, n);
        }
        uint8_t *buf = NULL;
        size_t len = 0;
        int rc = util_read_file(path, &buf, &len, &e);
        if (rc == PT_OK)
            rc = jpg_decode_into(jc, buf, len, rgb, S, S, 0, 0, NULL, NULL, &e);
        free(buf);
        T_REQUIRE(rc == PT_OK);
        /* petal-tui gets [0, 1] and normalises (2x - 1); ONNX Runtime the same in float. */
        for (size_t q = 0; q < px; q++) {
            x[i * px + q] = rgb[q] / 255.0f;
            xs[i * px + q] = x[i * px + q] * 2.0f - 1.0f;
        }
    }
    nn_ctx *c = nn_ctx_new_infer(m, PHOTOS, &e);
    T_REQUIRE(c != NULL);
    const float *y = nn_forward(c, x, PHOTOS, 0, 0, 0);
    T_REQUIRE(y != NULL);
    char in[4200], outdir[4200], cmd[16000], path[4300];
    util_path(in, sizeof in, "%s/input.f32", t_tmpdir());
    util_path(outdir, sizeof outdir, "%s/ort", t_tmpdir());
    T_REQUIRE(put_f32(in, xs, PHOTOS * px) == 0);
    /* The file's input is NHWC: the dims go as they are. */
    util_path(cmd, sizeof cmd, "node " ORT_DIR "/ort_run.js '%s' '%s' %d,%d,%d,3 '%s'",
              t_data(KERAS_MNV2), in, PHOTOS, S, S, outdir);
    char *text = NULL;
    int rc = t_run(cmd, &text);
    T_CHECKF(rc == 0, "%s: exit %d: %s", cmd, rc, text ? text : "");
    free(text);
    util_path(path, sizeof path, "%s/global_average_pooling2d.f32", outdir);
    uint8_t *d = NULL;
    size_t len = 0;
    T_REQUIRE(util_read_file(path, &d, &len, &e) == PT_OK);
    T_REQUIRE(len == (size_t)PHOTOS * K * 4);
    float *want = malloc(len);
    T_REQUIRE(want != NULL);
    memcpy(want, d, len);
    double worst = worst_rel(y, want, PHOTOS, K), big = 0.0;
    for (int j = 0; j < PHOTOS * K; j++)
        big = fmax(big, fabs((double)want[j]));
    printf("  MobileNetV2 float features vs ONNX Runtime, %d photos at %d: worst |diff| / "
           "max(1, largest |feature|) %.3g (largest feature %.3g)\n", PHOTOS, S, worst, big);
    T_CHECKF(worst < 1e-4, "worst relative difference %g", worst);
    T_CHECK(big > 0.1); /* real features, not zeros compared with zeros */
    free(want);
    free(d);
    nn_ctx_free(c);
    jpg_codec_free(jc);
    free(rgb);
    free(xs);
    free(x);
    nn_model_free(m);
}
