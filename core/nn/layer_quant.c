/* layer_quant — NN_OP_QUANT, fake quantization: an activation rounded to the integer
 * grid of an int8 file's QuantizeLinear and read back by its DequantizeLinear,
 *   y = (clamp(round_half_even(x / scale) + zp, lo, hi) - zp) * scale,
 * in float, as ONNX Runtime computes the two nodes (x / scale, rounding half to even,
 * saturation, then (q - zp) * scale). No parameters: scale, zero point and range are
 * the node's (nn_node.q_*).
 *
 * Inference only: no backward (the derivative is 0 almost everywhere; a straight-
 * through estimate would be another layer's business), so a training context of a
 * model with one is refused (nn_ctx.c) and it has no finite-difference case. ONNX:
 * written as the QuantizeLinear -> DequantizeLinear pair it came from; read back from
 * a QuantizeLinear of a feature map whose every reader is a DequantizeLinear of the
 * same scale and zero point (nn_quant.h says where such pairs come from). A
 * QuantizeLinear read by anything else (the zoo's QLinearConv files) is declined: the
 * importer's graph-level forms keep reading those as float. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/nn_import_impl.h"
#include "nn/nn_layer.h"
#include "nn/nn_quant.h"

int nn_fakequant(nn_model *m, int in, float scale, int zero_point, int qlo, int qhi)
{
    int rc = nn_build_check_in(m, in, "fakequant");
    if (rc)
        return rc;
    if (!(scale > 0.0f) || isinf(scale) || qlo >= qhi || zero_point < qlo || zero_point > qhi)
        return nn_build_fail(m, PT_EUSAGE, "fakequant: scale %g, zero point %d and range "
                             "[%d, %d]: the scale must be positive and finite, the zero point "
                             "in the range", (double)scale, zero_point, qlo, qhi);
    int id = nn_build_unary(m, NN_OP_QUANT, in, "fakequant");
    if (id >= 0) {
        nn_node *nd = &m->nodes[id];
        nd->q_scale = scale;
        nd->q_zp = zero_point;
        nd->q_lo = qlo;
        nd->q_hi = qhi;
    }
    return id;
}

static void quant_forward(const nn_fwd *f)
{
    const nn_node *nd = f->nd;
    nn_fake_quant(f->x, f->y, (size_t)f->n * nd->len, nd->q_scale, nd->q_zp, nd->q_lo, nd->q_hi);
}

static void quant_describe(const nn_model *m, const nn_node *nd, char *buf, size_t size)
{
    (void)m;
    snprintf(buf, size, "quant %s", nd->q_lo < 0 ? "s8" : "u8");
}

/* ---- ONNX ---- */

/* QuantizeLinear (its output "<name>.q") and DequantizeLinear: per tensor, the zero
 * point's type uint8 or int8 as the range says. */
static int quant_onnx(struct nn_onnx_writer *w, const nn_model *m, int i)
{
    const nn_node *nd = &m->nodes[i];
    int r = nn_onnx_in_rank(w, i, 0);
    const char *q = nn_onnx_tmp(w, i, "q");
    const char *s = nn_onnx_const(w, i, "scale", 0, NULL, &nd->q_scale);
    const int32_t zp = nd->q_zp;
    const char *z = nn_onnx_const_int(w, i, "zero_point", nd->q_lo < 0 ? ONNX_INT8 : ONNX_UINT8,
                                      0, NULL, &zp);
    const char *qin[3] = { nn_onnx_in(w, i, 0, 0), s, z }, *dqin[3] = { q, s, z };
    nn_onnx_op(w, "QuantizeLinear", 3, qin, q);
    nn_onnx_op(w, "DequantizeLinear", 3, dqin, nn_onnx_out(w, i, r));
    return nn_onnx_status(w);
}

/* A per-tensor quantization's scale and zero point (slots 1 and 2 of a Quantize- or
 * DequantizeLinear; no zero point is uint8's 0). 0, or -1 when they are not one
 * constant each of a type read here. */
static int scalar_q(struct imp *I, const onnx_node *n, float *scale, int *zp, int *lo, int *hi)
{
    const onnx_tensor *s = nn_imp_const(I, n, 1);
    const onnx_tensor *z = n->n_inputs > 2 && n->inputs[2][0] ? nn_imp_const(I, n, 2) : NULL;
    if (!s || s->count != 1 || s->dtype != ONNX_FLOAT || !s->data ||
        (n->n_inputs > 2 && n->inputs[2][0] && (!z || z->count != 1 || !z->data)))
        return -1;
    *scale = *(const float *)s->data;
    *zp = 0;
    *lo = 0;
    *hi = 255;
    if (z && z->dtype == ONNX_INT8) {
        *zp = *(const int8_t *)z->data;
        *lo = -128;
        *hi = 127;
    } else if (z && z->dtype == ONNX_UINT8) {
        *zp = *(const uint8_t *)z->data;
    } else if (z) {
        return -1;
    }
    return 0;
}

/* Whether every reader of n's output (there is one at least) is a DequantizeLinear of
 * it with the same scale, zero point and type. */
static int read_by_dq_only(struct imp *I, const onnx_node *n, float scale, int zp, int lo)
{
    const char *out = n->outputs[0];
    int readers = 0;
    for (size_t j = (size_t)n->index + 1; j < I->om->n_nodes; j++) {
        const onnx_node *r = &I->om->nodes[j];
        for (size_t k = 0; k < r->n_inputs; k++) {
            if (strcmp(r->inputs[k], out) != 0)
                continue;
            float s2;
            int z2, lo2, hi2;
            if (k != 0 || strcmp(r->op_type, "DequantizeLinear") != 0 ||
                scalar_q(I, r, &s2, &z2, &lo2, &hi2) != 0 || s2 != scale || z2 != zp ||
                lo2 != lo)
                return 0;
            readers++;
        }
    }
    for (size_t k = 0; k < I->om->n_outputs; k++)
        if (!strcmp(I->om->outputs[k].name, out))
            return 0;
    return readers > 0;
}

static int quant_import(struct imp *I, const onnx_node *n)
{
    float scale;
    int zp, lo, hi, in;
    if (n->n_outputs < 1 || nn_imp_const(I, n, 0) || scalar_q(I, n, &scale, &zp, &lo, &hi) ||
        !read_by_dq_only(I, n, scale, zp, lo))
        return NN_IMP_DECLINE;
    int rc = nn_imp_in_node(I, n, 0, 1, &in);
    if (rc)
        return rc;
    const val *v = nn_imp_find_val(I, n->inputs[0]);
    int flat = v ? v->flat : 0;
    int id = nn_imp_built(I, n, nn_fakequant(I->m, in, scale, zp, lo, hi));
    if (id < 0)
        return id;
    I->quantized = 1;
    return nn_imp_out_node(I, n, id, flat);
}

static const char *const quant_ops[] = { "QuantizeLinear", NULL };

const nn_layer nn_layer_quant = {
    .flags = NN_LAYER_INFER_ONLY,
    .forward = quant_forward,
    .describe = quant_describe,
    .onnx_write = quant_onnx,
    .onnx_ops = quant_ops,
    .onnx_import = quant_import,
};
