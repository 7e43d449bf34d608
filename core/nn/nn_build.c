/* nn_build — the graph builder: creating and freeing a model, and one call per layer
 * that checks its arguments against its input's shape, records the first error (see
 * nn.h, Errors) and appends the node. nn_model_finalize (nn_model.c) closes it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "nn/nn_impl.h"

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
static int fail(nn_model *m, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail(nn_model *m, int code, const char *fmt, ...)
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

static int check_in(nn_model *m, int in, const char *what)
{
    if (m->err)
        return m->err;
    if (m->finalized)
        return fail(m, PT_EUSAGE, "%s: model already finalized", what);
    if (in < 0)
        return fail(m, in, "%s: input is a failed node (%d)", what, in);
    if (in >= m->n_nodes)
        return fail(m, PT_EUSAGE, "%s: no node %d", what, in);
    return PT_OK;
}

/* Appends a node shaped like its input; returns its id or an error. */
static int push(nn_model *m, nn_op op, int in0, int in1)
{
    if (m->n_nodes == m->cap_nodes) {
        int cap = m->cap_nodes ? m->cap_nodes * 2 : 32;
        nn_node *nn = realloc(m->nodes, (size_t)cap * sizeof *nn);
        if (!nn)
            return fail(m, PT_ENOMEM, "out of memory");
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

static void set_len(nn_node *nd)
{
    nd->len = (size_t)nd->h * (size_t)nd->w * (size_t)nd->c;
}

int nn_input(nn_model *m)
{
    if (m->err)
        return m->err;
    if (m->finalized)
        return fail(m, PT_EUSAGE, "input: model already finalized");
    for (int i = 0; i < m->n_nodes; i++)
        if (m->nodes[i].op == NN_OP_INPUT)
            return fail(m, PT_EUSAGE, "input: the model already has one (node %d)", i);
    int id = push(m, NN_OP_INPUT, -1, -1);
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    nd->h = m->h;
    nd->w = m->w;
    nd->c = m->c;
    set_len(nd);
    return id;
}

int nn_affine(nn_model *m, int in, const float *scale, const float *shift)
{
    int rc = check_in(m, in, "affine");
    if (rc)
        return rc;
    if (!scale || !shift)
        return fail(m, PT_EUSAGE, "affine: scale and shift are required");
    int id = push(m, NN_OP_AFFINE, in, -1);
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    set_len(nd);
    nd->aff = malloc(2 * (size_t)nd->c * sizeof *nd->aff);
    if (!nd->aff)
        return fail(m, PT_ENOMEM, "out of memory");
    memcpy(nd->aff, scale, (size_t)nd->c * sizeof *nd->aff);
    memcpy(nd->aff + nd->c, shift, (size_t)nd->c * sizeof *nd->aff);
    return id;
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
        return fail(m, PT_EUSAGE, "%s: window %dx%d does not fit the %dx%d input of node %d",
                    what, kh, kw, src->h, src->w, in);
    int id = push(m, op, in, -1);
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
    set_len(nd);
    return id;
}

static int windowed(nn_model *m, nn_op op, int in, int kh, int kw, int stride, int pad,
                    const char *what)
{
    int rc = check_in(m, in, what);
    if (rc)
        return rc;
    if (kh < 1 || kw < 1 || kh > NN_MAX_KERNEL || kw > NN_MAX_KERNEL || stride < 1 ||
        (pad < 0 && pad != NN_PAD_SAME && pad != NN_PAD_VALID))
        return fail(m, PT_EUSAGE, "%s: bad window %dx%d stride %d pad %d", what, kh, kw, stride,
                    pad);
    if (op != NN_OP_CONV && pad >= kh)
        return fail(m, PT_EUSAGE, "%s: padding %d must be smaller than the window %d", what, pad,
                    kh);
    int pads[4];
    side_pads(m->nodes[in].h, kh, stride, pad, &pads[0], &pads[2]);
    side_pads(m->nodes[in].w, kw, stride, pad, &pads[1], &pads[3]);
    return place(m, op, in, kh, kw, stride, pads, what);
}

/* The _ex forms: explicit padding per side and a stride per axis. The kernels keep
 * one stride and the pools one window side, so those must agree; each pad must be
 * smaller than the window side it extends, so every window reads some input. */
static int windowed_ex(nn_model *m, nn_op op, int in, int kh, int kw, int stride_h,
                       int stride_w, const int pads[4], const char *what)
{
    int rc = check_in(m, in, what);
    if (rc)
        return rc;
    if (kh < 1 || kw < 1 || kh > NN_MAX_KERNEL || kw > NN_MAX_KERNEL || stride_h < 1 ||
        stride_w < 1 || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0)
        return fail(m, PT_EUSAGE, "%s: bad window %dx%d stride %dx%d pads %d,%d,%d,%d", what, kh,
                    kw, stride_h, stride_w, pads[0], pads[1], pads[2], pads[3]);
    if (stride_h != stride_w)
        return fail(m, PT_EUSAGE, "%s: strides %dx%d differ; only equal strides are supported",
                    what, stride_h, stride_w);
    if (op != NN_OP_CONV && kh != kw)
        return fail(m, PT_EUSAGE, "%s: window %dx%d; only square pool windows are supported",
                    what, kh, kw);
    if (pads[0] >= kh || pads[2] >= kh || pads[1] >= kw || pads[3] >= kw)
        return fail(m, PT_EUSAGE,
                    "%s: pads %d,%d,%d,%d (top, left, bottom, right) must be smaller than the "
                    "%dx%d window",
                    what, pads[0], pads[1], pads[2], pads[3], kh, kw);
    return place(m, op, in, kh, kw, stride_h, pads, what);
}

/* The conv's own checks and fields around a placed window; pads NULL: the pad of
 * nn_conv2d, else the explicit pads of nn_conv2d_ex. */
static int conv(nn_model *m, int in, int cout, int kh, int kw, int stride_h, int stride_w,
                int pad, const int *pads, int groups, int bias)
{
    int rc = check_in(m, in, "conv2d");
    if (rc)
        return rc;
    int cin = m->nodes[in].c;
    if (cout < 1 || groups < 1 || cin % groups || cout % groups)
        return fail(m, PT_EUSAGE, "conv2d: %d groups do not divide %d -> %d channels", groups,
                    cin, cout);
    int id = pads ? windowed_ex(m, NN_OP_CONV, in, kh, kw, stride_h, stride_w, pads, "conv2d")
                  : windowed(m, NN_OP_CONV, in, kh, kw, stride_h, pad, "conv2d");
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    nd->c = cout;
    nd->groups = groups;
    nd->has_bias = bias != 0;
    nd->w_len = (size_t)kh * kw * (cin / groups) * cout;
    nd->b_len = bias ? (size_t)cout : 0;
    set_len(nd);
    return id;
}

int nn_conv2d(nn_model *m, int in, int cout, int kh, int kw, int stride, int pad, int groups,
              int bias)
{
    return conv(m, in, cout, kh, kw, stride, stride, pad, NULL, groups, bias);
}

int nn_conv2d_ex(nn_model *m, int in, int cout, int kh, int kw, int stride_h, int stride_w,
                 int pad_t, int pad_l, int pad_b, int pad_r, int groups, int bias)
{
    const int pads[4] = {pad_t, pad_l, pad_b, pad_r};
    return conv(m, in, cout, kh, kw, stride_h, stride_w, 0, pads, groups, bias);
}

int nn_batchnorm(nn_model *m, int in)
{
    return nn_batchnorm_ex(m, in, NN_BN_EPS, NN_BN_MOMENTUM);
}

int nn_batchnorm_ex(nn_model *m, int in, float eps, float momentum)
{
    int rc = check_in(m, in, "batchnorm");
    if (rc)
        return rc;
    /* Written so that NaN fails too. */
    if (!(eps > 0.0f && eps < 1.0f) || !(momentum >= 0.0f && momentum < 1.0f))
        return fail(m, PT_EUSAGE, "batchnorm: epsilon %g must be in (0, 1) and momentum %g in [0, 1)",
                    (double)eps, (double)momentum);
    int id = push(m, NN_OP_BN, in, -1);
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    set_len(nd);
    nd->w_len = nd->b_len = (size_t)nd->c;
    nd->buf_len = 2 * (size_t)nd->c;
    nd->bn_eps = eps;
    nd->bn_momentum = momentum;
    return id;
}

static int unary(nn_model *m, nn_op op, int in, const char *what)
{
    int rc = check_in(m, in, what);
    if (rc)
        return rc;
    int id = push(m, op, in, -1);
    if (id >= 0)
        set_len(&m->nodes[id]);
    return id;
}

int nn_relu(nn_model *m, int in)
{
    return unary(m, NN_OP_RELU, in, "relu");
}

int nn_relu6(nn_model *m, int in)
{
    return unary(m, NN_OP_RELU6, in, "relu6");
}

int nn_maxpool(nn_model *m, int in, int k, int stride, int pad)
{
    return windowed(m, NN_OP_MAXPOOL, in, k, k, stride, pad, "maxpool");
}

int nn_avgpool(nn_model *m, int in, int k, int stride, int pad)
{
    return windowed(m, NN_OP_AVGPOOL, in, k, k, stride, pad, "avgpool");
}

int nn_maxpool_ex(nn_model *m, int in, int kh, int kw, int stride_h, int stride_w, int pad_t,
                  int pad_l, int pad_b, int pad_r)
{
    const int pads[4] = {pad_t, pad_l, pad_b, pad_r};
    return windowed_ex(m, NN_OP_MAXPOOL, in, kh, kw, stride_h, stride_w, pads, "maxpool");
}

int nn_avgpool_ex(nn_model *m, int in, int kh, int kw, int stride_h, int stride_w, int pad_t,
                  int pad_l, int pad_b, int pad_r)
{
    const int pads[4] = {pad_t, pad_l, pad_b, pad_r};
    return windowed_ex(m, NN_OP_AVGPOOL, in, kh, kw, stride_h, stride_w, pads, "avgpool");
}

int nn_gap(nn_model *m, int in)
{
    int id = unary(m, NN_OP_GAP, in, "gap");
    if (id >= 0) {
        nn_node *nd = &m->nodes[id];
        nd->h = nd->w = 1;
        set_len(nd);
    }
    return id;
}

int nn_dropout(nn_model *m, int in, float rate)
{
    int rc = check_in(m, in, "dropout");
    if (rc)
        return rc;
    if (!(rate >= 0.0f && rate < 1.0f))
        return fail(m, PT_EUSAGE, "dropout: rate %g outside [0, 1)", (double)rate);
    int id = unary(m, NN_OP_DROPOUT, in, "dropout");
    if (id >= 0)
        m->nodes[id].rate = rate;
    return id;
}

int nn_dense(nn_model *m, int in, int cout)
{
    int rc = check_in(m, in, "dense");
    if (rc)
        return rc;
    if (cout < 1)
        return fail(m, PT_EUSAGE, "dense: %d outputs", cout);
    size_t cin = m->nodes[in].len;
    int id = push(m, NN_OP_DENSE, in, -1);
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    nd->h = nd->w = 1;
    nd->c = cout;
    set_len(nd);
    nd->w_len = cin * (size_t)cout;
    nd->b_len = (size_t)cout;
    return id;
}

int nn_add(nn_model *m, int a, int b)
{
    int rc = check_in(m, a, "add");
    if (!rc)
        rc = check_in(m, b, "add");
    if (rc)
        return rc;
    const nn_node *na = &m->nodes[a], *nb = &m->nodes[b];
    if (na->h != nb->h || na->w != nb->w || na->c != nb->c)
        return fail(m, PT_EUSAGE, "add: shapes %dx%dx%d (node %d) and %dx%dx%d (node %d) differ",
                    na->h, na->w, na->c, a, nb->h, nb->w, nb->c, b);
    int id = push(m, NN_OP_ADD, a, b);
    if (id >= 0)
        set_len(&m->nodes[id]);
    return id;
}

int nn_sigmoid(nn_model *m, int in)
{
    return unary(m, NN_OP_SIGMOID, in, "sigmoid");
}

int nn_mul(nn_model *m, int a, int b)
{
    int rc = check_in(m, a, "mul");
    if (!rc)
        rc = check_in(m, b, "mul");
    if (rc)
        return rc;
    const nn_node *na = &m->nodes[a], *nb = &m->nodes[b];
    const int same = na->h == nb->h && na->w == nb->w && na->c == nb->c;
    const int b_chan = nb->h == 1 && nb->w == 1 && nb->c == na->c;
    const int a_chan = na->h == 1 && na->w == 1 && na->c == nb->c;
    if (!same && !b_chan && !a_chan)
        return fail(m, PT_EUSAGE,
                    "mul: shapes %dx%dx%d (node %d) and %dx%dx%d (node %d) neither match nor "
                    "broadcast (one may be 1x1xC against HxWxC)",
                    na->h, na->w, na->c, a, nb->h, nb->w, nb->c, b);
    /* The full-size operand goes first: it fixes the output shape, and forward and
     * backward then need only one broadcast form. */
    int id = !same && a_chan ? push(m, NN_OP_MUL, b, a) : push(m, NN_OP_MUL, a, b);
    if (id >= 0)
        set_len(&m->nodes[id]);
    return id;
}

int nn_concat(nn_model *m, int a, int b)
{
    int rc = check_in(m, a, "concat");
    if (!rc)
        rc = check_in(m, b, "concat");
    if (rc)
        return rc;
    const nn_node *na = &m->nodes[a], *nb = &m->nodes[b];
    if (na->h != nb->h || na->w != nb->w)
        return fail(m, PT_EUSAGE,
                    "concat: spatial sizes %dx%d (node %d) and %dx%d (node %d) differ", na->h,
                    na->w, a, nb->h, nb->w, b);
    int cb = nb->c;
    int id = push(m, NN_OP_CONCAT, a, b);
    if (id >= 0) {
        m->nodes[id].c += cb;
        set_len(&m->nodes[id]);
    }
    return id;
}

int nn_clip(nn_model *m, int in, float lo, float hi)
{
    int rc = check_in(m, in, "clip");
    if (rc)
        return rc;
    /* Written so that a NaN bound fails too. */
    if (!(lo <= hi))
        return fail(m, PT_EUSAGE, "clip: bounds [%g, %g] are not an interval", (double)lo,
                    (double)hi);
    int id = unary(m, NN_OP_CLIP, in, "clip");
    if (id >= 0) {
        m->nodes[id].lo = lo;
        m->nodes[id].hi = hi;
    }
    return id;
}

int nn_model_set_bn_momentum(nn_model *m, float momentum)
{
    if (!(momentum >= 0.0f && momentum < 1.0f))
        return PT_EUSAGE;
    for (int i = 0; i < m->n_nodes; i++)
        if (m->nodes[i].op == NN_OP_BN)
            m->nodes[i].bn_momentum = momentum;
    return PT_OK;
}

void nn_model_set_bn_warm_start(nn_model *m, int on)
{
    m->bn_warm_start = on != 0;
}

void nn_model_set_init(nn_model *m, nn_init_kind kind)
{
    m->init = kind;
}
