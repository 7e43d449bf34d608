/* petal-tui classify and petal-tui model: looking at an ONNX model from the
 * command line before training with it. classify runs the graph as it is (its own
 * ImageNet classifier) on JPEGs and prints the top classes: the quick check that an
 * import is right. model prints the layers the graph became and what a new head
 * for a dataset would replace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/dataset.h"
#include "data/image.h"
#include "data/jpeg.h"
#include "io/png.h"
#include "nn/nn_import.h"
#include "run.h"
#include "src/cli.h"
#include "infer/infer.h"
#include "infer/predict.h"

/* Imports path at size x size: n_classes 0 keeps the graph's classifier; norm is a
 * run_input_norm (auto: the graph's own convention). */
static nn_model *import(const char *path, int size, int n_classes, int norm,
                        nn_import_info *info)
{
    pt_err e;
    nn_import_opts o = { .h = size, .w = size, .n_classes = n_classes, .dropout = 0.2f,
                         .norm = (nn_norm)(norm - 1), .norm_auto = norm == RUN_NORM_AUTO,
                         .seed = 42 };
    nn_model *m = nn_import_onnx_file(path, &o, info, &e);
    if (!m)
        fprintf(stderr, "petal-tui: %s\n", e.msg);
    return m;
}

/* The arguments both commands take: --size, --input-norm (--norm, its old name), one
 * more number (--top or --classes), -h; the rest are files, gathered in order at the front of argv
 * (files = argv, n_files of them). 0 to go on, 1 usage error (said), -1 help
 * printed. */
typedef struct onnx_args {
    long long size, extra;
    int norm;               /* run_input_norm */
    char **files;
    int n_files;
} onnx_args;

static int parse(int argc, char **argv, const char *usage, const char *help, const char *extra,
                 long long lo, long long hi, onnx_args *a)
{
    a->files = argv;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            printf("%s%s", usage, help);
            return -1;
        }
        int norm_opt = !strcmp(s, "--input-norm") || !strcmp(s, "--norm");
        if (!strcmp(s, "--size") || !strcmp(s, extra) || norm_opt) {
            if (i + 1 >= argc) {
                fprintf(stderr, "petal-tui: %s needs a value\n", s);
                return 1;
            }
            const char *v = argv[++i];
            if ((!strcmp(s, "--size") && cli_int(s, v, 16, 1024, &a->size)) ||
                (!strcmp(s, extra) && cli_int(s, v, lo, hi, &a->extra)) ||
                (norm_opt && cli_input_norm(s, v, &a->norm)))
                return 1;
            continue;
        }
        if (s[0] == '-' && s[1]) {
            fprintf(stderr, "petal-tui: unknown option '%s'\n%s", s, usage);
            return 1;
        }
        argv[a->n_files++] = argv[i]; /* never ahead of i: argv is reused in place */
    }
    return 0;
}

/* A PNG centre-cropped to a square and resized to size x size, as JPEGs are. */
static int png_to_size(const uint8_t *buf, size_t len, uint8_t *out, int size, img_scratch *s,
                       pt_err *e)
{
    uint8_t *rgb;
    int w, h, x, y, cw, ch;
    int rc = png_decode_rgb(buf, len, &rgb, &w, &h, e);
    if (rc != PT_OK)
        return rc;
    img_crop_box(w, h, size, size, &x, &y, &cw, &ch);
    if (img_resize(rgb, w * 3, x, y, cw, ch, out, size, size, s) != 0)
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    free(rgb);
    return rc;
}

/* What --input-norm does, for both commands' --help. */
#define NORM_HELP                                                                     \
    "--input-norm: how pixels x in [0, 1] become the graph's input: imagenet\n"        \
    "((x - mean) / std; torch is the same), unit (x), tf (2x - 1: Keras's MobileNet,\n" \
    "Inception), raw (255x: graphs that normalise themselves, petal-tui's exports),\n"  \
    "caffe (BGR, 255x - mean: Keras's VGG16, ResNet50); auto (the default): raw\n"     \
    "for a petal-tui export or a graph that starts with its own Mul/Sub/Div/Add,\n"    \
    "else imagenet. --norm is its old name (signed = tf, none = unit).\n"

int cmd_classify(int argc, char **argv)
{
    const char *usage = "usage: petal-tui classify MODEL.onnx IMAGE... [--size 224] [--top 5]\n"
                        "        [--input-norm auto|imagenet|unit|tf|raw|caffe]\n";
    onnx_args oa = { .size = 224, .extra = 5, .norm = RUN_NORM_AUTO };
    int pr = parse(argc, argv, usage,
                   "Runs the model's own classifier on each image, JPEG or PNG (centre-cropped\n"
                   "to a square, resized to --size) and prints the top classes with their\n"
                   "probabilities, with ImageNet's names when the model has 1,000 outputs.\n"
                   NORM_HELP,
                   "--top", 1, 1000, &oa);
    if (pr)
        return pr < 0 ? 0 : pr;
    if (oa.n_files < 2) {
        fprintf(stderr, "%s", usage);
        return 1;
    }
    long long size = oa.size, top = oa.extra;
    nn_import_info info;
    nn_model *m = import(oa.files[0], (int)size, 0, oa.norm, &info);
    if (!m)
        return 2;
    int k = nn_model_classes(m);
    if (top > k)
        top = k;
    pt_err e;
    /* One image at a time on an inference-only replica pool of one. */
    rpool *pool = NULL;
    inf_pool_new(m, 1, 1, &pool, &e);
    jpg_codec *jc = jpg_codec_new();
    size_t px = (size_t)size * (size_t)size * 3;
    uint8_t *rgb = malloc(px);
    float *y = malloc((size_t)k * sizeof *y);
    int *order = malloc((size_t)k * sizeof *order);
    double *p = malloc((size_t)k * sizeof *p);
    img_scratch scratch = { 0 };
    int status = 0;
    if (!pool || !jc || !rgb || !y || !order || !p) {
        fprintf(stderr, "petal-tui: out of memory\n");
        status = 2;
        goto out;
    }
    for (int i = 1; i < oa.n_files; i++) {
        const char *a = oa.files[i];
        uint8_t *buf = NULL;
        size_t len;
        int rc = util_read_file(a, &buf, &len, &e);
        if (rc == PT_OK && png_is_png(buf, len))
            rc = png_to_size(buf, len, rgb, (int)size, &scratch, &e);
        else if (rc == PT_OK)
            rc = jpg_decode_into(jc, buf, len, rgb, (int)size, (int)size, 1, 0, NULL, NULL, &e);
        free(buf);
        if (rc != PT_OK) {
            fprintf(stderr, "petal-tui: %s: %s\n", a, e.msg);
            status = 2;
            continue;
        }
        if (inf_logits(pool, rgb, 1, (int)size, (int)size, 0, y, NULL, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s: the forward pass failed\n", a);
            status = 2;
            continue;
        }
        inf_softmax(y, k, p);
        inf_topk(p, k, (int)top, order);
        printf("%s\n", a);
        for (int t = 0; t < top; t++) {
            int cls = order[t];
            printf("  %4d  %-30s %6.2f%%\n", cls,
                   k == (int)ds_imagenet_class_count ? ds_imagenet_classes[cls] : "",
                   100.0 * p[cls]);
        }
    }
out:
    img_scratch_free(&scratch);
    free(rgb);
    free(y);
    free(order);
    free(p);
    jpg_codec_free(jc);
    inf_pool_free(pool);
    nn_model_free(m);
    return status;
}

int cmd_model(int argc, char **argv)
{
    const char *usage = "usage: petal-tui model MODEL.onnx [--size 224] [--classes N]\n"
                        "        [--input-norm auto|imagenet|unit|tf|raw|caffe]\n";
    onnx_args oa = { .size = 224, .extra = 0, .norm = RUN_NORM_AUTO };
    int pr = parse(argc, argv, usage,
                   "Prints the layers the ONNX graph becomes (id, layer, inputs, output shape,\n"
                   "parameters, MFLOP per image) at --size, and the input convention it takes\n"
                   "and why. With --classes N, the graph as a training run would build it: its\n"
                   "classifier cut (and what that was) and a new head of N classes in its place.\n"
                   NORM_HELP,
                   "--classes", 0, 100000, &oa);
    if (pr)
        return pr < 0 ? 0 : pr;
    if (oa.n_files != 1) {
        fprintf(stderr, "%s%s", oa.n_files ? "petal-tui: one model at a time\n" : "", usage);
        return 1;
    }
    const char *model = oa.files[0];
    long long size = oa.size, classes = oa.extra;
    nn_import_info info;
    nn_model *m = import(model, (int)size, (int)classes, oa.norm, &info);
    if (!m)
        return 2;
    size_t need = nn_model_summary(m, NULL, 0) + 1;
    char *text = malloc(need);
    if (text) {
        nn_model_summary(m, text, need);
        fputs(text, stdout);
        free(text);
    }
    printf("\n%s: %d ONNX nodes -> %d layers%s, %zu parameters (%zu trainable), %.1f MFLOP per "
           "image at %lldx%lld, imported in %.2f s\n",
           model, info.onnx_nodes, info.mapped, info.quantized ? " (int8 weights dequantized)" : "",
           nn_param_count(m), nn_trainable_count(m), nn_flops(m, 1, 0) * 1e-6, size, size, info.seconds);
    printf("input %s (%s): %s\n", nn_norm_name(info.norm), nn_norm_formula(info.norm),
           info.norm_why);
    if (info.cut_from >= 0 || info.cut[0])
        printf("cut for the new head: %s; the head reads %d features: global average pool "
               "(where needed), dropout, dense %lld\n",
               info.cut, info.feature_c, classes);
    nn_model_free(m);
    return 0;
}
