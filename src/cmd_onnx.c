/* petal-tui classify and petal-tui model: looking at an ONNX model from the
 * command line before training with it. classify runs the graph as it is (its own
 * ImageNet classifier) on JPEGs and prints the top classes: the quick check that an
 * import is right. model prints the layers the graph became and what a new head
 * for a dataset would replace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/infer.h"
#include "src/cli.h"

/* Imports path at size x size (0: the graph's): n_classes 0 keeps the graph's
 * classifier (classifier: refusing a feature extractor) or output; norm is a
 * run_input_norm (auto: the graph's own convention). NULL (said) when it cannot. */
/* The graph, or NULL with the error said and *status the exit status: 1 for a graph of
 * the wrong kind or a size it cannot take (the command is what to change), 2 for a file
 * that cannot be read as one (the man page's EXIT STATUS). */
static inf_onnx *import(const char *path, int size, int n_classes, int classifier, int norm,
                        int *status)
{
    pt_err e;
    inf_onnx *g = NULL;
    if (inf_onnx_open(path, size, n_classes, classifier, (run_input_norm)norm, &g, &e) !=
        PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        *status = e.code == PT_EUSAGE ? 1 : 2;
        return NULL;
    }
    return g;
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

/* What --input-norm does, for both commands' --help. */
#define NORM_HELP                                                                     \
    "--input-norm: how pixels x in [0, 1] become the graph's input: imagenet\n"        \
    "((x - mean) / std; torch is the same), unit (x), tf (2x - 1: Keras's MobileNet,\n" \
    "Inception), raw (255x: graphs that normalise themselves, petal-tui's exports),\n"  \
    "caffe (BGR, 255x - mean: Keras's VGG16, ResNet50); auto (the default): raw\n"     \
    "for a petal-tui export, what the file states (its metadata input_norm, or its\n"  \
    "doc string: \"[-1, 1]\" is tf), raw for a graph that starts with its own\n"        \
    "Mul/Sub/Div/Add, else imagenet (called a guess for a tf2onnx graph: check).\n"   \
    "--norm is its old name (signed = tf, none = unit).\n"

/* What --size does, for both commands' --help. */
#define SIZE_HELP                                                                       \
    "--size S: the side to run at; by default the size the graph declares, else 224\n" \
    "(a graph that fixes its size is refused at another unless it is convolutional\n"  \
    "up to a global pooling, so it can run at any).\n"

int cmd_classify(int argc, char **argv)
{
    const char *usage = "usage: petal-tui classify MODEL.onnx IMAGE... [--size S] [--top 5]\n"
                        "        [--input-norm auto|imagenet|unit|tf|raw|caffe]\n";
    onnx_args oa = { .size = 0, .extra = 5, .norm = RUN_NORM_AUTO };
    int pr = parse(argc, argv, usage,
                   "Runs the model's own classifier on each image, JPEG or PNG (centre-cropped\n"
                   "to a square, resized to --size) and prints the top classes with their\n"
                   "probabilities, with ImageNet's names when the model has 1,000 outputs.\n"
                   "A graph with no classifier (a feature extractor) is refused: see\n"
                   "predict --features.\n"
                   SIZE_HELP NORM_HELP,
                   "--top", 1, 1000, &oa);
    if (pr)
        return pr < 0 ? 0 : pr;
    if (oa.n_files < 2) {
        fprintf(stderr, "%s", usage);
        return 1;
    }
    long long size = oa.size, top = oa.extra;
    int status = 2;
    inf_onnx *g = import(oa.files[0], (int)size, 0, 1, oa.norm, &status);
    if (!g)
        return status;
    int k = inf_onnx_classes(g);
    if (top > k)
        top = k;
    pt_err e;
    /* One image at a time on an inference-only replica pool of one. */
    inf_classify *c = NULL;
    int *order = malloc((size_t)k * sizeof *order);
    double *p = malloc((size_t)k * sizeof *p);
    status = 0;
    if (inf_classify_new(g, &c, &e) != PT_OK || !order || !p) {
        fprintf(stderr, "petal-tui: out of memory\n");
        status = 2;
        goto out;
    }
    for (int i = 1; i < oa.n_files; i++) {
        const char *a = oa.files[i];
        if (inf_classify_load(c, a, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            status = 2;
            continue;
        }
        if (inf_classify_run(c, p, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s: the forward pass failed\n", a);
            status = 2;
            continue;
        }
        inf_topk(p, k, (int)top, order);
        printf("%s\n", a);
        for (int t = 0; t < top; t++) {
            int cls = order[t];
            printf("  %4d  %-30s %6.2f%%\n", cls, inf_onnx_class_name(g, cls), 100.0 * p[cls]);
        }
    }
out:
    free(order);
    free(p);
    inf_classify_free(c);
    inf_onnx_close(g);
    return status;
}

int cmd_model(int argc, char **argv)
{
    const char *usage = "usage: petal-tui model MODEL.onnx [--size S] [--classes N]\n"
                        "        [--input-norm auto|imagenet|unit|tf|raw|caffe]\n";
    onnx_args oa = { .size = 0, .extra = 0, .norm = RUN_NORM_AUTO };
    int pr = parse(argc, argv, usage,
                   "Prints the layers the ONNX graph becomes (id, layer, inputs, output shape,\n"
                   "parameters, MFLOP per image) at --size, and the input convention it takes\n"
                   "and why. With --classes N, the graph as a training run would build it: its\n"
                   "classifier cut (and what that was) and a new head of N classes in its place.\n"
                   "Says whether the graph ends in a classifier or is a feature extractor.\n"
                   SIZE_HELP NORM_HELP,
                   "--classes", 0, 100000, &oa);
    if (pr)
        return pr < 0 ? 0 : pr;
    if (oa.n_files != 1) {
        fprintf(stderr, "%s%s", oa.n_files ? "petal-tui: one model at a time\n" : "", usage);
        return 1;
    }
    const char *model = oa.files[0];
    long long size = oa.size, classes = oa.extra;
    int status = 2;
    inf_onnx *g = import(model, (int)size, (int)classes, 0, oa.norm, &status);
    if (!g)
        return status;
    char *text = inf_onnx_summary(g);
    if (text) {
        fputs(text, stdout);
        free(text);
    }
    inf_onnx_info info;
    inf_onnx_about(g, &info);
    printf("\n%s: %d ONNX nodes -> %d layers%s, %zu parameters (%zu trainable), %.1f MFLOP per "
           "image at %dx%d, imported in %.2f s\n",
           model, info.onnx_nodes, info.mapped, info.quantized ? " (int8 weights dequantized)" : "",
           info.params, info.trainable, info.mflop, info.size, info.size, info.seconds);
    printf("input size %dx%d: %s\n", info.size, info.size, info.size_why);
    printf("input %s (%s): %s\n", info.norm_name, info.norm_formula, info.norm_why);
    if (!classes)
        printf("%s: %s\n", info.classifier ? "a classifier" : "a feature extractor (no classifier: "
               "predict and classify refuse it; predict --features gives its vectors)",
               info.head_why);
    if (info.cut_from >= 0 || info.cut[0])
        printf("cut for the new head: %s; the head reads %d features: global average pool "
               "(where needed), dropout, dense %lld\n",
               info.cut, info.feature_c, classes);
    inf_onnx_close(g);
    return 0;
}
