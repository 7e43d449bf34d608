/* nn_import_norm — the input conventions (nn_norm): their names, and what a graph
 * says about the one it takes (see nn_import.h). */
#include <stdio.h>
#include <string.h>

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
    snprintf(why, n, "the default: the graph does not say (torchvision's and the ONNX zoo's "
             "convention)");
    return NN_NORM_IMAGENET;
}
