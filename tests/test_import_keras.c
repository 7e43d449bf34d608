/* ONNX import of tf2onnx's Keras layout (issue 29): an NHWC input read through a
 * Transpose, asymmetric SAME pads, a Transpose back and ReduceMean as the pooling, a
 * graph with no classifier (a feature extractor); EfficientNet's front (Mul, Sub, Div
 * by constants), SiLU, squeeze-and-excitation and vector Reshape / Squeeze /
 * Unsqueeze; VGG's caffe input (BGR) and Keras's Flatten. Fixtures (no shared data
 * needed) and how they were made: tests/data/import/make_keras_fixtures.py, whose
 * references PyTorch and ONNX Runtime computed, with PyTorch's gradients of a training
 * step (checked as tests/conform.c does). With the shared data: the float
 * MobileNetV2 backbone tf2onnx wrote from Keras, its features against ONNX Runtime's
 * on real photos. */
#include "tests/t.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/jpeg.h"
#include "nn/nn_import.h"
#include "tests/conform.h"
#include "infer/infer.h"
#include "infer/predict.h"

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
 * PyTorch's and ONNX Runtime's (NAME.out, NAME.ort): the worst relative difference
 * (1e9 when it could not run). */
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
    uint8_t *in = NULL, *out = NULL, *ort = NULL;
    size_t li = 0, lo = 0, lr = 0;
    snprintf(path, sizeof path, "tests/data/import/%s.in", name);
    T_CHECK(util_read_file(path, &in, &li, &e) == PT_OK);
    snprintf(path, sizeof path, "tests/data/import/%s.out", name);
    T_CHECK(util_read_file(path, &out, &lo, &e) == PT_OK);
    snprintf(path, sizeof path, "tests/data/import/%s.ort", name);
    T_CHECK(util_read_file(path, &ort, &lr, &e) == PT_OK);
    double worst = 1e9;
    nn_ctx *c = nn_ctx_new(m, 2, &e);
    if (n_classes == 0 && in && out && ort && c && li == 2 * 9 * 9 * 3 * 4 &&
        lo == 2 * (size_t)*classes * 4 && lr == lo) {
        float *x = malloc(li), *want = malloc(lo), *theirs = malloc(lr);
        memcpy(x, in, li); /* little-endian floats, as this host */
        memcpy(want, out, lo);
        memcpy(theirs, ort, lr);
        const float *y = nn_forward(c, x, 2, 0, 0, 0);
        if (y) {
            double a = worst_rel(y, want, 2, *classes), b = worst_rel(y, theirs, 2, *classes);
            worst = a > b ? a : b;
        }
        free(x);
        free(want);
        free(theirs);
    } else if (n_classes > 0 && c) {
        float x[2 * 9 * 9 * 3] = { 0 };
        worst = nn_forward(c, x, 2, 0, 0, 0) ? 0.0 : 1e9;
    }
    nn_ctx_free(c);
    nn_model_free(m);
    free(in);
    free(out);
    free(ort);
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
    /* Keras's squeeze-and-excitation: ReduceMean keepdims 0 over NHWC, a Reshape to
     * [N, 1, 1, C] (NHWC), a Transpose to [N, C, 1, 1], a Sigmoid gating the block. */
    d = keras_fixture("keras_se", 0, &k, &info);
    T_EQ_INT(k, 6);
    T_CHECKF(d < 1e-5, "keras_se: worst relative difference %g", d);
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

/* ---- whole tiny nets: keras_effnet (raw pixels, normalised in the graph) and keras_vgg
 * (caffe: BGR, means subtracted outside it), against PyTorch and ONNX Runtime ---- */

#define KS 12 /* their input size */
#define KK 10 /* their classes */

/* The probabilities petal-tui gives for NAME.in (2 pixel images in [0, 1], NHWC) with
 * norm (auto when auto_norm), swapped: the channels reversed first (the wrong order);
 * 0 or -1. */
static int keras_probs(const char *name, nn_norm norm, int auto_norm, int swapped,
                       nn_import_info *info, float probs[2 * KK])
{
    char path[256];
    pt_err e;
    nn_import_opts o = { .h = KS, .w = KS, .norm = norm, .norm_auto = auto_norm, .seed = 1 };
    snprintf(path, sizeof path, "tests/data/import/%s.onnx", name);
    nn_model *m = nn_import_onnx_file(path, &o, info, &e);
    T_CHECKF(m != NULL, "%s", e.msg);
    if (!m)
        return -1;
    T_EQ_INT(nn_model_classes(m), KK);
    uint8_t *in = NULL;
    size_t li = 0;
    snprintf(path, sizeof path, "tests/data/import/%s.in", name);
    int rc = util_read_file(path, &in, &li, &e) == PT_OK && li == 2 * KS * KS * 3 * 4 ? 0 : -1;
    nn_ctx *c = rc ? NULL : nn_ctx_new_infer(m, 2, &e);
    const float *y = NULL;
    if (c) {
        float x[2 * KS * KS * 3];
        memcpy(x, in, sizeof x); /* little-endian floats, as this host */
        for (int p = 0; swapped && p < 2 * KS * KS; p++) {
            float t = x[3 * p];
            x[3 * p] = x[3 * p + 2];
            x[3 * p + 2] = t;
        }
        y = nn_forward(c, x, 2, 0, 0, 0);
    }
    for (int i = 0; y && i < 2; i++) {
        double p[KK];
        inf_softmax(y + i * KK, KK, p);
        for (int k = 0; k < KK; k++)
            probs[i * KK + k] = (float)p[k];
    }
    nn_ctx_free(c);
    nn_model_free(m);
    free(in);
    return y ? 0 : -1;
}

/* The worst relative difference of probs from NAME.SUFFIX (2 x KK floats); 1e9 when
 * that cannot be read. */
static double against(const char *name, const char *suffix, const float *probs)
{
    char path[256];
    pt_err e;
    uint8_t *d = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "tests/data/import/%s.%s", name, suffix);
    double worst = 1e9;
    if (util_read_file(path, &d, &len, &e) == PT_OK && len == 2 * KK * 4) {
        float want[2 * KK];
        memcpy(want, d, len);
        worst = worst_rel(probs, want, 2, KK);
    }
    free(d);
    return worst;
}

TEST(import_keras_effnet_and_vgg_equal_onnxruntime_and_pytorch)
{
    nn_import_info info;
    float probs[2 * KK];
    /* keras_effnet takes raw pixels: auto sees its Mul by a constant first. */
    T_REQUIRE(keras_probs("keras_effnet", NN_NORM_IMAGENET, 1, 0, &info, probs) == 0);
    T_EQ_INT(info.norm, NN_NORM_RAW);
    double ort = against("keras_effnet", "ort", probs), pt = against("keras_effnet", "out", probs);
    printf("  keras_effnet (raw): worst relative difference %.2g from ONNX Runtime, %.2g from "
           "PyTorch\n", ort, pt);
    T_CHECKF(ort < 1e-4 && pt < 1e-4, "keras_effnet: %g from ONNX Runtime, %g from PyTorch", ort,
             pt);
    /* keras_vgg in caffe mode: the first conv reads the file's BGR channels reversed. */
    T_REQUIRE(keras_probs("keras_vgg", NN_NORM_CAFFE, 0, 0, &info, probs) == 0);
    ort = against("keras_vgg", "ort", probs);
    pt = against("keras_vgg", "out", probs);
    printf("  keras_vgg (caffe): worst relative difference %.2g from ONNX Runtime, %.2g from "
           "PyTorch\n", ort, pt);
    T_CHECKF(ort < 1e-4 && pt < 1e-4, "keras_vgg: %g from ONNX Runtime, %g from PyTorch", ort, pt);
    /* The order matters: the same pixels given BGR land far off. */
    T_REQUIRE(keras_probs("keras_vgg", NN_NORM_CAFFE, 0, 1, &info, probs) == 0);
    T_CHECKF(against("keras_vgg", "ort", probs) > 1e-3, "%g", against("keras_vgg", "ort", probs));
}

TEST(import_keras_front_constants_are_one_affine_layer)
{
    pt_err e;
    nn_import_info info;
    nn_import_opts o = { .h = KS, .w = KS, .norm_auto = 1, .seed = 1 };
    nn_model *m = nn_import_onnx_file("tests/data/import/keras_effnet.onnx", &o, &info, &e);
    T_REQUIRE(m != NULL);
    /* input, the merged affine (x255, Mul 1/255, Sub, Div), then the stem conv */
    nn_node_info a, b;
    nn_node_get(m, 1, &a);
    nn_node_get(m, 2, &b);
    T_EQ_INT(a.op, NN_OP_AFFINE);
    T_EQ_INT(b.op, NN_OP_CONV);
    nn_model_free(m);
    /* keras_vgg's too: caffe's x255 - mean, then its c - x and x * s (reversed). */
    o.norm_auto = 0;
    o.norm = NN_NORM_CAFFE;
    m = nn_import_onnx_file("tests/data/import/keras_vgg.onnx", &o, &info, &e);
    T_REQUIRE(m != NULL);
    nn_node_get(m, 1, &a);
    nn_node_get(m, 2, &b);
    T_EQ_INT(a.op, NN_OP_AFFINE);
    T_EQ_INT(b.op, NN_OP_CONV);
    nn_model_free(m);
    o.norm_auto = 1;
    /* With a new head: the classifier (MatMul, Add, Softmax) is cut after the vector
     * the Reshapes, Squeeze and Unsqueeze moved about. */
    o.n_classes = 3;
    m = nn_import_onnx_file("tests/data/import/keras_effnet.onnx", &o, &info, &e);
    T_REQUIRE(m != NULL);
    T_EQ_INT(nn_model_classes(m), 3);
    T_EQ_INT(info.feature_c, 8);
    T_CHECKF(strstr(info.cut, "MatMul") != NULL, "%s", info.cut);
    nn_model_free(m);
}

TEST(import_keras_norm_auto_says_what_a_graph_takes)
{
    pt_err e;
    char why[160];
    static const struct {
        const char *path;
        nn_norm want;
        const char *why;
    } cases[] = {
        { "tests/data/import/keras_effnet.onnx", NN_NORM_RAW, "Mul by a constant" },
        { "tests/data/export/small-8-16.onnx", NN_NORM_RAW, "petal-tui export" },
        { "tests/data/import/keras_block.onnx", NN_NORM_IMAGENET, "does not say" },
        { "tests/data/import/blocks.onnx", NN_NORM_IMAGENET, "does not say" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        onnx_model *om = NULL;
        T_REQUIRE(onnx_load(cases[i].path, &om, &e) == PT_OK);
        nn_norm got = nn_import_norm_auto(om, why, sizeof why);
        T_CHECKF(got == cases[i].want && strstr(why, cases[i].why), "%s: %s (%s)", cases[i].path,
                 nn_norm_name(got), why);
        onnx_free(om);
    }
}

/* keras_NAME.onnx against keras_NAME.ref, imported with norm. */
static void keras_conform(const char *name, nn_norm norm)
{
    char onnx[256], ref[256];
    snprintf(onnx, sizeof onnx, "tests/data/import/%s.onnx", name);
    snprintf(ref, sizeof ref, "tests/data/import/%s.ref", name);
    cf_result r;
    pt_err e;
    cf_opts o = { .input_norm = 1 + (int)norm };
    int rc = cf_check(onnx, ref, &o, &r, &e);
    T_CHECKF(rc == 0, "%s: %s", name, e.msg);
    if (rc)
        return;
    printf("  %s (%s): logits %.2g, loss %.2g, worst of %d gradients %.2g (%s)\n", name,
           nn_norm_name(norm), r.logits_err, r.loss_err, r.tensors, r.grad_err, r.grad_worst);
    T_CHECKF(r.beyond == 0 && cf_pass(&r),
             "%s: logits %.2g (training forward %.2g), loss %.2g, worst gradient %.2g (%s), "
             "%d beyond %g", name, r.logits_err, r.train_logits_err, r.loss_err, r.grad_err,
             r.grad_worst, r.beyond, CF_TOL_GRAD);
}

TEST(import_keras_gradients_equal_pytorchs)
{
    /* Batch norm in training mode for the step; the reference computed the graph on
     * cf_input's values converted as the norm does (255x; caffe's BGR minus means). */
    keras_conform("keras_effnet", NN_NORM_RAW);
    keras_conform("keras_vgg", NN_NORM_CAFFE);
}

TEST(import_keras_refuses_c_over_x_a_reshaped_vector_and_other_readers_of_the_caffe_input)
{
    pt_err e;
    nn_import_info info;
    nn_import_opts o = { .h = KS, .w = KS, .norm = NN_NORM_RAW };
    T_CHECK(nn_import_onnx_file("tests/data/import/keras_bad_div.onnx", &o, &info, &e) == NULL);
    T_CHECKF(strstr(e.msg, "keras_bad_div.onnx") && strstr(e.msg, "'normalization/truediv' (Div)") &&
                 strstr(e.msg, "c / x"),
             "%s", e.msg);
    o.norm = NN_NORM_CAFFE;
    T_CHECK(nn_import_onnx_file("tests/data/import/keras_bad_bgr.onnx", &o, &info, &e) == NULL);
    T_CHECKF(strstr(e.msg, "keras_bad_bgr.onnx") && strstr(e.msg, "'reads_bgr' (Relu)") &&
                 strstr(e.msg, "BGR order: only per-channel constants and convolutions"),
             "%s", e.msg);
    /* A Reshape that does more than move a vector. */
    o.norm = NN_NORM_RAW;
    T_CHECK(nn_import_onnx_file("tests/data/import/keras_bad_reshape.onnx", &o, &info, &e) == NULL);
    T_CHECKF(strstr(e.msg, "keras_bad_reshape.onnx") && strstr(e.msg, "(Reshape): a Reshape of "
                                                             "an N x 8 vector; only to (N, C)"),
             "%s", e.msg);
    /* The same graph with RGB input is fine. */
    o.norm = NN_NORM_IMAGENET;
    nn_model *m = nn_import_onnx_file("tests/data/import/keras_bad_bgr.onnx", &o, &info, &e);
    T_CHECKF(m != NULL, "%s", e.msg);
    nn_model_free(m);
}
