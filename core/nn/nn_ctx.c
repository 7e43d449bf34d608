/* nn_ctx — a replica's context: allocation, forward and backward.
 *
 * Memory: every node that produces a value gets its own activation storage (training
 * keeps them all for backward). Gradients of activations are short-lived: the one of
 * node i is written by its first reader's backward and dead after node i's own
 * backward, so they share one arena, laid out once from those lifetimes (a first-fit
 * placement, largest first). In a chain that needs about two of the largest tensors
 * instead of one per node.
 */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "nn/nn_impl.h"

/* Float counts are rounded to 16 so every block starts 64-byte aligned. */
static size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

/* Which node's gradient storage a node uses (an activation fused into its BN shares). */
static int owner(const nn_model *m, int i)
{
    return m->nodes[i].alias >= 0 ? m->nodes[i].alias : i;
}

typedef struct span {
    int node;
    int t0, t1;      /* alive from backward step t1 down to t0 (node ids), inclusive */
    size_t size, off;
} span;

static int by_size_desc(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    return x->node - y->node;
}

/* Lays out the gradient arena; returns its size in floats (0 on allocation failure,
 * with *fail set). */
static size_t plan_dy(const nn_model *m, int max_batch, size_t *off, int *fail)
{
    span *sp = calloc((size_t)m->n_nodes, sizeof *sp);
    if (!sp) {
        *fail = 1;
        return 0;
    }
    int ns = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (!nd->live || nd->alias >= 0)
            continue;
        span *s = &sp[ns++];
        s->node = i;
        s->t0 = i;
        s->t1 = nd->last_use;
        s->size = round16(nd->len * (size_t)max_batch);
    }
    /* An activation fused into a BN extends the BN's gradient lifetime to its readers. */
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (!nd->live || nd->alias < 0)
            continue;
        for (int k = 0; k < ns; k++)
            if (sp[k].node == nd->alias && nd->last_use > sp[k].t1)
                sp[k].t1 = nd->last_use;
    }
    qsort(sp, (size_t)ns, sizeof *sp, by_size_desc);
    size_t total = 0;
    for (int k = 0; k < ns; k++) {
        /* Lowest offset that clears every placed span alive at the same time. */
        size_t at = 0;
        for (int moved = 1; moved;) {
            moved = 0;
            for (int j = 0; j < k; j++) {
                if (sp[j].t1 < sp[k].t0 || sp[k].t1 < sp[j].t0)
                    continue;
                if (at < sp[j].off + sp[j].size && sp[j].off < at + sp[k].size) {
                    at = sp[j].off + sp[j].size;
                    moved = 1;
                }
            }
        }
        sp[k].off = at;
        if (at + sp[k].size > total)
            total = at + sp[k].size;
    }
    for (int k = 0; k < ns; k++)
        off[sp[k].node] = sp[k].off;
    free(sp);
    return total;
}

static void *track(nn_ctx *c, size_t bytes)
{
    void *p = util_aligned_alloc(bytes);
    if (p)
        c->bytes += bytes;
    return p;
}

nn_ctx *nn_ctx_new(const nn_model *m, int max_batch, pt_err *e)
{
    if (!m || !m->finalized || max_batch < 1) {
        err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                "nn: a context needs a finalized model and max_batch >= 1");
        return NULL;
    }
    nn_ctx *c = calloc(1, sizeof *c);
    if (!c)
        goto oom;
    c->m = m;
    c->max_batch = max_batch;
    const size_t nn = (size_t)m->n_nodes, B = (size_t)max_batch;
    c->outp = calloc(nn, sizeof *c->outp);
    c->act = calloc(nn, sizeof *c->act);
    c->dy = calloc(nn, sizeof *c->dy);
    c->fresh = calloc(nn, 1);
    c->dy_done = calloc(nn, 1);
    c->drop_mask = calloc(nn, sizeof *c->drop_mask);
    c->t_fwd = calloc(nn, sizeof *c->t_fwd);
    c->t_bwd = calloc(nn, sizeof *c->t_bwd);
    size_t *off = calloc(nn, sizeof *off);
    if (!c->outp || !c->act || !c->dy || !c->fresh || !c->dy_done || !c->drop_mask ||
        !c->t_fwd || !c->t_bwd || !off) {
        free(off);
        goto oom;
    }

    /* Activations and dropout masks: one block each. */
    size_t n_act = 0, n_mask = 0, ws = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (!nd->live)
            continue;
        if (nd->op != NN_OP_INPUT && nd->alias < 0)
            n_act += round16(nd->len * B);
        if (nd->op == NN_OP_DROPOUT)
            n_mask += round16(nd->len * B);
        if (nd->op == NN_OP_CONV) {
            nn_conv_shape s;
            nn_conv_shape_of(m, nd, max_batch, &s);
            size_t k = nn_conv_ws_floats(&s);
            if (k > ws)
                ws = k;
        }
    }
    c->act_arena = track(c, (n_act ? n_act : 1) * sizeof(float));
    c->mask_arena = track(c, (n_mask ? n_mask : 1) * sizeof(float));
    c->ws_floats = ws;
    c->ws = track(c, (ws ? ws : 1) * sizeof(float));
    int fail = 0;
    size_t n_dy = plan_dy(m, max_batch, off, &fail);
    c->dy_arena = fail ? NULL : track(c, (n_dy ? n_dy : 1) * sizeof(float));
    c->grads = track(c, (m->n_params ? m->n_params : 1) * sizeof(float));
    size_t bnc = m->bn_channels ? m->bn_channels : 1;
    c->bn_mean = track(c, bnc * sizeof(float));
    c->bn_invstd = track(c, bnc * sizeof(float));
    c->rec_mean = track(c, bnc * sizeof(double));
    c->rec_var = track(c, bnc * sizeof(double));
    c->rec_w = track(c, (size_t)(m->n_bn ? m->n_bn : 1) * sizeof(double));
    c->fscratch = track(c, 4 * (size_t)m->max_c * sizeof(float));
    c->dscratch = track(c, 4 * (size_t)m->max_c * sizeof(double));
    if (!c->act_arena || !c->mask_arena || !c->ws || !c->dy_arena || !c->grads ||
        !c->bn_mean || !c->bn_invstd || !c->rec_mean || !c->rec_var || !c->rec_w ||
        !c->fscratch || !c->dscratch) {
        free(off);
        goto oom;
    }
    size_t a = 0, mk = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (!nd->live)
            continue;
        if (nd->op != NN_OP_INPUT && nd->alias < 0) {
            c->act[i] = c->act_arena + a;
            a += round16(nd->len * B);
        }
        if (nd->op == NN_OP_DROPOUT) {
            c->drop_mask[i] = c->mask_arena + mk;
            mk += round16(nd->len * B);
        }
    }
    for (int i = 0; i < m->n_nodes; i++)
        if (m->nodes[i].live)
            c->dy[i] = c->dy_arena + off[owner(m, i)];
    free(off);
    return c;
oom:
    nn_ctx_free(c);
    err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
            "nn: out of memory for a context of batch %d", max_batch);
    return NULL;
}

void nn_ctx_free(nn_ctx *c)
{
    if (!c)
        return;
    util_aligned_free(c->act_arena);
    util_aligned_free(c->mask_arena);
    util_aligned_free(c->ws);
    util_aligned_free(c->dy_arena);
    util_aligned_free(c->grads);
    util_aligned_free(c->bn_mean);
    util_aligned_free(c->bn_invstd);
    util_aligned_free(c->rec_mean);
    util_aligned_free(c->rec_var);
    util_aligned_free(c->rec_w);
    util_aligned_free(c->fscratch);
    util_aligned_free(c->dscratch);
    free(c->outp);
    free(c->act);
    free(c->dy);
    free(c->fresh);
    free(c->dy_done);
    free(c->drop_mask);
    free(c->t_fwd);
    free(c->t_bwd);
    free(c);
}

int nn_ctx_max_batch(const nn_ctx *c)
{
    return c->max_batch;
}

size_t nn_ctx_bytes(const nn_ctx *c)
{
    return c->bytes;
}

float *nn_grads(nn_ctx *c)
{
    return c->grads;
}

void nn_zero_grads(nn_ctx *c)
{
    memset(c->grads, 0, c->m->n_params * sizeof *c->grads);
}

const float *nn_ctx_output(const nn_ctx *c, int node)
{
    if (node < 0 || node >= c->m->n_nodes || c->n == 0)
        return NULL;
    return c->outp[node];
}

const float *nn_ctx_input_grad(const nn_ctx *c)
{
    if (!c->m->input_grad || !c->fresh[0])
        return NULL;
    return c->dy[0];
}

void nn_ctx_clear_bn_records(nn_ctx *c)
{
    const nn_model *m = c->m;
    memset(c->rec_mean, 0, m->bn_channels * sizeof *c->rec_mean);
    memset(c->rec_var, 0, m->bn_channels * sizeof *c->rec_var);
    memset(c->rec_w, 0, (size_t)m->n_bn * sizeof *c->rec_w);
}

void nn_ctx_on_backward_progress(nn_ctx *c, nn_backward_progress fn, void *arg)
{
    c->on_progress = fn;
    c->progress_arg = arg;
}

void nn_ctx_set_profile(nn_ctx *c, int on)
{
    c->profile = on != 0;
}

void nn_ctx_reset_profile(nn_ctx *c)
{
    memset(c->t_fwd, 0, (size_t)c->m->n_nodes * sizeof *c->t_fwd);
    memset(c->t_bwd, 0, (size_t)c->m->n_nodes * sizeof *c->t_bwd);
}

void nn_ctx_node_time(const nn_ctx *c, int node, double *fwd_s, double *bwd_s)
{
    int ok = node >= 0 && node < c->m->n_nodes;
    if (fwd_s)
        *fwd_s = ok ? c->t_fwd[node] : 0.0;
    if (bwd_s)
        *bwd_s = ok ? c->t_bwd[node] : 0.0;
}

/* ---- forward ---- */

static void forward_node(nn_ctx *c, int i, const float *input, int n, int training,
                         uint64_t seed, int64_t first)
{
    const nn_model *m = c->m;
    const nn_node *nd = &m->nodes[i];
    const float *x = nd->in[0] >= 0 ? c->outp[nd->in[0]] : NULL;
    const nn_node *src = nd->in[0] >= 0 ? &m->nodes[nd->in[0]] : NULL;
    const float *P = m->params + nd->p_off;
    float *y = c->act[i];
    const long rows = (long)n * nd->h * nd->w;
    c->outp[i] = y;
    switch (nd->op) {
    case NN_OP_INPUT:
        c->outp[i] = input;
        break;
    case NN_OP_AFFINE:
        nn_affine_fwd(rows, nd->c, x, nd->aff, nd->aff + nd->c, y);
        break;
    case NN_OP_CONV: {
        nn_conv_shape s;
        nn_conv_shape_of(m, nd, n, &s);
        nn_conv_fwd(&s, x, P, nd->has_bias ? P + nd->w_len : NULL, nd->fused_act, y, c->ws);
        break;
    }
    case NN_OP_BN:
        if (training && nd->trainable) {
            float *mean = c->bn_mean + nd->bn_coff, *is = c->bn_invstd + nd->bn_coff;
            float *var_u = c->fscratch + 2 * m->max_c;
            nn_bn_fwd_train(rows, nd->c, nd->bn_eps, x, P, P + nd->c, nd->fused_act, y, mean, is, var_u,
                            c->dscratch, c->fscratch);
            double *rm = c->rec_mean + nd->bn_coff, *rv = c->rec_var + nd->bn_coff;
            for (int j = 0; j < nd->c; j++) {
                rm[j] += (double)n * mean[j];
                rv[j] += (double)n * var_u[j];
            }
            c->rec_w[nd->bn_slot] += n;
        } else {
            const float *rb = m->bufs + nd->buf_off;
            nn_bn_fwd_infer(rows, nd->c, nd->bn_eps, x, P, P + nd->c, rb, rb + nd->c, nd->fused_act, y,
                            c->fscratch);
        }
        break;
    case NN_OP_RELU:
    case NN_OP_RELU6:
        if (nd->alias >= 0)
            c->outp[i] = c->outp[nd->alias];
        else
            nn_act_fwd((size_t)n * nd->len, nd->op == NN_OP_RELU ? NN_ACT_RELU : NN_ACT_RELU6, x, y);
        break;
    case NN_OP_MAXPOOL:
        nn_maxpool_fwd(n, src->h, src->w, nd->c, nd->kh, nd->stride, nd->pad_t, nd->pad_l, nd->h,
                       nd->w, x, y);
        break;
    case NN_OP_AVGPOOL:
        nn_avgpool_fwd(n, src->h, src->w, nd->c, nd->kh, nd->stride, nd->pad_t, nd->pad_l, nd->h,
                       nd->w, x, y);
        break;
    case NN_OP_GAP:
        nn_gap_fwd(n, src->h * src->w, nd->c, x, y);
        break;
    case NN_OP_DROPOUT:
        if (training && nd->rate > 0.0f) {
            nn_dropout_mask(n, nd->len, nd->rate, seed, first, i, c->drop_mask[i]);
            nn_mul_fwd((size_t)n * nd->len, x, c->drop_mask[i], y);
        } else {
            c->outp[i] = x;
        }
        break;
    case NN_OP_DENSE:
        nn_dense_fwd(n, (int)src->len, nd->c, x, P, P + nd->w_len, y);
        break;
    case NN_OP_ADD:
        nn_add_fwd((size_t)n * nd->len, x, c->outp[nd->in[1]], y);
        break;
    case NN_OP_SIGMOID:
        nn_sigmoid_fwd((size_t)n * nd->len, x, y);
        break;
    case NN_OP_MUL:
        /* The builder puts the full-size operand first; the second matches it or is
         * one value per channel. */
        if (m->nodes[nd->in[1]].len == nd->len)
            nn_mul_fwd((size_t)n * nd->len, x, c->outp[nd->in[1]], y);
        else
            nn_mul_chan_fwd(n, nd->h * nd->w, nd->c, x, c->outp[nd->in[1]], y);
        break;
    case NN_OP_CONCAT:
        nn_concat_fwd(rows, src->c, m->nodes[nd->in[1]].c, x, c->outp[nd->in[1]], y);
        break;
    case NN_OP_CLIP:
        nn_clip_fwd((size_t)n * nd->len, nd->lo, nd->hi, x, y);
        break;
    }
}

const float *nn_forward(nn_ctx *c, const float *input, int n, int training, uint64_t seed,
                        int64_t first_example)
{
    const nn_model *m = c->m;
    if (!m->finalized || !input || n < 1 || n > c->max_batch)
        return NULL;
    c->n = n;
    c->training = training != 0;
    c->backward_ok = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        if (!m->nodes[i].live)
            continue;
        double t0 = c->profile ? util_thread_cpu() : 0.0;
        forward_node(c, i, input, n, c->training, seed, first_example);
        if (c->profile)
            c->t_fwd[i] += util_thread_cpu() - t0;
    }
    c->backward_ok = c->training;
    return c->outp[m->out];
}

/* ---- backward ---- */

/* Where node i's backward puts the gradient for its k-th input: NULL when that input
 * needs none. *accum says whether a value is already there to add to. */
static float *grad_target(nn_ctx *c, int i, int k, int *accum)
{
    const nn_model *m = c->m;
    int in = m->nodes[i].in[k];
    if (in < 0 || !m->nodes[in].grad)
        return NULL;
    int o = owner(m, in);
    *accum = c->fresh[o];
    c->fresh[o] = 1;
    return c->dy[o];
}

/* Whether conv i's input gradient can go on through the activation fused into the
 * conv that produced its input, in the same pass (xa filled in, and that conv marked
 * so its own backward skips the step). Only when i is the activation's one reader:
 * then i writes that gradient whole (acc is 0), nothing adds to it later. */
static int through_producer(nn_ctx *c, int i, int acc, nn_dx_act *xa)
{
    const nn_model *m = c->m;
    const int a = m->nodes[i].in[0], p = owner(m, a);
    const nn_node *pn = &m->nodes[p];
    if (acc || p == a || pn->op != NN_OP_CONV || !pn->fused_act || m->nodes[a].consumers != 1)
        return 0;
    xa->act = pn->fused_act;
    xa->x = c->outp[a];
    xa->db = pn->trainable && pn->has_bias ? c->grads + pn->p_off + pn->w_len : NULL;
    c->dy_done[p] = 1;
    return 1;
}

static void backward_node(nn_ctx *c, int i, int n)
{
    const nn_model *m = c->m;
    const nn_node *nd = &m->nodes[i];
    const nn_node *src = nd->in[0] >= 0 ? &m->nodes[nd->in[0]] : NULL;
    const float *x = src ? c->outp[nd->in[0]] : NULL;
    const float *y = c->outp[i];
    const float *g = c->dy[i];
    const float *P = m->params + nd->p_off;
    float *G = nd->trainable ? c->grads + nd->p_off : NULL;
    const long rows = (long)n * nd->h * nd->w;
    const size_t len = (size_t)n * nd->len;
    int acc = 0, acc1 = 0;
    float *dx = grad_target(c, i, 0, &acc);
    switch (nd->op) {
    case NN_OP_INPUT:
        break;
    case NN_OP_AFFINE:
        if (dx)
            nn_affine_bwd(rows, nd->c, g, nd->aff, dx, acc);
        break;
    case NN_OP_CONV: {
        nn_conv_shape s;
        nn_conv_shape_of(m, nd, n, &s);
        nn_dx_act xa;
        const int through = dx && through_producer(c, i, acc, &xa);
        /* c->dy[i] is g's own storage (a conv is never an alias): the fused activation
         * may rewrite it in place. */
        if (dx || G)
            nn_conv_bwd(&s, x, P, y, c->dy[i], nd->fused_act, c->dy_done[i], dx, acc, G,
                        G && nd->has_bias ? G + nd->w_len : NULL, c->ws,
                        through ? &xa : NULL);
        break;
    }
    case NN_OP_BN:
        if (nd->trainable)
            nn_bn_bwd(rows, nd->c, x, y, g, P, c->bn_mean + nd->bn_coff,
                      c->bn_invstd + nd->bn_coff, nd->fused_act, dx, acc, G, G ? G + nd->c : NULL,
                      c->dscratch, c->fscratch);
        else if (dx)
            nn_bn_bwd_frozen(rows, nd->c, nd->bn_eps, y, g, P, m->bufs + nd->buf_off + nd->c, nd->fused_act,
                             dx, acc, c->fscratch);
        break;
    case NN_OP_RELU:
    case NN_OP_RELU6:
        if (dx)
            nn_act_bwd(len, nd->op == NN_OP_RELU ? NN_ACT_RELU : NN_ACT_RELU6, y, g, dx, acc);
        break;
    case NN_OP_MAXPOOL:
        if (dx)
            nn_maxpool_bwd(n, src->h, src->w, nd->c, nd->kh, nd->stride, nd->pad_t, nd->pad_l,
                           nd->h, nd->w, x, y, g, dx, acc);
        break;
    case NN_OP_AVGPOOL:
        if (dx)
            nn_avgpool_bwd(n, src->h, src->w, nd->c, nd->kh, nd->stride, nd->pad_t, nd->pad_l,
                           nd->h, nd->w, g, dx, acc);
        break;
    case NN_OP_GAP:
        if (dx)
            nn_gap_bwd(n, src->h * src->w, nd->c, g, dx, acc);
        break;
    case NN_OP_DROPOUT:
        if (dx) {
            if (nd->rate > 0.0f)
                nn_mul_bwd(len, g, c->drop_mask[i], dx, acc);
            else
                nn_copy_grad(len, g, dx, acc);
        }
        break;
    case NN_OP_DENSE:
        nn_dense_bwd(n, (int)src->len, nd->c, x, P, g, dx, acc, G, G ? G + nd->w_len : NULL);
        break;
    case NN_OP_ADD: {
        if (dx)
            nn_copy_grad(len, g, dx, acc);
        float *dx1 = grad_target(c, i, 1, &acc1);
        if (dx1)
            nn_copy_grad(len, g, dx1, acc1);
        break;
    }
    case NN_OP_SIGMOID:
        if (dx)
            nn_sigmoid_bwd(len, y, g, dx, acc);
        break;
    case NN_OP_MUL: {
        /* dx is written in full before the second target is asked for: with a == b the
         * two targets are one buffer, and the second call then says to add. */
        const float *xb = c->outp[nd->in[1]];
        const int chan = m->nodes[nd->in[1]].len != nd->len;
        if (dx && chan)
            nn_mul_chan_bwd(n, nd->h * nd->w, nd->c, x, xb, g, dx, acc, NULL, 0);
        else if (dx)
            nn_mul_bwd(len, g, xb, dx, acc);
        float *dx1 = grad_target(c, i, 1, &acc1);
        if (dx1 && chan)
            nn_mul_chan_bwd(n, nd->h * nd->w, nd->c, x, xb, g, NULL, 0, dx1, acc1);
        else if (dx1)
            nn_mul_bwd(len, g, x, dx1, acc1);
        break;
    }
    case NN_OP_CONCAT: {
        float *dx1 = grad_target(c, i, 1, &acc1);
        nn_concat_bwd(rows, src->c, m->nodes[nd->in[1]].c, g, dx, acc, dx1, acc1);
        break;
    }
    case NN_OP_CLIP:
        if (dx)
            nn_clip_bwd(len, nd->lo, nd->hi, x, g, dx, acc);
        break;
    }
}

int nn_backward(nn_ctx *c, const float *dlogits)
{
    const nn_model *m = c->m;
    if (!c->backward_ok || !dlogits)
        return PT_EUSAGE;
    const int n = c->n, out = m->out;
    memset(c->fresh, 0, (size_t)m->n_nodes);
    memset(c->dy_done, 0, (size_t)m->n_nodes);
    const int o = owner(m, out);
    memcpy(c->dy[o], dlogits, (size_t)n * m->nodes[out].len * sizeof *dlogits);
    c->fresh[o] = 1;
    size_t told = m->n_params;
    for (int i = out; i >= 0; i--) {
        const nn_node *nd = &m->nodes[i];
        /* A fused activation's gradient already sits in its BN's storage. */
        if (nd->live && nd->grad && nd->alias < 0 && c->fresh[i]) {
            double t0 = c->profile ? util_thread_cpu() : 0.0;
            backward_node(c, i, n);
            if (c->profile)
                c->t_bwd[i] += util_thread_cpu() - t0;
        }
        /* Node i wrote its own parameters' gradients and perhaps its producer's bias
         * (a fused activation, through_producer): both lie at or before its p_off,
         * and the live nodes still to come lie before it (a dead node has no
         * parameters and no p_off). */
        if (c->on_progress && nd->live && nd->p_off < told) {
            told = nd->p_off;
            c->on_progress(c->progress_arg, told);
        }
    }
    if (c->on_progress && told > 0)
        c->on_progress(c->progress_arg, 0);
    return PT_OK;
}
