/* nn_import_weights — the weights of an imported graph, converted into the
 * library's layout: conv [cout][cin/g][kh][kw] -> [kh][kw][cin/g][cout], Gemm /
 * MatMul -> [cin][cout] (rows re-ordered from NCHW after a flatten of a map), batch
 * norm's scale, bias and statistics; int8 weights dequantized per output channel,
 * w = (q - zero_point) * scale, and int32 biases scaled by input and weight scales;
 * and the constants a DequantizeLinear computes (the QDQ form's weights and biases). */
#include <stdlib.h>
#include <string.h>

#include "nn/nn_import_impl.h"

static int floats_of(imp *I, const onnx_node *n, size_t k, int64_t count, const float **out)
{
    const onnx_tensor *t = nn_imp_const(I, n, k);
    if (!t)
        return nn_imp_err(I, n, "input %zu must be a constant", k);
    if (t->count != count)
        return nn_imp_err(I, n, "input '%s' has %lld values; %lld expected", t->name,
                        (long long)t->count, (long long)count);
    const void *d = NULL;
    int rc = onnx_tensor_data(I->om, t, ONNX_FLOAT, &d, I->e);
    *out = d;
    return rc;
}

/* Per-channel (or per-tensor) dequantization parameters of a quantized weight. */
typedef struct qparams {
    const float *scale;
    int64_t n_scale;
    const onnx_tensor *zp;
} qparams;

static int qparams_of(imp *I, const onnx_node *n, size_t sk, size_t zk, int64_t channels,
                      qparams *q)
{
    const onnx_tensor *s = nn_imp_const(I, n, sk);
    q->zp = nn_imp_const(I, n, zk);
    if (!s || !q->zp || (s->count != 1 && s->count != channels) || q->zp->count != s->count)
        return nn_imp_err(I, n, "scale and zero point must be constants of 1 or %lld values",
                        (long long)channels);
    const void *d = NULL;
    int rc = onnx_tensor_data(I->om, s, ONNX_FLOAT, &d, I->e);
    q->scale = d;
    q->n_scale = s->count;
    if (q->zp->dtype != ONNX_INT8 && q->zp->dtype != ONNX_UINT8)
        return nn_imp_err(I, n, "zero point of type %s; INT8 or UINT8 expected",
                        onnx_dtype_name(q->zp->dtype));
    return rc;
}

static double qscale(const qparams *q, int64_t c)
{
    return q->scale[q->n_scale == 1 ? 0 : c];
}

static int qzero(const qparams *q, int64_t c)
{
    int64_t i = q->n_scale == 1 ? 0 : c;
    return q->zp->dtype == ONNX_INT8 ? ((const int8_t *)q->zp->data)[i]
                                     : ((const uint8_t *)q->zp->data)[i];
}

/* Element i of a quantized weight tensor as an integer. */
static int qvalue(const onnx_tensor *t, int64_t i)
{
    return t->dtype == ONNX_INT8 ? ((const int8_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
}

int nn_imp_fill_conv(imp *I, const fill *f, float *P)
{
    const onnx_node *n = f->src;
    int quant = f->kind == F_QCONV;
    const onnx_tensor *w = nn_imp_const(I, n, quant ? 3 : 1);
    int64_t cout = w->dims[0], cg = w->dims[1], kh = w->dims[2], kw = w->dims[3];
    nn_node_info ni = nn_imp_info(I, f->node);
    const float *wf = NULL;
    qparams wq = { 0 }, xq = { 0 };
    int rc;
    if (quant) {
        if (w->dtype != ONNX_INT8 && w->dtype != ONNX_UINT8)
            return nn_imp_err(I, n, "weights of type %s; INT8 or UINT8 expected",
                            onnx_dtype_name(w->dtype));
        if ((rc = qparams_of(I, n, 4, 5, cout, &wq)) || (rc = qparams_of(I, n, 1, 2, 1, &xq)))
            return rc;
    } else if ((rc = floats_of(I, n, 1, w->count, &wf)) != PT_OK) {
        return rc;
    }
    /* [cout][cg][kh][kw] -> [kh][kw][cg][cout] */
    for (int64_t co = 0; co < cout; co++)
        for (int64_t ci = 0; ci < cg; ci++)
            for (int64_t y = 0; y < kh; y++)
                for (int64_t x = 0; x < kw; x++) {
                    int64_t src = ((co * cg + ci) * kh + y) * kw + x;
                    float v = quant ? (float)((qvalue(w, src) - qzero(&wq, co)) * qscale(&wq, co))
                                    : wf[src];
                    /* The caffe input: library channel k takes the file's 2 - k. */
                    int64_t li = f->rev_cin ? cg - 1 - ci : ci;
                    P[((y * kw + x) * cg + li) * cout + co] = v;
                }
    if (!ni.bias_count)
        return PT_OK;
    float *B = P + ni.weight_count;
    if (quant) {
        const onnx_tensor *b = nn_imp_const(I, n, 8);
        const void *d = NULL;
        if (!b || b->count != cout)
            return nn_imp_err(I, n, "the bias must be a constant of %lld values", (long long)cout);
        if ((rc = onnx_tensor_data(I->om, b, ONNX_INT32, &d, I->e)) != PT_OK)
            return rc;
        for (int64_t co = 0; co < cout; co++)
            B[co] = (float)(((const int32_t *)d)[co] * qscale(&xq, 0) * qscale(&wq, co));
        return PT_OK;
    }
    const float *bf = NULL;
    if ((rc = floats_of(I, n, 2, cout, &bf)) != PT_OK)
        return rc;
    memcpy(B, bf, (size_t)cout * sizeof *B);
    return PT_OK;
}

int nn_imp_fill_bn(imp *I, const fill *f, float *P, float *buf)
{
    nn_node_info ni = nn_imp_info(I, f->node);
    const float *t[4] = { NULL, NULL, NULL, NULL };
    for (int k = 0; k < 4; k++) {
        int rc = floats_of(I, f->src, (size_t)k + 1, ni.c, &t[k]);
        if (rc)
            return rc;
    }
    memcpy(P, t[0], (size_t)ni.c * sizeof *P);
    memcpy(P + ni.c, t[1], (size_t)ni.c * sizeof *P);
    memcpy(buf, t[2], (size_t)ni.c * sizeof *buf);
    memcpy(buf + ni.c, t[3], (size_t)ni.c * sizeof *buf);
    return PT_OK;
}

float nn_imp_bias_scale(const fill *f)
{
    return f->bias_src == f->src ? f->beta : 1.0f;
}

int nn_imp_fill_dense(imp *I, const fill *f, float *P)
{
    const onnx_node *n = f->src;
    const onnx_tensor *b = nn_imp_const(I, n, f->quant ? 3 : 1);
    nn_node_info ni = nn_imp_info(I, f->node);
    int64_t cout = ni.c, cin = (int64_t)ni.weight_count / cout;
    const float *bf = NULL;
    qparams bq = { 0 }, aq = { 0 };
    int rc;
    if (f->quant) {
        if ((rc = qparams_of(I, n, 4, 5, cout, &bq)) || (rc = qparams_of(I, n, 1, 2, 1, &aq)))
            return rc;
    } else if ((rc = floats_of(I, n, 1, b->count, &bf)) != PT_OK) {
        return rc;
    }
    for (int64_t r = 0; r < cin; r++) {
        /* Row r of the library's [cin][cout] reads NHWC position r; the file's rows
         * follow NCHW after a flatten of a map larger than 1x1. */
        int64_t src_r = r;
        if (f->flat_c) {
            int64_t ch = r % f->flat_c, px = r / f->flat_c;
            src_r = ch * f->flat_h * f->flat_w + px;
        }
        for (int64_t co = 0; co < cout; co++) {
            int64_t src = f->trans_b ? co * cin + src_r : src_r * cout + co;
            P[r * cout + co] =
                f->quant ? (float)((qvalue(b, src) - qzero(&bq, co)) * qscale(&bq, co))
                         : f->alpha * bf[src];
        }
    }
    float *B = P + ni.weight_count;
    memset(B, 0, (size_t)cout * sizeof *B);
    if (!f->bias_src)
        return PT_OK;
    const onnx_node *bn = f->bias_src;
    const onnx_tensor *c = nn_imp_const(I, bn, (size_t)f->bias_slot);
    if (!c || (c->count != cout && c->count != 1))
        return nn_imp_err(I, bn, "the bias must be a constant of 1 or %lld values", (long long)cout);
    if (!strcmp(bn->op_type, "QLinearAdd")) {
        qparams cq;
        size_t sk = (size_t)f->bias_slot + 1;
        if ((rc = qparams_of(I, bn, sk, sk + 1, 1, &cq)) != PT_OK)
            return rc;
        for (int64_t co = 0; co < cout; co++)
            B[co] = (float)((qvalue(c, c->count == 1 ? 0 : co) - qzero(&cq, 0)) * qscale(&cq, 0));
        return PT_OK;
    }
    const void *d = NULL;
    if ((rc = onnx_tensor_data(I->om, c, ONNX_FLOAT, &d, I->e)) != PT_OK)
        return rc;
    for (int64_t co = 0; co < cout; co++)
        B[co] = nn_imp_bias_scale(f) * ((const float *)d)[c->count == 1 ? 0 : co];
    return PT_OK;
}


/* ---- DequantizeLinear of a constant ---- */

/* Element i of an integer tensor (int8, uint8 or int32) as an int64. */
static int64_t ivalue(const onnx_tensor *t, int64_t i)
{
    if (t->dtype == ONNX_INT32)
        return ((const int32_t *)t->data)[i];
    return qvalue(t, i);
}

/* The checks of a DequantizeLinear of a constant x: its type, and a scale (float) and
 * zero point (x's type, optional) of 1 value or one per index of axis. *axis gets the
 * axis (a negative one counted from the end). */
static int dq_check(imp *I, const onnx_node *n, const onnx_tensor *x, const onnx_tensor *s,
                    const onnx_tensor *z, int64_t *axis)
{
    if (x->dtype != ONNX_INT8 && x->dtype != ONNX_UINT8 && x->dtype != ONNX_INT32)
        return nn_imp_err(I, n, "a constant of type %s; INT8, UINT8 or INT32 expected",
                          onnx_dtype_name(x->dtype));
    if (!s || s->dtype != ONNX_FLOAT || !s->data)
        return nn_imp_err(I, n, "the scale must be a FLOAT constant");
    if (n->n_inputs > 2 && n->inputs[2][0] && (!z || z->dtype != x->dtype || !z->data))
        return nn_imp_err(I, n, "the zero point must be a constant of the input's type (%s)",
                          onnx_dtype_name(x->dtype));
    if (z && z->count != s->count)
        return nn_imp_err(I, n, "%lld scales but %lld zero points", (long long)s->count,
                          (long long)z->count);
    *axis = onnx_attr_int(n, "axis", 1);
    if (*axis < 0)
        *axis += x->rank;
    if (s->count != 1 && (*axis < 0 || *axis >= x->rank || s->count != x->dims[*axis]))
        return nn_imp_err(I, n, "%lld scales for axis %lld of a tensor of rank %d",
                          (long long)s->count, (long long)*axis, x->rank);
    for (int64_t c = 0; c < s->count; c++)
        if (!(((const float *)s->data)[c] > 0.0f))
            return nn_imp_err(I, n, "a scale of %g; scales must be positive",
                              (double)((const float *)s->data)[c]);
    return PT_OK;
}

int nn_imp_dequantize(imp *I, const onnx_node *n)
{
    const onnx_tensor *x = nn_imp_const(I, n, 0), *s = nn_imp_const(I, n, 1);
    const onnx_tensor *z = n->n_inputs > 2 && n->inputs[2][0] ? nn_imp_const(I, n, 2) : NULL;
    int64_t axis = 0;
    int rc = dq_check(I, n, x, s, z, &axis);
    if (rc)
        return rc;
    if (n->n_outputs < 1 || !n->outputs[0][0])
        return nn_imp_err(I, n, "has no output");
    if (I->ndq == I->dqcap) {
        size_t cap = I->dqcap ? 2 * I->dqcap : 64;
        onnx_tensor *nt = realloc(I->dq, cap * sizeof *nt);
        if (!nt)
            return err_set(I->e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        I->dq = nt;
        I->dqcap = cap;
    }
    float *y = malloc((size_t)(x->count > 0 ? x->count : 1) * sizeof *y);
    if (!y)
        return err_set(I->e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int64_t inner = 1;
    for (int d = (int)axis + 1; s->count != 1 && d < x->rank; d++)
        inner *= x->dims[d];
    const float *sc = s->data;
    for (int64_t i = 0; i < x->count; i++) {
        int64_t c = s->count == 1 ? 0 : (i / inner) % s->count;
        int64_t zp = z ? ivalue(z, c) : 0;
        /* ONNX: (x - zero_point) in integers, then times the scale in float. */
        y[i] = (float)(ivalue(x, i) - zp) * sc[c];
    }
    I->dq[I->ndq++] = (onnx_tensor){ .name = n->outputs[0], .dtype = ONNX_FLOAT,
                                     .rank = x->rank, .dims = x->dims, .count = x->count,
                                     .data = y };
    return PT_OK;
}

void nn_imp_dq_free(imp *I)
{
    for (size_t i = 0; i < I->ndq; i++)
        free((void *)I->dq[i].data);
    free(I->dq);
    I->dq = NULL;
    I->ndq = I->dqcap = 0;
}
