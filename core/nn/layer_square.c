/* layer_square — NN_OP_SQUARE (a toy kind showing how to add one): y = x * x, no
 * parameters. */
#include "nn/nn_layer.h"

int nn_square(nn_model *m, int in)
{
    return nn_build_unary(m, NN_OP_SQUARE, in, "square");
}

static void square_forward(const nn_fwd *f)
{
    const size_t len = (size_t)f->n * f->nd->len;
    for (size_t i = 0; i < len; i++)
        f->y[i] = f->x[i] * f->x[i];
}

static void square_backward(const nn_bwd *b)
{
    if (!b->dx)
        return;
    for (size_t i = 0; i < b->len; i++) {
        const float d = 2.0f * b->x[i] * b->dy[i];
        b->dx[i] = b->acc ? b->dx[i] + d : d;
    }
}

static int square_grad_graph(nn_model *m, int in)
{
    return nn_square(m, in);
}

static const nn_grad_case square_grad = {2, 3, 3, 4, NN_GRAD_UNIFORM, square_grad_graph};

const nn_layer nn_layer_square = {
    .name = "square",
    .forward = square_forward,
    .backward = square_backward,
    .grad = &square_grad,
    .onnx_write = NULL,   /* the next issue's ONNX writer for this kind goes here */
};
