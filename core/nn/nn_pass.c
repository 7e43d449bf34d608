/* nn_pass — a context's forward and backward passes: loops over the nodes that call
 * each kind's hooks (nn_layer.h), the replays of the outputs a training context does
 * not keep (see nn_ctx.c for which those are and where they live), and the per-node
 * profile. The context's memory plan and allocation are nn_ctx.c's. */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "nn/nn_layer.h"

/* ---- intra-op parallelism ---- */

typedef struct par_job {
    nn_par_fn fn;
    void *arg;
    long units, grain;
    int parts;
} par_job;

static void par_part(void *arg, int part)
{
    const par_job *j = arg;
    if (part >= j->parts)
        return;
    /* Equal slices in whole grains; the last part takes what is left over. */
    const long grains = (j->units + j->grain - 1) / j->grain;
    const long g0 = grains * part / j->parts, g1 = grains * (part + 1) / j->parts;
    const long u0 = g0 * j->grain, u1 = g1 * j->grain < j->units ? g1 * j->grain : j->units;
    if (u1 > u0)
        j->fn(j->arg, u0, u1, part);
}

void nn_par_units(const nn_ctx *c, long units, long min_units, long grain, nn_par_fn fn,
                  void *arg)
{
    nn_team *t = c->team;
    int parts = t && !c->training ? t->parts : 1;
    if (parts > (int)c->ws_parts)
        parts = (int)c->ws_parts;
    if (grain < 1)
        grain = 1;
    while (parts > 1 && units / parts < (min_units > grain ? min_units : grain))
        parts--;
    if (parts <= 1) {
        fn(arg, 0, units, 0);
        return;
    }
    par_job j = { fn, arg, units, grain, parts };
    t->run(t, par_part, &j);
}

/* ---- forward ---- */

static void forward_node(nn_ctx *c, int i, const float *input, int n, int training,
                         uint64_t seed, int64_t first)
{
    const nn_model *m = c->m;
    const nn_node *nd = &m->nodes[i];
    const int has_in = nd->in[0] >= 0;
    const nn_fwd f = {
        .c = c, .m = m, .nd = nd, .i = i, .n = n, .training = training, .seed = seed,
        .first = first, .input = input,
        .src = has_in ? &m->nodes[nd->in[0]] : NULL,
        .x = has_in ? c->outp[nd->in[0]] : NULL,
        .P = m->params + nd->p_off,
        .y = c->act[i],
        .rows = (long)n * nd->h * nd->w,
    };
    c->outp[i] = f.y;
    nn_layers[nd->op]->forward(&f);
}

/* eval: nn_forward_eval_grad's pass (the layers see an inference forward, the
 * context keeps what a backward needs). */
static const float *forward(nn_ctx *c, const float *input, int n, int training, int eval,
                            uint64_t seed, int64_t first_example)
{
    const nn_model *m = c->m;
    if (!m->finalized || !input || n < 1 || n > c->max_batch || (training && c->infer))
        return NULL;
    c->n = n;
    c->training = training != 0;
    c->eval_grad = eval;
    c->backward_ok = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        if (!m->nodes[i].live)
            continue;
        double t0 = c->profile ? util_thread_cpu() : 0.0;
        forward_node(c, i, input, n, c->training && !eval, seed, first_example);
        if (c->observe)
            c->observe(c->observe_arg, i, c->outp[i], (size_t)n * m->nodes[i].len);
        if (c->profile)
            c->t_fwd[i] += util_thread_cpu() - t0;
    }
    c->backward_ok = c->training;
    return c->outp[m->out];
}

const float *nn_forward(nn_ctx *c, const float *input, int n, int training, uint64_t seed,
                        int64_t first_example)
{
    return forward(c, input, n, training, 0, seed, first_example);
}

const float *nn_forward_eval_grad(nn_ctx *c, const float *input, int n)
{
    return forward(c, input, n, 1, 1, 0, 0);
}

void nn_ctx_on_node(nn_ctx *c, nn_node_observer fn, void *arg)
{
    c->observe = fn;
    c->observe_arg = arg;
}

void nn_ctx_on_node_grad(nn_ctx *c, nn_node_observer fn, void *arg)
{
    c->observe_grad = fn;
    c->observe_grad_arg = arg;
}

/* ---- backward ---- */

float *nn_grad_target(nn_ctx *c, int i, int k, int *accum)
{
    const nn_model *m = c->m;
    int in = m->nodes[i].in[k];
    if (in < 0 || !m->nodes[in].grad)
        return NULL;
    int o = nn_owner(m, in);
    *accum = c->fresh[o];
    c->fresh[o] = 1;
    return c->dy[o];
}

/* Node i's first input as an nn_xform when the node producing it leaves it to its
 * readers (NN_READERS): t filled in and returned; else NULL. */
static const nn_xform *input_xform(const nn_ctx *c, int i, nn_xform *t)
{
    const nn_model *m = c->m;
    const int in = m->nodes[i].in[0];
    if (in < 0 || c->replayed[nn_owner(m, in)] != NN_READERS)
        return NULL;
    const nn_node *p = &m->nodes[nn_owner(m, in)];
    nn_layers[p->op]->as_xform(c, p, t);
    t->x = c->outp[p->in[0]];
    return t;
}

static void backward_node(nn_ctx *c, int i, int n)
{
    const nn_model *m = c->m;
    const nn_node *nd = &m->nodes[i];
    const int has_in = nd->in[0] >= 0;
    nn_bwd b = {
        .c = c, .m = m, .nd = nd, .i = i, .n = n,
        .src = has_in ? &m->nodes[nd->in[0]] : NULL,
        .x = has_in ? c->outp[nd->in[0]] : NULL,
        .y = c->outp[i],
        .dy = c->dy[i],
        .P = m->params + nd->p_off,
        .G = nd->trainable ? c->grads + nd->p_off : NULL,
        .rows = (long)n * nd->h * nd->w,
        .len = (size_t)n * nd->len,
    };
    nn_xform t;
    b.xf = input_xform(c, i, &t);
    if (b.xf)
        b.x = NULL;
    b.dx = nn_grad_target(c, i, 0, &b.acc);
    nn_layers[nd->op]->backward(&b);
}

/* Whether replayed node d's output is read in this backward: by its own backward or a
 * reader's (one where backward runs), or by a replayed reader's replay. need[] holds
 * the answers for the nodes after d. */
static int replay_needed(const nn_ctx *c, const uint8_t *need, int d)
{
    const nn_model *m = c->m;
    if (m->nodes[d].grad && nn_reads_own_output(&m->nodes[d]))
        return 1;
    int a = nn_alias_of(m, d);
    for (int j = d + 1; j <= c->replay_at[d]; j++)
        if (nn_node_reads(m, j, d, a) && nn_uses_input(c->replayed, m, j) &&
            (m->nodes[j].grad || need[j]))
            return 1;
    return 0;
}

/* Recomputes replayed node d's output into its backward storage and points its
 * readers there (c->outp of it and of its fused activation). */
static void replay_node(nn_ctx *c, int d, int n)
{
    const nn_model *m = c->m;
    const nn_node *nd = &m->nodes[d];
    nn_xform t;
    const nn_xform *xf = input_xform(c, d, &t);
    const nn_fwd f = {
        .c = c, .m = m, .nd = nd, .i = d, .n = n, .training = 1,
        .src = &m->nodes[nd->in[0]], .x = xf ? NULL : c->outp[nd->in[0]],
        .P = m->params + nd->p_off, .y = c->ract[d], .rows = (long)n * nd->h * nd->w,
        .xf = xf,
    };
    nn_layers[nd->op]->replay(&f);
    c->outp[d] = c->ract[d];
    int a = nn_alias_of(m, d);
    if (a >= 0)
        c->outp[a] = c->ract[d];
}

/* Before backward step i: the replays due then and needed, in node order (a replayed
 * input of a replayed node comes first; a node that only its own backward reads is
 * due at its own step). */
static void replays_before(nn_ctx *c, int i, int n)
{
    for (int d = 0; d <= i; d++) {
        if (c->replay_at[d] != i || !c->replay_need[d] || c->replayed[d] != NN_REPLAYED)
            continue;
        double t0 = c->profile ? util_thread_cpu() : 0.0;
        replay_node(c, d, n);
        if (c->profile)
            c->t_bwd[d] += util_thread_cpu() - t0;
    }
}

int nn_backward(nn_ctx *c, const float *dlogits)
{
    const nn_model *m = c->m;
    if (c->infer || !c->backward_ok || !dlogits)
        return PT_EUSAGE;
    const int n = c->n, out = m->out;
    memset(c->fresh, 0, (size_t)m->n_nodes);
    memset(c->dy_done, 0, (size_t)m->n_nodes);
    const int o = nn_owner(m, out);
    memcpy(c->dy[o], dlogits, (size_t)n * m->nodes[out].len * sizeof *dlogits);
    c->fresh[o] = 1;
    size_t told = m->n_params;
    for (int d = m->n_nodes - 1; d >= 0; d--) {
        const int r = c->replayed[d];
        c->replay_need[d] = (r == NN_REPLAYED || r == NN_READERS) &&
                            replay_needed(c, c->replay_need, d);
        /* What only the readers compute has no storage now: a stray read fails loudly. */
        if (r == NN_READERS) {
            const int a = nn_alias_of(m, d);
            c->outp[d] = NULL;
            if (a >= 0)
                c->outp[a] = NULL;
        }
    }
    for (int i = out; i >= 0; i--) {
        replays_before(c, i, n);
        const nn_node *nd = &m->nodes[i];
        /* Node i's output gradient is whole now: its readers (all after it) have run,
         * and a fused activation's sits in its BN's or conv's storage. */
        if (c->observe_grad && nd->live && nd->grad && c->fresh[nn_owner(m, i)])
            c->observe_grad(c->observe_grad_arg, i, c->dy[nn_owner(m, i)],
                            (size_t)n * nd->len);
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
