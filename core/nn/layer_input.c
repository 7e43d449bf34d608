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

const nn_layer nn_layer_input = {
    .forward = input_forward,
    .backward = input_backward,
    .grad = &input_grad,
    .onnx_write = NULL,   /* the next issue's ONNX writer for this kind goes here */
};
