/* nn_build — the graph builder's common part: creating and freeing a model, recording
 * the first error (see nn.h, Errors), appending a node, and the window arithmetic of
 * convs and pools (nn_layer.h declares these for the layer files). Each kind's builder
 * call (nn_conv2d, nn_relu, ...) is in that kind's layer_*.c; nn_model_finalize
 * (nn_model.c) closes the description. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "nn/nn_layer.h"

nn_model *nn_model_new(int h, int w, int c)
{
    if (h <= 0 || w <= 0 || c <= 0)
        return NULL;
    nn_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->h = h;
    m->w = w;
    m->c = c;
    m->out = -1;
    m->init = NN_INIT_HE_NORMAL;
    return m;
}

void nn_model_free(nn_model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n_nodes; i++)
        free(m->nodes[i].aff);
    free(m->nodes);
    util_aligned_free(m->params);
    util_aligned_free(m->bufs);
    free(m->mask);
    free(m);
}

/* Records the first builder error; later calls keep returning it. */
int nn_build_fail(nn_model *m, int code, const char *fmt, ...)
{
    if (m->err == PT_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m->msg, sizeof m->msg, fmt, ap);
        va_end(ap);
        m->err = code;
    }
    return code;
}

int nn_build_check_in(nn_model *m, int in, const char *what)
{
    if (m->err)
        return m->err;
    if (m->finalized)
        return nn_build_fail(m, PT_EUSAGE, "%s: model already finalized", what);
    if (in < 0)
        return nn_build_fail(m, in, "%s: input is a failed node (%d)", what, in);
    if (in >= m->n_nodes)
        return nn_build_fail(m, PT_EUSAGE, "%s: no node %d", what, in);
    return PT_OK;
}

/* Appends a node shaped like its input; returns its id or an error. */
int nn_build_push(nn_model *m, nn_op op, int in0, int in1)
{
    if (m->n_nodes == m->cap_nodes) {
        int cap = m->cap_nodes ? m->cap_nodes * 2 : 32;
        nn_node *nn = realloc(m->nodes, (size_t)cap * sizeof *nn);
        if (!nn)
            return nn_build_fail(m, PT_ENOMEM, "out of memory");
        m->nodes = nn;
        m->cap_nodes = cap;
    }
    nn_node *nd = &m->nodes[m->n_nodes];
    memset(nd, 0, sizeof *nd);
    nd->op = op;
    nd->in[0] = in0;
    nd->in[1] = in1;
    nd->alias = -1;
    nd->groups = 1;
    nd->stride = 1;
    nd->trainable = 1;
    if (in0 >= 0) {
        nd->h = m->nodes[in0].h;
        nd->w = m->nodes[in0].w;
        nd->c = m->nodes[in0].c;
    }
    return m->n_nodes++;
}

void nn_node_set_len(nn_node *nd)
{
    nd->len = (size_t)nd->h * (size_t)nd->w * (size_t)nd->c;
}

/* NN_PAD_SAME / NN_PAD_VALID / a padding for every side, as the padding before and
 * after along one axis. "same" puts the odd pixel after, as TensorFlow does. */
static void side_pads(int in, int k, int stride, int pad, int *lead, int *trail)
{
    if (pad == NN_PAD_SAME) {
        int o = (in + stride - 1) / stride;
        int total = (o - 1) * stride + k - in;
        if (total < 0)
            total = 0;
        *lead = total / 2;
        *trail = total - *lead;
        return;
    }
    *lead = *trail = pad == NN_PAD_VALID ? 0 : pad;
}

/* Appends a conv or pool node with resolved padding pads = {top, left, bottom, right};
 * the caller has checked the window, stride and pads. The output has
 * floor((in + lead + trail - k) / stride) + 1 pixels per axis (for "same" that is
 * ceil(in / stride)); the kernels take the top and left padding and skip whatever
 * falls outside the input, so bottom and right padding need only the output size. */
static int place(nn_model *m, nn_op op, int in, int kh, int kw, int stride, const int pads[4],
                 const char *what)
{
    const nn_node *src = &m->nodes[in];
    int span_h = src->h + pads[0] + pads[2] - kh, span_w = src->w + pads[1] + pads[3] - kw;
    int oh = span_h < 0 ? 0 : span_h / stride + 1, ow = span_w < 0 ? 0 : span_w / stride + 1;
    if (oh < 1 || ow < 1)
        return nn_build_fail(m, PT_EUSAGE,
                             "%s: window %dx%d does not fit the %dx%d input of node %d", what,
                             kh, kw, src->h, src->w, in);
    int id = nn_build_push(m, op, in, -1);
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    nd->h = oh;
    nd->w = ow;
    nd->kh = kh;
    nd->kw = kw;
    nd->stride = stride;
    nd->pad_t = pads[0];
    nd->pad_l = pads[1];
    nd->pad_b = pads[2];
    nd->pad_r = pads[3];
    nn_node_set_len(nd);
    return id;
}

int nn_build_window(nn_model *m, nn_op op, int in, int kh, int kw, int stride, int pad,
                    const char *what)
{
    int rc = nn_build_check_in(m, in, what);
    if (rc)
        return rc;
    if (kh < 1 || kw < 1 || kh > NN_MAX_KERNEL || kw > NN_MAX_KERNEL || stride < 1 ||
        (pad < 0 && pad != NN_PAD_SAME && pad != NN_PAD_VALID))
        return nn_build_fail(m, PT_EUSAGE, "%s: bad window %dx%d stride %d pad %d", what, kh,
                             kw, stride, pad);
    if (op != NN_OP_CONV && pad >= kh)
        return nn_build_fail(m, PT_EUSAGE, "%s: padding %d must be smaller than the window %d",
                             what, pad, kh);
    int pads[4];
    side_pads(m->nodes[in].h, kh, stride, pad, &pads[0], &pads[2]);
    side_pads(m->nodes[in].w, kw, stride, pad, &pads[1], &pads[3]);
    return place(m, op, in, kh, kw, stride, pads, what);
}

/* The _ex forms: explicit padding per side and a stride per axis. The kernels keep
 * one stride and the pools one window side, so those must agree; each pad must be
 * smaller than the window side it extends, so every window reads some input. */
int nn_build_window_ex(nn_model *m, nn_op op, int in, int kh, int kw, int stride_h,
                       int stride_w, const int pads[4], const char *what)
{
    int rc = nn_build_check_in(m, in, what);
    if (rc)
        return rc;
    if (kh < 1 || kw < 1 || kh > NN_MAX_KERNEL || kw > NN_MAX_KERNEL || stride_h < 1 ||
        stride_w < 1 || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0)
        return nn_build_fail(m, PT_EUSAGE, "%s: bad window %dx%d stride %dx%d pads %d,%d,%d,%d",
                             what, kh, kw, stride_h, stride_w, pads[0], pads[1], pads[2],
                             pads[3]);
    if (stride_h != stride_w)
        return nn_build_fail(m, PT_EUSAGE,
                             "%s: strides %dx%d differ; only equal strides are supported", what,
                             stride_h, stride_w);
    if (op != NN_OP_CONV && kh != kw)
        return nn_build_fail(m, PT_EUSAGE,
                             "%s: window %dx%d; only square pool windows are supported", what, kh,
                             kw);
    if (pads[0] >= kh || pads[2] >= kh || pads[1] >= kw || pads[3] >= kw)
        return nn_build_fail(m, PT_EUSAGE,
                             "%s: pads %d,%d,%d,%d (top, left, bottom, right) must be smaller "
                             "than the %dx%d window",
                             what, pads[0], pads[1], pads[2], pads[3], kh, kw);
    return place(m, op, in, kh, kw, stride_h, pads, what);
}

int nn_build_unary(nn_model *m, nn_op op, int in, const char *what)
{
    int rc = nn_build_check_in(m, in, what);
    if (rc)
        return rc;
    int id = nn_build_push(m, op, in, -1);
    if (id >= 0)
        nn_node_set_len(&m->nodes[id]);
    return id;
}

void nn_model_set_bn_warm_start(nn_model *m, int on)
{
    m->bn_warm_start = on != 0;
}

void nn_model_set_init(nn_model *m, nn_init_kind kind)
{
    m->init = kind;
}
