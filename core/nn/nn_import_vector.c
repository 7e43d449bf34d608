/* nn_import_vector — Flatten, Reshape, Squeeze and Unsqueeze on the importer (see
 * nn_import_impl.h). None is a layer: the output names the same layer, seen another
 * way by the file.
 *
 * A map flattened for a dense layer keeps the order its values have in the file:
 * NCHW (PyTorch's flatten; the dense layer's rows are permuted at fill time) or NHWC
 * (Keras's Flatten, after tf2onnx's Transpose back: the library's own order). A
 * vector (a 1 x 1 x C layer: pooled features, squeeze-and-excitation's) moves
 * between [N, C], [N, C, 1, 1] and [N, 1, 1, C]; the last is marked NHWC (val.nhwc)
 * so that only a Transpose, a ReduceMean or another of these reads it as the file
 * means it.
 */
#include <stdint.h>
#include <string.h>

#include "nn/nn_import_impl.h"

/* The ints of attribute name (older opsets) or of constant input slot 1 (opset 13
 * on); *k 0 when there are none. NULL when input 1 is there but not a constant. */
static const int64_t *ints_of(imp *I, const onnx_node *n, const char *name, size_t *k)
{
    static const int64_t none[1] = { 0 };
    *k = 0;
    const int64_t *v = onnx_attr_ints(n, name, k);
    if (v || n->n_inputs < 2 || !n->inputs[1][0])
        return v ? v : none;
    const onnx_tensor *t = nn_imp_const(I, n, 1);
    const void *d = NULL;
    if (!t || t->rank > 1 || onnx_tensor_data(I->om, t, ONNX_INT64, &d, I->e) != PT_OK)
        return NULL;
    *k = (size_t)t->count;
    return d;
}

/* Whether axes (k of them, of a rank-4 shape, negative ones counted from the end)
 * are exactly {a, a + 1}. */
static int axes_are(const int64_t *v, size_t k, int64_t a)
{
    if (k != 2)
        return 0;
    int64_t x = v[0] < 0 ? v[0] + 4 : v[0], y = v[1] < 0 ? v[1] + 4 : v[1];
    return (x == a && y == a + 1) || (y == a && x == a + 1);
}

/* Squeeze or Unsqueeze of vector x (*nhwc: how the file sees it): the output's
 * layout into *nhwc; an error naming n for anything but the vector's 1s. */
static int squeeze(imp *I, const onnx_node *n, int c, int *nhwc)
{
    size_t k;
    const int64_t *ax = ints_of(I, n, "axes", &k);
    if (!strcmp(n->op_type, "Squeeze")) {
        /* [N, C, 1, 1] (axes 2, 3) or [N, 1, 1, C] (1, 2) to [N, C]; no axes: every 1. */
        if (ax && (k == 0 ? c > 1 : axes_are(ax, k, *nhwc ? 1 : 2))) {
            *nhwc = 0;
            return PT_OK;
        }
        return nn_imp_err(I, n, "only a Squeeze of an N x %s vector to N x C (axes %s) is "
                          "supported", *nhwc ? "1 x 1 x C" : "C x 1 x 1", *nhwc ? "1, 2" : "2, 3");
    }
    /* Unsqueeze of [N, C]: axes 2, 3 give [N, C, 1, 1], axes 1, 2 [N, 1, 1, C]. */
    if (!*nhwc && ax && (axes_are(ax, k, 2) || axes_are(ax, k, 1))) {
        *nhwc = axes_are(ax, k, 1) && !axes_are(ax, k, 2);
        return PT_OK;
    }
    return nn_imp_err(I, n, "only an Unsqueeze of an N x C vector to N x C x 1 x 1 (axes 2, 3) "
                      "or N x 1 x 1 x C (axes 1, 2) is supported");
}

/* Reshape's target when it is a constant: its values into t (up to 4), its rank, or
 * 0 when not a constant of rank 1 with 2 or 4 values. */
static int target(imp *I, const onnx_node *n, int64_t t[4])
{
    const onnx_tensor *c = nn_imp_const(I, n, 1);
    const void *d = NULL;
    if (!c || c->rank != 1 || (c->count != 2 && c->count != 4) ||
        onnx_tensor_data(I->om, c, ONNX_INT64, &d, I->e) != PT_OK)
        return 0;
    memcpy(t, d, (size_t)c->count * sizeof *t);
    return (int)c->count;
}

/* Reshape of a vector of c channels: [N, C] (or [N, -1]), [N, C, 1, 1] or [N, 1, 1, C]
 * (C may be -1); a computed shape is taken as [N, -1], as for a map. */
static int reshape_vector(imp *I, const onnx_node *n, int c, int *nhwc)
{
    const val *sv = n->n_inputs > 1 ? nn_imp_find_val(I, n->inputs[1]) : NULL;
    *nhwc = 0;
    if (sv && sv->kind == V_SHAPE)
        return PT_OK;
    int64_t t[4] = { 0, 0, 0, 0 };
    int rank = target(I, n, t), is_c[4];
    for (int a = 0; a < 4; a++)
        is_c[a] = t[a] == c || t[a] == -1;
    if ((rank == 2 && is_c[1]) || (rank == 4 && is_c[1] && t[2] == 1 && t[3] == 1))
        return PT_OK;
    if (rank == 4 && t[1] == 1 && t[2] == 1 && is_c[3]) {
        *nhwc = 1;
        return PT_OK;
    }
    return nn_imp_err(I, n, "a Reshape of an N x %d vector; only to (N, C), (N, C, 1, 1) or "
                      "(N, 1, 1, C) is supported", c);
}

/* Flatten or Reshape of a map (h x w > 1) for a dense layer: to (N, -1) only, in the
 * order the file sees the map (nhwc). */
static int flatten_map(imp *I, const onnx_node *n, int x)
{
    if (strcmp(n->op_type, "Reshape") != 0)
        return PT_OK;
    const val *sv = n->n_inputs > 1 ? nn_imp_find_val(I, n->inputs[1]) : NULL;
    int64_t t[4];
    nn_node_info ni = nn_imp_info(I, x);
    int ok = (sv && sv->kind == V_SHAPE) ||
             (target(I, n, t) == 2 && (t[1] == -1 || t[1] == (int64_t)ni.h * ni.w * ni.c));
    return ok ? PT_OK : nn_imp_err(I, n, "only Reshape to (N, -1) is supported");
}

int nn_imp_is_vector_op(imp *I, const onnx_node *n)
{
    if (strcmp(n->op_type, "Squeeze") != 0 && strcmp(n->op_type, "Unsqueeze") != 0)
        return 0;
    const val *v = n->n_inputs ? nn_imp_find_val(I, n->inputs[0]) : NULL;
    return v && v->kind == V_NODE;
}

int nn_imp_reshape(imp *I, const onnx_node *n)
{
    if (!strcmp(n->op_type, "Flatten") && onnx_attr_int(n, "axis", 1) != 1)
        return nn_imp_err(I, n, "only Flatten with axis 1 is supported");
    const val *v = n->n_inputs ? nn_imp_find_val(I, n->inputs[0]) : NULL;
    int x, nhwc = 0, flat = v && v->kind == V_NODE ? v->flat : FLAT_NO, rc;
    if (flat) /* already flattened: a Flatten or Reshape (N, -1) again changes nothing */
        rc = nn_imp_in_node(I, n, 0, 1, &x);
    else
        rc = nn_imp_layout_in(I, n, &x, &nhwc, NULL);
    if (rc)
        return rc;
    nn_node_info ni = nn_imp_info(I, x);
    if (flat || ni.h * ni.w > 1) {
        if (!strcmp(n->op_type, "Squeeze") || !strcmp(n->op_type, "Unsqueeze"))
            return nn_imp_err(I, n, "a %s of a %s %dx%dx%d map; only of an N x C vector (with "
                              "1 x 1 or not)", n->op_type, flat ? "flattened" : "", ni.h, ni.w,
                              ni.c);
        if ((rc = flatten_map(I, n, x)) != PT_OK)
            return rc;
        return nn_imp_out_node(I, n, x, flat ? flat : nhwc ? FLAT_NHWC : FLAT_NCHW);
    }
    if (!strcmp(n->op_type, "Squeeze") || !strcmp(n->op_type, "Unsqueeze"))
        rc = squeeze(I, n, ni.c, &nhwc);
    else if (!strcmp(n->op_type, "Reshape"))
        rc = reshape_vector(I, n, ni.c, &nhwc);
    else
        nhwc = 0; /* Flatten of a vector: [N, C] */
    if (rc || (rc = nn_imp_out_node(I, n, x, FLAT_NO)) != PT_OK)
        return rc;
    I->v[I->nv - 1].nhwc = nhwc;
    return PT_OK;
}
