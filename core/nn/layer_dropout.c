/* layer_dropout — NN_OP_DROPOUT: inverted dropout. A training forward keeps each
 * value with probability 1 - rate and scales it by 1 / (1 - rate), through a mask it
 * keeps in the context for backward (c->drop_mask[i]); inference, and rate 0, pass the
 * input on untouched. No parameters. */
#include <stdio.h>

#include "nn/nn_import_impl.h"
#include "nn/nn_layer.h"

int nn_dropout(nn_model *m, int in, float rate)
{
    int rc = nn_build_check_in(m, in, "dropout");
    if (rc)
        return rc;
    if (!(rate >= 0.0f && rate < 1.0f))
        return nn_build_fail(m, PT_EUSAGE, "dropout: rate %g outside [0, 1)", (double)rate);
    int id = nn_build_unary(m, NN_OP_DROPOUT, in, "dropout");
    if (id >= 0)
        m->nodes[id].rate = rate;
    return id;
}

static void nn_dropout_mask(int n, size_t len, float rate, uint64_t seed, int64_t first, int node,
                            float *mask)
{
    /* One stream per (seed, global example, node): element j is its j-th draw. */
    const float keep = 1.0f / (1.0f - rate);
    for (int i = 0; i < n; i++) {
        rng r;
        rng_derive(&r, seed, (uint64_t)(first + i), (uint64_t)node);
        float *mi = mask + (size_t)i * len;
        for (size_t j = 0; j < len; j++)
            mi[j] = rng_float(&r) >= rate ? keep : 0.0f;
    }
}

static void dropout_forward(const nn_fwd *f)
{
    const nn_node *nd = f->nd;
    nn_ctx *c = f->c;
    if (f->training && nd->rate > 0.0f) {
        nn_dropout_mask(f->n, nd->len, nd->rate, f->seed, f->first, f->i, c->drop_mask[f->i]);
        nn_mul_fwd((size_t)f->n * nd->len, f->x, c->drop_mask[f->i], f->y);
    } else {
        c->outp[f->i] = f->x;
    }
}

static void dropout_backward(const nn_bwd *b)
{
    if (!b->dx)
        return;
    /* After nn_forward_eval_grad the forward passed its input on (no mask drawn). */
    if (b->nd->rate > 0.0f && !b->c->eval_grad)
        nn_mul_bwd(b->len, b->dy, b->c->drop_mask[b->i], b->dx, b->acc);
    else
        nn_copy_grad(b->len, b->dy, b->dx, b->acc);
}

static void dropout_describe(const nn_model *m, const nn_node *nd, char *buf, size_t size)
{
    (void)m;
    snprintf(buf, size, "dropout %.2f", (double)nd->rate);
}

/* Training, with the test's fixed seed: the same mask at every step. */
static int dropout_grad_graph(nn_model *m, int in)
{
    return nn_dropout(m, in, 0.4f);
}

static const nn_grad_case dropout_grad = {2, 3, 3, 4, NN_GRAD_UNIFORM, dropout_grad_graph};

/* Inference form: dropout is the identity, so it writes nothing. */
static int dropout_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    nn_onnx_same(w, i, m->nodes[i].in[0]);
    return nn_onnx_status(w);
}

/* Dropout: the identity in inference, so no layer (the value its input's). */
static int dropout_import(struct imp *I, const onnx_node *n)
{
    return nn_imp_pass(I, n);
}

static const char *const dropout_ops[] = { "Dropout", NULL };

const nn_layer nn_layer_dropout = {
    .flags = NN_LAYER_MASK | NN_LAYER_BWD_NO_INPUT,
    .reads_output = nn_reads_no_output,
    .forward = dropout_forward,
    .backward = dropout_backward,
    .describe = dropout_describe,
    .grad = &dropout_grad,
    .onnx_write = dropout_onnx,
    .onnx_ops = dropout_ops,
    .onnx_import = dropout_import,
};
