/* onnx_impl — internals shared by the core/io/onnx*.c sources (not for other
 * modules): the arena, the name index, the loading context and the functions one of
 * those sources provides to another. Everything else is in onnx.h.
 *
 *   onnx.c         the arena, the loading context's errors and string copies,
 *                  reading a ModelProto into the model, onnx_load(), onnx_load_mem(),
 *                  onnx_free()
 *   onnx_wire.c    the walk over the protobuf framing before protobuf-c parses it
 *   onnx_tensor.c  TensorProto -> onnx_tensor: dims, element count, the field that
 *                  holds the data, byte order
 *   onnx_graph.c   value infos, attributes, nodes, Constant values, and the name
 *                  index: building it checks the graph
 *   onnx_lookup.c  the public lookups, tensor data and attribute getters, and the
 *                  dtype / attribute type names
 *
 * Ownership: a model (malloc) owns its onnx_index (malloc), which owns the arena;
 * everything the model hands out, and the index's slots, is an arena block.
 * onnx_free() frees the arena, the index and the model, and a failed load ends in
 * onnx_free() too, so nothing else is ever freed on its own. The loading context
 * `ld` lives on load()'s stack for one load (its domains are an arena block). The
 * functions below that take an ld allocate only from L->ar, apart from scratch
 * arrays they free before returning; on failure they fill L->e and return its
 * code, and what they had allocated stays in the arena for onnx_free().
 */
#ifndef PT_ONNX_IMPL_H
#define PT_ONNX_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "io/onnx.h"
#include "onnx.pb-c.h"

/* ---- arena (onnx.c) ---- */

typedef struct chunk chunk;     /* defined in onnx.c */

typedef struct arena {
    chunk *head;
} arena;

/* n bytes (at least one), zeroed, aligned for any type; NULL when out of memory. */
void *onnx_arena_alloc(arena *a, size_t n);

/* ---- name index (onnx_graph.c builds it, onnx_lookup.c reads it) ------------------
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

/* ---- loading context and errors (onnx.c) ------------------------------------------ */

/* One load, on load()'s stack; new_model() sets ar and m. */
typedef struct ld {
    const char *file;
    size_t file_len;
    arena *ar;
    onnx_model *m;
    onnx_opset *domains;        /* the opsets sorted by domain, for opset_known() */
    size_t n_domains;
    pt_err *e;
} ld;

/* Fill L->e (code, the file, offset or PT_NO_OFFSET, the message) and return code. */
int onnx_fail(ld *L, int code, long long offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* onnx_fail() with PT_ENOMEM. */
int onnx_oom(ld *L);
/* "node 12 'conv1' (Conv)", for messages. */
void onnx_node_where(char *buf, size_t n, int index, const char *name, const char *op);
/* s in the arena; "" (not copied) for NULL or "", NULL when out of memory. */
const char *onnx_str_copy(ld *L, const char *s);
/* "" for ONNX's own domain however the file spells it ("" or "ai.onnx"), else d. */
const char *onnx_norm_domain(const char *d);

/* ---- wire scan (onnx_wire.c) ------------------------------------------------------ */

/* The framing of buf[0, len) as a ModelProto: PT_OK, or PT_ETRUNC / PT_EPARSE with
 * the byte offset (a cut, a bad key or length, a singular field given twice). */
int onnx_wire_scan(ld *L, const uint8_t *buf, size_t len);

/* ---- tensors (onnx_tensor.c) ------------------------------------------------------ */

/* Check tp and fill t. ctx prefixes messages ("" or "node ...: attribute 'x': "). */
int onnx_read_tensor(ld *L, const Pt__Onnx__TensorProto *tp, onnx_tensor *t,
                     const char *ctx);

/* ---- values, nodes, the name index (onnx_graph.c) --------------------------------- */

/* One input, output or value_info entry; what and idx name it in messages. */
int onnx_read_value_info(ld *L, const Pt__Onnx__ValueInfoProto *vp, onnx_value_info *v,
                         const char *what, size_t idx);
/* Node index of the file; needs L->domains. */
int onnx_read_node(ld *L, const Pt__Onnx__NodeProto *np, int index, onnx_node *n);
/* qsort / bsearch order of L->domains: by domain. */
int onnx_cmp_opset(const void *a, const void *b);
/* Once every list of L->m is read: fills m->index and checks the graph's names. */
int onnx_build_index(ld *L);
/* The slot called name; NULL for a NULL or empty index, a NULL or "" name, or a name
 * the graph does not mention. */
slot *onnx_ix_find(const onnx_index *ix, const char *name);

#endif
