/* onnx_graph — the graph's parts beyond tensors: value infos (type and shape),
 * attributes of every type (tensors through onnx_tensor.c), nodes with their
 * operator-set check and distinct attribute names, the tensor a Constant node
 * defines, and the name index: every value name sorted, with its tensor, value info,
 * producer and consumer count, whose building checks that each name is defined once
 * and before it is read. The lookups on the index are onnx_lookup.c's.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "io/onnx_impl.h"

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Bytes as a NUL-terminated string (attribute strings are `bytes` in ONNX). */
static const char *bytes_copy(ld *L, const ProtobufCBinaryData *b)
{
    char *p = onnx_arena_alloc(L->ar, b->len + 1);
    if (p && b->len)
        memcpy(p, b->data, b->len);
    return p;
}

/* ---- values, attributes, nodes --------------------------------------------------- */

int onnx_read_value_info(ld *L, const Pt__Onnx__ValueInfoProto *vp, onnx_value_info *v,
                         const char *what, size_t idx)
{
    if (!vp->name || !*vp->name)
        return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s %zu has no name", what, idx);
    v->name = onnx_str_copy(L, vp->name);
    if (!v->name)
        return onnx_oom(L);
    v->rank = -1;
    const Pt__Onnx__TypeProto *tp = vp->type;
    if (!tp || tp->value_case != PT__ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return PT_OK;
    const Pt__Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    v->elem_type = tt->has_elem_type ? tt->elem_type : 0;
    if (!tt->shape)
        return PT_OK;
    size_t rank = tt->shape->n_dim;
    if (rank > ONNX_MAX_RANK)
        return onnx_fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%s '%s' has %zu dims; petal-tui reads at "
                         "most %d", what, v->name, rank, ONNX_MAX_RANK);
    int64_t *dims = onnx_arena_alloc(L->ar, rank * sizeof *dims);
    const char **params = onnx_arena_alloc(L->ar, rank * sizeof *params);
    if (!dims || !params)
        return onnx_oom(L);
    for (size_t i = 0; i < rank; i++) {
        const Pt__Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        dims[i] = -1;
        params[i] = "";
        if (d->value_case == PT__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0)
                return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s '%s': dim %zu is %lld "
                                 "(negative)", what, v->name, i, (long long)d->dim_value);
            if (d->dim_value > ONNX_MAX_ELEMS)
                return onnx_fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%s '%s': dim %zu is %lld, beyond "
                                 "the limit of %lld", what, v->name, i, (long long)d->dim_value,
                                 (long long)ONNX_MAX_ELEMS);
            dims[i] = d->dim_value;
        } else if (d->value_case == PT__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            if (!(params[i] = onnx_str_copy(L, d->dim_param)))
                return onnx_oom(L);
        }
    }
    v->rank = (int)rank;
    v->dims = dims;
    v->dim_params = params;
    return PT_OK;
}

static int read_attr(ld *L, const Pt__Onnx__AttributeProto *ap, onnx_attr *a, const char *where)
{
    a->name = onnx_str_copy(L, ap->name);
    if (!a->name)
        return onnx_oom(L);
    if (ap->has_type) {
        a->type = ap->type;
    } else {
        /* IR version 1 had no type field: the value present says it. */
        a->type = ap->has_f ? ONNX_ATTR_FLOAT : ap->has_i ? ONNX_ATTR_INT
                : ap->has_s ? ONNX_ATTR_STRING : ap->t ? ONNX_ATTR_TENSOR
                : ap->n_floats ? ONNX_ATTR_FLOATS : ap->n_ints ? ONNX_ATTR_INTS
                : ap->n_strings ? ONNX_ATTR_STRINGS : ap->n_tensors ? ONNX_ATTR_TENSORS
                : ONNX_ATTR_UNDEFINED;
    }
    char ctx[700];
    util_fmt(ctx, sizeof ctx, "%s: attribute '%s': ", where, a->name);
    switch (a->type) {
    case ONNX_ATTR_FLOAT:
        a->f = ap->f;
        break;
    case ONNX_ATTR_INT:
        a->i = ap->i;
        break;
    case ONNX_ATTR_STRING:
        if (!(a->s = bytes_copy(L, &ap->s)))
            return onnx_oom(L);
        a->s_len = ap->s.len;
        break;
    case ONNX_ATTR_TENSOR: {
        if (!ap->t)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: attribute '%s' is TENSOR but holds "
                             "no tensor", where, a->name);
        onnx_tensor *t = onnx_arena_alloc(L->ar, sizeof *t);
        if (!t)
            return onnx_oom(L);
        int rc = onnx_read_tensor(L, ap->t, t, ctx);
        if (rc)
            return rc;
        a->t = t;
        break;
    }
    case ONNX_ATTR_FLOATS: {
        float *f = onnx_arena_alloc(L->ar, ap->n_floats * sizeof *f);
        if (!f)
            return onnx_oom(L);
        if (ap->n_floats)
            memcpy(f, ap->floats, ap->n_floats * sizeof *f);
        a->floats = f;
        a->n = ap->n_floats;
        break;
    }
    case ONNX_ATTR_INTS: {
        int64_t *v = onnx_arena_alloc(L->ar, ap->n_ints * sizeof *v);
        if (!v)
            return onnx_oom(L);
        if (ap->n_ints)
            memcpy(v, ap->ints, ap->n_ints * sizeof *v);
        a->ints = v;
        a->n = ap->n_ints;
        break;
    }
    case ONNX_ATTR_STRINGS: {
        const char **s = onnx_arena_alloc(L->ar, ap->n_strings * sizeof *s);
        if (!s)
            return onnx_oom(L);
        for (size_t i = 0; i < ap->n_strings; i++)
            if (!(s[i] = bytes_copy(L, &ap->strings[i])))
                return onnx_oom(L);
        a->strings = s;
        a->n = ap->n_strings;
        break;
    }
    case ONNX_ATTR_TENSORS: {
        onnx_tensor *t = onnx_arena_alloc(L->ar, ap->n_tensors * sizeof *t);
        if (!t)
            return onnx_oom(L);
        for (size_t i = 0; i < ap->n_tensors; i++) {
            int rc = onnx_read_tensor(L, ap->tensors[i], &t[i], ctx);
            if (rc)
                return rc;
        }
        a->tensors = t;
        a->n = ap->n_tensors;
        break;
    }
    default:
        /* GRAPH(S), SPARSE_TENSOR(S), UNDEFINED and types newer than this reader: kept
         * by name and type only; the mapper refuses what it needs and lacks. */
        break;
    }
    return PT_OK;
}

int onnx_cmp_opset(const void *a, const void *b)
{
    return strcmp(((const onnx_opset *)a)->domain, ((const onnx_opset *)b)->domain);
}

/* Whether the model imports domain; L->domains is the opsets sorted by domain, so
 * a file with many imports and many nodes costs n log n, not n^2. */
static int opset_known(const ld *L, const char *domain)
{
    onnx_opset key = { .domain = domain };
    return bsearch(&key, L->domains, L->n_domains, sizeof key, onnx_cmp_opset) != NULL;
}

int onnx_read_node(ld *L, const Pt__Onnx__NodeProto *np, int index, onnx_node *n)
{
    char where[600];
    onnx_node_where(where, sizeof where, index, np->name, np->op_type);
    n->index = index;
    if (!np->op_type || !*np->op_type)
        return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s has no op_type", where);
    n->name = onnx_str_copy(L, np->name);
    n->op_type = onnx_str_copy(L, np->op_type);
    n->domain = onnx_str_copy(L, onnx_norm_domain(np->domain));
    if (!n->name || !n->op_type || !n->domain)
        return onnx_oom(L);
    if (!opset_known(L, n->domain))
        return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s is in domain '%s', which the model does "
                         "not import (no opset_import for it)", where, n->domain);

    const char **in = onnx_arena_alloc(L->ar, np->n_input * sizeof *in);
    const char **out = onnx_arena_alloc(L->ar, np->n_output * sizeof *out);
    onnx_attr *attrs = onnx_arena_alloc(L->ar, np->n_attribute * sizeof *attrs);
    if (!in || !out || !attrs)
        return onnx_oom(L);
    for (size_t i = 0; i < np->n_input; i++)
        if (!(in[i] = onnx_str_copy(L, np->input[i])))
            return onnx_oom(L);
    for (size_t i = 0; i < np->n_output; i++)
        if (!(out[i] = onnx_str_copy(L, np->output[i])))
            return onnx_oom(L);
    n->inputs = in;
    n->n_inputs = np->n_input;
    n->outputs = out;
    n->n_outputs = np->n_output;

    for (size_t i = 0; i < np->n_attribute; i++) {
        const Pt__Onnx__AttributeProto *ap = np->attribute[i];
        if (!ap->name || !*ap->name)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: attribute %zu has no name",
                             where, i);
        int rc = read_attr(L, ap, &attrs[i], where);
        if (rc)
            return rc;
    }
    n->attrs = attrs;
    n->n_attrs = np->n_attribute;
    /* Names must be distinct (onnx_attr_find() returns the first). Sorted, so a
     * node with very many attributes costs n log n. */
    if (n->n_attrs > 1) {
        const char **names = malloc(n->n_attrs * sizeof *names);
        if (!names)
            return onnx_oom(L);
        for (size_t i = 0; i < n->n_attrs; i++)
            names[i] = attrs[i].name;
        qsort(names, n->n_attrs, sizeof *names, cmp_str_ptr);
        for (size_t i = 1; i < n->n_attrs; i++)
            if (strcmp(names[i - 1], names[i]) == 0) {
                int rc = onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: attribute '%s' is given "
                                   "twice", where, names[i]);
                free(names);
                return rc;
            }
        free(names);
    }
    return PT_OK;
}

/* A Constant's output as a tensor named after it: from `value` (sharing the
 * attribute tensor's dims and data), or built from value_float(s)/value_int(s).
 * NULL (no error) for the other forms (strings, sparse), which the mapper refuses. */
static int constant_tensor(ld *L, const onnx_node *n, const onnx_tensor **out)
{
    *out = NULL;
    if (n->n_outputs < 1 || !*n->outputs[0])
        return PT_OK;
    const onnx_attr *a;
    onnx_tensor *t = onnx_arena_alloc(L->ar, sizeof *t);
    if (!t)
        return onnx_oom(L);
    if ((a = onnx_attr_find(n, "value")) && a->type == ONNX_ATTR_TENSOR) {
        *t = *a->t;
    } else if ((a = onnx_attr_find(n, "value_float")) && a->type == ONNX_ATTR_FLOAT) {
        float *f = onnx_arena_alloc(L->ar, sizeof *f);
        if (!f)
            return onnx_oom(L);
        *f = a->f;
        *t = (onnx_tensor){ .dtype = ONNX_FLOAT, .rank = 0, .count = 1, .data = f };
    } else if ((a = onnx_attr_find(n, "value_int")) && a->type == ONNX_ATTR_INT) {
        int64_t *v = onnx_arena_alloc(L->ar, sizeof *v);
        if (!v)
            return onnx_oom(L);
        *v = a->i;
        *t = (onnx_tensor){ .dtype = ONNX_INT64, .rank = 0, .count = 1, .data = v };
    } else if (((a = onnx_attr_find(n, "value_floats")) && a->type == ONNX_ATTR_FLOATS) ||
               ((a = onnx_attr_find(n, "value_ints")) && a->type == ONNX_ATTR_INTS)) {
        int64_t *d = onnx_arena_alloc(L->ar, sizeof *d);
        if (!d)
            return onnx_oom(L);
        *d = (int64_t)a->n;
        int fl = a->type == ONNX_ATTR_FLOATS;
        *t = (onnx_tensor){ .dtype = fl ? ONNX_FLOAT : ONNX_INT64, .rank = 1, .dims = d,
                            .count = (int64_t)a->n };
        /* The attribute's arrays are never NULL (arena blocks even when empty). */
        t->data = fl ? (const void *)a->floats : (const void *)a->ints;
    } else {
        return PT_OK;
    }
    t->name = n->outputs[0];
    *out = t;
    return PT_OK;
}

/* ---- the graph's names ------------------------------------------------------------ */

static int cmp_slot_name(const void *key, const void *s)
{
    return strcmp((const char *)key, ((const slot *)s)->name);
}

slot *onnx_ix_find(const onnx_index *ix, const char *name)
{
    if (!ix || !ix->n || !name || !*name)
        return NULL;
    return bsearch(name, ix->slots, ix->n, sizeof *ix->slots, cmp_slot_name);
}

/* Every name the graph mentions, sorted and made unique, as the index's slots (with
 * no producer yet). Each is a separate string in the file, so the count of names,
 * repeats included, is bounded by the file's size. */
static int index_names(ld *L)
{
    onnx_model *m = L->m;
    onnx_index *ix = m->index;
    size_t total = m->n_initializers + m->n_inputs + m->n_outputs + m->n_value_info;
    for (size_t i = 0; i < m->n_nodes; i++)
        total += m->nodes[i].n_inputs + m->nodes[i].n_outputs;
    if (total > SIZE_MAX / sizeof(slot))
        return onnx_oom(L);
    const char **all = malloc((total ? total : 1) * sizeof *all);
    if (!all)
        return onnx_oom(L);
    size_t nall = 0;
    for (size_t i = 0; i < m->n_initializers; i++)
        all[nall++] = m->initializers[i].name;
    for (size_t i = 0; i < m->n_inputs; i++)
        all[nall++] = m->inputs[i].name;
    for (size_t i = 0; i < m->n_outputs; i++)
        all[nall++] = m->outputs[i].name;
    for (size_t i = 0; i < m->n_value_info; i++)
        all[nall++] = m->value_info[i].name;
    for (size_t i = 0; i < m->n_nodes; i++) {
        for (size_t j = 0; j < m->nodes[i].n_inputs; j++)
            all[nall++] = m->nodes[i].inputs[j];
        for (size_t j = 0; j < m->nodes[i].n_outputs; j++)
            all[nall++] = m->nodes[i].outputs[j];
    }
    qsort(all, nall, sizeof *all, cmp_str_ptr);
    ix->slots = onnx_arena_alloc(L->ar, nall * sizeof *ix->slots);
    if (!ix->slots) {
        free(all);
        return onnx_oom(L);
    }
    for (size_t i = 0; i < nall; i++) {
        if (!*all[i] || (ix->n && strcmp(ix->slots[ix->n - 1].name, all[i]) == 0))
            continue; /* "" (an absent optional) is no value */
        ix->slots[ix->n].name = all[i];
        ix->slots[ix->n].producer = -1;
        ix->n++;
    }
    free(all);
    return PT_OK;
}

/* Initializers and graph inputs: defined before any node runs, each once. */
static int index_graph_inputs(ld *L)
{
    onnx_model *m = L->m;
    onnx_index *ix = m->index;
    for (size_t i = 0; i < m->n_initializers; i++) {
        const onnx_tensor *t = &m->initializers[i];
        if (!*t->name)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "initializer %zu has no name", i);
        slot *s = onnx_ix_find(ix, t->name);
        if (s->tensor)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "initializer '%s' appears twice",
                             t->name);
        s->tensor = t;
        s->defined = 1;
    }
    for (size_t i = 0; i < m->n_inputs; i++) {
        const onnx_value_info *v = &m->inputs[i];
        slot *s = onnx_ix_find(ix, v->name);
        if (s->info)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "graph input '%s' appears twice",
                             v->name);
        s->info = v;
        s->defined = 1;
    }
    return PT_OK;
}

/* Node i reads only names already defined and defines its outputs, each once. */
static int index_node_values(ld *L, size_t i)
{
    onnx_model *m = L->m;
    onnx_index *ix = m->index;
    const onnx_node *n = &m->nodes[i];
    char where[600];
    onnx_node_where(where, sizeof where, n->index, n->name, n->op_type);
    for (size_t k = 0; k < n->n_inputs; k++) {
        if (!*n->inputs[k])
            continue;
        slot *s = onnx_ix_find(ix, n->inputs[k]);
        if (!s->defined)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: input '%s' is not a graph "
                             "input, an initializer or the output of an earlier node",
                             where, n->inputs[k]);
        s->consumers++;
    }
    for (size_t k = 0; k < n->n_outputs; k++) {
        if (!*n->outputs[k])
            continue;
        slot *s = onnx_ix_find(ix, n->outputs[k]);
        if (s->producer >= 0) {
            const onnx_node *p = &m->nodes[s->producer];
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: output '%s' is already the "
                             "output of node %d '%s' (%s)", where, n->outputs[k], p->index,
                             p->name, p->op_type);
        }
        if (s->defined)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: output '%s' is already a graph "
                             "input or an initializer", where, n->outputs[k]);
        s->producer = (int)i;
        s->defined = 1;
    }
    return PT_OK;
}

/* The tensor node n's output stands for, where it is a constant: a Constant's value,
 * or an Identity of a tensor. */
static int index_node_tensor(ld *L, const onnx_node *n)
{
    onnx_index *ix = L->m->index;
    if (strcmp(n->op_type, "Constant") == 0 && !*n->domain) {
        const onnx_tensor *t;
        int rc = constant_tensor(L, n, &t);
        if (rc)
            return rc;
        if (t)
            onnx_ix_find(ix, t->name)->tensor = t;
    }
    /* PyTorch's exporter writes one initializer for equal constants (say the
     * zero biases of several layers) and an Identity per other user: the
     * Identity's output is that same tensor, under the initializer's name. Nodes
     * come in topological order, so a chain of them resolves here too. */
    if (strcmp(n->op_type, "Identity") == 0 && !*n->domain && n->n_inputs >= 1 &&
        n->n_outputs >= 1 && *n->outputs[0]) {
        const slot *src = onnx_ix_find(ix, n->inputs[0]);
        if (src && src->tensor)
            onnx_ix_find(ix, n->outputs[0])->tensor = src->tensor;
    }
    return PT_OK;
}

/* Graph outputs must be defined by now; value infos annotate what they name. */
static int index_graph_outputs(ld *L)
{
    onnx_model *m = L->m;
    onnx_index *ix = m->index;
    for (size_t i = 0; i < m->n_outputs; i++) {
        const onnx_value_info *v = &m->outputs[i];
        slot *s = onnx_ix_find(ix, v->name);
        if (!s->defined)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "graph output '%s' is not a graph "
                             "input, an initializer or any node's output", v->name);
        s->consumers++;
        if (!s->info)
            s->info = v;
    }
    /* value_info only annotates; a stale entry for a name nothing defines is harmless. */
    for (size_t i = 0; i < m->n_value_info; i++) {
        slot *s = onnx_ix_find(ix, m->value_info[i].name);
        if (!s->info)
            s->info = &m->value_info[i];
    }
    return PT_OK;
}

int onnx_build_index(ld *L)
{
    int rc = index_names(L);
    if (rc == PT_OK)
        rc = index_graph_inputs(L);
    for (size_t i = 0; i < L->m->n_nodes && rc == PT_OK; i++) {
        rc = index_node_values(L, i);
        if (rc == PT_OK)
            rc = index_node_tensor(L, &L->m->nodes[i]);
    }
    if (rc == PT_OK)
        rc = index_graph_outputs(L);
    return rc;
}
