/* layer_add — NN_OP_ADD: the sum of two tensors of one shape (residual connections).
 * No parameters; both inputs get the output's gradient (nn_copy_grad, nn_elem.c). */
#include <string.h>

#include "nn/nn_import_impl.h"
#include "nn/nn_layer.h"

int nn_add(nn_model *m, int a, int b)
{
    int rc = nn_build_check_in(m, a, "add");
    if (!rc)
        rc = nn_build_check_in(m, b, "add");
    if (rc)
        return rc;
    const nn_node *na = &m->nodes[a], *nb = &m->nodes[b];
    if (na->h != nb->h || na->w != nb->w || na->c != nb->c)
        return nn_build_fail(m, PT_EUSAGE,
                             "add: shapes %dx%dx%d (node %d) and %dx%dx%d (node %d) differ",
                             na->h, na->w, na->c, a, nb->h, nb->w, nb->c, b);
    int id = nn_build_push(m, NN_OP_ADD, a, b);
    if (id >= 0)
        nn_node_set_len(&m->nodes[id]);
    return id;
}

static void nn_add_fwd(size_t len, const float *a, const float *b, float *y)
{
    const float *restrict u = a, *restrict v = b;
    float *restrict o = y;
    for (size_t i = 0; i < len; i++)
        o[i] = u[i] + v[i];
}

static void add_part(void *arg, long u0, long u1, int part)
{
    const nn_fwd *f = arg;
    (void)part;
    nn_add_fwd((size_t)(u1 - u0), f->x + u0, f->c->outp[f->nd->in[1]] + u0, f->y + u0);
}

static void add_forward(const nn_fwd *f)
{
    nn_par_units(f->c, (long)f->n * f->nd->len, NN_PAR_MIN_VALUES, 16, add_part, (void *)f);
}

static void add_backward(const nn_bwd *b)
{
    int acc1 = 0;
    if (b->dx)
        nn_copy_grad(b->len, b->dy, b->dx, b->acc);
    float *dx1 = nn_grad_target(b->c, b->i, 1, &acc1);
    if (dx1)
        nn_copy_grad(b->len, b->dy, dx1, acc1);
}

/* Two conv branches, then x + x: the same gradient reaches one node twice and must
 * add up. */
static int add_grad_graph(nn_model *m, int in)
{
    int a = nn_conv2d(m, in, 4, 3, 3, 1, NN_PAD_SAME, 1, 1);
    int b = nn_conv2d(m, in, 4, 1, 1, 1, 0, 1, 0);
    int s = nn_add(m, a, b);
    return nn_add(m, s, s);
}

static const nn_grad_case add_grad = {2, 4, 4, 3, NN_GRAD_UNIFORM, add_grad_graph};

static int add_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    (void)m;
    return nn_onnx_simple(w, i, "Add", 2);
}

/* Add of two maps, and QLinearAdd (a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp)
 * of two with the activation its range carries. With a constant operand it is a dense
 * layer's bias (layer_dense.c, asked first) or per-channel constants
 * (nn_import_front.c). */
static int add_import(struct imp *I, const onnx_node *n)
{
    int quant = !strcmp(n->op_type, "QLinearAdd");
    size_t kb = quant ? 3 : 1;
    if (quant)
        I->quantized = 1;
    if (nn_imp_const(I, n, 0) || nn_imp_const(I, n, kb))
        return NN_IMP_DECLINE;
    int a, b, rc;
    if ((rc = nn_imp_in_node(I, n, 0, 0, &a)) || (rc = nn_imp_in_node(I, n, kb, 0, &b)))
        return rc;
    int id = nn_imp_built(I, n, nn_add(I->m, a, b));
    if (id >= 0 && quant)
        id = nn_imp_q_act(I, n, id, 6, 7);
    return id < 0 ? id : nn_imp_out_node(I, n, id, 0);
}

static const char *const add_ops[] = { "Add", "QLinearAdd", NULL };

const nn_layer nn_layer_add = {
    .flags = NN_LAYER_BWD_NO_INPUT,
    .reads_output = nn_reads_no_output,
    .forward = add_forward,
    .backward = add_backward,
    .grad = &add_grad,
    .onnx_write = add_onnx,
    .onnx_ops = add_ops,
    .onnx_import = add_import,
};
