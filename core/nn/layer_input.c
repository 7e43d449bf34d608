/* layer_input — NN_OP_INPUT: the model's input, node 0. It has no storage of its own:
 * its output is the caller's input to nn_forward, and its gradient (when
 * nn_model_set_input_grad asks for one) is what its readers leave in its dy. */
#include "nn/nn_layer.h"

int nn_input(nn_model *m)
{
    if (m->err)
        return m->err;
    if (m->finalized)
        return nn_build_fail(m, PT_EUSAGE, "input: model already finalized");
    for (int i = 0; i < m->n_nodes; i++)
        if (m->nodes[i].op == NN_OP_INPUT)
            return nn_build_fail(m, PT_EUSAGE, "input: the model already has one (node %d)", i);
    int id = nn_build_push(m, NN_OP_INPUT, -1, -1);
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    nd->h = m->h;
    nd->w = m->w;
    nd->c = m->c;
    nn_node_set_len(nd);
    return id;
}

static void input_forward(const nn_fwd *f)
{
    f->c->outp[f->i] = f->input;
}

static void input_backward(const nn_bwd *b)
{
    (void)b;
}

/* The input alone: its gradient is the output's. */
static int input_grad_graph(nn_model *m, int in)
{
    (void)m;
    return in;
}

static const nn_grad_case input_grad = {2, 3, 3, 2, NN_GRAD_UNIFORM, input_grad_graph};

/* The front: pixels 0-255 to the model's [0, 1] input, the affine layer after it
 * folded in when that layer alone reads the input (nn_export.h). No import hook: the
 * graph's input is not a node (nn_imp_graph_input, nn_imp_first_layer). */
static int input_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    int a = nn_onnx_fold_next(w, i);
    const float *aff = a >= 0 ? m->nodes[a].aff : NULL;
    float scale[3], shift[3];
    int has_shift = 0;
    for (int k = 0; k < 3; k++) {
        scale[k] = (aff ? aff[k] : 1.0f) / 255.0f;
        shift[k] = aff ? aff[3 + k] : 0.0f;
        has_shift |= shift[k] != 0.0f;
    }
    const int64_t dims[4] = { 1, 3, 1, 1 };
    const char *mul[2] = { nn_onnx_input(w), nn_onnx_const(w, i, "scale", 4, dims, scale) };
    if (!has_shift)
        return nn_onnx_op(w, "Mul", 2, mul, nn_onnx_out(w, i, 4));
    const char *scaled = nn_onnx_tmp(w, i, "scaled");
    nn_onnx_op(w, "Mul", 2, mul, scaled);
    const char *add[2] = { scaled, nn_onnx_const(w, i, "shift", 4, dims, shift) };
    return nn_onnx_op(w, "Add", 2, add, nn_onnx_out(w, i, 4));
}

const nn_layer nn_layer_input = {
    .forward = input_forward,
    .backward = input_backward,
    .grad = &input_grad,
    .onnx_write = input_onnx,
};
