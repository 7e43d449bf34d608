#include "io/onnx.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/le.h"
#include "base/util.h"
#include "onnx.pb-c.h"

/* ---- arena ----------------------------------------------------------------------
 * Everything a model hands out comes from one arena, so the view can be all
 * const pointers and onnx_free() needs no walk over it; a failed load frees it
 * the same way. Big blocks (tensor data) get a chunk of their own. */

#define ARENA_CHUNK (64 * 1024)
#define ARENA_ALIGN _Alignof(max_align_t)

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    max_align_t data[];
} chunk;

typedef struct arena {
    chunk *head;
} arena;

static void *arena_alloc(arena *a, size_t n)
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

/* ---- name index -----------------------------------------------------------------
 * Every value name of the graph, sorted, with what defines it and how often it is
 * read. Built while loading, where it also checks the graph. A sorted array
 * rather than a hash table: lookups stay O(log n) whatever names a hostile file
 * picks, where crafted hash collisions would make a table quadratic. */

typedef struct slot {
    const char *name;
    const onnx_tensor *tensor;  /* initializer or Constant value */
    const onnx_value_info *info;
    int producer;               /* node index, or -1 */
    int consumers;
    int defined;                /* input, initializer or an earlier node's output */
} slot;

struct onnx_index {
    arena ar;
    slot *slots;                /* sorted by name, names distinct */
    size_t n;
};

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_slot_name(const void *key, const void *s)
{
    return strcmp((const char *)key, ((const slot *)s)->name);
}

static slot *ix_find(const onnx_index *ix, const char *name)
{
    if (!ix || !ix->n || !name || !*name)
        return NULL;
    return bsearch(name, ix->slots, ix->n, sizeof *ix->slots, cmp_slot_name);
}

/* ---- loading context and errors -------------------------------------------------- */

typedef struct ld {
    const char *file;
    size_t file_len;
    arena *ar;
    onnx_model *m;
    onnx_opset *domains;        /* the opsets sorted by domain, for opset_known() */
    size_t n_domains;
    pt_err *e;
} ld;

static int fail(ld *L, int code, long long offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int fail(ld *L, int code, long long offset, const char *fmt, ...)
{
    char what[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return err_set(L->e, code, L->file, PT_NO_RECORD, offset, "%s", what);
}

static int oom(ld *L)
{
    return fail(L, PT_ENOMEM, PT_NO_OFFSET, "out of memory while reading the model");
}

/* "node 12 'conv1' (Conv)", for messages. */
static void node_where(char *buf, size_t n, int index, const char *name, const char *op)
{
    util_fmt(buf, n, "node %d '%s' (%s)", index, name ? name : "", op && *op ? op : "no op_type");
}

/* "[1280, 1000]", cut when long. */
static void fmt_dims(char *buf, size_t n, const int64_t *d, size_t rank)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i <= rank && k + 1 < n; i++) {
        int w;
        if (i == rank)
            w = snprintf(buf + k, n - k, "]");
        else
            w = snprintf(buf + k, n - k, "%s%lld", i ? ", " : "[", (long long)d[i]);
        if (w < 0 || (size_t)w >= n - k)
            break;
        k += (size_t)w;
    }
}

static const char *str_copy(ld *L, const char *s)
{
    if (!s || !*s)
        return "";
    size_t n = strlen(s);
    char *p = arena_alloc(L->ar, n + 1);
    if (p)
        memcpy(p, s, n + 1);
    return p;
}

/* Bytes as a NUL-terminated string (attribute strings are `bytes` in ONNX). */
static const char *bytes_copy(ld *L, const ProtobufCBinaryData *b)
{
    char *p = arena_alloc(L->ar, b->len + 1);
    if (p && b->len)
        memcpy(p, b->data, b->len);
    return p;
}

static const char *norm_domain(const char *d)
{
    /* "ai.onnx" and "" are the same operator set; one spelling makes checks simple. */
    if (!d || !*d || strcmp(d, "ai.onnx") == 0)
        return "";
    return d;
}

/* ---- wire scan -------------------------------------------------------------------
 * A walk over the protobuf framing before protobuf-c sees the bytes, for three
 * things protobuf-c does not do:
 *  - say where and why: protobuf-c only says "no". A length that runs past the
 *    end of the file is a file cut short (PT_ETRUNC, with the byte offset);
 *    a bad key or a length past the end of its enclosing message is damage or
 *    not protobuf at all (PT_EPARSE).
 *  - refuse a singular message field given twice in one message. Protobuf says
 *    the copies merge, and protobuf-c merges them by copying every repeated field
 *    gathered so far, so N copies of `graph` cost N^2 (100,000 one-node copies,
 *    800 KB, take 13 s). No ONNX writer repeats these fields.
 * Only the messages on the way to such fields are entered; the schema below is
 * that part of onnx.proto, so the walk's depth is fixed. */

typedef struct wmsg wmsg;

typedef struct wfield {
    uint32_t num;
    int singular;           /* a singular message field: at most once */
    const wmsg *sub;        /* walked into when not NULL */
    const char *name;
} wfield;

struct wmsg {
    const char *name;
    int n;
    wfield f[5];
};

static const wmsg W_TYPE_TENSOR = { "TypeProto.Tensor", 1, { { 2, 1, NULL, "shape" } } };
static const wmsg W_TYPE = { "TypeProto", 1, { { 1, 1, &W_TYPE_TENSOR, "tensor_type" } } };
static const wmsg W_VALUE_INFO = { "ValueInfoProto", 1, { { 2, 1, &W_TYPE, "type" } } };
static const wmsg W_ATTR = { "AttributeProto", 2, { { 5, 1, NULL, "t" },
                                                      { 10, 0, NULL, "tensors" } } };
static const wmsg W_NODE = { "NodeProto", 1, { { 5, 0, &W_ATTR, "attribute" } } };
static const wmsg W_GRAPH = { "GraphProto", 5, { { 1, 0, &W_NODE, "node" },
                                                   { 5, 0, NULL, "initializer" },
                                                   { 11, 0, &W_VALUE_INFO, "input" },
                                                   { 12, 0, &W_VALUE_INFO, "output" },
                                                   { 13, 0, &W_VALUE_INFO, "value_info" } } };
static const wmsg W_MODEL = { "ModelProto", 2, { { 7, 1, &W_GRAPH, "graph" },
                                                   { 8, 0, NULL, "opset_import" } } };

static int get_varint(const uint8_t *p, size_t end, size_t *at, uint64_t *v)
{
    uint64_t r = 0;
    for (int i = 0; i < 10; i++) {
        if (*at >= end)
            return 0; /* ends inside */
        uint8_t b = p[(*at)++];
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = r;
            return 1;
        }
    }
    return -1; /* longer than 10 bytes: not a varint */
}

/* Walks the fields of one message of type m in p[start, end). The outermost
 * message (top) ends where the file does, so running past it is truncation. */
static int scan_msg(ld *L, const uint8_t *p, size_t start, size_t end, const wmsg *m, int top)
{
    unsigned seen = 0;
    size_t at = start;
    while (at < end) {
        size_t fstart = at;
        uint64_t key, v;
        int r = get_varint(p, end, &at, &key);
        uint64_t field = key >> 3;
        unsigned wt = (unsigned)(key & 7);
        if (r == 0 && top)
            return fail(L, PT_ETRUNC, (long long)fstart,
                        "truncated: the file (%zu bytes) ends inside a field key", end);
        if (r <= 0 || field == 0 || field > 536870911u || wt == 3 || wt == 4 || wt > 5) {
            if (top)
                return fail(L, PT_EPARSE, (long long)fstart,
                            "not an ONNX model: the bytes are not a protobuf message");
            return fail(L, PT_EPARSE, (long long)fstart, "damaged: a bad field key in a %s",
                        m->name);
        }
        const wfield *wf = NULL;
        for (int i = 0; i < m->n; i++)
            if (m->f[i].num == field)
                wf = &m->f[i];
        char what[96];
        util_fmt(what, sizeof what, "field %llu (%s) of a %s", (unsigned long long)field,
                 wf ? wf->name : "not read", m->name);
        size_t need;
        if (wt == 1 || wt == 5) {
            need = wt == 1 ? 8 : 4;
        } else {
            r = get_varint(p, end, &at, &v);
            if (r > 0 && wt == 0)
                continue;
            if (r < 0)
                return fail(L, PT_EPARSE, (long long)fstart, "damaged: %s holds a varint "
                            "longer than 10 bytes", what);
            if (r == 0 || v > end - at) {
                if (top)
                    return fail(L, PT_ETRUNC, (long long)fstart, "truncated: %s runs past the "
                                "end of the file (%zu bytes)", what, end);
                return fail(L, PT_EPARSE, (long long)fstart, "damaged: %s runs past the end "
                            "of the message holding it", what);
            }
            need = (size_t)v;
        }
        if (need > end - at) {
            if (top)
                return fail(L, PT_ETRUNC, (long long)fstart, "truncated: %s runs past the end "
                            "of the file (%zu bytes)", what, end);
            return fail(L, PT_EPARSE, (long long)fstart, "damaged: %s runs past the end of the "
                        "message holding it", what);
        }
        if (wf && wt == 2) {
            unsigned bit = 1u << (wf - m->f);
            if (wf->singular && (seen & bit))
                return fail(L, PT_EPARSE, (long long)fstart, "%s appears twice; ONNX writes it "
                            "once and petal-tui refuses the copies", what);
            seen |= bit;
            if (wf->sub) {
                int rc = scan_msg(L, p, at, at + need, wf->sub, 0);
                if (rc)
                    return rc;
            }
        }
        at += need;
    }
    return PT_OK;
}

/* ---- tensors -------------------------------------------------------------------- */

/* Bytes per element in raw_data, for every type with a fixed width; 0 for
 * STRING and unknown types. */
static size_t raw_width(int dtype)
{
    switch (dtype) {
    case ONNX_UINT8: case ONNX_INT8: case ONNX_BOOL: return 1;
    case ONNX_UINT16: case ONNX_INT16: case ONNX_FLOAT16: case ONNX_BFLOAT16: return 2;
    case ONNX_FLOAT: case ONNX_INT32: case ONNX_UINT32: return 4;
    case ONNX_INT64: case ONNX_UINT64: case ONNX_DOUBLE: case ONNX_COMPLEX64: return 8;
    case ONNX_COMPLEX128: return 16;
    default: return 0;
    }
}

/* The typed field ONNX stores a dtype in when raw_data is not used. */
enum { SRC_NONE, SRC_RAW, SRC_FLOAT, SRC_INT32, SRC_STRING, SRC_INT64, SRC_DOUBLE, SRC_UINT64 };

static const char *src_name(int s)
{
    static const char *const names[] = { "no data", "raw_data", "float_data", "int32_data",
                                         "string_data", "int64_data", "double_data",
                                         "uint64_data" };
    return names[s];
}

static int typed_src(int dtype)
{
    switch (dtype) {
    case ONNX_FLOAT: case ONNX_COMPLEX64: return SRC_FLOAT;
    case ONNX_INT32: case ONNX_INT16: case ONNX_INT8: case ONNX_UINT16: case ONNX_UINT8:
    case ONNX_BOOL: case ONNX_FLOAT16: case ONNX_BFLOAT16: return SRC_INT32;
    case ONNX_STRING: return SRC_STRING;
    case ONNX_INT64: return SRC_INT64;
    case ONNX_DOUBLE: case ONNX_COMPLEX128: return SRC_DOUBLE;
    case ONNX_UINT32: case ONNX_UINT64: return SRC_UINT64;
    default: return SRC_NONE;
    }
}

/* Values the typed field holds per element (complex numbers are two). */
static int64_t per_elem(int dtype)
{
    return dtype == ONNX_COMPLEX64 || dtype == ONNX_COMPLEX128 ? 2 : 1;
}

/* Check tp and fill t. ctx prefixes messages ("" or "node ...: attribute 'x': "). */
static int read_tensor(ld *L, const Pt__Onnx__TensorProto *tp, onnx_tensor *t, const char *ctx)
{
    const char *name = tp->name ? tp->name : "";
    t->name = str_copy(L, name);
    if (!t->name)
        return oom(L);

    if ((tp->has_data_location && tp->data_location == 1) || tp->n_external_data > 0)
        return fail(L, PT_EFORMAT, PT_NO_OFFSET,
                    "%stensor '%s' keeps its data in an external file (data_location "
                    "EXTERNAL); petal-tui reads only self-contained .onnx files", ctx, name);
    if (tp->has_data_location && tp->data_location != 0)
        return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' has data_location %d, "
                    "which ONNX does not define", ctx, name, (int)tp->data_location);
    if (tp->segment)
        return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' is stored in segments "
                    "(TensorProto.segment), which petal-tui does not read", ctx, name);
    if (!tp->has_data_type || tp->data_type == ONNX_UNDEFINED)
        return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' has no data type", ctx, name);
    t->dtype = tp->data_type;
    const char *tname = onnx_dtype_name(t->dtype);

    if (tp->n_dims > ONNX_MAX_RANK)
        return fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%stensor '%s' has %zu dims; petal-tui "
                    "reads at most %d", ctx, name, tp->n_dims, ONNX_MAX_RANK);
    t->rank = (int)tp->n_dims;
    int64_t *dims = arena_alloc(L->ar, tp->n_dims * sizeof *dims);
    if (!dims)
        return oom(L);
    int zero = 0;
    for (size_t i = 0; i < tp->n_dims; i++) {
        int64_t d = tp->dims[i];
        if (d < 0)
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s': dim %zu is %lld "
                        "(negative)", ctx, name, i, (long long)d);
        if (d > ONNX_MAX_ELEMS)
            return fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%stensor '%s': dim %zu is %lld, "
                        "beyond the limit of %lld", ctx, name, i, (long long)d,
                        (long long)ONNX_MAX_ELEMS);
        dims[i] = d;
        zero |= d == 0;
    }
    t->dims = dims;
    char dstr[160];
    fmt_dims(dstr, sizeof dstr, dims, tp->n_dims);

    /* The product of dims, never past the limit: each factor is at most the
     * limit, so one step cannot overflow before the check. */
    int64_t count = 1;
    if (zero)
        count = 0;
    else
        for (size_t i = 0; i < tp->n_dims; i++) {
            if (count > ONNX_MAX_ELEMS / dims[i])
                return fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%stensor '%s': dims %s make "
                            "more than %lld elements", ctx, name, dstr,
                            (long long)ONNX_MAX_ELEMS);
            count *= dims[i];
        }
    /* Every stored element takes at least a byte, whichever field holds it. */
    if ((uint64_t)count > L->file_len)
        return fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%stensor '%s': dims %s make %lld "
                    "elements, more than a file of %zu bytes can hold", ctx, name, dstr,
                    (long long)count, L->file_len);
    t->count = count;

    /* Which field holds the data: exactly one of them, or none for no elements. */
    int src = SRC_NONE, nsrc = 0;
    size_t n_vals = 0;
    struct { int src; size_t n; } have[] = {
        { SRC_FLOAT, tp->n_float_data }, { SRC_INT32, tp->n_int32_data },
        { SRC_STRING, tp->n_string_data }, { SRC_INT64, tp->n_int64_data },
        { SRC_DOUBLE, tp->n_double_data }, { SRC_UINT64, tp->n_uint64_data },
    };
    /* An empty raw_data is the same as none (some writers set it empty). */
    if (tp->has_raw_data && tp->raw_data.len > 0) {
        src = SRC_RAW;
        nsrc++;
    }
    for (size_t i = 0; i < sizeof have / sizeof have[0]; i++)
        if (have[i].n) {
            if (nsrc)
                return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' holds data in both "
                            "%s and %s", ctx, name, src_name(src), src_name(have[i].src));
            src = have[i].src;
            n_vals = have[i].n;
            nsrc++;
        }

    size_t width = raw_width(t->dtype);
    if (src == SRC_RAW) {
        if (t->dtype == ONNX_STRING)
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' is STRING but holds "
                        "raw_data", ctx, name);
        if (width && (uint64_t)tp->raw_data.len != (uint64_t)count * width)
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' has %zu bytes of raw_data, "
                        "but dims %s of %s need %llu", ctx, name, tp->raw_data.len, dstr, tname,
                        (unsigned long long)((uint64_t)count * width));
    } else if (src != SRC_NONE) {
        int want = typed_src(t->dtype);
        if (want != SRC_NONE && src != want)
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' is %s but holds %s "
                        "(ONNX keeps %s in %s or raw_data)", ctx, name, tname, src_name(src),
                        tname, src_name(want));
        if (want != SRC_NONE && (uint64_t)n_vals != (uint64_t)count * (uint64_t)per_elem(t->dtype))
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' holds %zu values in %s, "
                        "but dims %s of %s need %lld", ctx, name, n_vals, src_name(src), dstr,
                        tname, (long long)(count * per_elem(t->dtype)));
    } else if (count > 0) {
        return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' has dims %s but no data",
                    ctx, name, dstr);
    }

    size_t es = onnx_dtype_size(t->dtype);
    if (!es)
        return PT_OK; /* kept, sizes checked; onnx_tensor_data() refuses it */
    /* count <= ONNX_MAX_ELEMS and es <= 8: no overflow. */
    void *data = arena_alloc(L->ar, (size_t)count * es);
    if (!data)
        return oom(L);
    t->data = data;
    size_t n = (size_t)count;
    if (n == 0)
        return PT_OK;
    if (src == SRC_RAW) {
        /* ONNX's raw_data is little-endian whatever wrote it. */
        const uint8_t *r = tp->raw_data.data;
        switch (es) {
        case 1:
            memcpy(data, r, n);
            break;
        case 4:
            for (size_t i = 0; i < n; i++) {
                uint32_t u = le_get_u32(r + 4 * i);
                memcpy((uint8_t *)data + 4 * i, &u, 4);
            }
            break;
        default:
            for (size_t i = 0; i < n; i++) {
                uint64_t u = le_get_u64(r + 8 * i);
                memcpy((uint8_t *)data + 8 * i, &u, 8);
            }
            break;
        }
        return PT_OK;
    }
    switch (t->dtype) {
    case ONNX_FLOAT:
        memcpy(data, tp->float_data, n * sizeof(float));
        break;
    case ONNX_INT32:
        memcpy(data, tp->int32_data, n * sizeof(int32_t));
        break;
    case ONNX_INT64:
        memcpy(data, tp->int64_data, n * sizeof(int64_t));
        break;
    case ONNX_INT8:
    case ONNX_UINT8: {
        /* ONNX widens 8-bit values into int32_data; a value out of range is damage,
         * not something to wrap silently. */
        int32_t lo = t->dtype == ONNX_INT8 ? -128 : 0, hi = t->dtype == ONNX_INT8 ? 127 : 255;
        for (size_t i = 0; i < n; i++) {
            int32_t v = tp->int32_data[i];
            if (v < lo || v > hi)
                return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s': int32_data[%zu] "
                            "is %d, outside the range of %s", ctx, name, i, (int)v, tname);
            if (t->dtype == ONNX_INT8)
                ((int8_t *)data)[i] = (int8_t)v;
            else
                ((uint8_t *)data)[i] = (uint8_t)v;
        }
        break;
    }
    default:
        break;
    }
    return PT_OK;
}

/* ---- values, attributes, nodes --------------------------------------------------- */

static int read_value_info(ld *L, const Pt__Onnx__ValueInfoProto *vp, onnx_value_info *v,
                           const char *what, size_t idx)
{
    if (!vp->name || !*vp->name)
        return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s %zu has no name", what, idx);
    v->name = str_copy(L, vp->name);
    if (!v->name)
        return oom(L);
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
        return fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%s '%s' has %zu dims; petal-tui reads at "
                    "most %d", what, v->name, rank, ONNX_MAX_RANK);
    int64_t *dims = arena_alloc(L->ar, rank * sizeof *dims);
    const char **params = arena_alloc(L->ar, rank * sizeof *params);
    if (!dims || !params)
        return oom(L);
    for (size_t i = 0; i < rank; i++) {
        const Pt__Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        dims[i] = -1;
        params[i] = "";
        if (d->value_case == PT__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0)
                return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s '%s': dim %zu is %lld (negative)",
                            what, v->name, i, (long long)d->dim_value);
            if (d->dim_value > ONNX_MAX_ELEMS)
                return fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%s '%s': dim %zu is %lld, beyond "
                            "the limit of %lld", what, v->name, i, (long long)d->dim_value,
                            (long long)ONNX_MAX_ELEMS);
            dims[i] = d->dim_value;
        } else if (d->value_case == PT__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            if (!(params[i] = str_copy(L, d->dim_param)))
                return oom(L);
        }
    }
    v->rank = (int)rank;
    v->dims = dims;
    v->dim_params = params;
    return PT_OK;
}

static int read_attr(ld *L, const Pt__Onnx__AttributeProto *ap, onnx_attr *a, const char *where)
{
    a->name = str_copy(L, ap->name);
    if (!a->name)
        return oom(L);
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
            return oom(L);
        a->s_len = ap->s.len;
        break;
    case ONNX_ATTR_TENSOR: {
        if (!ap->t)
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: attribute '%s' is TENSOR but holds "
                        "no tensor", where, a->name);
        onnx_tensor *t = arena_alloc(L->ar, sizeof *t);
        if (!t)
            return oom(L);
        int rc = read_tensor(L, ap->t, t, ctx);
        if (rc)
            return rc;
        a->t = t;
        break;
    }
    case ONNX_ATTR_FLOATS: {
        float *f = arena_alloc(L->ar, ap->n_floats * sizeof *f);
        if (!f)
            return oom(L);
        if (ap->n_floats)
            memcpy(f, ap->floats, ap->n_floats * sizeof *f);
        a->floats = f;
        a->n = ap->n_floats;
        break;
    }
    case ONNX_ATTR_INTS: {
        int64_t *v = arena_alloc(L->ar, ap->n_ints * sizeof *v);
        if (!v)
            return oom(L);
        if (ap->n_ints)
            memcpy(v, ap->ints, ap->n_ints * sizeof *v);
        a->ints = v;
        a->n = ap->n_ints;
        break;
    }
    case ONNX_ATTR_STRINGS: {
        const char **s = arena_alloc(L->ar, ap->n_strings * sizeof *s);
        if (!s)
            return oom(L);
        for (size_t i = 0; i < ap->n_strings; i++)
            if (!(s[i] = bytes_copy(L, &ap->strings[i])))
                return oom(L);
        a->strings = s;
        a->n = ap->n_strings;
        break;
    }
    case ONNX_ATTR_TENSORS: {
        onnx_tensor *t = arena_alloc(L->ar, ap->n_tensors * sizeof *t);
        if (!t)
            return oom(L);
        for (size_t i = 0; i < ap->n_tensors; i++) {
            int rc = read_tensor(L, ap->tensors[i], &t[i], ctx);
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

static int cmp_opset(const void *a, const void *b)
{
    return strcmp(((const onnx_opset *)a)->domain, ((const onnx_opset *)b)->domain);
}

/* Whether the model imports domain; L->domains is the opsets sorted by domain, so
 * a file with many imports and many nodes costs n log n, not n^2. */
static int opset_known(const ld *L, const char *domain)
{
    onnx_opset key = { .domain = domain };
    return bsearch(&key, L->domains, L->n_domains, sizeof key, cmp_opset) != NULL;
}

static int read_node(ld *L, const Pt__Onnx__NodeProto *np, int index, onnx_node *n)
{
    char where[600];
    node_where(where, sizeof where, index, np->name, np->op_type);
    n->index = index;
    if (!np->op_type || !*np->op_type)
        return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s has no op_type", where);
    n->name = str_copy(L, np->name);
    n->op_type = str_copy(L, np->op_type);
    n->domain = str_copy(L, norm_domain(np->domain));
    if (!n->name || !n->op_type || !n->domain)
        return oom(L);
    if (!opset_known(L, n->domain))
        return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s is in domain '%s', which the model does "
                    "not import (no opset_import for it)", where, n->domain);

    const char **in = arena_alloc(L->ar, np->n_input * sizeof *in);
    const char **out = arena_alloc(L->ar, np->n_output * sizeof *out);
    onnx_attr *attrs = arena_alloc(L->ar, np->n_attribute * sizeof *attrs);
    if (!in || !out || !attrs)
        return oom(L);
    for (size_t i = 0; i < np->n_input; i++)
        if (!(in[i] = str_copy(L, np->input[i])))
            return oom(L);
    for (size_t i = 0; i < np->n_output; i++)
        if (!(out[i] = str_copy(L, np->output[i])))
            return oom(L);
    n->inputs = in;
    n->n_inputs = np->n_input;
    n->outputs = out;
    n->n_outputs = np->n_output;

    for (size_t i = 0; i < np->n_attribute; i++) {
        const Pt__Onnx__AttributeProto *ap = np->attribute[i];
        if (!ap->name || !*ap->name)
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: attribute %zu has no name", where, i);
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
            return oom(L);
        for (size_t i = 0; i < n->n_attrs; i++)
            names[i] = attrs[i].name;
        qsort(names, n->n_attrs, sizeof *names, cmp_str_ptr);
        for (size_t i = 1; i < n->n_attrs; i++)
            if (strcmp(names[i - 1], names[i]) == 0) {
                int rc = fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: attribute '%s' is given twice",
                              where, names[i]);
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
    onnx_tensor *t = arena_alloc(L->ar, sizeof *t);
    if (!t)
        return oom(L);
    if ((a = onnx_attr_find(n, "value")) && a->type == ONNX_ATTR_TENSOR) {
        *t = *a->t;
    } else if ((a = onnx_attr_find(n, "value_float")) && a->type == ONNX_ATTR_FLOAT) {
        float *f = arena_alloc(L->ar, sizeof *f);
        if (!f)
            return oom(L);
        *f = a->f;
        *t = (onnx_tensor){ .dtype = ONNX_FLOAT, .rank = 0, .count = 1, .data = f };
    } else if ((a = onnx_attr_find(n, "value_int")) && a->type == ONNX_ATTR_INT) {
        int64_t *v = arena_alloc(L->ar, sizeof *v);
        if (!v)
            return oom(L);
        *v = a->i;
        *t = (onnx_tensor){ .dtype = ONNX_INT64, .rank = 0, .count = 1, .data = v };
    } else if (((a = onnx_attr_find(n, "value_floats")) && a->type == ONNX_ATTR_FLOATS) ||
               ((a = onnx_attr_find(n, "value_ints")) && a->type == ONNX_ATTR_INTS)) {
        int64_t *d = arena_alloc(L->ar, sizeof *d);
        if (!d)
            return oom(L);
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

static int build_index(ld *L)
{
    onnx_model *m = L->m;
    onnx_index *ix = m->index;
    /* Every name the graph mentions, repeats included, then sorted and made unique.
     * Each is a separate string in the file, so the count is bounded by its size. */
    size_t total = m->n_initializers + m->n_inputs + m->n_outputs + m->n_value_info;
    for (size_t i = 0; i < m->n_nodes; i++)
        total += m->nodes[i].n_inputs + m->nodes[i].n_outputs;
    if (total > SIZE_MAX / sizeof(slot))
        return oom(L);
    const char **all = malloc((total ? total : 1) * sizeof *all);
    if (!all)
        return oom(L);
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
    ix->slots = arena_alloc(L->ar, nall * sizeof *ix->slots);
    if (!ix->slots) {
        free(all);
        return oom(L);
    }
    for (size_t i = 0; i < nall; i++) {
        if (!*all[i] || (ix->n && strcmp(ix->slots[ix->n - 1].name, all[i]) == 0))
            continue; /* "" (an absent optional) is no value */
        ix->slots[ix->n].name = all[i];
        ix->slots[ix->n].producer = -1;
        ix->n++;
    }
    free(all);

    for (size_t i = 0; i < m->n_initializers; i++) {
        const onnx_tensor *t = &m->initializers[i];
        if (!*t->name)
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "initializer %zu has no name", i);
        slot *s = ix_find(ix, t->name);
        if (s->tensor)
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "initializer '%s' appears twice", t->name);
        s->tensor = t;
        s->defined = 1;
    }
    for (size_t i = 0; i < m->n_inputs; i++) {
        const onnx_value_info *v = &m->inputs[i];
        slot *s = ix_find(ix, v->name);
        if (s->info)
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "graph input '%s' appears twice", v->name);
        s->info = v;
        s->defined = 1;
    }
    for (size_t i = 0; i < m->n_nodes; i++) {
        const onnx_node *n = &m->nodes[i];
        char where[600];
        node_where(where, sizeof where, n->index, n->name, n->op_type);
        for (size_t k = 0; k < n->n_inputs; k++) {
            if (!*n->inputs[k])
                continue;
            slot *s = ix_find(ix, n->inputs[k]);
            if (!s->defined)
                return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: input '%s' is not a graph input, "
                            "an initializer or the output of an earlier node", where,
                            n->inputs[k]);
            s->consumers++;
        }
        for (size_t k = 0; k < n->n_outputs; k++) {
            if (!*n->outputs[k])
                continue;
            slot *s = ix_find(ix, n->outputs[k]);
            if (s->producer >= 0) {
                const onnx_node *p = &m->nodes[s->producer];
                return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: output '%s' is already the "
                            "output of node %d '%s' (%s)", where, n->outputs[k], p->index,
                            p->name, p->op_type);
            }
            if (s->defined)
                return fail(L, PT_EFORMAT, PT_NO_OFFSET, "%s: output '%s' is already a graph "
                            "input or an initializer", where, n->outputs[k]);
            s->producer = (int)i;
            s->defined = 1;
        }
        if (strcmp(n->op_type, "Constant") == 0 && !*n->domain) {
            const onnx_tensor *t;
            int rc = constant_tensor(L, n, &t);
            if (rc)
                return rc;
            if (t)
                ix_find(ix, t->name)->tensor = t;
        }
    }
    for (size_t i = 0; i < m->n_outputs; i++) {
        const onnx_value_info *v = &m->outputs[i];
        slot *s = ix_find(ix, v->name);
        if (!s->defined)
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "graph output '%s' is not a graph input, "
                        "an initializer or any node's output", v->name);
        s->consumers++;
        if (!s->info)
            s->info = v;
    }
    /* value_info only annotates; a stale entry for a name nothing defines is harmless. */
    for (size_t i = 0; i < m->n_value_info; i++) {
        slot *s = ix_find(ix, m->value_info[i].name);
        if (!s->info)
            s->info = &m->value_info[i];
    }
    return PT_OK;
}

/* ---- the model -------------------------------------------------------------------- */

static int read_model(ld *L, const Pt__Onnx__ModelProto *mp)
{
    onnx_model *m = L->m;
    if (!mp->has_ir_version || mp->ir_version < 1)
        return fail(L, PT_EPARSE, PT_NO_OFFSET,
                    "not an ONNX model: a protobuf message with no ir_version");
    if (!mp->graph)
        return fail(L, PT_EPARSE, PT_NO_OFFSET, "not an ONNX model: a protobuf message with "
                    "no graph (ModelProto field 7)");
    if (mp->n_opset_import == 0)
        return fail(L, PT_EPARSE, PT_NO_OFFSET, "the model imports no operator set "
                    "(ModelProto.opset_import is empty); the file may be cut short");
    m->ir_version = mp->ir_version;
    m->model_version = mp->has_model_version ? mp->model_version : 0;
    m->producer_name = str_copy(L, mp->producer_name);
    m->producer_version = str_copy(L, mp->producer_version);
    m->domain = str_copy(L, mp->domain);
    if (!m->producer_name || !m->producer_version || !m->domain)
        return oom(L);

    onnx_opset *ops = arena_alloc(L->ar, mp->n_opset_import * sizeof *ops);
    if (!ops)
        return oom(L);
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Pt__Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (!(ops[i].domain = str_copy(L, norm_domain(o->domain))))
            return oom(L);
        if (!o->has_version || o->version < 1)
            return fail(L, PT_EFORMAT, PT_NO_OFFSET, "opset_import %zu (domain '%s') has no "
                        "valid version", i, ops[i].domain);
        ops[i].version = o->version;
        /* Nodes bind to the highest version imported for their domain. */
        if (!*ops[i].domain && o->version > m->opset)
            m->opset = o->version;
    }
    m->opsets = ops;
    m->n_opsets = mp->n_opset_import;
    L->domains = arena_alloc(L->ar, m->n_opsets * sizeof *L->domains);
    if (!L->domains)
        return oom(L);
    memcpy(L->domains, ops, m->n_opsets * sizeof *ops);
    qsort(L->domains, m->n_opsets, sizeof *L->domains, cmp_opset);
    L->n_domains = m->n_opsets;

    const Pt__Onnx__GraphProto *g = mp->graph;
    /* Node indices are ints in the view. */
    if (g->n_node > (size_t)1 << 30)
        return fail(L, PT_ETOOBIG, PT_NO_OFFSET, "the graph has %zu nodes", g->n_node);
    if (!(m->graph_name = str_copy(L, g->name)))
        return oom(L);

    onnx_tensor *inits = arena_alloc(L->ar, g->n_initializer * sizeof *inits);
    onnx_value_info *ins = arena_alloc(L->ar, g->n_input * sizeof *ins);
    onnx_value_info *outs = arena_alloc(L->ar, g->n_output * sizeof *outs);
    onnx_value_info *vis = arena_alloc(L->ar, g->n_value_info * sizeof *vis);
    onnx_node *nodes = arena_alloc(L->ar, g->n_node * sizeof *nodes);
    if (!inits || !ins || !outs || !vis || !nodes)
        return oom(L);
    int rc;
    for (size_t i = 0; i < g->n_initializer; i++)
        if ((rc = read_tensor(L, g->initializer[i], &inits[i], "")))
            return rc;
    for (size_t i = 0; i < g->n_input; i++)
        if ((rc = read_value_info(L, g->input[i], &ins[i], "graph input", i)))
            return rc;
    for (size_t i = 0; i < g->n_output; i++)
        if ((rc = read_value_info(L, g->output[i], &outs[i], "graph output", i)))
            return rc;
    for (size_t i = 0; i < g->n_value_info; i++)
        if ((rc = read_value_info(L, g->value_info[i], &vis[i], "value_info", i)))
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
        if ((rc = read_node(L, g->node[i], (int)i, &nodes[i])))
            return rc;
    m->nodes = nodes;
    m->n_nodes = g->n_node;
    return build_index(L);
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
        return oom(L);
    }
    m->index = ix;
    L->ar = &ix->ar;
    if (!(m->path = str_copy(L, name)))
        return oom(L);
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
        rc = fail(&L, PT_EPARSE, PT_NO_OFFSET, "empty file, not an ONNX model");
    if (!rc)
        rc = scan_msg(&L, buf, 0, len, &W_MODEL, 1);
    Pt__Onnx__ModelProto *mp = NULL;
    if (!rc) {
        mp = pt__onnx__model_proto__unpack(NULL, len, buf);
        if (!mp)
            rc = fail(&L, PT_EPARSE, PT_NO_OFFSET, "not an ONNX model: protobuf-c cannot "
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

/* ---- lookups ------------------------------------------------------------------------ */

const onnx_tensor *onnx_find_tensor(const onnx_model *m, const char *name)
{
    const slot *s = ix_find(m->index, name);
    return s ? s->tensor : NULL;
}

const onnx_value_info *onnx_find_value_info(const onnx_model *m, const char *name)
{
    const slot *s = ix_find(m->index, name);
    return s ? s->info : NULL;
}

const onnx_node *onnx_producer(const onnx_model *m, const char *name)
{
    const slot *s = ix_find(m->index, name);
    return s && s->producer >= 0 ? &m->nodes[s->producer] : NULL;
}

int onnx_consumers(const onnx_model *m, const char *name)
{
    const slot *s = ix_find(m->index, name);
    return s ? s->consumers : 0;
}

int onnx_tensor_data(const onnx_model *m, const onnx_tensor *t, onnx_dtype want,
                     const void **data, pt_err *e)
{
    *data = NULL;
    if (!t->data)
        return err_set(e, PT_EFORMAT, m->path, PT_NO_RECORD, PT_NO_OFFSET,
                       "tensor '%s' is %s (type %d); petal-tui reads FLOAT, UINT8, INT8, INT32 "
                       "and INT64 tensors", t->name, onnx_dtype_name(t->dtype), t->dtype);
    if (t->dtype != (int)want)
        return err_set(e, PT_EFORMAT, m->path, PT_NO_RECORD, PT_NO_OFFSET,
                       "tensor '%s' is %s, expected %s", t->name, onnx_dtype_name(t->dtype),
                       onnx_dtype_name((int)want));
    *data = t->data;
    return PT_OK;
}

const onnx_attr *onnx_attr_find(const onnx_node *node, const char *name)
{
    for (size_t i = 0; i < node->n_attrs; i++)
        if (strcmp(node->attrs[i].name, name) == 0)
            return &node->attrs[i];
    return NULL;
}

static const onnx_attr *typed(const onnx_node *node, const char *name, int type)
{
    const onnx_attr *a = onnx_attr_find(node, name);
    return a && a->type == type ? a : NULL;
}

int64_t onnx_attr_int(const onnx_node *node, const char *name, int64_t dflt)
{
    const onnx_attr *a = typed(node, name, ONNX_ATTR_INT);
    return a ? a->i : dflt;
}

float onnx_attr_float(const onnx_node *node, const char *name, float dflt)
{
    const onnx_attr *a = typed(node, name, ONNX_ATTR_FLOAT);
    return a ? a->f : dflt;
}

const char *onnx_attr_string(const onnx_node *node, const char *name, const char *dflt)
{
    const onnx_attr *a = typed(node, name, ONNX_ATTR_STRING);
    return a ? a->s : dflt;
}

const int64_t *onnx_attr_ints(const onnx_node *node, const char *name, size_t *n)
{
    const onnx_attr *a = typed(node, name, ONNX_ATTR_INTS);
    *n = a ? a->n : 0;
    return a ? a->ints : NULL;
}

const float *onnx_attr_floats(const onnx_node *node, const char *name, size_t *n)
{
    const onnx_attr *a = typed(node, name, ONNX_ATTR_FLOATS);
    *n = a ? a->n : 0;
    return a ? a->floats : NULL;
}

const char *const *onnx_attr_strings(const onnx_node *node, const char *name, size_t *n)
{
    const onnx_attr *a = typed(node, name, ONNX_ATTR_STRINGS);
    *n = a ? a->n : 0;
    return a ? a->strings : NULL;
}

const onnx_tensor *onnx_attr_tensor(const onnx_node *node, const char *name)
{
    const onnx_attr *a = typed(node, name, ONNX_ATTR_TENSOR);
    return a ? a->t : NULL;
}

int onnx_attr_check(const onnx_model *m, const onnx_node *node, const char *name,
                    onnx_attr_type want, pt_err *e)
{
    const onnx_attr *a = onnx_attr_find(node, name);
    if (!a || a->type == (int)want)
        return PT_OK;
    char where[600];
    node_where(where, sizeof where, node->index, node->name, node->op_type);
    return err_set(e, PT_EFORMAT, m->path, PT_NO_RECORD, PT_NO_OFFSET,
                   "%s: attribute '%s' is %s, expected %s", where, name,
                   onnx_attr_type_name(a->type), onnx_attr_type_name((int)want));
}

const char *onnx_dtype_name(int dtype)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
        "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
    };
    if (dtype < 0 || (size_t)dtype >= sizeof names / sizeof names[0])
        return "UNKNOWN";
    return names[dtype];
}

size_t onnx_dtype_size(int dtype)
{
    switch (dtype) {
    case ONNX_FLOAT: return 4;
    case ONNX_UINT8: return 1;
    case ONNX_INT8: return 1;
    case ONNX_INT32: return 4;
    case ONNX_INT64: return 8;
    default: return 0;
    }
}

const char *onnx_attr_type_name(int type)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS",
        "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS",
    };
    if (type < 0 || (size_t)type >= sizeof names / sizeof names[0])
        return "UNKNOWN";
    return names[type];
}
