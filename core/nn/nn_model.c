/* nn_model — finalizing a model (liveness, activation fusion, parameter layout),
 * initialisation, freezing, FLOP counts, the text summary and the BN running-statistics
 * update. What is particular to a kind (its initial values, multiply-adds, summary
 * text) comes from its table entry (nn_layer.h); the builder calls are in nn_build.c
 * and the layer files. */
#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/util.h"
#include "nn/nn_layer.h"

void nn_init(void)
{
    openblas_set_num_threads(1);
}

const char *nn_blas_corename(void)
{
    return openblas_get_corename();
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

    /* A BN or conv whose only reader is a ReLU/ReLU6 applies it itself: its output is
     * never stored un-activated (no pass of its own over memory, forward or backward)
     * and the activation node shares its buffers. */
    for (int i = 0; i < m->n_nodes; i++) {
        nn_node *nd = &m->nodes[i];
        const int act = nn_layers[nd->op]->act;
        if (!nd->live || act == NN_ACT_NONE)
            continue;
        nn_node *src = &m->nodes[nd->in[0]];
        if ((nn_layers[src->op]->flags & NN_LAYER_FUSES_ACT) && src->consumers == 1 &&
            nd->in[0] != out) {
            src->fused_act = act;
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

double nn_init_fan_in(const nn_node *nd)
{
    return (double)nd->w_len / (double)nd->c;
}

void nn_init_bias(const nn_model *m, const nn_node *nd, float *p, rng *r)
{
    /* PyTorch's bound 1 / sqrt(fan_in) is what kaiming_uniform_(a = sqrt(5)) gives
     * its weights; its biases share it. */
    const float torch_lim = (float)(1.0 / sqrt(nn_init_fan_in(nd)));
    const float bias_lim = m->init == NN_INIT_TORCH ? torch_lim : 0.0f;
    for (size_t j = 0; j < nd->b_len; j++)
        p[nd->w_len + j] = bias_lim > 0.0f ? rng_uniform(r, -bias_lim, bias_lim) : 0.0f;
}

void nn_model_init_params(nn_model *m, uint64_t seed)
{
    if (!m->finalized)
        return;
    m->bn_warm_start = 1;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        const nn_layer *L = nn_layers[nd->op];
        if (!nd->live || !L->init)
            continue;
        /* Each node's values depend only on (seed, node id). */
        rng r;
        rng_derive(&r, seed, (uint64_t)i, 0x6e6e);
        L->init(m, nd, m->params + nd->p_off, m->bufs + nd->buf_off, &r);
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

void nn_model_freeze_bn(nn_model *m)
{
    for (int i = 0; i < m->n_nodes; i++)
        if (m->nodes[i].op == NN_OP_BN)
            m->nodes[i].trainable = 0;
    update_mask(m);
    update_grad_flags(m);
}

void nn_model_set_input_grad(nn_model *m, int on)
{
    m->input_grad = on != 0;
    if (m->finalized)
        update_grad_flags(m);
}

int nn_model_input_grad(const nn_model *m)
{
    return m->input_grad;
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
    out->pad_t = nd->pad_t;
    out->pad_l = nd->pad_l;
    out->pad_b = nd->pad_b;
    out->pad_r = nd->pad_r;
    out->groups = nd->groups;
    out->has_bias = nd->has_bias;
    out->rate = nd->rate;
    out->lo = nd->lo;
    out->hi = nd->hi;
    out->q_scale = nd->q_scale;
    out->q_zp = nd->q_zp;
    out->q_lo = nd->q_lo;
    out->q_hi = nd->q_hi;
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
    const nn_layer *L = nn_layers[nd->op];
    if (!nd->live || !L->macs)
        return 0.0;
    double macs = L->macs(nd) * (double)n;
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
        const nn_layer *L = nn_layers[nd->op];
        if (L->describe)
            L->describe(m, nd, name, sizeof name);
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
    put(buf, size, &len, "(* = applied by the batchnorm or conv before it)\n");
    return len;
}

/* ---- BN running statistics ---- */

/* One momentum update of the running statistics from summed records: per BN layer
 * its examples w[slot], and per channel the example-weighted sums of the batch
 * means and unbiased variances. */
static void bn_apply(nn_model *m, const double *w, const double *mean, const double *var,
                     long long update)
{
    double warm = m->bn_warm_start && update > 0 ? (double)(update - 1) / (double)update : 1.0;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (!nd->live || nd->op != NN_OP_BN || w[nd->bn_slot] <= 0.0)
            continue;
        float *rm = m->bufs + nd->buf_off, *rv = rm + nd->c;
        const double *sm = mean + nd->bn_coff, *sv = var + nd->bn_coff, n = w[nd->bn_slot];
        const double mom = fmin((double)nd->bn_momentum, warm);
        for (int j = 0; j < nd->c; j++) {
            rm[j] = (float)(mom * rm[j] + (1.0 - mom) * sm[j] / n);
            rv[j] = (float)(mom * rv[j] + (1.0 - mom) * sv[j] / n);
        }
    }
}

/* ctxs[0]'s records += the others', in context order (the sums a sum from zero
 * would give); the others cleared. */
static void bn_fold(nn_ctx *const *ctxs, int count)
{
    const nn_model *m = ctxs[0]->m;
    nn_ctx *c0 = ctxs[0];
    for (int k = 1; k < count; k++) {
        for (size_t j = 0; j < m->bn_channels; j++) {
            c0->rec_mean[j] += ctxs[k]->rec_mean[j];
            c0->rec_var[j] += ctxs[k]->rec_var[j];
        }
        for (int j = 0; j < m->n_bn; j++)
            c0->rec_w[j] += ctxs[k]->rec_w[j];
        nn_ctx_clear_bn_records(ctxs[k]);
    }
}

void nn_model_update_bn(nn_model *m, nn_ctx *const *ctxs, int count, long long update)
{
    if (count < 1)
        return;
    bn_fold(ctxs, count);
    bn_apply(m, ctxs[0]->rec_w, ctxs[0]->rec_mean, ctxs[0]->rec_var, update);
    nn_ctx_clear_bn_records(ctxs[0]);
}

size_t nn_bn_record_count(const nn_model *m)
{
    return (size_t)m->n_bn + 2 * m->bn_channels;
}

void nn_bn_records_take(nn_ctx *const *ctxs, int count, double *out)
{
    const nn_model *m = ctxs[0]->m;
    bn_fold(ctxs, count);
    memcpy(out, ctxs[0]->rec_w, (size_t)m->n_bn * sizeof *out);
    memcpy(out + m->n_bn, ctxs[0]->rec_mean, m->bn_channels * sizeof *out);
    memcpy(out + m->n_bn + m->bn_channels, ctxs[0]->rec_var, m->bn_channels * sizeof *out);
    nn_ctx_clear_bn_records(ctxs[0]);
}

void nn_model_update_bn_records(nn_model *m, const double *rec, long long update)
{
    bn_apply(m, rec, rec + m->n_bn, rec + m->n_bn + m->bn_channels, update);
}
