/* export: a model written as ONNX (nn_export.h) and read back by the importer
 * (NN_NORM_RAW, the classifier kept) gives the original's logits; the metadata reads
 * back as written; the bytes are deterministic, the file atomic; what cannot be
 * written is refused; python3-onnx's checker accepts every export.
 *
 * The round trips compare logits on random inputs in [0, 1] (the original model's
 * input) against the re-imported model fed the same input: the export's front takes
 * 0-255 and NN_NORM_RAW's first layer makes 0-255 of [0, 1], so both see the same
 * pixels. Tolerance: max |a - b| <= 1e-4 x max |b| per example (float sums reorder:
 * BN folded into conv weights, the front's constants merged).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/rng.h"
#include "base/util.h"
#include "io/onnx.h"
#include "nn/nn.h"
#include "nn/nn_export.h"
#include "nn/nn_import.h"
#include "nn/nn_layer.h"
#include "nn/nn_models.h"
#include "nn/nn_quant.h"
#include "tests/t.h"

/* Non-trivial parameters: random BN statistics (so folding matters) and conv biases. */
static void randomize(nn_model *m, uint64_t seed)
{
    nn_model_init_params(m, seed);
    rng r;
    rng_seed(&r, seed + 1);
    float *P = nn_params(m), *B = nn_buffers(m);
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni;
        nn_node_get(m, i, &ni);
        float *p = P + ni.param_offset;
        if (ni.op == NN_OP_BN) {
            float *b = B + ni.buffer_offset;
            for (int k = 0; k < ni.c; k++) {
                p[k] = rng_uniform(&r, 0.5f, 1.5f);
                p[ni.c + k] = rng_uniform(&r, -0.3f, 0.3f);
                b[k] = rng_uniform(&r, -0.3f, 0.3f);
                b[ni.c + k] = rng_uniform(&r, 0.5f, 1.5f);
            }
        } else if (ni.op == NN_OP_CONV && ni.bias_count) {
            for (size_t k = 0; k < ni.bias_count; k++)
                p[ni.weight_count + k] = rng_uniform(&r, -0.1f, 0.1f);
        }
    }
}

static float *rand_input(const nn_model *m, int n, uint64_t seed)
{
    int h, w, c;
    nn_model_input_shape(m, &h, &w, &c);
    size_t len = (size_t)n * h * w * c;
    float *x = malloc(len * sizeof *x);
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; x && i < len; i++)
        x[i] = rng_float(&r);
    return x;
}

/* Largest max |a - b| / max |b| over the examples. */
static double logits_err(const float *a, const float *b, int n, int k)
{
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        double d = 0.0, s = 1e-12;
        for (int j = 0; j < k; j++) {
            d = fmax(d, fabs((double)a[i * k + j] - b[i * k + j]));
            s = fmax(s, fabs((double)b[i * k + j]));
        }
        worst = fmax(worst, d / s);
    }
    return worst;
}

static int count_kind(const nn_model *m, nn_op op)
{
    int k = 0;
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni;
        nn_node_get(m, i, &ni);
        k += ni.op == op;
    }
    return k;
}

static double g_worst;   /* the largest error any round trip measured, for the report */

/* Export m, import it back, compare logits on n random examples; writes the export
 * to path too when path is not NULL (for the checker test). */
static void round_trip(const char *what, const nn_model *m, const char *path)
{
    pt_err e;
    uint8_t *buf = NULL;
    size_t len = 0;
    int h, w, c;
    nn_model_input_shape(m, &h, &w, &c);
    nn_export_meta meta = { NULL, h, "runs/test", 3, 30, NULL };
    int rc = nn_export_onnx(m, &meta, &buf, &len, &e);
    T_CHECKF(rc == PT_OK, "%s: export: %s", what, e.msg);
    if (rc)
        return;
    if (path)
        T_CHECKF(util_write_file_atomic(path, buf, len, &e) == PT_OK, "%s: %s", what, e.msg);
    onnx_model *om = NULL;
    rc = onnx_load_mem(buf, len, what, &om, &e);
    free(buf);
    T_CHECKF(rc == PT_OK, "%s: reading the export: %s", what, e.msg);
    if (rc)
        return;
    nn_import_opts o = { .h = h, .w = w, .n_classes = 0, .norm = NN_NORM_RAW };
    nn_import_info info;
    nn_model *back = nn_import_onnx(om, &o, &info, &e);
    onnx_free(om);
    T_CHECKF(back != NULL, "%s: importing the export: %s", what, e.msg);
    if (!back)
        return;
    int n = 3, k = nn_model_classes(m);
    T_EQ_INT(nn_model_classes(back), k);
    /* The front (x255, the file's Mul and Add) is one affine layer again. */
    nn_node_info n1;
    nn_node_get(m, 1, &n1);
    int front = n1.op == NN_OP_AFFINE && n1.in[0] == 0;
    T_CHECKF(count_kind(back, NN_OP_AFFINE) == count_kind(m, NN_OP_AFFINE) + !front,
             "%s: %d affine layers re-imported from %d", what, count_kind(back, NN_OP_AFFINE),
             count_kind(m, NN_OP_AFFINE));
    float *x = rand_input(m, n, 42);
    nn_ctx *c1 = nn_ctx_new(m, n, &e), *c2 = nn_ctx_new(back, n, &e);
    T_REQUIRE(x && c1 && c2);
    const float *a = nn_forward(c1, x, n, 0, 0, 0);
    const float *b = nn_forward(c2, x, n, 0, 0, 0);
    T_REQUIRE(a && b);
    double err = logits_err(b, a, n, k);
    g_worst = fmax(g_worst, err);
    T_CHECKF(err <= 1e-4, "%s: re-imported logits differ by %.3g (relative)", what, err);
    nn_ctx_free(c1);
    nn_ctx_free(c2);
    nn_model_free(back);
    free(x);
}

/* nn_build_small_widths from a --widths text. */
static nn_model *small(const char *widths, int side, int convs, pt_err *e)
{
    int wd[NN_SMALL_MAX_BLOCKS], st[NN_SMALL_MAX_BLOCKS];
    int nb = nn_parse_widths(widths, side, wd, st, e);
    if (nb < 0)
        return NULL;
    return nn_build_small_widths(side, side, 5, 0.25f, wd, st, nb, convs, e);
}

/* Every kind: an affine at the front (folded), conv + BN + ReLU (folded, fused), a BN
 * after a pool and one after a conv that an add reads too (kept), clip, ReLU6, gap,
 * sigmoid, a per-channel mul, add, concat, pools with asymmetric pads, a depthwise
 * conv, an affine in the middle, dropout, a dense layer after a map, a BN and a dense
 * layer after it. */
static nn_model *every_kind(pt_err *e)
{
    nn_model *m = nn_model_new(12, 12, 3);
    if (!m)
        return NULL;
    const float s[3] = { 2.0f, 1.5f, -1.0f }, t[3] = { -1.0f, 0.2f, 0.5f };
    int x = nn_affine(m, nn_input(m), s, t);
    x = nn_relu(m, nn_batchnorm(m, nn_conv2d(m, x, 8, 3, 3, 1, NN_PAD_SAME, 1, 1)));
    x = nn_maxpool_ex(m, x, 3, 3, 2, 2, 0, 1, 1, 0);
    int cl = nn_clip(m, nn_batchnorm_ex(m, x, 1e-5f, 0.9f), -0.5f, 0.7f);
    int r6 = nn_relu6(m, nn_conv2d(m, cl, 8, 1, 1, 1, 0, 1, 0));
    int se = nn_sigmoid(m, nn_gap(m, r6));
    int ad = nn_add(m, nn_mul(m, r6, se), cl);
    int c3 = nn_conv2d(m, ad, 8, 3, 3, 1, 1, 1, 0);
    int ad2 = nn_add(m, nn_batchnorm(m, c3), c3);
    x = nn_concat(m, ad2, r6);
    x = nn_avgpool_ex(m, x, 2, 2, 2, 2, 1, 0, 0, 1);
    x = nn_batchnorm(m, nn_conv2d(m, x, 16, 3, 3, 1, NN_PAD_SAME, 16, 0));
    const float s2[16] = { 1, 2, 0.5f, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1 };
    const float t2[16] = { 0.1f, 0, 0, 0, 0, 0, 0.3f, 0, 0, 0, 0, 0, 0, 0, 0, -0.2f };
    x = nn_dropout(m, nn_affine(m, x, s2, t2), 0.3f);
    x = nn_batchnorm(m, nn_dense(m, x, 10));
    x = nn_dense(m, nn_relu(m, x), 4);
    if (nn_model_finalize(m, x, e) != PT_OK) {
        nn_model_free(m);
        return NULL;
    }
    return m;
}

TEST(export_every_kind_has_an_onnx_writer)
{
    for (int k = 0; k < NN_OP_COUNT; k++)
        T_CHECKF(nn_layers[k]->onnx_write != NULL,
                 "layer kind %s: its table entry has no onnx_write (nn_layer.h)",
                 nn_op_name((nn_op)k));
}

/* The kinds whose writer's ops another form reads back, and why. */
static const char *no_import_why(nn_op op)
{
    if (op == NN_OP_INPUT)
        return "the graph's input, not a node: nn_import_layout.c and nn_import_front.c";
    if (op == NN_OP_AFFINE)
        return "its Mul and Add by constants are the importer's per-channel constants "
               "(nn_import_front.c), which merge a chain of them, the front's, into one";
    return NULL;
}

TEST(export_every_kind_names_the_onnx_ops_it_imports)
{
    for (int k = 0; k < NN_OP_COUNT; k++) {
        const nn_layer *kind = nn_layers[k];
        const char *why = no_import_why((nn_op)k);
        int named = kind->onnx_ops && kind->onnx_ops[0] && kind->onnx_ops[0][0];
        if (why) {
            T_CHECKF(!named, "layer kind %s names ONNX ops but is listed as importing none (%s)",
                     nn_op_name((nn_op)k), why);
            continue;
        }
        if (!kind->onnx_write)
            continue;
        T_CHECKF(named && kind->onnx_import != NULL,
                 "layer kind %s: it has an ONNX writer but names no ONNX op it imports "
                 "(onnx_ops and onnx_import, nn_layer.h)", nn_op_name((nn_op)k));
    }
}

/* How many nodes of op_type op the ONNX model has. */
static int count_op(const onnx_model *om, const char *op)
{
    int k = 0;
    for (size_t i = 0; i < om->n_nodes; i++)
        k += !strcmp(om->nodes[i].op_type, op);
    return k;
}

static onnx_model *export_mem(const nn_model *m, pt_err *e)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    onnx_model *om = NULL;
    if (nn_export_onnx(m, NULL, &buf, &len, e) == PT_OK)
        onnx_load_mem(buf, len, "export", &om, e);
    free(buf);
    return om;
}

TEST(export_folds_bn_into_its_conv_only_and_drops_dropout)
{
    pt_err e;
    nn_model *m = every_kind(&e);
    T_REQUIRE(m != NULL);
    onnx_model *om = export_mem(m, &e);
    T_REQUIRE(om != NULL);
    /* Five BN layers: two after a conv read by nothing else (folded); the one after
     * the pool, the one after a conv an add reads too, the one after a dense (kept). */
    T_EQ_INT(count_op(om, "BatchNormalization"), 3);
    T_EQ_INT(count_op(om, "Conv"), 4);
    T_EQ_INT(count_op(om, "Dropout"), 0);
    T_EQ_INT(count_op(om, "Relu"), 2);
    T_EQ_INT(count_op(om, "Clip"), 2);   /* the clip, and ReLU6 as Clip(0, 6) */
    T_EQ_INT(count_op(om, "Gemm"), 2);
    T_EQ_INT(count_op(om, "Softmax"), 1);
    /* The front: the first affine folded into one Mul and one Add on the image. */
    T_REQUIRE(om->n_nodes > 2);
    T_EQ_STR(om->nodes[0].op_type, "Mul");
    T_EQ_STR(om->nodes[0].inputs[0], "image");
    T_EQ_STR(om->nodes[1].op_type, "Add");
    T_EQ_STR(om->nodes[2].op_type, "Conv");
    const onnx_tensor *sc = onnx_find_tensor(om, "input0.scale");
    T_REQUIRE(sc && sc->rank == 4 && sc->count == 3);
    T_NEAR(((const float *)sc->data)[0], 2.0 / 255.0, 1e-9);
    T_EQ_INT(om->n_outputs, 2);
    T_EQ_STR(om->outputs[0].name, "logits");
    T_EQ_STR(om->outputs[1].name, "probabilities");
    T_EQ_INT(om->inputs[0].rank, 4);
    T_EQ_STR(om->inputs[0].dim_params[0], "N");
    T_EQ_INT(om->inputs[0].dims[2], 12);
    onnx_free(om);
    nn_model_free(m);

    /* The built-in small model: every BN follows a conv read by nothing else. */
    m = small("8,16", 16, 2, &e);
    T_REQUIRE(m != NULL);
    om = export_mem(m, &e);
    T_REQUIRE(om != NULL);
    T_EQ_INT(count_op(om, "BatchNormalization"), 0);
    T_EQ_INT(count_op(om, "Conv"), 4);
    onnx_free(om);
    nn_model_free(m);
}

TEST(export_round_trip_small_widths)
{
    static const struct {
        const char *widths;
        int side, convs;
    } forms[] = {
        { "8,16,16", 16, 1 },     /* plain: conv, BN, ReLU, max-pool blocks */
        { "a,8,16", 32, 1 },      /* an average-pool block first */
        { "8s,16s,16", 16, 1 },   /* strided blocks ("same" pads at the bottom-right) */
        { "8,16", 16, 2 },        /* --convs 2 */
        { "auto", 32, 1 },        /* the default at 32 px */
        /* --residual yes: 1x1 shortcuts at stride 1 and 2, an identity one, adds */
        { "8,16s,16", 16, NN_SMALL_RESIDUAL },
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        pt_err e;
        nn_model *m = small(forms[i].widths, forms[i].side, forms[i].convs, &e);
        T_CHECKF(m != NULL, "%s: %s", forms[i].widths, e.msg);
        if (!m)
            continue;
        randomize(m, 7 + i);
        char what[64];
        if (forms[i].convs == NN_SMALL_RESIDUAL)
            snprintf(what, sizeof what, "small %s --residual yes", forms[i].widths);
        else
            snprintf(what, sizeof what, "small %s --convs %d", forms[i].widths, forms[i].convs);
        round_trip(what, m, NULL);
        nn_model_free(m);
    }
}

TEST(export_round_trip_mobilenetv2)
{
    pt_err e;
    nn_model *m = nn_build_mobilenetv2(32, 32, 5, 0.35f, 0.2f, &e);
    T_REQUIRE(m != NULL);
    randomize(m, 11);
    round_trip("mobilenetv2 0.35 at 32 px", m, NULL);
    nn_model_free(m);
}

TEST(export_round_trip_every_kind)
{
    pt_err e;
    nn_model *m = every_kind(&e);
    T_CHECKF(m != NULL, "%s", e.msg);
    if (!m)
        return;
    randomize(m, 5);
    round_trip("every kind", m, NULL);
    nn_model_free(m);
}

/* Each kind's finite-difference graph (nn_layer.h) on a square 3-channel input (the
 * export's image) of its larger side, with a global average pool and a dense head:
 * written and read back by the kinds' own writers and importers. */
TEST(export_round_trip_every_kinds_grad_graph)
{
    for (int k = 0; k < NN_OP_COUNT; k++) {
        const nn_grad_case *g = nn_layers[k]->grad;
        if (!g)
            continue;
        pt_err e;
        int side = g->h > g->w ? g->h : g->w;
        nn_model *m = nn_model_new(side, side, 3);
        T_REQUIRE(m != NULL);
        int x = g->build(m, nn_input(m));
        nn_node_info ni;
        if (x >= 0) {
            nn_node_get(m, x, &ni);
            if (ni.h * ni.w > 1)
                x = nn_gap(m, x);
        }
        x = nn_dense(m, x, 3);
        int rc = nn_model_finalize(m, x, &e);
        T_CHECKF(rc == PT_OK, "%s: %s", nn_op_name((nn_op)k), e.msg);
        if (rc == PT_OK) {
            randomize(m, 17 + (uint64_t)k);
            char what[64];
            snprintf(what, sizeof what, "%s's grad graph", nn_op_name((nn_op)k));
            round_trip(what, m, NULL);
        }
        nn_model_free(m);
    }
}

TEST(export_round_trip_zoo_int8_new_head)
{
    T_NEED_DATA();
    pt_err e;
    nn_import_opts o = { .h = 64, .w = 64, .n_classes = 5, .dropout = 0.2f,
                         .norm = NN_NORM_IMAGENET, .seed = 3 };
    nn_import_info info;
    nn_model *m = nn_import_onnx_file(t_data("weights/mobilenetv2-12-int8.onnx"), &o, &info, &e);
    T_CHECKF(m != NULL, "%s", e.msg);
    if (!m)
        return;
    round_trip("zoo int8 MobileNetV2, 5-class head", m, NULL);
    nn_model_free(m);
}

TEST(export_metadata_reads_back)
{
    pt_err e;
    nn_model *m = small("8,16", 16, 1, &e);
    T_REQUIRE(m != NULL);
    const char *names[5] = { "daisy \"white\"", "rose, red", "back\\slash\ttab",
                             "Rosé 日本 🌸", "" };
    nn_export_meta meta = { names, 16, "runs/2026 \"x\"", 12, 96, NULL };
    uint8_t *buf = NULL;
    size_t len = 0;
    T_REQUIRE(nn_export_onnx(m, &meta, &buf, &len, &e) == PT_OK);
    onnx_model *om = NULL;
    T_REQUIRE(onnx_load_mem(buf, len, "meta.onnx", &om, &e) == PT_OK);
    nn_onnx_meta mt;
    T_REQUIRE(nn_onnx_meta_read(om, &mt, &e) == PT_OK);
    T_EQ_INT(mt.petal, 1);
    T_EQ_INT(mt.image_size, 16);
    T_EQ_INT(mt.epoch, 12);
    T_EQ_STR(mt.source_run, "runs/2026 \"x\"");
    T_EQ_INT(mt.n_classes, 5);
    for (int i = 0; i < 5 && i < mt.n_classes; i++)
        T_EQ_STR(mt.class_names[i], names[i]);
    T_EQ_STR(onnx_prop(om, "input"), NN_EXPORT_INPUT);
    T_EQ_STR(onnx_prop(om, "petal_tui_version"), PT_VERSION);
    T_CHECK(strstr(om->doc_string, "0-255") != NULL);
    T_EQ_STR(om->producer_name, "petal-tui");
    T_EQ_INT(om->ir_version, 8);
    T_EQ_INT(om->opset, 13);
    nn_onnx_meta_free(&mt);
    onnx_free(om);

    /* Damage the JSON (its closing bracket) without changing any length. */
    char *p = NULL;
    for (size_t i = 0; i + 3 <= len && !p; i++)
        if (!memcmp(buf + i, "\"\"]", 3))
            p = (char *)buf + i;
    T_REQUIRE(p != NULL);
    p[2] = '}';
    T_REQUIRE(onnx_load_mem(buf, len, "damaged.onnx", &om, &e) == PT_OK);
    T_EQ_INT(nn_onnx_meta_read(om, &mt, &e), PT_EFORMAT);
    T_CHECKF(strstr(e.msg, "damaged.onnx") && strstr(e.msg, "class_names"), "%s", e.msg);
    nn_onnx_meta_free(&mt);
    onnx_free(om);

    /* No meta: "class N" names, the model's size, epoch -1. */
    free(buf);
    T_REQUIRE(nn_export_onnx(m, NULL, &buf, &len, &e) == PT_OK);
    T_REQUIRE(onnx_load_mem(buf, len, "plain.onnx", &om, &e) == PT_OK);
    T_REQUIRE(nn_onnx_meta_read(om, &mt, &e) == PT_OK);
    T_EQ_INT(mt.n_classes, 5);
    if (mt.n_classes == 5)
        T_EQ_STR(mt.class_names[4], "class 4");
    T_EQ_INT(mt.epoch, -1);
    T_EQ_INT(mt.image_size, 16);
    T_EQ_STR(mt.source_run, "");
    nn_onnx_meta_free(&mt);
    onnx_free(om);
    free(buf);
    nn_model_free(m);
}

TEST(export_bytes_are_deterministic_and_the_file_atomic)
{
    pt_err e;
    nn_model *m = nn_build_mobilenetv2(32, 32, 5, 0.35f, 0.2f, &e);
    T_REQUIRE(m != NULL);
    randomize(m, 2);
    uint8_t *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    T_REQUIRE(nn_export_onnx(m, NULL, &a, &la, &e) == PT_OK);
    T_REQUIRE(nn_export_onnx(m, NULL, &b, &lb, &e) == PT_OK);
    T_CHECK(la == lb && memcmp(a, b, la) == 0);

    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s", t_tmpdir());
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    T_REQUIRE(nn_export_onnx_file(m, NULL, path, &e) == PT_OK);
    uint8_t *f = NULL;
    size_t lf = 0;
    T_REQUIRE(util_read_file(path, &f, &lf, &e) == PT_OK);
    T_CHECK(lf == la && memcmp(f, a, la) == 0);
    char **names = NULL;
    int n = 0;
    T_REQUIRE(util_list_dir(dir, UTIL_LIST_FILES, &names, &n, &e) == PT_OK);
    T_EQ_INT(n, 1); /* no temporary left beside it */
    util_free_list(names, n);

    /* A folder that cannot be made: its parent is a file. */
    char bad[800];
    snprintf(bad, sizeof bad, "%s/model.onnx/sub.onnx", dir);
    T_EQ_INT(nn_export_onnx_file(m, NULL, bad, &e) < 0, 1);
    T_CHECKF(strstr(e.msg, bad) != NULL, "the error names the path: %s", e.msg);
    free(f);
    free(a);
    free(b);
    nn_model_free(m);
}

TEST(export_refuses_what_onnx_logits_cannot_hold)
{
    pt_err e;
    /* A 4x4x2 map as the output: logits are [N, C]. */
    nn_model *m = nn_model_new(8, 8, 3);
    T_REQUIRE(m != NULL);
    int x = nn_maxpool(m, nn_conv2d(m, nn_input(m), 2, 3, 3, 1, 1, 1, 1), 2, 2, 0);
    T_REQUIRE(nn_model_finalize(m, x, &e) == PT_OK);
    char path[700];
    snprintf(path, sizeof path, "%s/refused.onnx", t_tmpdir());
    T_EQ_INT(nn_export_onnx_file(m, NULL, path, &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "node 2 (maxpool)") != NULL, "%s", e.msg);
    struct stat st;
    T_CHECK(stat(path, &st) != 0); /* nothing written */
    nn_model_free(m);

    /* A grey input: the export's input is RGB. */
    m = nn_model_new(8, 8, 1);
    T_REQUIRE(m != NULL);
    x = nn_dense(m, nn_gap(m, nn_conv2d(m, nn_input(m), 4, 3, 3, 1, 1, 1, 1)), 3);
    T_REQUIRE(nn_model_finalize(m, x, &e) == PT_OK);
    uint8_t *buf = NULL;
    size_t len = 0;
    T_EQ_INT(nn_export_onnx(m, NULL, &buf, &len, &e), PT_EUSAGE);
    T_CHECK(buf == NULL);
    T_CHECKF(strstr(e.msg, "node 0 (input)") && strstr(e.msg, "1 channels"), "%s", e.msg);
    nn_model_free(m);
}

/* python3-onnx's checker (full_check: with shape inference) on every model above. */
TEST(export_onnx_checker_accepts_every_export)
{
    if (system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") != 0) {
        t_skip("/usr/bin/python3 has no onnx module (Debian's python3-onnx)");
        return;
    }
    const char *dir = t_tmpdir();
    char path[5][700];
    pt_err e;
    nn_model *ms[5] = { small("8,16,16", 16, 1, &e), small("a,8s,16", 32, 2, &e),
                        nn_build_mobilenetv2(32, 32, 5, 0.35f, 0.2f, &e), every_kind(&e),
                        NULL };
    int n = 4;
    if (t_have_data()) {
        nn_import_opts o = { .h = 64, .w = 64, .n_classes = 5, .norm = NN_NORM_IMAGENET };
        nn_import_info info;
        ms[n++] = nn_import_onnx_file(t_data("weights/mobilenetv2-12-int8.onnx"), &o, &info, &e);
    }
    char cmd[5000] = "/usr/bin/python3 -c 'import onnx, sys\n"
                     "for p in sys.argv[1:]: onnx.checker.check_model(onnx.load(p), "
                     "full_check=True)'";
    for (int i = 0; i < n; i++) {
        T_REQUIRE(ms[i] != NULL);
        randomize(ms[i], (uint64_t)i);
        snprintf(path[i], sizeof path[i], "%s/m%d.onnx", dir, i);
        T_CHECKF(nn_export_onnx_file(ms[i], NULL, path[i], &e) == PT_OK, "%s", e.msg);
        strcat(cmd, " ");
        strcat(cmd, path[i]);
        nn_model_free(ms[i]);
    }
    T_CHECKF(system(cmd) == 0, "onnx.checker refused an export: %s", cmd);
}


/* Parameters from a formula of exact float operations only (no libm), so a fixture's
 * bytes depend on nothing but the exporter. */
static void formula_params(nn_model *m)
{
    float *P = nn_params(m), *B = nn_buffers(m);
    for (size_t i = 0; i < nn_param_count(m); i++)
        P[i] = (float)((int)((i * 2654435761u) % 2001u) - 1000) / 4096.0f;
    for (size_t i = 0; i < nn_buffer_count(m); i++)
        B[i] = 0.5f + (float)((i * 40503u) % 1024u) / 1024.0f;
}

/* The exporter is byte-for-byte stable: two small models export to the files
 * committed in tests/data/export/ (ONNX Runtime's outputs for them are checked
 * elsewhere). PT_WRITE_EXPORT_FIXTURES=1 rewrites them after a deliberate change. */
TEST(export_matches_the_committed_fixtures)
{
    pt_err e;
    nn_model *ms[2] = { small("8,16", 16, 1, &e), every_kind(&e) };
    const char *files[2] = { "tests/data/export/small-8-16.onnx",
                             "tests/data/export/every-kind.onnx" };
    for (int i = 0; i < 2; i++) {
        T_REQUIRE(ms[i] != NULL);
        formula_params(ms[i]);
        uint8_t *buf = NULL, *want = NULL;
        size_t len = 0, wlen = 0;
        T_REQUIRE(nn_export_onnx(ms[i], NULL, &buf, &len, &e) == PT_OK);
        if (getenv("PT_WRITE_EXPORT_FIXTURES"))
            T_CHECKF(util_write_file_atomic(files[i], buf, len, &e) == PT_OK, "%s", e.msg);
        T_CHECKF(util_read_file(files[i], &want, &wlen, &e) == PT_OK, "%s", e.msg);
        T_CHECKF(want && wlen == len && memcmp(want, buf, len) == 0,
                 "%s: the export (%zu bytes) differs from the committed file (%zu bytes); "
                 "after a deliberate change (or a version bump: the file names it), rerun "
                 "with PT_WRITE_EXPORT_FIXTURES=1",
                 files[i], len, wlen);
        round_trip(files[i], ms[i], NULL);
        free(buf);
        free(want);
        nn_model_free(ms[i]);
    }
}

TEST(export_round_trip_error_figure)
{
    /* Prints the largest relative logit error the round trips above measured (run
     * with them: make test TESTFLAGS=export). */
    T_CHECK(g_worst <= 1e-4);
    if (g_worst > 0)
        printf("  export round trips: largest relative logit error %.3g\n", g_worst);
}

/* nn_onnx_meta_read on properties given directly: JSON escapes, surrogate pairs, and
 * what is refused; a file with no properties reads as not petal-tui's. */
TEST(export_meta_json_escapes_and_damage)
{
    const char *keys[3] = { "class_names", "image_size", "epoch" };
    const char *vals[3] = { "[ \"a\\u00e9\\ud83c\\udf38\" , \"x\\\"y\\\\z\\/\\n\" ,\"\"]", "224",
                            "-1" };
    onnx_model om;
    memset(&om, 0, sizeof om);
    om.path = "props.onnx";
    om.n_props = 3;
    om.prop_keys = keys;
    om.prop_values = vals;
    nn_onnx_meta mt;
    pt_err e;
    T_REQUIRE(nn_onnx_meta_read(&om, &mt, &e) == PT_OK);
    T_EQ_INT(mt.petal, 0);
    T_EQ_INT(mt.image_size, 224);
    T_EQ_INT(mt.epoch, -1);
    T_REQUIRE(mt.n_classes == 3);
    T_EQ_STR(mt.class_names[0], "a\xc3\xa9\xf0\x9f\x8c\xb8");
    T_EQ_STR(mt.class_names[1], "x\"y\\z/\n");
    T_EQ_STR(mt.class_names[2], "");
    nn_onnx_meta_free(&mt);

    static const char *const bad[] = { "[\"a\"", "[1]", "[\"\\ud800\"]", "[\"a\",]", "{}",
                                       "[\"a\"] x", "[\"\\u0000\"]", "[\"\\q\"]", "[\"\t\"]" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vals[0] = bad[i];
        T_CHECKF(nn_onnx_meta_read(&om, &mt, &e) == PT_EFORMAT, "accepted %s", bad[i]);
        T_CHECKF(strstr(e.msg, "props.onnx") && strstr(e.msg, "class_names"), "%s", e.msg);
        T_EQ_INT(mt.n_classes, 0);
        nn_onnx_meta_free(&mt);
    }
    vals[0] = "[]";
    vals[1] = "12px";
    T_EQ_INT(nn_onnx_meta_read(&om, &mt, &e), PT_EFORMAT);
    T_CHECKF(strstr(e.msg, "image_size") != NULL, "%s", e.msg);
    nn_onnx_meta_free(&mt);

    om.n_props = 0;
    T_REQUIRE(nn_onnx_meta_read(&om, &mt, &e) == PT_OK);
    T_EQ_INT(mt.petal, 0);
    T_EQ_INT(mt.n_classes, 0);
    T_CHECK(mt.class_names == NULL);
    T_EQ_INT(mt.image_size, 0);
    T_EQ_INT(mt.epoch, -1);
    T_EQ_STR(mt.source_run, "");
    nn_onnx_meta_free(&mt);
}

/* ---- int8 fixtures ---- */

/* The int8 exports of the two fixture models (formula parameters), calibrated on 8
 * images of a formula, NHWC in [0, 1]: what tests/data/export/NAME-int8.onnx hold
 * (ONNX Runtime's answers on them: make_ort_refs.sh, tests/test_ort.c). Not compared
 * byte for byte: the ranges come from a forward pass, whose last bits may differ
 * with the CPU's kernels; the committed files are the reference. */
static int export_int8(nn_model *m, uint8_t **buf, size_t *len, pt_err *e)
{
    enum { N = 8 };
    int h, w, c;
    nn_model_input_shape(m, &h, &w, &c);
    size_t px = (size_t)h * w * c;
    float *x = malloc(N * px * sizeof *x);
    nn_ctx *ctx = nn_ctx_new_infer(m, N, e);
    nn_calib cal;
    int rc = x && ctx ? nn_calib_init(&cal, m, e) : PT_ENOMEM;
    if (rc == PT_OK) {
        for (size_t i = 0; i < N * px; i++)
            x[i] = (float)((i * 2654435761u) % 1000u) / 999.0f * (float)(1 + i / px) / N;
        nn_ctx_on_node(ctx, nn_calib_observe, &cal);
        nn_forward(ctx, x, N, 0, 0, 0);
        nn_export_quant q = { cal.lo, cal.hi, N, "formula images" };
        nn_export_meta meta = { .image_size = h, .epoch = -1, .update = -1, .quant = &q };
        rc = nn_export_onnx(m, &meta, buf, len, e);
        nn_calib_free(&cal);
    }
    nn_ctx_free(ctx);
    free(x);
    return rc;
}

TEST(export_int8_fixtures_import_as_int8)
{
    pt_err e;
    nn_model *ms[2] = { small("8,16", 16, 1, &e), every_kind(&e) };
    const char *files[2] = { "tests/data/export/small-8-16-int8.onnx",
                             "tests/data/export/every-kind-int8.onnx" };
    for (int i = 0; i < 2; i++) {
        T_REQUIRE(ms[i] != NULL);
        formula_params(ms[i]);
        uint8_t *buf = NULL;
        size_t len = 0;
        T_REQUIRE(export_int8(ms[i], &buf, &len, &e) == PT_OK);
        if (getenv("PT_WRITE_EXPORT_FIXTURES"))
            T_CHECKF(util_write_file_atomic(files[i], buf, len, &e) == PT_OK, "%s", e.msg);
        free(buf);
        nn_import_opts o = { .norm_auto = 1 };
        nn_import_info info;
        nn_model *back = nn_import_onnx_file(files[i], &o, &info, &e);
        T_CHECKF(back && info.quantized && info.norm == NN_NORM_RAW &&
                     count_kind(back, NN_OP_QUANT) > 3,
                 "%s: %s", files[i], back ? "not read as an int8 export" : e.msg);
        nn_model_free(back);
        nn_model_free(ms[i]);
    }
}
