/* nn_import — ONNX graphs onto the layer library (see nn_import.h).
 *
 * One pass over the nodes in file order (ONNX files are topologically sorted)
 * builds the layers and notes, for each layer with weights, where they come from;
 * after nn_model_finalize() lays the parameters out, a second pass copies and
 * converts them. Every ONNX value name maps to a layer (or to a shape computation,
 * the Shape -> Gather -> Unsqueeze -> Concat chains exporters write to feed a
 * Reshape). A node goes to the first layer kind (table order) whose onnx_import
 * takes it (nn_layer.h: each kind's mapping lives in its layer_*.c); this file keeps
 * the graph-level forms no kind owns (Pad, Identity, Softmax, the quantize /
 * dequantize plumbing, shape computations; per-channel constants, layouts and
 * vectors through nn_import_front.c, _layout.c and _vector.c) and the helpers the
 * kinds' importers share (nn_import_impl.h). */
#include "nn/nn_import_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "nn/nn_layer.h"

/* A Pad's largest side read (so the file's int64 pads fit an int); the Conv that
 * takes them refuses any not below its kernel anyway. */
#define NN_PAD_LIMIT 64

/* What the importer takes besides the layer kinds' op types (their onnx_ops, listed
 * first in the error naming what is supported). */
#define GRAPH_FORMS                                                                        \
    "Mul, Add, Sub and Div by constants (one per channel), ReduceMean (over H and W), "    \
    "Transpose (NHWC <-> NCHW), Flatten, Reshape, Squeeze and Unsqueeze (of an N x C "    \
    "vector), Identity, Constant, Pad (zeros, spatial), Softmax (last), QuantizeLinear, "   \
    "DequantizeLinear; Shape, Gather, Unsqueeze, Squeeze, Cast and Concat where they "     \
    "compute a Reshape's shape"

/* ------------------------------------------------------------------------------ */
/* errors */

int nn_imp_err(imp *I, const onnx_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

int nn_imp_err(imp *I, const onnx_node *n, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_set(I->e, PT_EFORMAT, I->om->path, PT_NO_RECORD, PT_NO_OFFSET,
                   "node %d '%s' (%s): %s", n->index, n->name, n->op_type, msg);
}

/* The builder records its first error in the model; turn it into one naming the node. */
int nn_imp_built(imp *I, const onnx_node *n, int id)
{
    if (id >= 0)
        return id;
    pt_err be;
    nn_model_finalize(I->m, id, &be);
    return nn_imp_err(I, n, "%s", be.msg);
}

/* ------------------------------------------------------------------------------ */
/* values */

val *nn_imp_find_val(imp *I, const char *name)
{
    for (size_t i = I->nv; i-- > 0;)
        if (!strcmp(I->v[i].name, name))
            return &I->v[i];
    return NULL;
}

int nn_imp_set_val(imp *I, const char *name, vkind kind, int node, int flat)
{
    if (I->nv == I->vcap) {
        size_t cap = I->vcap ? 2 * I->vcap : 256;
        val *nv = realloc(I->v, cap * sizeof *nv);
        if (!nv)
            return err_set(I->e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        I->v = nv;
        I->vcap = cap;
    }
    I->v[I->nv++] = (val){ name, kind, node, flat, { 0, 0, 0, 0 }, 0, 0 };
    return PT_OK;
}

static int padded(const val *v)
{
    return v->pad[0] || v->pad[1] || v->pad[2] || v->pad[3];
}

fill *nn_imp_add_fill(imp *I, fkind kind, int node, const onnx_node *src)
{
    if (I->nf == I->fcap) {
        size_t cap = I->fcap ? 2 * I->fcap : 128;
        fill *nf = realloc(I->f, cap * sizeof *nf);
        if (!nf) {
            err_set(I->e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
            return NULL;
        }
        I->f = nf;
        I->fcap = cap;
    }
    fill *f = &I->f[I->nf++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->node = node;
    f->src = src;
    f->alpha = f->beta = 1.0f;
    return f;
}

/* Input slot k of n as a layer (not flattened unless allow_flat); *pad (when not
 * NULL) receives the zeros of a Pad still to add, which only a Conv may take. */
static int in_node_padded(imp *I, const onnx_node *n, size_t k, int allow_flat, int *node,
                          int pad[4], int *bgr)
{
    if (k >= n->n_inputs || !n->inputs[k][0])
        return nn_imp_err(I, n, "input %zu is missing", k);
    const val *v = nn_imp_find_val(I, n->inputs[k]);
    if (!v) {
        if (nn_imp_const(I, n, k))
            return nn_imp_err(I, n, "input '%s' is a constant where a feature map is expected",
                            n->inputs[k]);
        return nn_imp_err(I, n, "input '%s' is not produced by any supported node", n->inputs[k]);
    }
    if (v->kind != V_NODE)
        return nn_imp_err(I, n, "input '%s' is a shape computation, not a feature map",
                        n->inputs[k]);
    if (v->bgr && !bgr)
        return nn_imp_err(I, n, "input '%s' has the caffe input's BGR order: only per-channel "
                          "constants and convolutions may read it", n->inputs[k]);
    if (v->nhwc)
        return nn_imp_err(I, n, "input '%s' is seen as N x H x W x C (after a Transpose); only "
                          "a Transpose back or a ReduceMean over H and W may read it",
                          n->inputs[k]);
    if (v->flat && !allow_flat)
        return nn_imp_err(I, n, "input '%s' is a flattened map; only Gemm or MatMul may read it",
                        n->inputs[k]);
    if (padded(v) && !pad)
        return nn_imp_err(I, n, "input '%s' comes from a Pad with non-zero pads; only a Conv "
                        "may read one", n->inputs[k]);
    if (pad)
        memcpy(pad, v->pad, sizeof v->pad);
    if (bgr)
        *bgr = v->bgr;
    *node = v->node;
    return PT_OK;
}

int nn_imp_in_node(imp *I, const onnx_node *n, size_t k, int allow_flat, int *node)
{
    return in_node_padded(I, n, k, allow_flat, node, NULL, NULL);
}

int nn_imp_in_node_bgr(imp *I, const onnx_node *n, size_t k, int *node, int *bgr)
{
    return in_node_padded(I, n, k, 0, node, NULL, bgr);
}

int nn_imp_in_node_padded(imp *I, const onnx_node *n, size_t k, int *node, int pad[4], int *bgr)
{
    return in_node_padded(I, n, k, 0, node, pad, bgr);
}

const onnx_tensor *nn_imp_const(imp *I, const onnx_node *n, size_t k)
{
    if (k >= n->n_inputs || !n->inputs[k][0])
        return NULL;
    for (size_t i = 0; i < I->ndq; i++)
        if (!strcmp(I->dq[i].name, n->inputs[k]))
            return &I->dq[i];
    return onnx_find_tensor(I->om, n->inputs[k]);
}

int nn_imp_out_node(imp *I, const onnx_node *n, int node, int flat)
{
    if (n->n_outputs < 1 || !n->outputs[0][0])
        return nn_imp_err(I, n, "has no output");
    return nn_imp_set_val(I, n->outputs[0], V_NODE, node, flat);
}

nn_node_info nn_imp_info(imp *I, int node)
{
    nn_node_info ni;
    nn_node_get(I->m, node, &ni);
    return ni;
}

/* ------------------------------------------------------------------------------ */
/* attributes */

static int ints_attr(imp *I, const onnx_node *n, const char *name, size_t want, int64_t dflt,
                     int64_t *out)
{
    size_t k;
    const int64_t *v = onnx_attr_ints(n, name, &k);
    if (!v) {
        for (size_t i = 0; i < want; i++)
            out[i] = dflt;
        return PT_OK;
    }
    if (k != want)
        return nn_imp_err(I, n, "attribute %s has %zu values; %zu expected", name, k, want);
    for (size_t i = 0; i < want; i++)
        out[i] = v[i];
    return PT_OK;
}

int nn_imp_window(imp *I, const onnx_node *n, int in, int64_t k[2], int64_t s[2], int64_t p[4])
{
    int64_t kk[2] = { 0, 0 }, d[2] = { 1, 1 };
    int rc;
    if (onnx_attr_find(n, "kernel_shape")) {
        if ((rc = ints_attr(I, n, "kernel_shape", 2, 1, kk)) != PT_OK)
            return rc;
        if (k[0] && (kk[0] != k[0] || kk[1] != k[1]))
            return nn_imp_err(I, n, "kernel_shape disagrees with the weights");
        k[0] = kk[0];
        k[1] = kk[1];
    } else if (!k[0]) {
        return nn_imp_err(I, n, "kernel_shape is missing");
    }
    if ((rc = ints_attr(I, n, "strides", 2, 1, s)) || (rc = ints_attr(I, n, "dilations", 2, 1, d)) ||
        (rc = ints_attr(I, n, "pads", 4, 0, p)))
        return rc;
    if (d[0] != 1 || d[1] != 1)
        return nn_imp_err(I, n, "dilations other than 1 are not supported");
    if (onnx_attr_int(n, "ceil_mode", 0) != 0)
        return nn_imp_err(I, n, "ceil_mode = 1 is not supported");
    const char *ap = onnx_attr_string(n, "auto_pad", "NOTSET");
    if (!strcmp(ap, "VALID")) {
        p[0] = p[1] = p[2] = p[3] = 0;
    } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        nn_node_info ni = nn_imp_info(I, in);
        int64_t dim[2] = { ni.h, ni.w };
        for (int a = 0; a < 2; a++) {
            int64_t o = (dim[a] + s[a] - 1) / s[a];
            int64_t tot = (o - 1) * s[a] + k[a] - dim[a];
            if (tot < 0)
                tot = 0;
            /* SAME_UPPER puts the odd pixel at the end, SAME_LOWER at the start. */
            int64_t small = tot / 2, big = tot - small;
            int upper = !strcmp(ap, "SAME_UPPER");
            p[a] = upper ? small : big;
            p[a + 2] = upper ? big : small;
        }
    } else if (strcmp(ap, "NOTSET") != 0) {
        return nn_imp_err(I, n, "auto_pad '%s' is not supported", ap);
    }
    return PT_OK;
}

/* ------------------------------------------------------------------------------ */
/* shared by the kinds' importers */

/* A quantized output's range: the clamp that carries the graph's activation. */
static int q_range(imp *I, const onnx_node *n, size_t scale_k, size_t zp_k, double *lo,
                   double *hi)
{
    const onnx_tensor *s = nn_imp_const(I, n, scale_k), *z = nn_imp_const(I, n, zp_k);
    if (!s || !z || s->count != 1 || z->count != 1)
        return nn_imp_err(I, n, "its output's scale and zero point must be constant scalars");
    const void *sd, *zd;
    int rc = onnx_tensor_data(I->om, s, ONNX_FLOAT, &sd, I->e);
    if (rc)
        return rc;
    double scale = *(const float *)sd;
    if (z->dtype == ONNX_UINT8 && onnx_tensor_data(I->om, z, ONNX_UINT8, &zd, I->e) == PT_OK) {
        int zp = *(const uint8_t *)zd;
        *lo = (0 - zp) * scale;
        *hi = (255 - zp) * scale;
    } else if (z->dtype == ONNX_INT8 && onnx_tensor_data(I->om, z, ONNX_INT8, &zd, I->e) == PT_OK) {
        int zp = *(const int8_t *)zd;
        *lo = (-128 - zp) * scale;
        *hi = (127 - zp) * scale;
    } else {
        return nn_imp_err(I, n, "zero point of type %s; UINT8 or INT8 expected",
                        onnx_dtype_name(z->dtype));
    }
    return PT_OK;
}

/* A range from 0 is the graph's ReLU6 (or ReLU when it reaches past 6); any other
 * range is no activation. */
int nn_imp_q_act(imp *I, const onnx_node *n, int id, size_t scale_k, size_t zp_k)
{
    double lo = 0.0, hi = 0.0;
    int rc = q_range(I, n, scale_k, zp_k, &lo, &hi);
    if (rc)
        return rc;
    if (lo != 0.0)
        return id;
    return nn_imp_built(I, n, hi <= 6.0 + 1e-3 ? nn_relu6(I->m, id) : nn_relu(I->m, id));
}

int nn_imp_const_scalar(imp *I, const onnx_node *n, size_t k, const char *attr, float dflt,
                        float *out)
{
    const onnx_tensor *t = nn_imp_const(I, n, k);
    if (k < n->n_inputs && n->inputs[k][0] && !t)
        return nn_imp_err(I, n, "input %zu must be a constant", k);
    if (t) {
        const void *d = NULL;
        if (t->count != 1)
            return nn_imp_err(I, n, "input %zu must be one value", k);
        int rc = onnx_tensor_data(I->om, t, ONNX_FLOAT, &d, I->e);
        if (rc)
            return rc;
        *out = *(const float *)d;
        return PT_OK;
    }
    *out = onnx_attr_float(n, attr, dflt);
    return PT_OK;
}

/* ------------------------------------------------------------------------------ */
/* the graph-level forms */

/* Pad: zeros around the spatial axes. None at all (PyTorch writes such a Pad
 * before the AveragePool of AvgPool2d's count_include_pad) is no layer; others wait
 * on the value for the Conv that reads it (in_node_padded). */
static int op_pad(imp *I, const onnx_node *n)
{
    int in, bgr, rc = nn_imp_in_node_bgr(I, n, 0, &in, &bgr);
    if (rc)
        return rc;
    if (strcmp(onnx_attr_string(n, "mode", "constant"), "constant") != 0)
        return nn_imp_err(I, n, "only mode 'constant' is supported");
    if (n->n_inputs > 3 && n->inputs[3][0])
        return nn_imp_err(I, n, "the axes input is not supported");
    int64_t p[8];
    if (n->n_inputs > 1 && n->inputs[1][0]) {
        /* Opset 11 on: the pads are an input. */
        const onnx_tensor *t = nn_imp_const(I, n, 1);
        const void *d = NULL;
        if (!t || t->count != 8)
            return nn_imp_err(I, n, "the pads must be a constant of 8 values (N, C, H, W begins, "
                            "then ends)");
        if ((rc = onnx_tensor_data(I->om, t, ONNX_INT64, &d, I->e)) != PT_OK)
            return rc;
        memcpy(p, d, sizeof p);
    } else if ((rc = ints_attr(I, n, "pads", 8, 0, p)) != PT_OK) {
        return rc;
    }
    float value = 0.0f;
    if (n->n_inputs > 2 && n->inputs[2][0]) {
        if ((rc = nn_imp_const_scalar(I, n, 2, "value", 0.0f, &value)) != PT_OK)
            return rc;
    } else {
        value = onnx_attr_float(n, "value", 0.0f);
    }
    if (p[0] || p[1] || p[4] || p[5])
        return nn_imp_err(I, n, "only padding of the spatial axes (H, W) is supported");
    const int64_t sp[4] = { p[2], p[3], p[6], p[7] };
    for (int a = 0; a < 4; a++)
        if (sp[a] < 0 || sp[a] > NN_PAD_LIMIT)
            return nn_imp_err(I, n, "pads of %lld; 0 to %d are supported", (long long)sp[a],
                            NN_PAD_LIMIT);
    if ((sp[0] || sp[1] || sp[2] || sp[3]) && value != 0.0f)
        return nn_imp_err(I, n, "only padding with zeros is supported");
    if ((rc = nn_imp_out_node(I, n, in, 0)) != PT_OK)
        return rc;
    for (int a = 0; a < 4; a++)
        I->v[I->nv - 1].pad[a] = (int)sp[a];
    I->v[I->nv - 1].bgr = bgr;
    return PT_OK;
}

/* A Mul, Add, Sub or Div with a constant operand that no kind took (the Add that is a
 * dense layer's bias is dense's): per-channel constants (nn_import_front.c). */
static int const_binary(imp *I, const onnx_node *n)
{
    int ck = nn_imp_const(I, n, 0) ? 0 : nn_imp_const(I, n, 1) ? 1 : -1;
    if (ck >= 0)
        return nn_imp_const_affine(I, n, (size_t)ck);
    return nn_imp_err(I, n, "%s of two feature maps is not supported; only by a constant",
                      n->op_type);
}

int nn_imp_pass(imp *I, const onnx_node *n)
{
    int in, rc = nn_imp_in_node(I, n, 0, 1, &in);
    if (rc)
        return rc;
    const val *v = nn_imp_find_val(I, n->inputs[0]);
    return nn_imp_out_node(I, n, in, v->flat);
}


static int is_shape_op(const char *op)
{
    return !strcmp(op, "Shape") || !strcmp(op, "Gather") || !strcmp(op, "Unsqueeze") ||
           !strcmp(op, "Squeeze") || !strcmp(op, "Cast");
}

/* Whether op is one of ops (NULL-terminated; NULL: none). */
static int names_op(const char *const *ops, const char *op)
{
    for (size_t k = 0; ops && ops[k]; k++)
        if (!strcmp(ops[k], op))
            return 1;
    return 0;
}

/* The kinds' op types, in table order, each once: the first part of what the error
 * for an unknown operator names as supported. */
static void kinds_ops(char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < NN_OP_COUNT; k++) {
        const char *const *ops = nn_layers[k]->onnx_ops;
        for (size_t j = 0; ops && ops[j]; j++) {
            int seen = 0;
            for (int b = 0; b < k && !seen; b++)
                seen = names_op(nn_layers[b]->onnx_ops, ops[j]);
            for (size_t b = 0; b < j && !seen; b++)
                seen = !strcmp(ops[b], ops[j]);
            int w = seen ? 0 : snprintf(buf + at, size - at, "%s%s", at ? ", " : "", ops[j]);
            if (w > 0 && (size_t)w < size - at)
                at += (size_t)w;
        }
    }
}

/* The error for what the importer does not take ("operator X is not"), naming what it
 * does: the kinds' op types, then the graph-level forms. */
static int unsupported(imp *I, const onnx_node *n, const char *what)
{
    char ops[320];
    kinds_ops(ops, sizeof ops);
    return nn_imp_err(I, n, "%s supported; supported: %s; " GRAPH_FORMS, what, ops);
}

/* The layer kinds that name n's op type, in table order, until one takes it
 * (nn_layer.h); NN_IMP_DECLINE when none does. */
static int map_kind(imp *I, const onnx_node *n)
{
    for (int k = 0; k < NN_OP_COUNT; k++) {
        const nn_layer *kind = nn_layers[k];
        if (!kind->onnx_import || !names_op(kind->onnx_ops, n->op_type))
            continue;
        int rc = kind->onnx_import(I, n);
        if (rc != NN_IMP_DECLINE)
            return rc;
    }
    return NN_IMP_DECLINE;
}

/* Whether the Concat n is part of a Reshape's shape computation. */
static int shape_concat(imp *I, const onnx_node *n)
{
    for (size_t k = 0; k < n->n_inputs; k++) {
        const val *v = nn_imp_find_val(I, n->inputs[k]);
        if (!v || v->kind == V_SHAPE)
            return 1;
    }
    return 0;
}

static int map_node(imp *I, const onnx_node *n)
{
    const char *op = n->op_type;
    if (n->domain[0] && strcmp(n->domain, "ai.onnx") && strcmp(n->domain, "com.microsoft")) {
        char what[160];
        snprintf(what, sizeof what, "operators of domain '%s' are not", n->domain);
        return unsupported(I, n, what);
    }
    if (!strcmp(op, "Constant"))
        return PT_OK; /* read through onnx_find_tensor where used */
    if (!strcmp(op, "Identity") && nn_imp_const(I, n, 0))
        return PT_OK; /* another name for a constant, which onnx_find_tensor knows */
    if (!strcmp(op, "Pad"))
        return op_pad(I, n);
    if (!strcmp(op, "Concat") && shape_concat(I, n))
        return nn_imp_set_val(I, n->outputs[0], V_SHAPE, -1, 0);
    int rc = map_kind(I, n);
    if (rc != NN_IMP_DECLINE)
        return rc;
    if (!strcmp(op, "Mul") || !strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Div"))
        return const_binary(I, n);
    if (!strcmp(op, "Flatten") || !strcmp(op, "Reshape") || nn_imp_is_vector_op(I, n))
        return nn_imp_reshape(I, n);
    if (!strcmp(op, "Transpose"))
        return nn_imp_transpose(I, n);
    if (!strcmp(op, "ReduceMean"))
        return nn_imp_reduce_mean(I, n);
    if (!strcmp(op, "DequantizeLinear") && nn_imp_const(I, n, 0))
        return nn_imp_dequantize(I, n);
    if (!strcmp(op, "Identity") || !strcmp(op, "QuantizeLinear") ||
        !strcmp(op, "DequantizeLinear") || !strcmp(op, "Softmax")) {
        /* Values stay float: quantize/dequantize pairs are where the file's integers
         * were; the layers hold the dequantized weights. Softmax ends a classifier
         * (the library's output is logits). */
        if (!strcmp(op, "Softmax") && onnx_consumers(I->om, n->outputs[0]) > 1)
            return nn_imp_err(I, n, "Softmax is supported only at the graph's end");
        if (op[0] == 'Q' || op[0] == 'D')
            I->quantized |= op[0] == 'Q';
        return nn_imp_pass(I, n);
    }
    if (is_shape_op(op)) {
        /* Shape of a map, or arithmetic on one: only ever feeds a Reshape's shape. */
        return nn_imp_set_val(I, n->outputs[0], V_SHAPE, -1, 0);
    }
    char what[160];
    snprintf(what, sizeof what, "operator %s is not", op);
    return unsupported(I, n, what);
}


/* ------------------------------------------------------------------------------ */

/* The new head after layer feat: global average pooling when feat is a map (the
 * notebooks' GlobalAveragePooling2D, also over a flattened one), dropout, and a dense
 * layer of o->n_classes. Builder errors come back as ids < 0 (finalize reports them). */
static int new_head(imp *I, int feat)
{
    nn_node_info fi = nn_imp_info(I, feat);
    int out = feat;
    if (fi.h * fi.w > 1)
        out = nn_gap(I->m, out);
    if (I->o->dropout > 0)
        out = nn_dropout(I->m, out, I->o->dropout);
    return nn_dense(I->m, out, I->o->n_classes);
}

/* The second pass, after nn_model_finalize(): every filled layer's weights from the
 * file, and its entries in the map. */
static int fill_weights(imp *I)
{
    float *params = nn_params(I->m), *bufs = nn_buffers(I->m);
    int rc = PT_OK;
    for (size_t i = 0; i < I->nf && rc == PT_OK; i++) {
        const fill *f = &I->f[i];
        nn_node_info ni = nn_imp_info(I, f->node);
        float *P = params + ni.param_offset;
        if (f->kind == F_CONV || f->kind == F_QCONV)
            rc = nn_imp_fill_conv(I, f, P);
        else if (f->kind == F_BN)
            rc = nn_imp_fill_bn(I, f, P, bufs + ni.buffer_offset);
        else
            rc = nn_imp_fill_dense(I, f, P);
        if (rc == PT_OK)
            rc = nn_imp_map_add(I, f);
    }
    if (rc == PT_OK)
        nn_model_set_bn_warm_start(I->m, 0); /* its running statistics are trained ones */
    return rc;
}

/* The graph's end: after its classifier's input, a new head (n_classes > 0) or the
 * features themselves; else its output, with a new head after it when asked. */
static int graph_end(imp *I, const onnx_node *cls, nn_import_info *info, int *out)
{
    int rc;
    if (cls) {
        int feat;
        if ((rc = nn_imp_in_node(I, cls, 0, 1, &feat)) != PT_OK)
            return rc;
        nn_node_info fi = nn_imp_info(I, feat);
        info->cut_from = cls->index;
        int k = snprintf(info->cut, sizeof info->cut, "%s '%s' (%d features in)", cls->op_type,
                         cls->name, fi.h * fi.w * fi.c);
        for (size_t i = (size_t)cls->index + 1; i < I->om->n_nodes; i++) {
            if (k < 0 || (size_t)k + 40 > sizeof info->cut)
                break;
            k += snprintf(info->cut + k, sizeof info->cut - (size_t)k, ", %s",
                          I->om->nodes[i].op_type);
        }
        *out = I->o->n_classes > 0 ? new_head(I, feat) : feat;
        info->features = I->o->n_classes == 0;
        info->feature_c = fi.c;
    } else {
        const val *v = I->om->n_outputs ? nn_imp_find_val(I, I->om->outputs[0].name) : NULL;
        if (!v || v->kind != V_NODE) {
            return err_set(I->e, PT_EFORMAT, I->om->path, PT_NO_RECORD, PT_NO_OFFSET,
                           "the graph's output is not a layer's");
        }
        *out = v->node;
        if (I->o->n_classes > 0) {
            nn_node_info fi = nn_imp_info(I, *out);
            snprintf(info->cut, sizeof info->cut, "nothing (the graph has no classifier): the "
                     "head follows its output '%s' (%dx%dx%d)", v->name, fi.h, fi.w, fi.c);
            info->feature_c = fi.c;
            *out = new_head(I, *out);
        }
    }
    return PT_OK;
}

/* The input size to build for (o->h, o->w; 0: the graph's), and why, into info. */
static int pick_size(imp *I, nn_import_opts *o, nn_import_info *info)
{
    nn_import_declared_size(I->om, &info->decl_h, &info->decl_w);
    int dh = info->decl_h, dw = info->decl_w;
    if (o->h > 0 && o->w > 0) {
        if (dh > 0 && (dh != o->h || dw != o->w))
            snprintf(info->size_why, sizeof info->size_why, "as asked; the graph declares "
                     "%dx%d, and builds at %dx%d too (convolutional up to a global pooling)",
                     dh, dw, o->h, o->w);
        else
            snprintf(info->size_why, sizeof info->size_why, "as asked%s",
                     dh > 0 ? ", the size the graph declares" : "");
        return PT_OK;
    }
    if (dh > 0 && dh != dw)
        return err_set(I->e, PT_EUSAGE, I->om->path, PT_NO_RECORD, PT_NO_OFFSET,
                       "the graph declares a %dx%d input and petal-tui feeds square images: "
                       "give --size S to try it at SxS", dh, dw);
    o->h = o->w = dh > 0 ? dh : NN_IMPORT_DEFAULT_SIZE;
    snprintf(info->size_why, sizeof info->size_why, "%s",
             dh > 0 ? "declared by the graph"
                    : "the default: the graph leaves its input size free");
    return PT_OK;
}

/* The import at a size other than the one the graph fixes failed: say that is why. */
static void refuse_size(imp *I, const nn_import_info *info)
{
    char was[sizeof I->e->msg];
    util_copy(was, sizeof was, I->e->msg);
    err_set(I->e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
            "%s: the graph declares its input as %dx%d and cannot run at %dx%d (%s): run it "
            "at its size (leave out --size; to train, --image-size %d)", I->om->path,
            info->decl_h, info->decl_w, I->o->h, I->o->w, was, info->decl_h);
}

/* Asked for the graph's own classifier, a feature extractor is refused. */
static int refuse_features(imp *I, const nn_import_info *info)
{
    const char *why = info->head_why;
    if (info->classifier)
        return PT_OK;
    return err_set(I->e, PT_EUSAGE, I->om->path, PT_NO_RECORD, PT_NO_OFFSET,
                   "a feature extractor, not a classifier (%s): its outputs are features, "
                   "not classes. To classify with it, train a head on it: petal-tui --model "
                   "%s --data DATASET; for its feature vectors: petal-tui predict %s IMAGES "
                   "--features", why, I->om->path, I->om->path);
}

nn_model *nn_import_onnx(const onnx_model *om, const nn_import_opts *o, nn_import_info *info,
                         pt_err *e)
{
    return nn_import_onnx_map(om, o, info, NULL, e);
}

nn_model *nn_import_onnx_map(const onnx_model *om, const nn_import_opts *o,
                             nn_import_info *info, nn_import_map **map, pt_err *e)
{
    imp I = { .om = om, .o = o, .e = e };
    memset(info, 0, sizeof *info);
    if (map) {
        *map = NULL;
        if (!(I.map = nn_imp_map_new())) {
            err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
            return NULL;
        }
    }
    info->onnx_nodes = (int)om->n_nodes;
    I.norm = o->norm;
    snprintf(info->norm_why, sizeof info->norm_why, "as asked");
    if (o->norm_auto)
        I.norm = nn_import_norm_auto(om, info->norm_why, sizeof info->norm_why);
    info->norm = I.norm;
    info->cut_from = -1;
    info->classifier = nn_import_head(om, info->head_why, sizeof info->head_why);
    nn_import_opts oo = *o;
    I.o = &oo;
    int head_refused = 0;
    const onnx_value_info *in = NULL;
    int nhwc = 0, rc = nn_imp_graph_input(&I, &in, &nhwc);
    if (rc == PT_OK)
        rc = pick_size(&I, &oo, info);
    if (rc)
        goto fail;
    I.m = nn_model_new(oo.h, oo.w, 3);
    if (!I.m) {
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        goto fail;
    }
    /* No classifier (a feature extractor, as Keras's include_top=False): the new head
     * goes after the graph's output. */
    const onnx_node *cls = o->n_classes > 0 || (!o->n_classes && o->head == NN_HEAD_FEATURES)
                               ? nn_imp_classifier(om) : NULL;
    if ((rc = nn_imp_first_layer(&I, in)) != PT_OK)
        goto fail;
    I.v[I.nv - 1].nhwc = nhwc;
    for (size_t i = 0; i < om->n_nodes && rc == PT_OK; i++) {
        if (cls && &om->nodes[i] == cls)
            break;
        rc = map_node(&I, &om->nodes[i]);
    }
    /* After the walk, so that what the importer cannot read is said first. */
    if (rc == PT_OK && !o->n_classes && o->head == NN_HEAD_CLASSIFIER)
        head_refused = (rc = refuse_features(&I, info)) != PT_OK;
    if (rc)
        goto fail;
    int out = -1;
    if ((rc = graph_end(&I, cls, info, &out)) != PT_OK)
        goto fail;
    if ((rc = nn_model_finalize(I.m, out, e)) != PT_OK)
        goto fail;
    info->h = oo.h;
    info->w = oo.w;
    nn_model_init_params(I.m, o->seed);
    if (!o->reinit && (rc = fill_weights(&I)) != PT_OK)
        goto fail;
    info->mapped = nn_node_count(I.m);
    info->quantized = I.quantized;
    nn_imp_dq_free(&I);
    free(I.v);
    free(I.f);
    if (map)
        *map = I.map;
    return I.m;
fail:
    if (I.m && !head_refused && rc != PT_ENOMEM && info->decl_h > 0 && (oo.h != info->decl_h || oo.w != info->decl_w))
        refuse_size(&I, info);
    nn_imp_dq_free(&I);
    free(I.v);
    free(I.f);
    nn_import_map_free(I.map);
    nn_model_free(I.m);
    return NULL;
}

nn_model *nn_import_onnx_file(const char *path, const nn_import_opts *o, nn_import_info *info,
                              pt_err *e)
{
    double t0 = util_now();
    onnx_model *om;
    memset(info, 0, sizeof *info);
    if (onnx_load(path, &om, e) != PT_OK)
        return NULL;
    nn_model *m = nn_import_onnx(om, o, info, e);
    onnx_free(om);
    info->seconds = util_now() - t0;
    return m;
}
