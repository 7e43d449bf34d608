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
    m->conv_init = NN_INIT_HE_NORMAL;
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

/* Output size and leading padding along one axis; 0 when the window does not fit. */
static int out_size(int in, int k, int stride, int pad, int *lead)
{
    if (pad == NN_PAD_SAME) {
        int o = (in + stride - 1) / stride;
        int total = (o - 1) * stride + k - in;
        *lead = total > 0 ? total / 2 : 0;
        return o;
    }
    if (pad == NN_PAD_VALID)
        pad = 0;
    *lead = pad;
    int span = in + 2 * pad - k;
    return span < 0 ? 0 : span / stride + 1;
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
    const nn_node *src = &m->nodes[in];
    int pt, pl;
    int oh = out_size(src->h, kh, stride, pad, &pt);
    int ow = out_size(src->w, kw, stride, pad, &pl);
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
    nd->pad_t = pt;
    nd->pad_l = pl;
    set_len(nd);
    return id;
}

int nn_conv2d(nn_model *m, int in, int cout, int kh, int kw, int stride, int pad, int groups,
              int bias)
{
    int rc = check_in(m, in, "conv2d");
    if (rc)
        return rc;
    int cin = m->nodes[in].c;
    if (cout < 1 || groups < 1 || cin % groups || cout % groups)
        return fail(m, PT_EUSAGE, "conv2d: %d groups do not divide %d -> %d channels", groups,
                    cin, cout);
    int id = windowed(m, NN_OP_CONV, in, kh, kw, stride, pad, "conv2d");
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

int nn_batchnorm(nn_model *m, int in)
{
    int rc = check_in(m, in, "batchnorm");
    if (rc)
        return rc;
    int id = push(m, NN_OP_BN, in, -1);
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    set_len(nd);
    nd->w_len = nd->b_len = (size_t)nd->c;
    nd->buf_len = 2 * (size_t)nd->c;
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

void nn_model_set_conv_init(nn_model *m, nn_init_kind kind)
{
    m->conv_init = kind;
}
