/* onnx — reads an .onnx file (an ONNX ModelProto) into a plain, checked graph.
 *
 * This is only the reader: bytes -> graph. Turning the graph into layers is the
 * mapper's job; it walks the structs below and never sees protobuf-c.
 *
 * Ownership: onnx_load() / onnx_load_mem() return an onnx_model the caller frees
 * with onnx_free(). The model owns everything reachable from it (strings, dims,
 * tensor data, nodes, attributes); every pointer handed out, by the structs or
 * by the helpers, lives until onnx_free() and must not be freed on its own.
 * Nothing refers back to the input buffer, which the caller may free at once.
 * The model is read-only after loading, so threads may share it.
 *
 * What loading checks (any failure: no model, a pt_err whose message names the
 * file and, where it applies, the node as "node INDEX 'NAME' (OP_TYPE)" and the
 * tensor or attribute by name):
 *   PT_EIO      the file cannot be read
 *   PT_ETRUNC   the file ends inside a top-level field (byte offset given)
 *   PT_EPARSE   the bytes are not a protobuf message, or are damaged inside (a
 *               length past the end of its enclosing message, byte offset
 *               given), or the message is not an ONNX ModelProto (no ir_version,
 *               no graph, no opset_import); also a singular message field given
 *               twice (graph, a value's type or shape, an attribute's tensor),
 *               which protobuf would merge but protobuf-c merges in quadratic
 *               time and no ONNX writer produces
 *   PT_ETOOBIG  a tensor's dims claim more than ONNX_MAX_ELEMS elements or more
 *               than the file could hold; a rank over ONNX_MAX_RANK
 *   PT_EFORMAT  everything else: a negative dim, a tensor whose data does not
 *               match its dims, data kept in an external file or in segments,
 *               a node with no op_type, an attribute with no name or given
 *               twice, a value produced twice, a node input that is not a graph
 *               input, an initializer or an earlier node's output (ONNX keeps
 *               nodes in topological order), a node in an operator-set domain
 *               the model does not import
 * Tensors of types other than the five in onnx_dtype_size() still load (their
 * byte size is checked when it is known); only onnx_tensor_data() refuses them,
 * naming the type, so a model whose unused constants are, say, BOOL still loads.
 * Subgraph attributes (If/Loop/Scan bodies) are not read: such an attribute has
 * type ONNX_ATTR_GRAPH(S) and no value.
 */
#ifndef PT_ONNX_H
#define PT_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Loading limits, against hostile or damaged files. */
#define ONNX_MAX_RANK 64              /* dims of one tensor or value shape */
#define ONNX_MAX_ELEMS (1LL << 30)    /* elements of one tensor; also the largest dim */

/* ONNX's TensorProto.DataType numbers. */
typedef enum onnx_dtype {
    ONNX_UNDEFINED = 0,
    ONNX_FLOAT = 1,     /* float */
    ONNX_UINT8 = 2,     /* uint8_t */
    ONNX_INT8 = 3,      /* int8_t */
    ONNX_UINT16 = 4,
    ONNX_INT16 = 5,
    ONNX_INT32 = 6,     /* int32_t */
    ONNX_INT64 = 7,     /* int64_t */
    ONNX_STRING = 8,
    ONNX_BOOL = 9,
    ONNX_FLOAT16 = 10,
    ONNX_DOUBLE = 11,
    ONNX_UINT32 = 12,
    ONNX_UINT64 = 13,
    ONNX_COMPLEX64 = 14,
    ONNX_COMPLEX128 = 15,
    ONNX_BFLOAT16 = 16,
} onnx_dtype;

/* ONNX's AttributeProto.AttributeType numbers. */
typedef enum onnx_attr_type {
    ONNX_ATTR_UNDEFINED = 0,
    ONNX_ATTR_FLOAT = 1,
    ONNX_ATTR_INT = 2,
    ONNX_ATTR_STRING = 3,
    ONNX_ATTR_TENSOR = 4,
    ONNX_ATTR_GRAPH = 5,
    ONNX_ATTR_FLOATS = 6,
    ONNX_ATTR_INTS = 7,
    ONNX_ATTR_STRINGS = 8,
    ONNX_ATTR_TENSORS = 9,
    ONNX_ATTR_GRAPHS = 10,
    ONNX_ATTR_SPARSE_TENSOR = 11,
    ONNX_ATTR_SPARSE_TENSORS = 12,
} onnx_attr_type;

/* A tensor: an initializer, an attribute's value, or a Constant's output. */
typedef struct onnx_tensor {
    const char *name;       /* "" for an unnamed attribute tensor */
    int dtype;              /* an onnx_dtype number, as the file gives it */
    int rank;               /* 0 for a scalar */
    const int64_t *dims;    /* rank entries, each >= 0 */
    int64_t count;          /* elements: the product of dims (1 for a scalar) */
    /* count elements of the dtype's C type (see onnx_dtype), row-major, in host
     * byte order, whichever field of the file held them. NULL exactly when the
     * dtype is not one petal-tui reads; read it through onnx_tensor_data() to get
     * an error that says so. Never NULL for a readable type, even with count 0. */
    const void *data;
} onnx_tensor;

/* An input, output or value_info entry: a value's name, type and shape. */
typedef struct onnx_value_info {
    const char *name;
    int elem_type;          /* onnx_dtype; 0 when not given or not a tensor type */
    int rank;               /* -1 when the shape is not given */
    const int64_t *dims;    /* rank entries; -1 for a symbolic or unknown dim */
    const char *const *dim_params; /* rank entries: the symbol ("batch_size") or "" */
} onnx_value_info;

typedef struct onnx_attr {
    const char *name;
    int type;               /* an onnx_attr_type number */
    /* Only the member(s) of the type are set, the rest are zero. */
    float f;                /* FLOAT */
    int64_t i;              /* INT */
    const char *s;          /* STRING: the bytes, NUL added */
    size_t s_len;
    const onnx_tensor *t;   /* TENSOR */
    size_t n;               /* FLOATS, INTS, STRINGS, TENSORS: how many */
    const float *floats;
    const int64_t *ints;
    const char *const *strings;  /* each NUL-terminated */
    const onnx_tensor *tensors;
} onnx_attr;

typedef struct onnx_node {
    int index;              /* position in the file's node list, from 0 */
    const char *name;       /* "" when the file gives none */
    const char *op_type;    /* never "" */
    const char *domain;     /* "" for ONNX's own operators (files write "" or "ai.onnx") */
    size_t n_inputs;
    const char *const *inputs;   /* "" marks an absent optional input */
    size_t n_outputs;
    const char *const *outputs;  /* "" marks an absent optional output */
    size_t n_attrs;
    const onnx_attr *attrs;      /* in file order, names distinct */
} onnx_node;

typedef struct onnx_opset {
    const char *domain;     /* "" for ONNX's own, as for nodes */
    int64_t version;
} onnx_opset;

typedef struct onnx_index onnx_index; /* private: name lookups */

typedef struct onnx_model {
    const char *path;       /* the file (or the name given to onnx_load_mem) */
    int64_t ir_version;
    const char *producer_name;    /* "" when not given, as for every string */
    const char *producer_version;
    const char *domain;
    int64_t model_version;
    int64_t opset;          /* version of the default domain, 0 when not imported */
    size_t n_opsets;
    const onnx_opset *opsets;
    const char *graph_name;
    /* Graph inputs as listed. Files before IR version 4 also list every
     * initializer here; onnx_find_tensor() tells them apart. */
    size_t n_inputs;
    const onnx_value_info *inputs;
    size_t n_outputs;
    const onnx_value_info *outputs;
    size_t n_value_info;
    const onnx_value_info *value_info;
    size_t n_initializers;
    const onnx_tensor *initializers;
    size_t n_nodes;
    const onnx_node *nodes;       /* in file order, which is topological */
    const char *doc_string;       /* the model's ("" when not given) */
    /* metadata_props in file order (keys as the file gives them, "" for a missing one;
     * a key given twice is listed twice: onnx_prop() finds the first). */
    size_t n_props;
    const char *const *prop_keys;
    const char *const *prop_values;
    onnx_index *index;
} onnx_model;

/* Read and check the file at path. */
int onnx_load(const char *path, onnx_model **out, pt_err *e);
/* The same from len bytes in memory; name only places error messages. */
int onnx_load_mem(const uint8_t *buf, size_t len, const char *name, onnx_model **out,
                  pt_err *e);
void onnx_free(onnx_model *m);

/* The tensor called name: an initializer, or the output of a Constant node
 * (from its value, value_float(s) or value_int(s) attribute; the returned
 * tensor then carries the output's name), or the output of an Identity of
 * either (the very tensor it reads, which keeps its own name: exporters alias
 * one initializer for equal constants that way). NULL when there is none. */
const onnx_tensor *onnx_find_tensor(const onnx_model *m, const char *name);
/* The value of the first metadata_props entry whose key is key, or NULL. */
const char *onnx_prop(const onnx_model *m, const char *key);
/* The graph input, output or value_info entry called name, or NULL. */
const onnx_value_info *onnx_find_value_info(const onnx_model *m, const char *name);
/* The node whose outputs include name; NULL for graph inputs, initializers and
 * unknown names. */
const onnx_node *onnx_producer(const onnx_model *m, const char *name);
/* How many times name is read: once per node input slot that names it, plus
 * once per graph output of that name. 0 for "" and unknown names. */
int onnx_consumers(const onnx_model *m, const char *name);

/* A tensor's data as want's C type: PT_OK, or PT_EFORMAT naming the file, the
 * tensor and both types when the tensor is of another type (or of a type
 * petal-tui does not read). */
int onnx_tensor_data(const onnx_model *m, const onnx_tensor *t, onnx_dtype want,
                     const void **data, pt_err *e);

/* Attributes of a node by name. The typed getters give the default (or NULL
 * and *n = 0) when the attribute is absent or of another type; use
 * onnx_attr_check() first where another type must be an error. */
const onnx_attr *onnx_attr_find(const onnx_node *node, const char *name);
int64_t onnx_attr_int(const onnx_node *node, const char *name, int64_t dflt);
float onnx_attr_float(const onnx_node *node, const char *name, float dflt);
const char *onnx_attr_string(const onnx_node *node, const char *name, const char *dflt);
const int64_t *onnx_attr_ints(const onnx_node *node, const char *name, size_t *n);
const float *onnx_attr_floats(const onnx_node *node, const char *name, size_t *n);
const char *const *onnx_attr_strings(const onnx_node *node, const char *name, size_t *n);
const onnx_tensor *onnx_attr_tensor(const onnx_node *node, const char *name);
/* PT_OK when the attribute is absent or of type want; PT_EFORMAT naming the
 * file, the node, the attribute and both types otherwise. */
int onnx_attr_check(const onnx_model *m, const onnx_node *node, const char *name,
                    onnx_attr_type want, pt_err *e);

/* "FLOAT", "INT8", ... or "UNKNOWN". */
const char *onnx_dtype_name(int dtype);
/* Bytes per element of the types petal-tui reads (FLOAT, UINT8, INT8, INT32,
 * INT64); 0 for every other type. */
size_t onnx_dtype_size(int dtype);
/* "INT", "INTS", ... or "UNKNOWN". */
const char *onnx_attr_type_name(int type);

#endif
