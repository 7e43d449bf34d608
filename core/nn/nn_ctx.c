/* nn_ctx — a replica's context: its memory plan and allocation, and what it holds
 * (profile, progress, gradients); the passes over it are nn_pass.c's.
 *
 * Memory: in a training context every node that produces a value gets its own
 * activation storage (training keeps them for backward), except the outputs that are
 * cheap to recompute (nn_layer.replayable: a BN's is one multiply-add per value from
 * the conv output it reads, which is kept anyway, and the per-channel a and b it keeps;
 * in-place activated batch-norm, Rota Bulo et al. 2018, is the same idea). Those
 * "replayed" outputs live in the gradient arena: in the forward from the node to its
 * last reader; in the backward recomputed (replay) just before the first backward step
 * that reads them, and alive down to the last that does; a BN's output whose every
 * reader can compute it as it loads it (nn_layer.takes_xform: depthwise and 1x1 convs)
 * is not even replayed: those readers get it as an nn_xform of the BN's input
 * (NN_READERS). An output no backward reads (a BN or conv only an add reads) is only
 * there in the forward ("transient"). The arena is laid out once for each phase and
 * is as large as the larger. Gradients of activations are short-lived: the one of
 * node i is written by its first reader's backward and dead after node i's own
 * backward, so they share one arena, laid out once from those lifetimes (a first-fit
 * placement, largest first). In a chain that needs about two of the largest tensors
 * instead of one per node.
 *
 * An inference context (nn_ctx_new_infer) has no gradient arena, no gradient array and
 * no dropout masks, and lays its activations out the same way as the gradients: a
 * node's output is alive from the node to its last reader, and a value passed on
 * without a copy (a fused activation sharing its BN's or conv's storage, dropout in
 * inference) keeps its owner alive to the last reader of the one passing it on.
 */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "nn/nn_layer.h"

/* Float counts are rounded to 16 so every block starts 64-byte aligned. */
static size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
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

/* Places the ns spans (first fit, largest first): sets off[node] of each and returns
 * the arena's size in floats. Two spans alive at the same step (inclusive) never
 * overlap, so a node's output never shares memory with an input it reads. */
static size_t place_spans(span *sp, int ns, size_t *off)
{
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
    return total;
}

/* Lays out the gradient arena; returns its size in floats (0 on allocation failure,
 * with *fail set). */
static size_t plan_dy(const nn_model *m, const nn_ctx *c, int max_batch, size_t *off, int *fail)
{
    span *sp = calloc(2 * (size_t)m->n_nodes, sizeof *sp);
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
    /* A replayed output, from the step that recomputes it down to the last that reads
     * it (its own node's, or its lowest reader's). Its offset goes to off[n_nodes + i]. */
    for (int i = 0; i < m->n_nodes; i++)
        if (c->replayed[i] == NN_REPLAYED)
            sp[ns++] = (span){ .node = m->n_nodes + i, .t0 = c->replay_lo[i],
                               .t1 = c->replay_at[i],
                               .size = round16(m->nodes[i].len * (size_t)max_batch) };
    size_t total = place_spans(sp, ns, off);
    free(sp);
    return total;
}

/* The node whose storage holds node i's output in an inference forward: -1 for the
 * caller's input, the owner of its input for a pass-through (dropout is one in
 * inference), its BN's or conv's for a fused activation, else i itself. */
static int infer_root(const nn_model *m, const int *root, int i)
{
    const nn_node *nd = &m->nodes[i];
    if (nd->op == NN_OP_INPUT)
        return -1;
    if (nd->alias >= 0)
        return root[nd->alias];
    if (nd->op == NN_OP_DROPOUT)
        return root[nd->in[0]];
    return i;
}

/* Lays out an inference context's activations by lifetime: off[i] for every node
 * that owns storage; its size in floats (0 with *fail set on allocation failure). */
static size_t plan_act(const nn_model *m, int max_batch, size_t *off, int *fail)
{
    span *sp = calloc((size_t)m->n_nodes, sizeof *sp);
    int *root = calloc((size_t)m->n_nodes, sizeof *root), *slot = calloc((size_t)m->n_nodes,
                                                                          sizeof *slot);
    if (!sp || !root || !slot) {
        free(sp);
        free(root);
        free(slot);
        *fail = 1;
        return 0;
    }
    int ns = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        root[i] = -1;
        if (!nd->live)
            continue;
        root[i] = infer_root(m, root, i);
        if (root[i] == i) {
            slot[i] = ns;
            sp[ns] = (span){ .node = i, .t0 = i, .t1 = nd->last_use,
                             .size = round16(nd->len * (size_t)max_batch) };
            ns++;
        } else if (root[i] >= 0 && nd->last_use > sp[slot[root[i]]].t1) {
            sp[slot[root[i]]].t1 = nd->last_use;
        }
    }
    size_t total = place_spans(sp, ns, off);
    for (int i = 0; i < m->n_nodes; i++)
        if (m->nodes[i].live && root[i] != i)
            off[i] = (size_t)-1;
    free(sp);
    free(root);
    free(slot);
    return total;
}

/* The fused activation that shares node i's output (there is at most one), or -1. */
int nn_alias_of(const nn_model *m, int i)
{
    for (int j = i + 1; j < m->n_nodes; j++)
        if (m->nodes[j].live && m->nodes[j].alias == i)
            return j;
    return -1;
}

/* Whether live node j reads node i's output (directly, or through i's fused
 * activation a), not counting a itself. */
int nn_node_reads(const nn_model *m, int j, int i, int a)
{
    const nn_node *r = &m->nodes[j];
    if (!r->live || j == a)
        return 0;
    for (int k = 0; k < 2; k++)
        if (r->in[k] >= 0 && (r->in[k] == i || r->in[k] == a))
            return 1;
    return 0;
}

/* Whether node j's backward, or its replay, reads the value of its input (an input
 * node's value). */
int nn_uses_input(const uint8_t *rep, const nn_model *m, int j)
{
    return rep[j] == NN_REPLAYED || rep[j] == NN_READERS ||
           !(nn_layers[m->nodes[j].op]->flags & NN_LAYER_BWD_NO_INPUT);
}

int nn_reads_own_output(const nn_node *nd)
{
    const nn_layer *L = nn_layers[nd->op];
    return !L->reads_output || L->reads_output(nd);
}

/* Whether every reader of node i (or of its fused activation a) that reads the value
 * in a backward or a replay can take it as an nn_xform, as its first input only. */
static int readers_take_xform(const nn_model *m, const uint8_t *rep, int i, int a)
{
    for (int j = i + 1; j < m->n_nodes; j++) {
        const nn_node *r = &m->nodes[j];
        const nn_layer *L = nn_layers[r->op];
        if (!nn_node_reads(m, j, i, a) || !nn_uses_input(rep, m, j))
            continue;
        if (!L->takes_xform || !L->takes_xform(m, r) || r->in[1] == i || (a >= 0 && r->in[1] == a))
            return 0;
    }
    return 1;
}

static int recompute_on = 1;

int nn_set_recompute(int on)
{
    int was = recompute_on;
    recompute_on = on != 0;
    return was;
}

/* What a training context does with each output (rep[i], from the last node down):
 * NN_KEPT; NN_TRANSIENT when no backward reads it (an add's, a conv's read only by an
 * add); NN_REPLAYED when it is cheap to recompute (nn_layer.replayable), at[i] being
 * the backward step before which it is recomputed (its last reader's that reads it,
 * or for a replayed reader that reader's replay step) and lo[i] the last step that
 * reads it (its own when its backward reads its output, else its lowest such reader's).
 * NN_READERS instead of NN_REPLAYED when its readers can compute it themselves
 * (nn_layer.as_xform, takes_xform): planned as replayed, but never stored.
 * Always kept: the model's output, a value a dropout reads (an inactive one passes
 * its input on, so its readers would read the dropped storage), and a dropout's own
 * (small, after the pooling, and what tests of its masks inspect). */
static void plan_replay(const nn_model *m, int recompute, uint8_t *rep, int *at, int *lo)
{
    for (int i = m->n_nodes - 1; i >= 0; i--) {
        const nn_node *nd = &m->nodes[i];
        const nn_layer *L = nn_layers[nd->op];
        const int a = nd->live ? nn_alias_of(m, i) : -1;
        rep[i] = NN_KEPT;
        at[i] = lo[i] = i;
        if (!recompute || !nd->live || nd->alias >= 0 || nd->op == NN_OP_INPUT ||
            nd->op == NN_OP_DROPOUT || i == m->out || a == m->out)
            continue;
        int need = nn_reads_own_output(nd), hi = i, low = need ? i : m->n_nodes, ok = 1;
        for (int j = i + 1; j < m->n_nodes && ok; j++) {
            if (!nn_node_reads(m, j, i, a))
                continue;
            ok = m->nodes[j].op != NN_OP_DROPOUT;
            if (!nn_uses_input(rep, m, j))
                continue;
            need = 1;
            int t = rep[j] == NN_REPLAYED || rep[j] == NN_READERS ? at[j] : j;
            hi = t > hi ? t : hi;
            low = j < low ? j : low;
        }
        if (!ok)
            continue;
        if (!need) {
            rep[i] = NN_TRANSIENT;
        } else if (L->replay && L->replayable && L->replayable(m, nd)) {
            rep[i] = L->as_xform && readers_take_xform(m, rep, i, a) ? NN_READERS : NN_REPLAYED;
            at[i] = hi;
            lo[i] = low;
        }
    }
}

/* The forward's layout of the replayed outputs (each alive from its node to its last
 * reader) at off[i]; the size in floats. */
static size_t plan_fwd(const nn_model *m, const uint8_t *rep, int max_batch, size_t *off,
                       int *fail)
{
    span *sp = calloc((size_t)m->n_nodes, sizeof *sp);
    if (!sp) {
        *fail = 1;
        return 0;
    }
    int ns = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        if (!rep[i])
            continue;
        int a = nn_alias_of(m, i), t1 = m->nodes[i].last_use;
        if (a >= 0 && m->nodes[a].last_use > t1)
            t1 = m->nodes[a].last_use;
        sp[ns++] = (span){ .node = i, .t0 = i, .t1 = t1,
                           .size = round16(m->nodes[i].len * (size_t)max_batch) };
    }
    size_t total = place_spans(sp, ns, off);
    free(sp);
    return total;
}

/* Zeroed in chunks this large, asking c->stop between them. */
#define NN_TOUCH_CHUNK ((size_t)16 << 20)

static void *track(nn_ctx *c, size_t bytes)
{
    if (c->stopped)
        return NULL;
    int chunked = c->stop && bytes > NN_TOUCH_CHUNK;
    void *p = chunked ? util_aligned_alloc_raw(bytes) : util_aligned_alloc(bytes);
    if (!p)
        return NULL;
    for (size_t at = 0; chunked && at < bytes; at += NN_TOUCH_CHUNK) {
        if (c->stop(c->stop_ctx)) {
            c->stopped = 1;
            util_aligned_free(p);
            return NULL;
        }
        size_t k = bytes - at < NN_TOUCH_CHUNK ? bytes - at : NN_TOUCH_CHUNK;
        memset((char *)p + at, 0, k);
    }
    c->bytes += bytes;
    return p;
}

/* The per-node tables and the small per-layer arrays both kinds of context have. */
static int alloc_common(nn_ctx *c, size_t ws)
{
    const nn_model *m = c->m;
    const size_t nn = (size_t)m->n_nodes;
    c->outp = calloc(nn, sizeof *c->outp);
    c->act = calloc(nn, sizeof *c->act);
    c->dy = calloc(nn, sizeof *c->dy);
    c->fresh = calloc(nn, 1);
    c->dy_done = calloc(nn, 1);
    c->drop_mask = calloc(nn, sizeof *c->drop_mask);
    c->t_fwd = calloc(nn, sizeof *c->t_fwd);
    c->t_bwd = calloc(nn, sizeof *c->t_bwd);
    c->ws_floats = ws;
    c->ws_stride = (ws + 15) / 16 * 16;
    c->ws_parts = 1;
    c->ws = track(c, (ws ? c->ws_stride : 1) * sizeof(float));
    size_t bnc = m->bn_channels ? m->bn_channels : 1;
    c->bn_mean = track(c, bnc * sizeof(float));
    c->bn_invstd = track(c, bnc * sizeof(float));
    c->bn_a = track(c, bnc * sizeof(float));
    c->bn_b = track(c, bnc * sizeof(float));
    c->rec_mean = track(c, bnc * sizeof(double));
    c->rec_var = track(c, bnc * sizeof(double));
    c->rec_w = track(c, (size_t)(m->n_bn ? m->n_bn : 1) * sizeof(double));
    c->fscratch = track(c, 4 * (size_t)m->max_c * sizeof(float));
    c->dscratch = track(c, 4 * (size_t)m->max_c * sizeof(double));
    return c->outp && c->act && c->dy && c->fresh && c->dy_done && c->drop_mask && c->t_fwd &&
           c->t_bwd && c->ws && c->bn_mean && c->bn_invstd && c->bn_a && c->bn_b &&
           c->rec_mean && c->rec_var && c->rec_w && c->fscratch && c->dscratch;
}

/* Training's kept activations (one block per node, all alive at once), dropout masks,
 * the arena of gradients and replayed outputs, and the gradient array. off: 3 *
 * n_nodes scratch entries (the forward's layout, then the backward's). */
static int alloc_training(nn_ctx *c, size_t *off)
{
    const nn_model *m = c->m;
    const size_t B = (size_t)c->max_batch, nn = (size_t)m->n_nodes;
    c->replayed = calloc(nn, 1);
    c->replay_at = calloc(nn, sizeof *c->replay_at);
    c->replay_lo = calloc(nn, sizeof *c->replay_lo);
    c->ract = calloc(nn, sizeof *c->ract);
    c->replay_need = calloc(nn, 1);
    if (!c->replayed || !c->replay_at || !c->replay_lo || !c->ract || !c->replay_need)
        return 0;
    plan_replay(m, c->recompute, c->replayed, c->replay_at, c->replay_lo);
    size_t n_act = 0, n_mask = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (!nd->live)
            continue;
        if (nd->op != NN_OP_INPUT && nd->alias < 0 && c->replayed[i] == NN_KEPT)
            n_act += round16(nd->len * B);
        if (nn_layers[nd->op]->flags & NN_LAYER_MASK)
            n_mask += round16(nd->len * B);
    }
    c->act_arena = track(c, (n_act ? n_act : 1) * sizeof(float));
    c->mask_arena = track(c, (n_mask ? n_mask : 1) * sizeof(float));
    int fail = 0;
    size_t *off_f = off, *off_b = off + nn;
    size_t n_fwd = plan_fwd(m, c->replayed, c->max_batch, off_f, &fail);
    size_t n_dy = fail ? 0 : plan_dy(m, c, c->max_batch, off_b, &fail);
    if (n_fwd > n_dy)
        n_dy = n_fwd;
    c->shared_floats = n_dy ? n_dy : 1;
    c->mask_floats = n_mask ? n_mask : 1;
    c->dy_arena = fail ? NULL : track(c, (n_dy ? n_dy : 1) * sizeof(float));
    c->grads = track(c, (m->n_params ? m->n_params : 1) * sizeof(float));
    if (!c->act_arena || !c->mask_arena || !c->dy_arena || !c->grads)
        return 0;
    size_t a = 0, mk = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (!nd->live)
            continue;
        if (c->replayed[i] != NN_KEPT) {
            c->act[i] = c->dy_arena + off_f[i];
            if (c->replayed[i] == NN_REPLAYED)
                c->ract[i] = c->dy_arena + off_b[nn + (size_t)i];
        } else if (nd->op != NN_OP_INPUT && nd->alias < 0) {
            c->act[i] = c->act_arena + a;
            a += round16(nd->len * B);
        }
        if (nn_layers[nd->op]->flags & NN_LAYER_MASK) {
            c->drop_mask[i] = c->mask_arena + mk;
            mk += round16(nd->len * B);
        }
    }
    for (int i = 0; i < m->n_nodes; i++)
        if (m->nodes[i].live)
            c->dy[i] = c->dy_arena + off_b[nn_owner(m, i)];
    return 1;
}

/* An inference context's activations: one arena laid out by lifetime (plan_act). */
static int alloc_infer(nn_ctx *c, size_t *off)
{
    const nn_model *m = c->m;
    int fail = 0;
    size_t n_act = plan_act(m, c->max_batch, off, &fail);
    if (fail)
        return 0;
    c->shared_floats = n_act ? n_act : 1;
    c->act_arena = track(c, (n_act ? n_act : 1) * sizeof(float));
    if (!c->act_arena)
        return 0;
    for (int i = 0; i < m->n_nodes; i++)
        if (m->nodes[i].live && off[i] != (size_t)-1)
            c->act[i] = c->act_arena + off[i];
    return 1;
}

static nn_ctx *ctx_new(const nn_model *m, int max_batch, int infer, int recompute,
                       nn_stop_fn stop, void *stop_ctx, pt_err *e)
{
    if (!m || !m->finalized || max_batch < 1) {
        err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                "nn: a context needs a finalized model and max_batch >= 1");
        return NULL;
    }
    for (int i = 0; i < m->n_nodes && !infer; i++)
        if (m->nodes[i].live && (nn_layers[m->nodes[i].op]->flags & NN_LAYER_INFER_ONLY)) {
            err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                    "nn: node %d (%s) is for inference only (an int8 file's quantization): "
                    "a model with it cannot be trained; train from the float model",
                    i, nn_op_name(m->nodes[i].op));
            return NULL;
        }
    nn_ctx *c = calloc(1, sizeof *c);
    size_t *off = calloc(3 * (size_t)m->n_nodes, sizeof *off);
    if (!c || !off)
        goto oom;
    c->m = m;
    c->max_batch = max_batch;
    c->infer = infer;
    c->recompute = recompute;
    c->stop = stop;
    c->stop_ctx = stop_ctx;
    size_t ws = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        const nn_layer *L = nn_layers[nd->op];
        if (nd->live && L->ws_floats) {
            size_t k = L->ws_floats(m, nd, max_batch);
            if (k > ws)
                ws = k;
        }
    }
    if (!alloc_common(c, ws) || !(infer ? alloc_infer(c, off) : alloc_training(c, off)))
        goto oom;
    free(off);
    c->stop = NULL;
    return c;
oom:
    free(off);
    if (c && c->stopped) {
        nn_ctx_free(c);
        err_set(e, PT_ESTOPPED, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                "stopped while allocating a context of batch %d", max_batch);
        return NULL;
    }
    nn_ctx_free(c);
    err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
            "nn: out of memory for a context of batch %d", max_batch);
    return NULL;
}

nn_ctx *nn_ctx_new(const nn_model *m, int max_batch, pt_err *e)
{
    return ctx_new(m, max_batch, 0, recompute_on, NULL, NULL, e);
}

nn_ctx *nn_ctx_new_cancel(const nn_model *m, int max_batch, int recompute, nn_stop_fn stop,
                          void *stop_ctx, pt_err *e)
{
    return ctx_new(m, max_batch, 0, recompute != 0, stop, stop_ctx, e);
}

nn_ctx *nn_ctx_new_infer(const nn_model *m, int max_batch, pt_err *e)
{
    return ctx_new(m, max_batch, 1, 0, NULL, NULL, e);
}

int nn_ctx_set_precision(nn_ctx *c, nn_precision p, pt_err *e)
{
    if (p != NN_BF16) {
        c->bf16 = 0;
        return PT_OK;
    }
    if (!c->bws.p) {
        size_t bytes = 0;
        for (int i = 0; i < c->m->n_nodes; i++) {
            const nn_node *nd = &c->m->nodes[i];
            const nn_layer *L = nn_layers[nd->op];
            if (nd->live && L->bf16_bytes) {
                const size_t k = L->bf16_bytes(c->m, nd, c->max_batch);
                bytes = k > bytes ? k : bytes;
            }
        }
        c->bws.p = util_aligned_alloc(bytes ? bytes : 64);
        if (!c->bws.p)
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "nn: out of memory for the bf16 workspace (%zu bytes)", bytes);
        c->bws.bytes = bytes;
        c->bytes += bytes;
    }
    c->bf16 = 1;
    return PT_OK;
}

int nn_ctx_set_team(nn_ctx *c, nn_team *t, pt_err *e)
{
    const int parts = t && t->max_parts > 1 ? t->max_parts : 1;
    const size_t want = c->ws_stride * (size_t)parts, have = c->ws_stride * c->ws_parts;
    if (want > have && c->ws_floats > 0) {
        float *ws = util_aligned_alloc(want * sizeof *ws);
        if (!ws)
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "nn: out of memory for %d parts' workspace (%zu bytes)", parts,
                           want * sizeof *ws);
        util_aligned_free(c->ws);
        c->ws = ws;
        c->bytes += (want - have) * sizeof *ws;
        c->ws_parts = (size_t)parts;
    }
    c->team = t;
    return PT_OK;
}

int nn_ctx_pack_weights(nn_ctx *c, pt_err *e)
{
    const nn_model *m = c->m;
    if (!c->infer || c->wpk || !nn_gemm512_ok())
        return PT_OK;
    size_t total = 0, *at = calloc((size_t)m->n_nodes, sizeof *at);
    float **wpk = calloc((size_t)m->n_nodes, sizeof *wpk);
    if (!at || !wpk)
        goto oom;
    /* The convolutions whose forward runs nn_gemm512's products: no groups, the
     * product within nn_gemm_fwd_ok. */
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (!nd->live || nd->op != NN_OP_CONV)
            continue;
        nn_conv_shape s;
        nn_conv_shape_of(m, nd, 1, &s);
        if (nn_conv_is_depthwise(&s) || !nn_conv_fwd_cols_ok(&s))
            continue;
        at[i] = total + 1;
        total += (nn_gemm512_pack_floats(s.kh * s.kw * s.cin, s.cout) + 15) / 16 * 16;
    }
    c->wpk_arena = util_aligned_alloc((total ? total : 1) * sizeof(float));
    if (!c->wpk_arena)
        goto oom;
    for (int i = 0; i < m->n_nodes; i++) {
        if (!at[i])
            continue;
        nn_conv_shape s;
        nn_conv_shape_of(m, &m->nodes[i], 1, &s);
        wpk[i] = c->wpk_arena + (at[i] - 1);
        nn_gemm512_pack(s.kh * s.kw * s.cin, s.cout, m->params + m->nodes[i].p_off, s.cout,
                        wpk[i]);
    }
    c->bytes += total * sizeof(float);
    c->wpk = wpk;
    free(at);
    return PT_OK;
oom:
    free(at);
    free(wpk);
    return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                   "nn: out of memory for the packed weights (%zu bytes)", total * sizeof(float));
}

nn_precision nn_ctx_precision(const nn_ctx *c)
{
    return c->bf16 ? NN_BF16 : NN_FP32;
}

int nn_ctx_is_infer(const nn_ctx *c)
{
    return c->infer;
}

void nn_ctx_free(nn_ctx *c)
{
    if (!c)
        return;
    util_aligned_free(c->act_arena);
    util_aligned_free(c->mask_arena);
    util_aligned_free(c->ws);
    util_aligned_free(c->wpk_arena);
    free(c->wpk);
    util_aligned_free(c->bws.p);
    util_aligned_free(c->dy_arena);
    util_aligned_free(c->grads);
    util_aligned_free(c->bn_mean);
    util_aligned_free(c->bn_invstd);
    util_aligned_free(c->bn_a);
    util_aligned_free(c->bn_b);
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
    free(c->replayed);
    free(c->replay_at);
    free(c->replay_lo);
    free(c->ract);
    free(c->replay_need);
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

size_t nn_ctx_keep_all_bytes(const nn_model *m, int max_batch)
{
    size_t n = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        if (nd->live && nd->op != NN_OP_INPUT && nd->alias < 0)
            n += round16(nd->len * (size_t)max_batch);
    }
    return n * sizeof(float);
}

void nn_ctx_mem_get(const nn_ctx *c, nn_ctx_mem *out)
{
    const nn_model *m = c->m;
    memset(out, 0, sizeof *out);
    size_t used = 0;
    for (int i = 0; i < m->n_nodes && !c->infer; i++)
        if (c->act[i] && c->replayed[i] == NN_KEPT) {
            size_t b = round16(m->nodes[i].len * (size_t)c->max_batch) * sizeof(float);
            out->kept[m->nodes[i].op] += b;
            used += b;
        }
    out->masks = c->infer ? 0 : c->mask_floats * sizeof(float);
    out->shared = c->shared_floats * sizeof(float);
    out->params = c->infer ? 0 : (m->n_params ? m->n_params : 1) * sizeof(float);
    if (!c->infer && used == 0)
        used = sizeof(float);   /* the one float an empty activation arena holds */
    used += out->masks + out->shared + out->params;
    out->other = c->bytes > used ? c->bytes - used : 0;
}

float *nn_grads(nn_ctx *c)
{
    return c->grads;
}

void nn_zero_grads(nn_ctx *c)
{
    if (!c->grads)
        return;
    memset(c->grads, 0, c->m->n_params * sizeof *c->grads);
}

const float *nn_ctx_output(const nn_ctx *c, int node)
{
    if (node < 0 || node >= c->m->n_nodes || c->n == 0)
        return NULL;
    if (c->replayed && c->replayed[nn_owner(c->m, node)] != NN_KEPT)
        return NULL;
    return c->outp[node];
}

int nn_ctx_keep(const nn_ctx *c, int node)
{
    if (c->infer || node < 0 || node >= c->m->n_nodes)
        return NN_KEPT;
    return c->replayed[nn_owner(c->m, node)];
}

const float *nn_ctx_input_grad(const nn_ctx *c)
{
    if (c->infer || !c->m->input_grad || !c->fresh[0])
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

