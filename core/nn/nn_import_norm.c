/* nn_import_norm — the input conventions (nn_norm): their names, and what a graph
 * says about the one it takes (see nn_import.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "nn/nn_import.h"

static const char *const NAMES[NN_NORM_COUNT] = { "imagenet", "unit", "tf", "raw", "caffe" };

static const char *const FORMULAS[NN_NORM_COUNT] = {
    "(x - ImageNet mean) / ImageNet std",
    "x, in [0, 1]",
    "2x - 1, in [-1, 1]",
    "255x, pixels 0-255",
    "BGR, 255x - ImageNet mean in 0-255",
};

const char *nn_norm_name(nn_norm n)
{
    return (unsigned)n < NN_NORM_COUNT ? NAMES[n] : "?";
}

const char *nn_norm_formula(nn_norm n)
{
    return (unsigned)n < NN_NORM_COUNT ? FORMULAS[n] : "?";
}

int nn_norm_parse(const char *s, nn_norm *out)
{
    for (int k = 0; k < NN_NORM_COUNT; k++)
        if (!strcmp(s, NAMES[k])) {
            *out = (nn_norm)k;
            return 0;
        }
    if (!strcmp(s, "torch")) {
        *out = NN_NORM_IMAGENET;
        return 0;
    }
    return -1;
}

/* The first node that reads name, or NULL (not past Transposes). */
static const onnx_node *first_reader_op(const onnx_model *om, const char *name)
{
    for (size_t i = 0; i < om->n_nodes; i++)
        for (size_t k = 0; k < om->nodes[i].n_inputs; k++)
            if (!strcmp(om->nodes[i].inputs[k], name))
                return &om->nodes[i];
    return NULL;
}

static int is_arith(const char *op)
{
    return !strcmp(op, "Mul") || !strcmp(op, "Sub") || !strcmp(op, "Div") || !strcmp(op, "Add");
}

/* The first node that reads name, or NULL; past Transposes (tf2onnx's NHWC input). */
static const onnx_node *first_reader(const onnx_model *om, const char *name)
{
    for (int hops = 0; hops < 4; hops++) {
        const onnx_node *r = NULL;
        for (size_t i = 0; i < om->n_nodes && !r; i++)
            for (size_t k = 0; k < om->nodes[i].n_inputs; k++)
                if (!strcmp(om->nodes[i].inputs[k], name)) {
                    r = &om->nodes[i];
                    break;
                }
        if (!r || strcmp(r->op_type, "Transpose") != 0 || r->n_outputs < 1)
            return r;
        name = r->outputs[0];
    }
    return NULL;
}

/* Whether s holds word, case aside. */
static int has(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (; *s; s++)
        if (!strncasecmp(s, word, n))
            return 1;
    return 0;
}

/* What text says of the input's scale, most specific first (a "[0, 1]" said of
 * pixels before a mean and std is ImageNet's). -1: nothing. */
static int stated(const char *t)
{
    static const struct { const char *word; nn_norm norm; } says[] = {
        { "[-1, 1]", NN_NORM_TF },      { "[-1,1]", NN_NORM_TF },
        { "127.5 - 1", NN_NORM_TF },    { "caffe", NN_NORM_CAFFE },
        { "BGR", NN_NORM_CAFFE },       { "mean and std", NN_NORM_IMAGENET },
        { "imagenet mean", NN_NORM_IMAGENET }, { "0.485", NN_NORM_IMAGENET },
        { " std", NN_NORM_IMAGENET },   { "[0, 255]", NN_NORM_RAW },
        { "0-255", NN_NORM_RAW },       { "[0,255]", NN_NORM_RAW },
        { "[0, 1]", NN_NORM_UNIT },     { "[0,1]", NN_NORM_UNIT },
    };
    for (size_t k = 0; k < sizeof says / sizeof says[0]; k++)
        if (has(t, says[k].word))
            return (int)says[k].norm;
    return -1;
}

/* The convention the file states in words: a metadata property named input_norm
 * (one of the names), else what its doc string or an input / preprocessing property
 * says of the input. The sentence that says it goes into why. */
static int file_states(const onnx_model *om, char *why, size_t n)
{
    nn_norm v;
    const char *p = onnx_prop(om, "input_norm");
    if (p && nn_norm_parse(p, &v) == 0) {
        snprintf(why, n, "the file says so (its metadata input_norm = %s)", p);
        return (int)v;
    }
    const char *texts[] = { om->doc_string, onnx_prop(om, "input"),
                            onnx_prop(om, "preprocessing") };
    for (int i = 0; i < 3; i++) {
        const char *t = texts[i];
        const char *at = t ? strstr(t, "Input") : NULL;
        if (!at && t)
            at = strstr(t, "input");
        int got = at ? stated(at) : -1;
        if (got < 0)
            continue;
        int len = (int)strcspn(at, "\n");
        snprintf(why, n, "the file says \"%.*s\"", len < 100 ? len : 100, at);
        return got;
    }
    return -1;
}

nn_norm nn_import_norm_auto(const onnx_model *om, char *why, size_t n)
{
    char local[8];
    if (!why) {
        why = local;
        n = sizeof local;
    }
    if (onnx_prop(om, "petal_tui_version")) {
        snprintf(why, n, "a petal-tui export: it normalises its input itself");
        return NN_NORM_RAW;
    }
    int st = file_states(om, why, n);
    if (st >= 0)
        return (nn_norm)st;
    const char *in = NULL;
    for (size_t i = 0; i < om->n_inputs && !in; i++)
        if (!onnx_find_tensor(om, om->inputs[i].name))
            in = om->inputs[i].name;
    const onnx_node *r = in ? first_reader(om, in) : NULL;
    if (r && is_arith(r->op_type) && r->n_inputs == 2 &&
        (onnx_find_tensor(om, r->inputs[0]) || onnx_find_tensor(om, r->inputs[1]))) {
        snprintf(why, n, "the graph normalises its input itself (%s by a constant first)",
                 r->op_type);
        return NN_NORM_RAW;
    }
    const onnx_node *t = in ? first_reader_op(om, in) : NULL;
    if (t && !strcmp(t->op_type, "Transpose")) {
        /* tf2onnx's Keras layout, where imagenet is only a guess. */
        snprintf(why, n, "a GUESS: the graph does not say; Keras files take tf (MobileNet, "
                 "Inception), raw (EfficientNet), caffe (ResNet50, VGG): give --input-norm");
        return NN_NORM_IMAGENET;
    }
    snprintf(why, n, "the default: the graph does not say (torchvision's and the ONNX zoo's "
             "convention)");
    return NN_NORM_IMAGENET;
}
