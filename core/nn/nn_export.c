/* nn_export — the ONNX writer the layer kinds' onnx_write hooks call (nn_layer.h:
 * nn_onnx_*), and the export itself: plan the folds, run every live node's hook in
 * order, add the front and the outputs, the metadata, and pack it (nn_export.h).
 *
 * Everything the protobuf-c structs point at (names, arrays, tensor bytes, the
 * structs themselves) is a block of the writer's pool, freed in one go at the end, so
 * the hooks never free anything and an error anywhere leaks nothing.
 */
#include "nn/nn_export_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/le.h"
#include "base/util.h"
#include "nn/nn_layer.h"

#define EXPORT_IR_VERSION 8
#define EXPORT_OPSET 13

#ifndef PT_VERSION
#define PT_VERSION "dev"
#endif

/* ---- pool and errors ---------------------------------------------------------------- */

int nn_exw_oom(W *w)
{
    if (!w->err)
        w->err = err_set(w->e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "out of memory while writing the ONNX model");
    return w->err;
}

/* arr with room for n + 1 elements of elem bytes (grown to *cap), or NULL (out of
 * memory: arr is left as it was). */
static void *grow(W *w, void *arr, size_t elem, size_t n, size_t *cap)
{
    if (w->err)
        return NULL;
    if (n < *cap)
        return arr;
    size_t nc = *cap ? 2 * *cap : 64;
    void *q = realloc(arr, nc * elem);
    if (!q) {
        nn_exw_oom(w);
        return NULL;
    }
    *cap = nc;
    return q;
}

void *nn_exw_alloc(W *w, size_t n)
{
    void **b = grow(w, w->blk, sizeof *w->blk, w->n_blk, &w->cap_blk);
    if (!b)
        return NULL;
    w->blk = b;
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        nn_exw_oom(w);
        return NULL;
    }
    w->blk[w->n_blk++] = p;
    return p;
}

char *nn_exw_str(W *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? nn_exw_alloc(w, (size_t)n + 1) : NULL;
    if (s) {
        va_start(ap, fmt);
        vsnprintf(s, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return s;
}

int nn_onnx_refuse(W *w, int node, const char *fmt, ...)
{
    if (w->err)
        return w->err;
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    w->err = err_set(w->e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                     "cannot export the model to ONNX: node %d (%s): %s", node,
                     nn_op_name(w->m->nodes[node].op), why);
    return w->err;
}

int nn_onnx_status(const W *w)
{
    return w->err;
}

float *nn_onnx_scratch(W *w, size_t count)
{
    return nn_exw_alloc(w, count * sizeof(float));
}

/* ---- values ------------------------------------------------------------------------- */

/* What a graph's names start with: "" in a model's own export. */
static const char *pfx(const W *w)
{
    return w->prefix ? w->prefix : "";
}

static const char *logits_name(const W *w)
{
    return w->logits ? w->logits : "logits";
}

const char *nn_onnx_input(W *w)
{
    return w->input ? w->input : "image";
}

static const char *base_name(W *w, int node)
{
    return nn_exw_str(w, "%s%s%d", pfx(w), nn_op_name(w->m->nodes[node].op), node);
}

const char *nn_onnx_out(W *w, int node, int rank)
{
    const char *name = node == w->m->out && rank == 2 ? logits_name(w) : base_name(w, node);
    if (!name)
        return NULL;
    w->v[node] = (wval){ .name = name, .rank = rank, .owner = node };
    return name;
}

const char *nn_onnx_tmp(W *w, int node, const char *suffix)
{
    return nn_exw_str(w, "%s%s%d.%s", pfx(w), nn_op_name(w->m->nodes[node].op), node, suffix);
}

void nn_onnx_same(W *w, int node, int other)
{
    w->v[node] = w->v[other];
}

int nn_onnx_fold_next(const W *w, int node)
{
    return w->fold_next[node];
}

int nn_onnx_fold_prev(const W *w, int node)
{
    return w->fold_prev[node];
}

Pt__Onnx__TensorProto *nn_exw_tensor(W *w, const char *name, int rank, const int64_t *dims)
{
    Pt__Onnx__TensorProto *t = nn_exw_alloc(w, sizeof *t);
    int64_t *d = nn_exw_alloc(w, (size_t)(rank > 0 ? rank : 1) * sizeof *d);
    Pt__Onnx__TensorProto **ts = grow(w, w->inits, sizeof *w->inits, w->n_inits, &w->cap_inits);
    if (!t || !d || !name || !ts)
        return NULL;
    w->inits = ts;
    pt__onnx__tensor_proto__init(t);
    if (rank > 0)
        memcpy(d, dims, (size_t)rank * sizeof *d);
    t->name = (char *)name;
    t->n_dims = (size_t)rank;
    t->dims = d;
    t->has_data_type = 1;
    w->inits[w->n_inits++] = t;
    return t;
}

static size_t dims_count(int rank, const int64_t *dims)
{
    size_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= (size_t)dims[k];
    return n;
}

const char *nn_onnx_const(W *w, int node, const char *suffix, int rank, const int64_t *dims,
                          const float *data)
{
    const char *name = nn_onnx_tmp(w, node, suffix);
    Pt__Onnx__TensorProto *t = nn_exw_tensor(w, name, rank, dims);
    size_t n = dims_count(rank, dims);
    uint8_t *raw = nn_exw_alloc(w, 4 * n);
    if (!t || !raw)
        return NULL;
    /* raw_data is little-endian whatever the host. */
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &data[i], 4);
        le_put_u32(raw + 4 * i, u);
    }
    t->data_type = 1; /* FLOAT */
    t->has_raw_data = 1;
    t->raw_data.len = 4 * n;
    t->raw_data.data = raw;
    return name;
}

const char *nn_onnx_const_int(W *w, int node, const char *suffix, int dtype, int rank,
                              const int64_t *dims, const int32_t *data)
{
    const char *name = nn_onnx_tmp(w, node, suffix);
    Pt__Onnx__TensorProto *t = nn_exw_tensor(w, name, rank, dims);
    size_t n = dims_count(rank, dims), es = dtype == 6 ? 4 : 1; /* INT32, else (U)INT8 */
    uint8_t *raw = nn_exw_alloc(w, es * n);
    if (!t || !raw)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (es == 4)
            le_put_u32(raw + 4 * i, (uint32_t)data[i]);
        else
            raw[i] = (uint8_t)data[i]; /* int8's two's complement, or uint8 */
    }
    t->data_type = dtype;
    t->has_raw_data = 1;
    t->raw_data.len = es * n;
    t->raw_data.data = raw;
    return name;
}

const char *nn_exw_i64(W *w, const char *name, int n, const int64_t *v)
{
    int64_t dims[1] = { n };
    Pt__Onnx__TensorProto *t = nn_exw_tensor(w, name, 1, dims);
    uint8_t *raw = nn_exw_alloc(w, 8 * (size_t)n);
    if (!t || !raw)
        return NULL;
    for (int i = 0; i < n; i++)
        le_put_u64(raw + 8 * i, (uint64_t)v[i]);
    t->data_type = 7; /* INT64 */
    t->has_raw_data = 1;
    t->raw_data.len = 8 * (size_t)n;
    t->raw_data.data = raw;
    return name;
}

int nn_onnx_op(W *w, const char *op, int n_in, const char *const *in, const char *out)
{
    Pt__Onnx__NodeProto *nd = nn_exw_alloc(w, sizeof *nd);
    char **ins = nn_exw_alloc(w, (size_t)(n_in > 0 ? n_in : 1) * sizeof *ins);
    char **outs = nn_exw_alloc(w, sizeof *outs);
    Pt__Onnx__AttributeProto **at = nn_exw_alloc(w, ATTR_MAX * sizeof *at);
    Pt__Onnx__NodeProto **ns = grow(w, w->nodes, sizeof *w->nodes, w->n_nodes, &w->cap_nodes);
    if (!nd || !ins || !outs || !at || !out || !ns)
        return w->err ? w->err : nn_exw_oom(w);
    w->nodes = ns;
    pt__onnx__node_proto__init(nd);
    for (int k = 0; k < n_in; k++) {
        if (!in[k])
            return w->err ? w->err : nn_exw_oom(w);
        ins[k] = (char *)in[k];
    }
    outs[0] = (char *)out;
    nd->n_input = (size_t)n_in;
    nd->input = ins;
    nd->n_output = 1;
    nd->output = outs;
    nd->name = (char *)out;
    nd->op_type = (char *)op;
    nd->attribute = at;
    w->nodes[w->n_nodes++] = nd;
    w->last = nd;
    return PT_OK;
}

static Pt__Onnx__AttributeProto *new_attr(W *w, const char *name, int type)
{
    Pt__Onnx__NodeProto *nd = w->last;
    if (w->err || !nd)
        return NULL;
    if (nd->n_attribute == ATTR_MAX) {
        nn_onnx_refuse(w, 0, "internal: more than %d attributes on %s", ATTR_MAX, nd->name);
        return NULL;
    }
    Pt__Onnx__AttributeProto *a = nn_exw_alloc(w, sizeof *a);
    if (!a)
        return NULL;
    pt__onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = type;
    nd->attribute[nd->n_attribute++] = a;
    return a;
}

void nn_onnx_attr_int(W *w, const char *name, int64_t v)
{
    Pt__Onnx__AttributeProto *a = new_attr(w, name, 2);
    if (a) {
        a->has_i = 1;
        a->i = v;
    }
}

void nn_onnx_attr_ints(W *w, const char *name, int n, const int64_t *v)
{
    Pt__Onnx__AttributeProto *a = new_attr(w, name, 7);
    int64_t *c = nn_exw_alloc(w, (size_t)n * sizeof *c);
    if (a && c) {
        memcpy(c, v, (size_t)n * sizeof *c);
        a->n_ints = (size_t)n;
        a->ints = c;
    }
}

void nn_exw_attr_str(W *w, const char *name, const char *v)
{
    Pt__Onnx__AttributeProto *a = new_attr(w, name, 3);
    if (a) {
        a->has_s = 1;
        a->s.len = strlen(v);
        a->s.data = (uint8_t *)v;
    }
}

void nn_onnx_attr_float(W *w, const char *name, float v)
{
    Pt__Onnx__AttributeProto *a = new_attr(w, name, 1);
    if (a) {
        a->has_f = 1;
        a->f = v;
    }
}

const char *nn_onnx_in(W *w, int node, int k, int rank4)
{
    int src = w->m->nodes[node].in[k];
    if (w->err)
        return NULL;
    if (src < 0 || !w->v[src].name) {
        nn_onnx_refuse(w, node, "internal: input %d has no value yet", k);
        return NULL;
    }
    wval *v = &w->v[w->v[src].owner];
    if (!rank4 || v->rank == 4)
        return w->q ? nn_exq_in(w, node, k, v, 0, v->name) : v->name;
    if (!v->name4) {
        /* [N, C] -> [N, C, 1, 1]: Reshape's 0 keeps N. */
        int64_t shape[4] = { 0, w->m->nodes[v->owner].c, 1, 1 };
        const char *sh = nn_exw_i64(w, nn_onnx_tmp(w, v->owner, "shape4"), 4, shape);
        const char *out = nn_onnx_tmp(w, v->owner, "nchw");
        const char *in[2] = { v->name, sh };
        if (nn_onnx_op(w, "Reshape", 2, in, out))
            return NULL;
        v->name4 = out;
    }
    return w->q ? nn_exq_in(w, node, k, v, 1, v->name4) : v->name4;
}

int nn_onnx_in_rank(const W *w, int node, int k)
{
    int src = w->m->nodes[node].in[k];
    return src >= 0 && w->v[src].name ? w->v[w->v[src].owner].rank : 4;
}

int nn_onnx_simple(W *w, int node, const char *op, int n_in)
{
    int r = nn_onnx_in_rank(w, node, 0);
    if (n_in == 2 && nn_onnx_in_rank(w, node, 1) != r)
        r = 4;
    const char *in[2] = { nn_onnx_in(w, node, 0, r == 4), NULL };
    if (n_in == 2)
        in[1] = nn_onnx_in(w, node, 1, r == 4);
    return nn_onnx_op(w, op, n_in, in, nn_onnx_out(w, node, r));
}

/* ---- the export ----------------------------------------------------------------------- */

/* Which layers fold into the one before them (nn_export.h says why): a BN into the
 * conv it reads when nothing else reads that conv, the affine that alone reads the
 * input into the front's Mul / Add. */
static void plan_folds(W *w)
{
    const nn_model *m = w->m;
    for (int i = 0; i < m->n_nodes; i++)
        w->fold_next[i] = w->fold_prev[i] = -1;
    for (int i = 0; i < m->n_nodes; i++) {
        const nn_node *nd = &m->nodes[i];
        int src = nd->in[0];
        if (!nd->live || src < 0 || m->nodes[src].consumers != 1 || src == m->out)
            continue;
        nn_op so = m->nodes[src].op;
        if ((nd->op == NN_OP_BN && so == NN_OP_CONV) ||
            (nd->op == NN_OP_AFFINE && so == NN_OP_INPUT)) {
            w->fold_next[src] = i;
            w->fold_prev[i] = src;
        }
    }
}

/* What no hook can write, refused before anything is. */
static int check_model(W *w)
{
    const nn_model *m = w->m;
    if (!m->finalized)
        return w->err = err_set(w->e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                                "cannot export a model that is not finalized");
    for (int i = 0; i < m->n_nodes; i++)
        if (m->nodes[i].live && !nn_layers[m->nodes[i].op]->onnx_write)
            return nn_onnx_refuse(w, i, "its kind has no ONNX writer");
    if (m->c != 3)
        return nn_onnx_refuse(w, 0, "the input has %d channels; the export's input is RGB "
                              "(3 channels)", m->c);
    const nn_node *o = &m->nodes[m->out];
    if (o->h * o->w > 1 && o->c > 1)
        return nn_onnx_refuse(w, m->out, "the output is a %dx%dx%d map; logits are a vector "
                              "per image ([N, C]), so the output must be 1x1xC or a dense "
                              "layer's", o->h, o->w, o->c);
    return PT_OK;
}

/* logits: the output node's value as [N, C]. */
static int write_logits(W *w)
{
    const nn_model *m = w->m;
    const wval *v = &w->v[m->out];
    const char *in[1] = { v->name };
    if (v->rank == 4) {
        /* 1x1xC (or HxWx1): NCHW flattening is NHWC's order. */
        if (nn_onnx_op(w, "Flatten", 1, in, logits_name(w)))
            return w->err;
        nn_onnx_attr_int(w, "axis", 1);
    } else if (strcmp(v->name, logits_name(w)) != 0) {
        if (nn_onnx_op(w, "Identity", 1, in, logits_name(w)))
            return w->err;
    }
    return w->err;
}

/* probabilities, the softmax of logits. */
static int write_outputs(W *w)
{
    const char *lg[1] = { "logits" };
    if (nn_onnx_op(w, "Softmax", 1, lg, "probabilities"))
        return w->err;
    nn_onnx_attr_int(w, "axis", 1);
    return w->err;
}

Pt__Onnx__ValueInfoProto *nn_exw_value_info(W *w, const char *name, int rank,
                                            const int64_t *dims)
{
    Pt__Onnx__ValueInfoProto *vi = nn_exw_alloc(w, sizeof *vi);
    Pt__Onnx__TypeProto *tp = nn_exw_alloc(w, sizeof *tp);
    Pt__Onnx__TypeProto__Tensor *tt = nn_exw_alloc(w, sizeof *tt);
    Pt__Onnx__TensorShapeProto *sh = nn_exw_alloc(w, sizeof *sh);
    Pt__Onnx__TensorShapeProto__Dimension **dd = nn_exw_alloc(w, (size_t)rank * sizeof *dd);
    if (!vi || !tp || !tt || !sh || !dd)
        return NULL;
    pt__onnx__value_info_proto__init(vi);
    pt__onnx__type_proto__init(tp);
    pt__onnx__type_proto__tensor__init(tt);
    pt__onnx__tensor_shape_proto__init(sh);
    for (int k = 0; k < rank; k++) {
        Pt__Onnx__TensorShapeProto__Dimension *d = nn_exw_alloc(w, sizeof *d);
        if (!d)
            return NULL;
        pt__onnx__tensor_shape_proto__dimension__init(d);
        if (dims[k] < 0) {
            d->value_case = PT__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = "N";
        } else {
            d->value_case = PT__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[k];
        }
        dd[k] = d;
    }
    sh->n_dim = (size_t)rank;
    sh->dim = dd;
    tt->has_elem_type = 1;
    tt->elem_type = 1; /* FLOAT */
    tt->shape = sh;
    tp->value_case = PT__ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = (char *)name;
    vi->type = tp;
    return vi;
}

/* class_names as a JSON array (the given names, or "class N"). */
static char *class_json(W *w, const nn_export_meta *meta)
{
    json_w j;
    json_init(&j, 0);
    json_arr(&j);
    int k = nn_model_classes(w->m);
    for (int i = 0; i < k; i++) {
        char dflt[32];
        snprintf(dflt, sizeof dflt, "class %d", i);
        json_str(&j, meta && meta->class_names && meta->class_names[i] ? meta->class_names[i]
                                                                        : dflt);
    }
    json_arr_end(&j);
    size_t len;
    char *txt = json_take(&j, &len);
    char *s = txt ? nn_exw_alloc(w, len + 1) : NULL;
    if (s)
        memcpy(s, txt, len + 1);
    else
        nn_exw_oom(w);
    free(txt);
    return s;
}

int nn_exw_prop(W *w, Pt__Onnx__ModelProto *mp, const char *key, const char *value)
{
    Pt__Onnx__StringStringEntryProto *p = nn_exw_alloc(w, sizeof *p);
    if (!p || !value)
        return w->err ? w->err : nn_exw_oom(w);
    pt__onnx__string_string_entry_proto__init(p);
    p->key = (char *)key;
    p->value = (char *)value;
    mp->metadata_props[mp->n_metadata_props++] = p;
    return PT_OK;
}

static int write_meta(W *w, Pt__Onnx__ModelProto *mp, const nn_export_meta *meta, int size)
{
    mp->metadata_props = nn_exw_alloc(w, 8 * sizeof *mp->metadata_props);
    if (!mp->metadata_props)
        return w->err;
    const char *run = meta && meta->source_run ? meta->source_run : "";
    int epoch = meta ? meta->epoch : -1, update = meta ? meta->update : -1;
    nn_exw_prop(w, mp, "class_names", class_json(w, meta));
    nn_exw_prop(w, mp, "image_size", nn_exw_str(w, "%d", size));
    nn_exw_prop(w, mp, "petal_tui_version", PT_VERSION);
    nn_exw_prop(w, mp, "source_run", run);
    nn_exw_prop(w, mp, "epoch", nn_exw_str(w, "%d", epoch));
    nn_exw_prop(w, mp, "update", nn_exw_str(w, "%d", update));
    nn_exw_prop(w, mp, "input", NN_EXPORT_INPUT);
    if (w->q)
        nn_exw_prop(w, mp, "quantization", nn_exq_describe(w));
    mp->doc_string = nn_exw_str(w, "A petal-tui (%s) image classifier. Input 'image': float32 "
                            "[N, 3, %d, %d], " NN_EXPORT_INPUT " to %d x %d; no other "
                            "normalisation (the graph's first nodes do it). Outputs 'logits' "
                            "[N, %d] and 'probabilities' (their softmax) over the classes "
                            "listed in metadata_props class_names.%s",
                            PT_VERSION, size, size, size, size, nn_model_classes(w->m),
                            w->q ? " Quantized to int8 in ONNX's QDQ form: see metadata_props "
                                   "quantization." : "");
    return w->err;
}

static int write_nodes(W *w)
{
    const nn_model *m = w->m;
    for (int i = 0; i < m->n_nodes && !w->err; i++) {
        if (!m->nodes[i].live)
            continue;
        int rc = nn_layers[m->nodes[i].op]->onnx_write(w, m, i);
        if (rc && !w->err)
            w->err = rc;
        if (!w->err && !w->v[i].name)
            nn_onnx_refuse(w, i, "internal: its writer gave it no value");
        if (!w->err && w->q)
            nn_exq_after(w, i);
    }
    return w->err;
}

int nn_exw_pack(W *w, Pt__Onnx__ModelProto *mp, int h, int wd, int k, uint8_t **out,
                size_t *len)
{
    int64_t in_dims[4] = { -1, 3, h, wd }, out_dims[2] = { -1, k };
    Pt__Onnx__GraphProto *g = nn_exw_alloc(w, sizeof *g);
    Pt__Onnx__OperatorSetIdProto *ops = nn_exw_alloc(w, sizeof *ops);
    Pt__Onnx__OperatorSetIdProto **opl = nn_exw_alloc(w, sizeof *opl);
    Pt__Onnx__ValueInfoProto **ins = nn_exw_alloc(w, sizeof *ins);
    Pt__Onnx__ValueInfoProto **outs = nn_exw_alloc(w, 2 * sizeof *outs);
    if (!g || !ops || !opl || !ins || !outs)
        return w->err;
    pt__onnx__graph_proto__init(g);
    pt__onnx__operator_set_id_proto__init(ops);
    ins[0] = nn_exw_value_info(w, "image", 4, in_dims);
    outs[0] = nn_exw_value_info(w, "logits", 2, out_dims);
    outs[1] = nn_exw_value_info(w, "probabilities", 2, out_dims);
    if (w->err)
        return w->err;
    g->name = "petal-tui";
    g->n_node = w->n_nodes;
    g->node = w->nodes;
    g->n_initializer = w->n_inits;
    g->initializer = w->inits;
    g->n_input = 1;
    g->input = ins;
    g->n_output = 2;
    g->output = outs;
    ops->has_version = 1;
    ops->version = EXPORT_OPSET;
    opl[0] = ops;
    mp->has_ir_version = 1;
    mp->ir_version = EXPORT_IR_VERSION;
    mp->producer_name = "petal-tui";
    mp->producer_version = PT_VERSION;
    mp->graph = g;
    mp->n_opset_import = 1;
    mp->opset_import = opl;
    size_t n = pt__onnx__model_proto__get_packed_size(mp);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return nn_exw_oom(w);
    *len = pt__onnx__model_proto__pack(mp, buf);
    *out = buf;
    return PT_OK;
}

/* Assemble and pack the ModelProto around the nodes and initializers written. */
static int pack(W *w, const nn_export_meta *meta, uint8_t **out, size_t *len)
{
    const nn_model *m = w->m;
    int size = meta && meta->image_size > 0 ? meta->image_size : m->h;
    Pt__Onnx__ModelProto *mp = nn_exw_alloc(w, sizeof *mp);
    if (!mp)
        return w->err;
    pt__onnx__model_proto__init(mp);
    if (write_meta(w, mp, meta, size))
        return w->err;
    return nn_exw_pack(w, mp, m->h, m->w, nn_model_classes(m), out, len);
}

int nn_exw_graph(W *w, const nn_model *m)
{
    w->m = m;
    size_t nn = (size_t)(m->n_nodes > 0 ? m->n_nodes : 1);
    w->v = calloc(nn, sizeof *w->v);
    w->fold_next = calloc(nn, sizeof *w->fold_next);
    w->fold_prev = calloc(nn, sizeof *w->fold_prev);
    if (!w->v || !w->fold_next || !w->fold_prev)
        nn_exw_oom(w);
    if (!w->err && !check_model(w)) {
        plan_folds(w);
        if (!write_nodes(w))
            write_logits(w);
    }
    /* The values' names live in the pool: the per-node arrays are this graph's alone. */
    free(w->v);
    free(w->fold_next);
    free(w->fold_prev);
    w->v = NULL;
    w->fold_next = w->fold_prev = NULL;
    return w->err;
}

void nn_exw_free(W *w)
{
    for (size_t i = 0; i < w->n_blk; i++)
        free(w->blk[i]);
    free(w->blk);
    free(w->nodes);
    free(w->inits);
    free(w->v);
    free(w->fold_next);
    free(w->fold_prev);
    free(w->sc);
}

int nn_export_onnx(const nn_model *m, const nn_export_meta *meta, uint8_t **out, size_t *len,
                   pt_err *e)
{
    *out = NULL;
    *len = 0;
    W w = { .m = m, .e = e, .q = meta ? meta->quant : NULL };
    if (meta && meta->image_size > 0 && (meta->image_size != m->h || meta->image_size != m->w))
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "cannot export: image size %d, but the model's input is %dx%d",
                       meta->image_size, m->h, m->w);
    if (!nn_exw_graph(&w, m) && !write_outputs(&w))
        pack(&w, meta, out, len);
    nn_exw_free(&w);
    return w.err;
}

int nn_export_onnx_file(const nn_model *m, const nn_export_meta *meta, const char *path,
                        pt_err *e)
{
    uint8_t *buf;
    size_t len;
    int rc = nn_export_onnx(m, meta, &buf, &len, e);
    if (rc)
        return rc;
    rc = util_write_file_atomic(path, buf, len, e);
    free(buf);
    return rc;
}
