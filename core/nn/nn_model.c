/* nn_model — the graph builder, parameter layout, initialisation, freezing, FLOP
 * counts, the text summary and the BN running-statistics update. */
#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/util.h"
#include "nn/nn_impl.h"

void nn_init(void)
{
    openblas_set_num_threads(1);
}

const char *nn_blas_corename(void)
{
    return openblas_get_corename();
}

const char *nn_op_name(nn_op op)
{
    switch (op) {
    case NN_OP_INPUT: return "input";
    case NN_OP_AFFINE: return "affine";
    case NN_OP_CONV: return "conv";
    case NN_OP_BN: return "batchnorm";
    case NN_OP_RELU: return "relu";
    case NN_OP_RELU6: return "relu6";
    case NN_OP_MAXPOOL: return "maxpool";
    case NN_OP_AVGPOOL: return "avgpool";
    case NN_OP_GAP: return "gap";
    case NN_OP_DROPOUT: return "dropout";
    case NN_OP_DENSE: return "dense";
    case NN_OP_ADD: return "add";
    }
    return "?";
}

/* ---- builder ---- */

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

void nn_model_set_conv_init(nn_model *m, nn_init_kind kind)
{
    m->conv_init = kind;
}

/* ---- finalize ---- */

/* grad: backward must run at the node (its parameters train, or something it reads
 * needs a gradient). Nodes come in topological order, so one forward sweep does it. */
static void update_grad_flags(nn_model *m)
{
    for (int i = 0; i < m->n_nodes; i++) {
        nn_node *nd = &m->nodes[i];
        int g = 0;
        if (nd->live) {
            g = (nd->trainable && nd->w_len + nd->b_len > 0) ||
                (nd->op == NN_OP_INPUT && m->input_grad);
            for (int k = 0; k < 2; k++)
                if (nd->in[k] >= 0 && m->nodes[nd->in[k]].grad)
                    g = 1;
        }
        nd->grad = g;
    }
}

static void update_mask(nn_model *m)
{
    if (!m->mask)
        return;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        size_t k = nd->w_len + nd->b_len;
        if (nd->live && k)
            memset(m->mask + nd->p_off, nd->trainable ? 1 : 0, k);
    }
}

int nn_model_finalize(nn_model *m, int out, pt_err *e)
{
    if (!m)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "nn: no model");
    if (m->err)
        return err_set(e, m->err, NULL, PT_NO_RECORD, PT_NO_OFFSET, "nn: %s", m->msg);
    if (m->finalized)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "nn: already finalized");
    if (out < 0 || out >= m->n_nodes)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "nn: no output node %d",
                       out);
    m->out = out;
    for (int i = 0; i < m->n_nodes; i++) {
        nn_node *nd = &m->nodes[i];
        nd->live = i == out;
        nd->consumers = 0;
        nd->last_use = i;
    }
    for (int i = out; i >= 0; i--) {
        nn_node *nd = &m->nodes[i];
        if (!nd->live)
            continue;
        for (int k = 0; k < 2; k++)
            if (nd->in[k] >= 0) {
                nn_node *src = &m->nodes[nd->in[k]];
                src->live = 1;
                src->consumers++;
                if (i > src->last_use)
                    src->last_use = i;
            }
    }
    if (m->nodes[0].op != NN_OP_INPUT || !m->nodes[0].live)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "nn: the output does not depend on an input node added first");

    /* A BN whose only reader is a ReLU/ReLU6 applies it itself: the BN's output is
     * never stored un-activated and the activation node shares the BN's buffers. */
    for (int i = 0; i < m->n_nodes; i++) {
        nn_node *nd = &m->nodes[i];
        if (!nd->live || (nd->op != NN_OP_RELU && nd->op != NN_OP_RELU6))
            continue;
        nn_node *bn = &m->nodes[nd->in[0]];
        if (bn->op == NN_OP_BN && bn->consumers == 1 && nd->in[0] != out) {
            bn->fused_act = nd->op;
            nd->alias = nd->in[0];
        }
    }

    size_t np = 0, nb = 0, bnc = 0;
    int slot = 0, max_c = 1;
    for (int i = 0; i < m->n_nodes; i++) {
        nn_node *nd = &m->nodes[i];
        if (nd->c > max_c)
            max_c = nd->c;
        if (!nd->live) {
            nd->w_len = nd->b_len = nd->buf_len = 0;
            continue;
        }
        nd->p_off = np;
        np += nd->w_len + nd->b_len;
        nd->buf_off = nb;
        nb += nd->buf_len;
        if (nd->op == NN_OP_BN) {
            nd->bn_slot = slot++;
            nd->bn_coff = bnc;
            bnc += (size_t)nd->c;
        }
    }
    m->n_params = np;
    m->n_bufs = nb;
    m->n_bn = slot;
    m->bn_channels = bnc;
    m->max_c = max_c;
    m->params = util_aligned_alloc((np ? np : 1) * sizeof(float));
    m->bufs = util_aligned_alloc((nb ? nb : 1) * sizeof(float));
    m->mask = malloc(np ? np : 1);
    if (!m->params || !m->bufs || !m->mask)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "nn: out of memory for %zu parameters", np);
    m->finalized = 1;
    update_mask(m);
    update_grad_flags(m);
    nn_model_init_params(m, 0);
    return PT_OK;
}

/* ---- parameters ---- */

float *nn_params(nn_model *m)
{
    return m->params;
}

const float *nn_params_const(const nn_model *m)
{
    return m->params;
}

size_t nn_param_count(const nn_model *m)
{
    return m->n_params;
}

float *nn_buffers(nn_model *m)
{
    return m->bufs;
}

size_t nn_buffer_count(const nn_model *m)
{
    return m->n_bufs;
}

/* Keras he_normal: normal truncated at two standard deviations, with the standard
 * deviation corrected so the truncated distribution has the intended one. */
static float trunc_normal(rng *r, double std)
{
    for (;;) {
        double z = rng_normal(r);
        if (z >= -2.0 && z <= 2.0)
            return (float)(z * std / 0.87962566103423978);
    }
}

void nn_model_init_params(nn_model *m, uint64_t seed)
{
    if (!m->finalized)
        return;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (!nd->live)
            continue;
        float *p = m->params + nd->p_off;
        rng r;
        rng_derive(&r, seed, (uint64_t)i, 0x6e6e);
        if (nd->op == NN_OP_CONV) {
            double fan_in = (double)nd->w_len / (double)nd->c;
            for (size_t j = 0; j < nd->w_len; j++)
                p[j] = m->conv_init == NN_INIT_HE_UNIFORM
                           ? rng_uniform(&r, -1.0f, 1.0f) * (float)sqrt(6.0 / fan_in)
                           : trunc_normal(&r, sqrt(2.0 / fan_in));
        } else if (nd->op == NN_OP_DENSE) {
            double fan_in = (double)nd->w_len / (double)nd->c;
            float lim = (float)sqrt(6.0 / (fan_in + (double)nd->c));
            for (size_t j = 0; j < nd->w_len; j++)
                p[j] = rng_uniform(&r, -lim, lim);
        } else if (nd->op == NN_OP_BN) {
            for (size_t j = 0; j < nd->w_len; j++)
                p[j] = 1.0f;
            float *b = m->bufs + nd->buf_off;
            for (int j = 0; j < nd->c; j++) {
                b[j] = 0.0f;
                b[nd->c + j] = 1.0f;
            }
        }
        for (size_t j = 0; j < nd->b_len; j++)
            p[nd->w_len + j] = 0.0f;
    }
}

int nn_model_freeze_backbone(nn_model *m)
{
    int head = -1;
    for (int i = 0; i < m->n_nodes; i++)
        if (m->nodes[i].live && m->nodes[i].op == NN_OP_DENSE)
            head = i;
    if (head < 0)
        return PT_EUSAGE;
    for (int i = 0; i < m->n_nodes; i++)
        m->nodes[i].trainable = i == head;
    update_mask(m);
    update_grad_flags(m);
    return PT_OK;
}

void nn_model_unfreeze(nn_model *m)
{
    for (int i = 0; i < m->n_nodes; i++)
        m->nodes[i].trainable = 1;
    update_mask(m);
    update_grad_flags(m);
}

void nn_model_set_input_grad(nn_model *m, int on)
{
    m->input_grad = on != 0;
    if (m->finalized)
        update_grad_flags(m);
}

int nn_param_trainable(const nn_model *m, size_t i)
{
    return i < m->n_params && m->mask[i];
}

const uint8_t *nn_param_mask(const nn_model *m)
{
    return m->mask;
}

size_t nn_trainable_count(const nn_model *m)
{
    size_t k = 0;
    for (size_t i = 0; i < m->n_params; i++)
        k += m->mask[i];
    return k;
}

/* ---- description ---- */

int nn_node_count(const nn_model *m)
{
    return m->n_nodes;
}

int nn_output_node(const nn_model *m)
{
    return m->out;
}

int nn_node_get(const nn_model *m, int node, nn_node_info *out)
{
    if (node < 0 || node >= m->n_nodes)
        return PT_EUSAGE;
    const nn_node *nd = &m->nodes[node];
    memset(out, 0, sizeof *out);
    out->op = nd->op;
    out->in[0] = nd->in[0];
    out->in[1] = nd->in[1];
    out->h = nd->h;
    out->w = nd->w;
    out->c = nd->c;
    out->kh = nd->kh;
    out->kw = nd->kw;
    out->stride = nd->stride;
    out->groups = nd->groups;
    out->has_bias = nd->has_bias;
    out->rate = nd->rate;
    out->param_offset = nd->p_off;
    out->weight_count = nd->w_len;
    out->bias_count = nd->b_len;
    out->buffer_offset = nd->buf_off;
    out->buffer_count = nd->buf_len;
    out->trainable = nd->trainable && nd->w_len + nd->b_len > 0;
    return PT_OK;
}

int nn_model_classes(const nn_model *m)
{
    return m->out >= 0 ? (int)m->nodes[m->out].len : 0;
}

void nn_model_input_shape(const nn_model *m, int *h, int *w, int *c)
{
    *h = m->h;
    *w = m->w;
    *c = m->c;
}

double nn_node_flops(const nn_model *m, int node, int n, int with_backward)
{
    if (node < 0 || node >= m->n_nodes)
        return 0.0;
    const nn_node *nd = &m->nodes[node];
    if (!nd->live || (nd->op != NN_OP_CONV && nd->op != NN_OP_DENSE))
        return 0.0;
    /* Multiply-adds per example: output elements times weights per output. */
    double macs = (double)nd->len * (double)nd->w_len / (double)nd->c * (double)n;
    double f = 2.0 * macs;
    if (with_backward && nd->grad) {
        if (nd->trainable)
            f += 2.0 * macs;
        if (m->nodes[nd->in[0]].grad)
            f += 2.0 * macs;
    }
    return f;
}

double nn_flops(const nn_model *m, int n, int with_backward)
{
    double f = 0.0;
    for (int i = 0; i < m->n_nodes; i++)
        f += nn_node_flops(m, i, n, with_backward);
    return f;
}

/* snprintf onto the end of buf, counting what the whole text needs. */
static void put(char *buf, size_t size, size_t *len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void put(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *at = *len < size ? buf + *len : NULL;
    int k = vsnprintf(at, at ? size - *len : 0, fmt, ap);
    va_end(ap);
    if (k > 0)
        *len += (size_t)k;
}

size_t nn_model_summary(const nn_model *m, char *buf, size_t size)
{
    size_t len = 0;
    if (buf && size)
        buf[0] = '\0';
    else
        buf = NULL, size = 0;
    put(buf, size, &len, "%4s  %-14s %-9s %-14s %10s %11s\n", "id", "layer", "inputs", "output",
        "params", "MFLOP/img");
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (!nd->live)
            continue;
        char name[32], ins[24], shape[32];
        if (nd->op == NN_OP_CONV)
            snprintf(name, sizeof name, "%s%dx%d/%d",
                     nd->groups > 1 && nd->groups == nd->c && nd->groups == m->nodes[nd->in[0]].c
                         ? "dwconv "
                         : "conv ",
                     nd->kh, nd->kw,
                     nd->stride);
        else if (nd->op == NN_OP_MAXPOOL || nd->op == NN_OP_AVGPOOL)
            snprintf(name, sizeof name, "%s %d/%d", nd->op == NN_OP_MAXPOOL ? "maxpool" : "avgpool",
                     nd->kh, nd->stride);
        else if (nd->op == NN_OP_DROPOUT)
            snprintf(name, sizeof name, "dropout %.2f", (double)nd->rate);
        else
            snprintf(name, sizeof name, "%s%s", nn_op_name(nd->op), nd->alias >= 0 ? "*" : "");
        if (nd->in[1] >= 0)
            snprintf(ins, sizeof ins, "%d,%d", nd->in[0], nd->in[1]);
        else if (nd->in[0] >= 0)
            snprintf(ins, sizeof ins, "%d", nd->in[0]);
        else
            ins[0] = '\0';
        snprintf(shape, sizeof shape, "%dx%dx%d", nd->h, nd->w, nd->c);
        put(buf, size, &len, "%4d  %-14s %-9s %-14s %10zu %11.2f\n", i, name, ins, shape,
            nd->w_len + nd->b_len, nn_node_flops(m, i, 1, 0) * 1e-6);
    }
    put(buf, size, &len,
        "params %zu (trainable %zu), buffers %zu; MFLOP per image: forward %.1f, "
        "forward+backward %.1f\n",
        m->n_params, m->finalized ? nn_trainable_count(m) : 0, m->n_bufs, nn_flops(m, 1, 0) * 1e-6,
        nn_flops(m, 1, 1) * 1e-6);
    put(buf, size, &len, "(* = applied by the batchnorm before it)\n");
    return len;
}

/* ---- BN running statistics ---- */

void nn_model_update_bn(nn_model *m, nn_ctx *const *ctxs, int count)
{
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (!nd->live || nd->op != NN_OP_BN)
            continue;
        double w = 0.0;
        for (int k = 0; k < count; k++)
            w += ctxs[k]->rec_w[nd->bn_slot];
        if (w <= 0.0)
            continue;
        float *rm = m->bufs + nd->buf_off, *rv = rm + nd->c;
        for (int j = 0; j < nd->c; j++) {
            double sm = 0.0, sv = 0.0;
            for (int k = 0; k < count; k++) {
                sm += ctxs[k]->rec_mean[nd->bn_coff + (size_t)j];
                sv += ctxs[k]->rec_var[nd->bn_coff + (size_t)j];
            }
            const double mom = (double)NN_BN_MOMENTUM;
            rm[j] = (float)(mom * rm[j] + (1.0 - mom) * sm / w);
            rv[j] = (float)(mom * rv[j] + (1.0 - mom) * sv / w);
        }
    }
    for (int k = 0; k < count; k++)
        nn_ctx_clear_bn_records(ctxs[k]);
}
