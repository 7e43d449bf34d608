/* onnx_wire — the walk over a file's protobuf framing that runs before protobuf-c
 * unpacks it: the schema of the messages on the way to ONNX's singular message
 * fields, varints, and onnx_wire_scan(), which names the byte offset of a cut or
 * damage and refuses a singular message field given twice. It reads bytes only and
 * allocates nothing; what the fields hold is onnx.c's and the others' to read.
 */
#include <stddef.h>
#include <stdint.h>

#include "base/util.h"
#include "io/onnx_impl.h"

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
            return onnx_fail(L, PT_ETRUNC, (long long)fstart,
                             "truncated: the file (%zu bytes) ends inside a field key", end);
        if (r <= 0 || field == 0 || field > 536870911u || wt == 3 || wt == 4 || wt > 5) {
            if (top)
                return onnx_fail(L, PT_EPARSE, (long long)fstart,
                                 "not an ONNX model: the bytes are not a protobuf message");
            return onnx_fail(L, PT_EPARSE, (long long)fstart, "damaged: a bad field key in a %s",
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
                return onnx_fail(L, PT_EPARSE, (long long)fstart, "damaged: %s holds a varint "
                                 "longer than 10 bytes", what);
            if (r == 0 || v > end - at) {
                if (top)
                    return onnx_fail(L, PT_ETRUNC, (long long)fstart, "truncated: %s runs past "
                                     "the end of the file (%zu bytes)", what, end);
                return onnx_fail(L, PT_EPARSE, (long long)fstart, "damaged: %s runs past the end "
                                 "of the message holding it", what);
            }
            need = (size_t)v;
        }
        if (need > end - at) {
            if (top)
                return onnx_fail(L, PT_ETRUNC, (long long)fstart, "truncated: %s runs past the "
                                 "end of the file (%zu bytes)", what, end);
            return onnx_fail(L, PT_EPARSE, (long long)fstart, "damaged: %s runs past the end "
                             "of the message holding it", what);
        }
        if (wf && wt == 2) {
            unsigned bit = 1u << (wf - m->f);
            if (wf->singular && (seen & bit))
                return onnx_fail(L, PT_EPARSE, (long long)fstart, "%s appears twice; ONNX "
                                 "writes it once and petal-tui refuses the copies", what);
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

int onnx_wire_scan(ld *L, const uint8_t *buf, size_t len)
{
    return scan_msg(L, buf, 0, len, &W_MODEL, 1);
}
