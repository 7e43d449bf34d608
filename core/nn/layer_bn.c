/* layer_bn — NN_OP_BN: batch normalisation with an optional fused ReLU/ReLU6.
 * Parameters gamma[c] then beta[c]; buffers running mean[c] then running var[c].
 * Training normalises with the batch's statistics and records them in the context
 * (nn_model_update_bn folds them into the running ones); inference and a frozen BN use
 * the running statistics.
 *
 * Tensors are NHWC, so "rows" below are pixels (N*H*W of them) and the channel loop is
 * innermost and contiguous: that is the loop the compiler vectorises.
 */
#include <math.h>

#include "nn/nn_import_impl.h"
#include "nn/nn_layer.h"

/* ---- builder ---- */

int nn_batchnorm(nn_model *m, int in)
{
    return nn_batchnorm_ex(m, in, NN_BN_EPS, NN_BN_MOMENTUM);
}

int nn_batchnorm_ex(nn_model *m, int in, float eps, float momentum)
{
    int rc = nn_build_check_in(m, in, "batchnorm");
    if (rc)
        return rc;
    /* Written so that NaN fails too. */
    if (!(eps > 0.0f && eps < 1.0f) || !(momentum >= 0.0f && momentum < 1.0f))
        return nn_build_fail(m, PT_EUSAGE,
                             "batchnorm: epsilon %g must be in (0, 1) and momentum %g in [0, 1)",
                             (double)eps, (double)momentum);
    int id = nn_build_push(m, NN_OP_BN, in, -1);
    if (id < 0)
        return id;
    nn_node *nd = &m->nodes[id];
    nn_node_set_len(nd);
    nd->w_len = nd->b_len = (size_t)nd->c;
    nd->buf_len = 2 * (size_t)nd->c;
    nd->bn_eps = eps;
    nd->bn_momentum = momentum;
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

/* ---- kernels ---- */

/* Rows per block: about 16 KiB of floats, so the second look at a block hits L1. */
static long block_rows(int c)
{
    long b = 4096 / c;
    return b < 1 ? 1 : b;
}

/* The helpers below take restrict pointers so the compiler can vectorise their
 * channel loops without run-time overlap checks. */

static void col_sums(long nb, int c, const float *restrict x, float *restrict s)
{
    for (int j = 0; j < c; j++)
        s[j] = 0.0f;
    for (long r = 0; r < nb; r++)
        for (int j = 0; j < c; j++)
            s[j] += x[r * c + j];
}

static void col_sq_dev(long nb, int c, const float *restrict x, const float *restrict mu,
                       float *restrict q)
{
    for (int j = 0; j < c; j++)
        q[j] = 0.0f;
    for (long r = 0; r < nb; r++)
        for (int j = 0; j < c; j++) {
            float d = x[r * c + j] - mu[j];
            q[j] += d * d;
        }
}

/* Training: normalises with the batch statistics (returned in mean, invstd, and the
 * unbiased variance in var_u), then applies act (enum nn_act). */
static void nn_bn_fwd_train(long rows, int c, float eps, const float *x, const float *gamma,
                            const float *beta, int act, float *y, float *mean, float *invstd,
                            float *var_u, float *a, float *b, double *dscratch, float *fscratch)
{
    /* Per block: exact two-pass mean and sum of squared deviations in float (the block
     * is in L1 for the second pass), merged into double totals with Chan's formula.
     * One pass over memory, no E[x^2] - E[x]^2 cancellation. */
    double *mu = dscratch, *m2 = dscratch + c;
    float *bs = fscratch, *bq = fscratch + c;
    for (int j = 0; j < c; j++)
        mu[j] = m2[j] = 0.0;
    const long B = block_rows(c);
    long seen = 0;
    for (long r0 = 0; r0 < rows; r0 += B) {
        const long nb = rows - r0 < B ? rows - r0 : B;
        const float *xb = x + r0 * c;
        col_sums(nb, c, xb, bs);
        const float inv = 1.0f / (float)nb;
        for (int j = 0; j < c; j++)
            bs[j] *= inv;
        col_sq_dev(nb, c, xb, bs, bq);
        const double tot = (double)(seen + nb);
        for (int j = 0; j < c; j++) {
            double delta = (double)bs[j] - mu[j];
            mu[j] += delta * (double)nb / tot;
            m2[j] += (double)bq[j] + delta * delta * (double)seen * (double)nb / tot;
        }
        seen += nb;
    }
    for (int j = 0; j < c; j++) {
        double var = m2[j] / (double)rows;
        double is = 1.0 / sqrt(var + (double)eps);
        mean[j] = (float)mu[j];
        invstd[j] = (float)is;
        var_u[j] = (float)(rows > 1 ? m2[j] / (double)(rows - 1) : var);
        a[j] = (float)((double)gamma[j] * is);
        b[j] = (float)((double)beta[j] - mu[j] * (double)gamma[j] * is);
    }
    nn_scale_shift_act(rows, c, x, a, b, act, y);
}

static void nn_bn_fwd_infer(long rows, int c, float eps, const float *x, const float *gamma,
                            const float *beta, const float *rmean, const float *rvar, int act,
                            float *y, float *a, float *b)
{
    for (int j = 0; j < c; j++) {
        double is = 1.0 / sqrt((double)rvar[j] + (double)eps);
        a[j] = (float)((double)gamma[j] * is);
        b[j] = (float)((double)beta[j] - (double)rmean[j] * (double)gamma[j] * is);
    }
    nn_scale_shift_act(rows, c, x, a, b, act, y);
}

/* The activation's mask is taken from the pre-activation v = x * a + b, computed as
 * the forward computed it (nn_scale_shift_act), so the backward needs neither the output
 * nor a copy of it: v > 0 exactly where y > 0, and v < 6 where y < 6. */

/* Over nb rows: s1 += dz, s2 += dz * (x - mean), with dz = dy * act'(v). One loop
 * per activation with the mask written out as a select, so it vectorises: a scalar
 * branch on a ReLU mask mispredicts half the time. */
static void bn_bwd_sums(long nb, int c, int act, const float *restrict x,
                        const float *restrict a, const float *restrict b,
                        const float *restrict dy, const float *restrict mean,
                        float *restrict s1, float *restrict s2)
{
    for (int j = 0; j < c; j++)
        s1[j] = s2[j] = 0.0f;
    const size_t n = (size_t)nb * (size_t)c;
    for (size_t r = 0; r < n; r += (size_t)c) {
        const float *restrict xr = x + r, *restrict g = dy + r;
        if (act == NN_ACT_RELU) {
            for (int j = 0; j < c; j++) {
                float v = xr[j] * a[j] + b[j];
                float dz = g[j] * (v > 0.0f ? 1.0f : 0.0f);
                s1[j] += dz;
                s2[j] += dz * (xr[j] - mean[j]);
            }
        } else if (act == NN_ACT_RELU6) {
            for (int j = 0; j < c; j++) {
                float v = xr[j] * a[j] + b[j];
                float dz = g[j] * (v > 0.0f ? 1.0f : 0.0f) * (v < 6.0f ? 1.0f : 0.0f);
                s1[j] += dz;
                s2[j] += dz * (xr[j] - mean[j]);
            }
        } else {
            for (int j = 0; j < c; j++) {
                s1[j] += g[j];
                s2[j] += g[j] * (xr[j] - mean[j]);
            }
        }
    }
}

/* The activation's mask of pre-activation v, as a factor. */
static inline float act_mask(int act, float v)
{
    if (act == NN_ACT_RELU)
        return v > 0.0f ? 1.0f : 0.0f;
    return (v > 0.0f ? 1.0f : 0.0f) * (v < 6.0f ? 1.0f : 0.0f);
}

/* dx (=, or += when accum) p * dy * act'(v) + q * x + r, per channel, with v = x * a + b
 * (a, b unused without act). */
static void bn_bwd_dx(long rows, int c, int act, const float *restrict x,
                      const float *restrict a, const float *restrict b,
                      const float *restrict dy, const float *restrict p,
                      const float *restrict q, const float *restrict r, float *restrict dx,
                      int accum)
{
    const size_t n = (size_t)rows * (size_t)c;
    for (size_t o = 0; o < n; o += (size_t)c) {
        const float *restrict xr = x + o, *restrict g = dy + o;
        float *restrict d = dx + o;
        if (act != NN_ACT_NONE && !accum) {
            for (int j = 0; j < c; j++)
                d[j] = p[j] * g[j] * act_mask(act, xr[j] * a[j] + b[j]) + q[j] * xr[j] + r[j];
        } else if (act != NN_ACT_NONE) {
            for (int j = 0; j < c; j++)
                d[j] += p[j] * g[j] * act_mask(act, xr[j] * a[j] + b[j]) + q[j] * xr[j] + r[j];
        } else if (!accum) {
            for (int j = 0; j < c; j++)
                d[j] = p[j] * g[j] + q[j] * xr[j] + r[j];
        } else {
            for (int j = 0; j < c; j++)
                d[j] += p[j] * g[j] + q[j] * xr[j] + r[j];
        }
    }
}

/* dgamma/dbeta (NULL: frozen) are added to; dx (NULL: not needed) written or added. */
static void nn_bn_bwd(long rows, int c, const float *x, const float *a, const float *b,
                      const float *dy, const float *gamma, const float *mean,
                      const float *invstd, int act,
                      float *dx, int accum, float *dgamma, float *dbeta, double *dscratch,
                      float *fscratch)
{
    /* dz = dy * act'(x * a + b); with xhat = (x - mean) * invstd and R rows:
     *   dbeta = sum dz, dgamma = sum dz * xhat,
     *   dx = gamma * invstd * (dz - dbeta / R - xhat * dgamma / R),
     * which is linear per channel: dx = p * dz + q * x + r. Sums run in float over
     * blocks of rows and in double across blocks. */
    double *s1 = dscratch, *s2 = dscratch + c;
    float *b1 = fscratch, *b2 = fscratch + c;
    for (int j = 0; j < c; j++)
        s1[j] = s2[j] = 0.0;
    const long B = block_rows(c);
    for (long r0 = 0; r0 < rows; r0 += B) {
        const long nb = rows - r0 < B ? rows - r0 : B;
        bn_bwd_sums(nb, c, act, x + r0 * c, a, b, dy + r0 * c, mean, b1, b2);
        for (int j = 0; j < c; j++) {
            s1[j] += b1[j];
            s2[j] += b2[j];
        }
    }
    if (dgamma)
        for (int j = 0; j < c; j++) {
            dbeta[j] += (float)s1[j];
            dgamma[j] += (float)(s2[j] * invstd[j]);
        }
    if (!dx)
        return;
    float *p = fscratch, *q = fscratch + c, *rr = fscratch + 2 * c;
    for (int j = 0; j < c; j++) {
        double is = invstd[j], k = (double)gamma[j] * is;
        double mdz = s1[j] / (double)rows;
        double mdzx = s2[j] * is / (double)rows;    /* mean of dz * xhat */
        p[j] = (float)k;
        q[j] = (float)(-k * is * mdzx);
        rr[j] = (float)(-k * mdz + k * is * mdzx * (double)mean[j]);
    }
    bn_bwd_dx(rows, c, act, x, a, b, dy, p, q, rr, dx, accum);
}

/* Backward through a BN that ran in inference mode (frozen). */
static void nn_bn_bwd_frozen(long rows, int c, float eps, const float *x, const float *a,
                             const float *b, const float *dy, const float *gamma,
                             const float *rvar, int act, float *dx, int accum, float *fscratch)
{
    float *p = fscratch, *zero = fscratch + c;
    for (int j = 0; j < c; j++) {
        p[j] = (float)((double)gamma[j] / sqrt((double)rvar[j] + (double)eps));
        zero[j] = 0.0f;
    }
    /* Same form as training's dx with q = r = 0. */
    bn_bwd_dx(rows, c, act, x, a, b, dy, p, zero, zero, dx, accum);
}

/* ---- forward and backward ---- */

static void bn_forward(const nn_fwd *f)
{
    nn_ctx *c = f->c;
    const nn_model *m = f->m;
    const nn_node *nd = f->nd;
    const float *P = f->P;
    if (f->training && nd->trainable) {
        float *mean = c->bn_mean + nd->bn_coff, *is = c->bn_invstd + nd->bn_coff;
        float *var_u = c->fscratch + 2 * m->max_c;
        nn_bn_fwd_train(f->rows, nd->c, nd->bn_eps, f->x, P, P + nd->c, nd->fused_act, f->y,
                        mean, is, var_u, c->bn_a + nd->bn_coff, c->bn_b + nd->bn_coff,
                        c->dscratch, c->fscratch);
        double *rm = c->rec_mean + nd->bn_coff, *rv = c->rec_var + nd->bn_coff;
        for (int j = 0; j < nd->c; j++) {
            rm[j] += (double)f->n * mean[j];
            rv[j] += (double)f->n * var_u[j];
        }
        c->rec_w[nd->bn_slot] += f->n;
    } else {
        const float *rb = m->bufs + nd->buf_off;
        nn_bn_fwd_infer(f->rows, nd->c, nd->bn_eps, f->x, P, P + nd->c, rb, rb + nd->c,
                        nd->fused_act, f->y, c->bn_a + nd->bn_coff, c->bn_b + nd->bn_coff);
    }
}

/* The forward's output again from its input and the per-channel a and b it kept. */
static void bn_replay(const nn_fwd *f)
{
    const nn_node *nd = f->nd;
    nn_scale_shift_act(f->rows, nd->c, f->x, f->c->bn_a + nd->bn_coff,
                       f->c->bn_b + nd->bn_coff, nd->fused_act, f->y);
}

static void bn_as_xform(const nn_ctx *c, const nn_node *nd, nn_xform *t)
{
    t->a = c->bn_a + nd->bn_coff;
    t->b = c->bn_b + nd->bn_coff;
    t->act = nd->fused_act;
}

/* One multiply-add per value: always cheaper to recompute than to keep. */
static int bn_replayable(const nn_model *m, const nn_node *nd)
{
    (void)m;
    (void)nd;
    return 1;
}

/* Its backward reads its input, not its output (the activation's mask comes from x,
 * a and b). */
static int bn_reads_output(const nn_node *nd)
{
    (void)nd;
    return 0;
}

static void bn_backward(const nn_bwd *b)
{
    nn_ctx *c = b->c;
    const nn_node *nd = b->nd;
    float *G = b->G;
    const float *a = c->bn_a + nd->bn_coff, *sh = c->bn_b + nd->bn_coff;
    /* After nn_forward_eval_grad the forward used the running statistics: the
     * gradient of that function is the frozen one (gamma and beta get none). */
    if (nd->trainable && !c->eval_grad)
        nn_bn_bwd(b->rows, nd->c, b->x, a, sh, b->dy, b->P, c->bn_mean + nd->bn_coff,
                  c->bn_invstd + nd->bn_coff, nd->fused_act, b->dx, b->acc, G,
                  G ? G + nd->c : NULL, c->dscratch, c->fscratch);
    else if (b->dx)
        nn_bn_bwd_frozen(b->rows, nd->c, nd->bn_eps, b->x, a, sh, b->dy, b->P,
                         b->m->bufs + nd->buf_off + nd->c, nd->fused_act, b->dx, b->acc,
                         c->fscratch);
}

/* gamma 1, beta 0, running mean 0 and variance 1. */
static void bn_init(const nn_model *m, const nn_node *nd, float *p, float *buf, rng *r)
{
    (void)m;
    (void)r;
    for (size_t j = 0; j < nd->w_len; j++)
        p[j] = 1.0f;
    for (int j = 0; j < nd->c; j++) {
        buf[j] = 0.0f;
        buf[nd->c + j] = 1.0f;
    }
    for (size_t j = 0; j < nd->b_len; j++)
        p[nd->w_len + j] = 0.0f;
}

/* ---- the table entry ---- */

static int bn_grad_graph(nn_model *m, int in)
{
    return nn_batchnorm(m, in);
}

static const nn_grad_case bn_grad = {3, 3, 4, 5, NN_GRAD_UNIFORM, bn_grad_graph};

/* BatchNormalization in inference mode (its own epsilon), unless folded into the
 * conv before it (nn_export.h says when and why). */
static int bn_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    const nn_node *nd = &m->nodes[i];
    int p = nn_onnx_fold_prev(w, i);
    if (p >= 0) {
        nn_onnx_same(w, i, p);
        return nn_onnx_status(w);
    }
    const int64_t d[1] = { nd->c };
    const float *g = m->params + nd->p_off, *mu = m->bufs + nd->buf_off;
    int r = nn_onnx_in_rank(w, i, 0);
    const char *in[5] = { nn_onnx_in(w, i, 0, 0), nn_onnx_const(w, i, "scale", 1, d, g),
                          nn_onnx_const(w, i, "bias", 1, d, g + nd->c),
                          nn_onnx_const(w, i, "mean", 1, d, mu),
                          nn_onnx_const(w, i, "var", 1, d, mu + nd->c) };
    nn_onnx_op(w, "BatchNormalization", 5, in, nn_onnx_out(w, i, r));
    nn_onnx_attr_float(w, "epsilon", nd->bn_eps);
    nn_onnx_attr_float(w, "momentum", nd->bn_momentum);
    return nn_onnx_status(w);
}

/* BatchNormalization (X, scale, B, mean, var): its constants are filled in after the
 * model is laid out (nn_imp_fill_bn). */
static int bn_import(struct imp *I, const onnx_node *n)
{
    int in, rc = nn_imp_in_node(I, n, 0, 0, &in);
    if (rc)
        return rc;
    nn_node_info ni = nn_imp_info(I, in);
    for (size_t k = 1; k <= 4; k++) {
        const onnx_tensor *t = nn_imp_const(I, n, k);
        if (!t || t->count != ni.c)
            return nn_imp_err(I, n, "input %zu must be a constant of %d values", k, ni.c);
    }
    float eps = onnx_attr_float(n, "epsilon", 1e-5f), mom = onnx_attr_float(n, "momentum", 0.9f);
    int id = nn_imp_built(I, n, nn_batchnorm_ex(I->m, in, eps, mom));
    if (id < 0)
        return id;
    if (!nn_imp_add_fill(I, F_BN, id, n))
        return PT_ENOMEM;
    return nn_imp_out_node(I, n, id, 0);
}

static const char *const bn_ops[] = { "BatchNormalization", NULL };

const nn_layer nn_layer_bn = {
    .flags = NN_LAYER_FUSES_ACT,
    .forward = bn_forward,
    .backward = bn_backward,
    .init = bn_init,
    .grad = &bn_grad,
    .onnx_write = bn_onnx,
    .reads_output = bn_reads_output,
    .replayable = bn_replayable,
    .replay = bn_replay,
    .as_xform = bn_as_xform,
    .onnx_ops = bn_ops,
    .onnx_import = bn_import,
};
