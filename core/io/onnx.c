/* onnx — loading: the arena everything a model hands out comes from, the loading
 * context's errors and string copies, reading a ModelProto that protobuf-c has
 * unpacked into the model (header fields, opsets, the graph's lists, in the order the
 * checks need them), and the public onnx_load(), onnx_load_mem() and onnx_free(). The
 * framing walk before protobuf-c is onnx_wire.c's; tensors are onnx_tensor.c's;
 * values, nodes and the name index are onnx_graph.c's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "io/onnx_impl.h"

/* ---- arena ----------------------------------------------------------------------
 * Everything a model hands out comes from one arena, so the view can be all
 * const pointers and onnx_free() needs no walk over it; a failed load frees it
 * the same way. Big blocks (tensor data) get a chunk of their own. */

#define ARENA_CHUNK (64 * 1024)
#define ARENA_ALIGN _Alignof(max_align_t)

struct chunk {
    struct chunk *next;
    size_t used, cap;
    max_align_t data[];
};

void *onnx_arena_alloc(arena *a, size_t n)
{
    if (n > SIZE_MAX / 2)
        return NULL;
    n = (n + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (n == 0)
        n = ARENA_ALIGN;
    chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;
        chunk *nc = malloc(sizeof *nc + cap);
        if (!nc)
            return NULL;
        nc->used = 0;
        nc->cap = cap;
        if (cap == n && c) {
            /* A block of its own goes behind the head, which keeps its free room. */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            a->head = nc;
        }
        c = nc;
    }
    void *p = (unsigned char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

static void arena_free(arena *a)
{
    for (chunk *c = a->head; c;) {
        chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
}

/* ---- loading context and errors -------------------------------------------------- */

int onnx_fail(ld *L, int code, long long offset, const char *fmt, ...)
{
    char what[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return err_set(L->e, code, L->file, PT_NO_RECORD, offset, "%s", what);
}

int onnx_oom(ld *L)
{
    return onnx_fail(L, PT_ENOMEM, PT_NO_OFFSET, "out of memory while reading the model");
}

/* "node 12 'conv1' (Conv)", for messages. */
void onnx_node_where(char *buf, size_t n, int index, const char *name, const char *op)
{
    util_fmt(buf, n, "node %d '%s' (%s)", index, name ? name : "", op && *op ? op : "no op_type");
}

const char *onnx_str_copy(ld *L, const char *s)
{
    if (!s || !*s)
        return "";
    size_t n = strlen(s);
    char *p = onnx_arena_alloc(L->ar, n + 1);
    if (p)
        memcpy(p, s, n + 1);
    return p;
}

const char *onnx_norm_domain(const char *d)
{
    /* "ai.onnx" and "" are the same operator set; one spelling makes checks simple. */
    if (!d || !*d || strcmp(d, "ai.onnx") == 0)
        return "";
    return d;
}

/* ---- the model -------------------------------------------------------------------- */

/* metadata_props: the key / value pairs, as strings of the arena. */
static int read_props(ld *L, const Pt__Onnx__ModelProto *mp)
{
    onnx_model *m = L->m;
    size_t n = mp->n_metadata_props;
    const char **keys = onnx_arena_alloc(L->ar, n * sizeof *keys);
    const char **vals = onnx_arena_alloc(L->ar, n * sizeof *vals);
    if (!keys || !vals)
        return onnx_oom(L);
    for (size_t i = 0; i < n; i++) {
        const Pt__Onnx__StringStringEntryProto *p = mp->metadata_props[i];
        keys[i] = onnx_str_copy(L, p->key);
        vals[i] = onnx_str_copy(L, p->value);
        if (!keys[i] || !vals[i])
            return onnx_oom(L);
    }
    m->prop_keys = keys;
    m->prop_values = vals;
    m->n_props = n;
    return PT_OK;
}

static int read_model(ld *L, const Pt__Onnx__ModelProto *mp)
{
    onnx_model *m = L->m;
    int rc;
    if (!mp->has_ir_version || mp->ir_version < 1)
        return onnx_fail(L, PT_EPARSE, PT_NO_OFFSET,
                         "not an ONNX model: a protobuf message with no ir_version");
    if (!mp->graph)
        return onnx_fail(L, PT_EPARSE, PT_NO_OFFSET, "not an ONNX model: a protobuf message with "
                         "no graph (ModelProto field 7)");
    if (mp->n_opset_import == 0)
        return onnx_fail(L, PT_EPARSE, PT_NO_OFFSET, "the model imports no operator set "
                         "(ModelProto.opset_import is empty); the file may be cut short");
    m->ir_version = mp->ir_version;
    m->model_version = mp->has_model_version ? mp->model_version : 0;
    m->producer_name = onnx_str_copy(L, mp->producer_name);
    m->producer_version = onnx_str_copy(L, mp->producer_version);
    m->domain = onnx_str_copy(L, mp->domain);
    m->doc_string = onnx_str_copy(L, mp->doc_string);
    if (!m->producer_name || !m->producer_version || !m->domain || !m->doc_string)
        return onnx_oom(L);
    if ((rc = read_props(L, mp)) != PT_OK)
        return rc;

    onnx_opset *ops = onnx_arena_alloc(L->ar, mp->n_opset_import * sizeof *ops);
    if (!ops)
        return onnx_oom(L);
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Pt__Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (!(ops[i].domain = onnx_str_copy(L, onnx_norm_domain(o->domain))))
            return onnx_oom(L);
        if (!o->has_version || o->version < 1)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "opset_import %zu (domain '%s') has no "
                             "valid version", i, ops[i].domain);
        ops[i].version = o->version;
        /* Nodes bind to the highest version imported for their domain. */
        if (!*ops[i].domain && o->version > m->opset)
            m->opset = o->version;
    }
    m->opsets = ops;
    m->n_opsets = mp->n_opset_import;
    L->domains = onnx_arena_alloc(L->ar, m->n_opsets * sizeof *L->domains);
    if (!L->domains)
        return onnx_oom(L);
    memcpy(L->domains, ops, m->n_opsets * sizeof *ops);
    qsort(L->domains, m->n_opsets, sizeof *L->domains, onnx_cmp_opset);
    L->n_domains = m->n_opsets;

    const Pt__Onnx__GraphProto *g = mp->graph;
    /* Node indices are ints in the view. */
    if (g->n_node > (size_t)1 << 30)
        return onnx_fail(L, PT_ETOOBIG, PT_NO_OFFSET, "the graph has %zu nodes", g->n_node);
    if (!(m->graph_name = onnx_str_copy(L, g->name)))
        return onnx_oom(L);

    onnx_tensor *inits = onnx_arena_alloc(L->ar, g->n_initializer * sizeof *inits);
    onnx_value_info *ins = onnx_arena_alloc(L->ar, g->n_input * sizeof *ins);
    onnx_value_info *outs = onnx_arena_alloc(L->ar, g->n_output * sizeof *outs);
    onnx_value_info *vis = onnx_arena_alloc(L->ar, g->n_value_info * sizeof *vis);
    onnx_node *nodes = onnx_arena_alloc(L->ar, g->n_node * sizeof *nodes);
    if (!inits || !ins || !outs || !vis || !nodes)
        return onnx_oom(L);
    for (size_t i = 0; i < g->n_initializer; i++)
        if ((rc = onnx_read_tensor(L, g->initializer[i], &inits[i], "")))
            return rc;
    for (size_t i = 0; i < g->n_input; i++)
        if ((rc = onnx_read_value_info(L, g->input[i], &ins[i], "graph input", i)))
            return rc;
    for (size_t i = 0; i < g->n_output; i++)
        if ((rc = onnx_read_value_info(L, g->output[i], &outs[i], "graph output", i)))
            return rc;
    for (size_t i = 0; i < g->n_value_info; i++)
        if ((rc = onnx_read_value_info(L, g->value_info[i], &vis[i], "value_info", i)))
            return rc;
    m->initializers = inits;
    m->n_initializers = g->n_initializer;
    m->inputs = ins;
    m->n_inputs = g->n_input;
    m->outputs = outs;
    m->n_outputs = g->n_output;
    m->value_info = vis;
    m->n_value_info = g->n_value_info;
    for (size_t i = 0; i < g->n_node; i++)
        if ((rc = onnx_read_node(L, g->node[i], (int)i, &nodes[i])))
            return rc;
    m->nodes = nodes;
    m->n_nodes = g->n_node;
    return onnx_build_index(L);
}

static int new_model(ld *L, const char *name)
{
    onnx_model *m = calloc(1, sizeof *m);
    onnx_index *ix = calloc(1, sizeof *ix);
    L->m = m;
    if (!m || !ix) {
        free(m);
        free(ix);
        L->m = NULL;
        return onnx_oom(L);
    }
    m->index = ix;
    L->ar = &ix->ar;
    if (!(m->path = onnx_str_copy(L, name)))
        return onnx_oom(L);
    return PT_OK;
}

/* Scan, unpack, convert. *buf is released as soon as protobuf-c holds its own
 * copy when owned is set, so a big model is in memory at most twice at once. */
static int load(const uint8_t *buf, size_t len, int owned, const char *name, onnx_model **out,
                pt_err *e)
{
    *out = NULL;
    ld L = { .file = name, .file_len = len, .e = e };
    int rc = PT_OK;
    if (len == 0)
        rc = onnx_fail(&L, PT_EPARSE, PT_NO_OFFSET, "empty file, not an ONNX model");
    if (!rc)
        rc = onnx_wire_scan(&L, buf, len);
    Pt__Onnx__ModelProto *mp = NULL;
    if (!rc) {
        mp = pt__onnx__model_proto__unpack(NULL, len, buf);
        if (!mp)
            rc = onnx_fail(&L, PT_EPARSE, PT_NO_OFFSET, "not an ONNX model: protobuf-c cannot "
                           "read the %zu bytes as an ONNX ModelProto (a field of the wrong type "
                           "or damaged bytes inside the graph)", len);
    }
    if (owned)
        free((void *)buf);
    if (!rc)
        rc = new_model(&L, name);
    if (!rc)
        rc = read_model(&L, mp);
    pt__onnx__model_proto__free_unpacked(mp, NULL);
    if (rc) {
        onnx_free(L.m);
        return rc;
    }
    *out = L.m;
    return PT_OK;
}

int onnx_load_mem(const uint8_t *buf, size_t len, const char *name, onnx_model **out,
                  pt_err *e)
{
    return load(buf, len, 0, name ? name : "", out, e);
}

int onnx_load(const char *path, onnx_model **out, pt_err *e)
{
    *out = NULL;
    uint8_t *buf;
    size_t len;
    int rc = util_read_file(path, &buf, &len, e);
    if (rc)
        return rc;
    return load(buf, len, 1, path, out, e);
}

void onnx_free(onnx_model *m)
{
    if (!m)
        return;
    if (m->index) {
        arena_free(&m->index->ar);
        free(m->index);
    }
    free(m);
}
