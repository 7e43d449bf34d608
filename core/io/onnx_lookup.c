/* onnx_lookup — the public read side of a loaded model: lookups by value name on
 * the index onnx_graph.c built (tensor, value info, producer, consumers), a tensor's
 * data as a checked C type, the attribute getters and their type check, and the
 * names and sizes of dtypes and attribute types. Nothing here allocates or changes
 * the model, so threads may share it.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "io/onnx_impl.h"

/* ---- lookups ------------------------------------------------------------------------ */

const onnx_tensor *onnx_find_tensor(const onnx_model *m, const char *name)
{
    const slot *s = onnx_ix_find(m->index, name);
    return s ? s->tensor : NULL;
}

const char *onnx_prop(const onnx_model *m, const char *key)
{
    for (size_t i = 0; key && i < m->n_props; i++)
        if (!strcmp(m->prop_keys[i], key))
            return m->prop_values[i];
    return NULL;
}

const onnx_value_info *onnx_find_value_info(const onnx_model *m, const char *name)
{
    const slot *s = onnx_ix_find(m->index, name);
    return s ? s->info : NULL;
}

const onnx_node *onnx_producer(const onnx_model *m, const char *name)
{
    const slot *s = onnx_ix_find(m->index, name);
    return s && s->producer >= 0 ? &m->nodes[s->producer] : NULL;
}

int onnx_consumers(const onnx_model *m, const char *name)
{
    const slot *s = onnx_ix_find(m->index, name);
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
    onnx_node_where(where, sizeof where, node->index, node->name, node->op_type);
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
