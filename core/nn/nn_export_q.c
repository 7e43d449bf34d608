/* nn_export_q — what an int8 export adds to the ONNX writer (nn_export.h's int8 form,
 * nn_quant.h's arithmetic): the QuantizeLinear / DequantizeLinear pairs on the values
 * the quantized kinds read and on the Relu, Clip and Add outputs, the int8 weights and
 * int32 biases behind DequantizeLinears (nn_onnx_weight, nn_onnx_bias for the conv and
 * dense hooks), and the metadata's text. In a float export each call is what the
 * float writer does. Memory: the writer's pool (nn_export_impl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_export_impl.h"
#include "nn/nn_layer.h"
#include "nn/nn_quant.h"

/* ONNX's TensorProto data types (io/onnx.h's numbers). */
enum { T_UINT8 = 2, T_INT8 = 3, T_INT32 = 6 };

static int add_scale(W *w, const char *name, const float *scale, int n)
{
    if (w->err || !name || !scale)
        return w->err ? w->err : nn_exw_oom(w);
    if (w->n_sc == w->cap_sc) {
        size_t cap = w->cap_sc ? 2 * w->cap_sc : 64;
        wscale *p = realloc(w->sc, cap * sizeof *p);
        if (!p)
            return nn_exw_oom(w);
        w->sc = p;
        w->cap_sc = cap;
    }
    w->sc[w->n_sc++] = (wscale){ name, scale, n };
    return PT_OK;
}

static const wscale *find_scale(const W *w, const char *name)
{
    for (size_t i = 0; name && i < w->n_sc; i++)
        if (!strcmp(w->sc[i].name, name))
            return &w->sc[i];
    return NULL;
}

/* "<tag><what>" as a suffix for nn_onnx_tmp / nn_onnx_const. */
static const char *sfx(W *w, const char *tag, const char *what)
{
    return nn_exw_str(w, "%s%s", tag, what);
}

/* name (a value of node's naming) through a QuantizeLinear / DequantizeLinear pair of
 * the uint8 parameters of [lo, hi]: "<node>.<tag>q", "<node>.<tag>dq" (returned). */
static const char *qdq(W *w, int node, const char *tag, const char *name, float lo, float hi)
{
    float *s = nn_onnx_scratch(w, 1);
    int zp;
    if (!s)
        return NULL;
    nn_quant_u8(lo, hi, s, &zp);
    const int32_t z = zp;
    const char *sc = nn_onnx_const(w, node, sfx(w, tag, "q_scale"), 0, NULL, s);
    const char *zn = nn_onnx_const_int(w, node, sfx(w, tag, "q_zp"), T_UINT8, 0, NULL, &z);
    const char *qn = nn_onnx_tmp(w, node, sfx(w, tag, "q"));
    const char *dqn = nn_onnx_tmp(w, node, sfx(w, tag, "dq"));
    const char *qin[3] = { name, sc, zn }, *dqin[3] = { qn, sc, zn };
    if (nn_onnx_op(w, "QuantizeLinear", 3, qin, qn) ||
        nn_onnx_op(w, "DequantizeLinear", 3, dqin, dqn) || add_scale(w, dqn, s, 1))
        return NULL;
    return dqn;
}

/* The kinds whose reading of a value quantizes it (a dense layer reads a 4-D value
 * through its Flatten, after which it quantizes: nn_onnx_qdq). */
static int reads_quantized(nn_op op, int rank)
{
    return op == NN_OP_CONV || op == NN_OP_ADD || op == NN_OP_MAXPOOL || op == NN_OP_AVGPOOL ||
           op == NN_OP_GAP || op == NN_OP_CONCAT || (op == NN_OP_DENSE && rank == 2);
}

const char *nn_exq_in(W *w, int node, int k, wval *v, int reshaped, const char *name)
{
    const nn_model *m = w->m;
    if (!name || (!v->qall && !reads_quantized(m->nodes[node].op, reshaped ? 4 : v->rank)))
        return name;
    const char **slot = reshaped ? &v->q4 : &v->q;
    if (!*slot) {
        /* The value as node reads it: its input's output in the model (the owner's
         * may be another: a conv's, before the BN folded into it). */
        int src = m->nodes[node].in[k];
        *slot = qdq(w, v->owner, reshaped ? "nchw." : "", name, w->q->lo[src], w->q->hi[src]);
    }
    return *slot;
}

int nn_exq_after(W *w, int node)
{
    const nn_model *m = w->m;
    nn_op op = m->nodes[node].op;
    wval *v = &w->v[node];
    if (node == m->out || v->owner != node || v->q ||
        (op != NN_OP_RELU && op != NN_OP_RELU6 && op != NN_OP_CLIP && op != NN_OP_ADD))
        return w->err;
    v->q = qdq(w, node, "", v->name, w->q->lo[node], w->q->hi[node]);
    v->qall = 1;
    return w->err;
}

const char *nn_exq_describe(W *w)
{
    return nn_exw_str(w, "int8 QDQ: per-channel symmetric int8 weights (int32 biases), uint8 "
                      "activations calibrated on %lld %s", w->q->images,
                      w->q->images_what ? w->q->images_what : "images");
}

/* ---- for the hooks (nn_layer.h) ---- */

const char *nn_onnx_qdq(W *w, int node, int k, const char *name)
{
    if (!w->q || !name)
        return name;
    int src = w->m->nodes[node].in[k];
    return qdq(w, node, "flat.", name, w->q->lo[src], w->q->hi[src]);
}

/* A DequantizeLinear along axis 0 of the constant q (of ONNX type `type`, dims[0]
 * rows, per-row scales sc and zero points zero) into the value named after suffix:
 * that name, or NULL. */
static const char *dequant(W *w, int node, const char *suffix, int type, int rank,
                           const int64_t *dims, const int32_t *q, const float *sc,
                           const int32_t *zero)
{
    const int64_t rd[1] = { dims[0] };
    const char *in[3] = {
        nn_onnx_const_int(w, node, sfx(w, suffix, "_q"), type, rank, dims, q),
        nn_onnx_const(w, node, sfx(w, suffix, "_scale"), 1, rd, sc),
        nn_onnx_const_int(w, node, sfx(w, suffix, "_zp"), type, 1, rd, zero),
    };
    const char *out = nn_onnx_tmp(w, node, suffix);
    if (nn_onnx_op(w, "DequantizeLinear", 3, in, out))
        return NULL;
    nn_onnx_attr_int(w, "axis", 0);
    return out;
}

const char *nn_onnx_weight(W *w, int node, const char *suffix, int rank, const int64_t *dims,
                           const float *data)
{
    if (!w->q)
        return nn_onnx_const(w, node, suffix, rank, dims, data);
    int rows = (int)dims[0];
    size_t count = 1;
    for (int d = 0; d < rank; d++)
        count *= (size_t)dims[d];
    size_t per = rows > 0 ? count / (size_t)rows : 0;
    float *sc = nn_onnx_scratch(w, (size_t)rows);
    int8_t *q8 = nn_exw_alloc(w, count);
    int32_t *qi = nn_exw_alloc(w, count * sizeof *qi), *zero = nn_exw_alloc(w, (size_t)rows * 4);
    if (!sc || !q8 || !qi || !zero)
        return NULL;
    nn_quant_s8_rows(data, rows, per, sc, q8);
    for (size_t i = 0; i < count; i++)
        qi[i] = q8[i];
    const char *out = dequant(w, node, suffix, T_INT8, rank, dims, qi, sc, zero);
    return !out || add_scale(w, out, sc, rows) ? NULL : out;
}

const char *nn_onnx_bias(W *w, int node, const char *suffix, int n, const float *data,
                         const char *x, const char *weight)
{
    const int64_t d[1] = { n };
    const wscale *xs = w->q ? find_scale(w, x) : NULL, *ws = w->q ? find_scale(w, weight) : NULL;
    if (!xs || !ws || xs->n != 1 || ws->n != n)
        return nn_onnx_const(w, node, suffix, 1, d, data);
    float *sc = nn_onnx_scratch(w, (size_t)n);
    int32_t *q = nn_exw_alloc(w, (size_t)n * sizeof *q), *zero = nn_exw_alloc(w, (size_t)n * 4);
    if (!sc || !q || !zero)
        return NULL;
    for (int c = 0; c < n; c++) {
        sc[c] = xs->scale[0] * ws->scale[c];
        q[c] = nn_quant_bias(data[c], sc[c], 1.0f); /* the scale the file states */
    }
    return dequant(w, node, suffix, T_INT32, 1, d, q, sc, zero);
}
