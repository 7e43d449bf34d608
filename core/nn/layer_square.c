/* layer_square — NN_OP_SQUARE, a toy kind: y = x * x, no parameters. It shows what a
 * kind takes (nn_layer.h: one line in nn_layers.def and this file). ONNX: Mul of x
 * with itself, both ways. */
#include <string.h>

#include "nn/nn_import_impl.h"
#include "nn/nn_layer.h"

static int square(nn_model *m, int in)
{
    return nn_build_unary(m, NN_OP_SQUARE, in, "square");
}

static void square_forward(const nn_fwd *f)
{
    size_t len = (size_t)f->n * f->nd->len;
    for (size_t i = 0; i < len; i++)
        f->y[i] = f->x[i] * f->x[i];
}

/* dx = 2 x dy, from the input. */
static void square_backward(const nn_bwd *b)
{
    if (!b->dx)
        return;
    for (size_t i = 0; i < b->len; i++) {
        float g = 2.0f * b->x[i] * b->dy[i];
        b->dx[i] = b->acc ? b->dx[i] + g : g;
    }
}

static int square_grad_graph(nn_model *m, int in)
{
    return square(m, in);
}

static const nn_grad_case square_grad = {2, 3, 3, 4, NN_GRAD_UNIFORM, square_grad_graph};

static int square_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    (void)m;
    const char *x = nn_onnx_in(w, i, 0, 0);
    const char *in[2] = { x, x };
    return nn_onnx_op(w, "Mul", 2, in, nn_onnx_out(w, i, nn_onnx_in_rank(w, i, 0)));
}

/* A Mul of a value with itself. The mul kind, earlier in the table, takes such a node
 * first (as mul(x, x), which computes the same), so a file comes back without it. */
static int square_import(struct imp *I, const onnx_node *n)
{
    if (n->n_inputs != 2 || strcmp(n->inputs[0], n->inputs[1]) || nn_imp_const(I, n, 0))
        return NN_IMP_DECLINE;
    int in, rc = nn_imp_in_node(I, n, 0, 0, &in);
    if (rc)
        return rc;
    int id = nn_imp_built(I, n, square(I->m, in));
    return id < 0 ? id : nn_imp_out_node(I, n, id, 0);
}

static const char *const square_ops[] = { "Mul", NULL };

const nn_layer nn_layer_square = {
    .reads_output = nn_reads_no_output,
    .forward = square_forward,
    .backward = square_backward,
    .grad = &square_grad,
    .onnx_write = square_onnx,
    .onnx_ops = square_ops,
    .onnx_import = square_import,
};
