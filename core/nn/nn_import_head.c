/* nn_import_head — what a graph's end is (see nn_import.h): a classifier, whose
 * Gemm / MatMul a new head replaces (nn_imp_classifier), or a feature extractor
 * (nn_import_head), which predict and classify refuse rather than rank features as
 * classes. Decided from the graph: the nodes its output comes from, then the names
 * and doc string its exporter gave it. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "nn/nn_import_impl.h"

const onnx_node *nn_imp_classifier(const onnx_model *om)
{
    if (om->n_outputs < 1)
        return NULL;
    const char *name = om->outputs[0].name;
    for (int steps = 0; steps < 16; steps++) {
        const onnx_node *p = onnx_producer(om, name);
        if (!p || p->n_inputs < 1)
            return NULL;
        const char *op = p->op_type;
        if (!strcmp(op, "Gemm") || !strcmp(op, "MatMul") || !strcmp(op, "QLinearMatMul"))
            return p;
        int pass = !strcmp(op, "Softmax") || !strcmp(op, "DequantizeLinear") ||
                   !strcmp(op, "QuantizeLinear") || !strcmp(op, "Flatten") ||
                   !strcmp(op, "Reshape") || !strcmp(op, "Identity") ||
                   !strcmp(op, "Add") || !strcmp(op, "QLinearAdd");
        if (!pass)
            return NULL;
        /* Follow the operand that is not a constant. */
        name = p->inputs[0];
        if (onnx_find_tensor(om, name) && p->n_inputs > 1)
            name = p->inputs[!strcmp(op, "QLinearAdd") ? 3 : 1];
    }
    return NULL;
}

/* Whether s holds word, case aside. */
static int has_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (; s && *s; s++) {
        size_t k = 0;
        while (k < n && s[k] && tolower((unsigned char)s[k]) == word[k])
            k++;
        if (k == n)
            return 1;
    }
    return 0;
}

static const char *const FEATURE_WORDS[] = { "notop", "no classifier", "feature", "embedding",
                                             "include_top=false", NULL };

/* The first of the graph's own words that calls it features: its output's name, the
 * graph's name, its doc string, its file name. */
static int says_features(const onnx_model *om, char *why, size_t n)
{
    const char *base = om->path ? strrchr(om->path, '/') : NULL;
    const char *where[4][2] = { { "its output is named", om->outputs[0].name },
                                { "the graph is named", om->graph_name },
                                { "its doc string says", om->doc_string },
                                { "the file is named", base ? base + 1 : om->path } };
    for (int i = 0; i < 4; i++)
        for (int k = 0; FEATURE_WORDS[k]; k++)
            if (has_word(where[i][1], FEATURE_WORDS[k])) {
                snprintf(why, n, "%s '%s'", where[i][0], FEATURE_WORDS[k]);
                return 1;
            }
    return 0;
}

/* A Conv whose kernel is 1 x 1 (its weights [cout][cin][1][1]). */
static int conv_1x1(const onnx_model *om, const onnx_node *p)
{
    const onnx_tensor *w = p->n_inputs > 1 ? onnx_find_tensor(om, p->inputs[1]) : NULL;
    if (!strcmp(p->op_type, "QLinearConv"))
        w = p->n_inputs > 3 ? onnx_find_tensor(om, p->inputs[3]) : NULL;
    return w && w->rank == 4 && w->dims[2] == 1 && w->dims[3] == 1;
}

static int is_pool(const char *op)
{
    return !strcmp(op, "GlobalAveragePool") || !strcmp(op, "ReduceMean") ||
           !strcmp(op, "GlobalMaxPool") || !strcmp(op, "AveragePool");
}

static int passes(const char *op)
{
    static const char *const ops[] = { "Identity", "Flatten", "Reshape", "Squeeze",
                                       "Unsqueeze", "Transpose", "DequantizeLinear",
                                       "QuantizeLinear", "Add", "QLinearAdd", "Mul", NULL };
    for (int k = 0; ops[k]; k++)
        if (!strcmp(ops[k], op))
            return 1;
    return 0;
}

int nn_import_head(const onnx_model *om, char *why, size_t n)
{
    if (om->n_outputs < 1) {
        snprintf(why, n, "it has no output");
        return 0;
    }
    const onnx_node *cls = nn_imp_classifier(om);
    if (cls) {
        snprintf(why, n, "its output comes from %s '%s'", cls->op_type, cls->name);
        return 1;
    }
    const char *name = om->outputs[0].name;
    int pooled = 0;
    for (int steps = 0; steps < 24; steps++) {
        const onnx_node *p = onnx_producer(om, name);
        if (!p || p->n_inputs < 1)
            break;
        const char *op = p->op_type;
        if (!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax")) {
            snprintf(why, n, "it ends in %s '%s'", op, p->name);
            return 1;
        }
        if ((!strcmp(op, "Conv") || !strcmp(op, "QLinearConv")) && conv_1x1(om, p) && pooled &&
            !says_features(om, why, n)) {
            snprintf(why, n, "its output is a 1x1 Conv '%s' pooled (a convolutional classifier)",
                     p->name);
            return 1;
        }
        if (is_pool(op)) {
            pooled = 1;
        } else if (!passes(op) && strcmp(op, "Relu") != 0) {
            break;
        }
        name = p->inputs[0];
        if (onnx_find_tensor(om, name) && p->n_inputs > 1)
            name = p->inputs[!strcmp(op, "QLinearAdd") ? 3 : 1];
    }
    if (!says_features(om, why, n))
        snprintf(why, n, "its output '%s' comes from no Gemm, MatMul, 1x1 Conv or Softmax", name);
    return 0;
}
