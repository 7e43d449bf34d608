/* nn_import_layout — tf2onnx's NHWC forms on the importer (see nn_import_impl.h).
 *
 * tf2onnx writes a Keras model's input as [N, H, W, 3] with a Transpose (0, 3, 1, 2)
 * after it, and goes back with a Transpose (0, 2, 3, 1) before the pooling, which is
 * a ReduceMean over H and W. The library is NHWC inside whatever the file says, so a
 * Transpose is no layer: its output is the same layer, marked (val.nhwc) as seen the
 * other way, and only a Transpose back or a ReduceMean over the spatial axes may read
 * a value so marked (in_node_padded refuses it to every other operator).
 */
#include <stdint.h>
#include <string.h>

#include "nn/nn_import_impl.h"

/* Whether n's perm attribute is exactly p (4 values). */
static int perm_is(const onnx_node *n, const int64_t p[4])
{
    size_t k = 0;
    const int64_t *v = onnx_attr_ints(n, "perm", &k);
    return v && k == 4 && v[0] == p[0] && v[1] == p[1] && v[2] == p[2] && v[3] == p[3];
}

static const int64_t TO_NCHW[4] = { 0, 3, 1, 2 }, TO_NHWC[4] = { 0, 2, 3, 1 };

/* Whether value name is read, and read only by Transposes (0, 3, 1, 2). */
static int read_as_nchw(const onnx_model *om, const char *name)
{
    int readers = 0;
    for (size_t i = 0; i < om->n_nodes; i++) {
        const onnx_node *n = &om->nodes[i];
        for (size_t k = 0; k < n->n_inputs; k++) {
            if (strcmp(n->inputs[k], name) != 0)
                continue;
            if (strcmp(n->op_type, "Transpose") != 0 || !perm_is(n, TO_NCHW))
                return 0;
            readers++;
        }
    }
    return readers > 0;
}

int nn_imp_graph_input(imp *I, const onnx_value_info **in, int *nhwc)
{
    *nhwc = 0;
    for (size_t i = 0; i < I->om->n_inputs; i++) {
        const onnx_value_info *v = &I->om->inputs[i];
        if (onnx_find_tensor(I->om, v->name))
            continue; /* old exporters list initializers as inputs too */
        *in = v;
        if (v->rank == 4 && (v->dims[3] == 3 || v->dims[3] == -1) &&
            read_as_nchw(I->om, v->name)) {
            *nhwc = 1;
            return PT_OK;
        }
        if (v->rank != 4 || (v->dims[1] != 3 && v->dims[1] != -1))
            return err_set(I->e, PT_EFORMAT, I->om->path, PT_NO_RECORD, PT_NO_OFFSET,
                           "input '%s' is not an N x 3 x H x W image batch, nor an N x H x W "
                           "x 3 one read only through a Transpose (0, 3, 1, 2)", v->name);
        return PT_OK;
    }
    return err_set(I->e, PT_EFORMAT, I->om->path, PT_NO_RECORD, PT_NO_OFFSET,
                   "the graph has no image input");
}

/* Values that are not plain maps (or the caffe input, unless bgr) get
 * nn_imp_in_node's error. */
int nn_imp_layout_in(imp *I, const onnx_node *n, int *node, int *nhwc, int *bgr)
{
    const val *v = n->n_inputs ? nn_imp_find_val(I, n->inputs[0]) : NULL;
    if (v && v->kind == V_NODE && v->nhwc && !v->flat && (!v->bgr || bgr)) {
        *node = v->node;
        *nhwc = 1;
        if (bgr)
            *bgr = v->bgr;
        return PT_OK;
    }
    *nhwc = 0;
    return bgr ? nn_imp_in_node_bgr(I, n, 0, node, bgr) : nn_imp_in_node(I, n, 0, 0, node);
}

int nn_imp_transpose(imp *I, const onnx_node *n)
{
    int x, nhwc, bgr, rc = nn_imp_layout_in(I, n, &x, &nhwc, &bgr);
    if (rc)
        return rc;
    if (nhwc ? !perm_is(n, TO_NCHW) : !perm_is(n, TO_NHWC))
        return nn_imp_err(I, n, "a Transpose of an N x %s map; only perm (%s) is supported",
                          nhwc ? "H x W x C" : "C x H x W", nhwc ? "0, 3, 1, 2" : "0, 2, 3, 1");
    if ((rc = nn_imp_out_node(I, n, x, 0)) != PT_OK)
        return rc;
    I->v[I->nv - 1].nhwc = !nhwc;
    I->v[I->nv - 1].bgr = bgr;
    return PT_OK;
}

/* ReduceMean's axes, from the attribute (opset < 18) or a constant input (18 on),
 * made non-negative; -1 when they are not two constant axes of a rank-4 value. */
static int reduce_axes(imp *I, const onnx_node *n, int64_t ax[2])
{
    size_t k = 0;
    const int64_t *v = onnx_attr_ints(n, "axes", &k);
    if (!v) {
        const onnx_tensor *t = nn_imp_const(I, n, 1);
        const void *d = NULL;
        if (!t || onnx_tensor_data(I->om, t, ONNX_INT64, &d, I->e) != PT_OK)
            return -1;
        v = d;
        k = t->count;
    }
    if (k != 2)
        return -1;
    for (int a = 0; a < 2; a++) {
        ax[a] = v[a] < 0 ? v[a] + 4 : v[a];
        if (ax[a] < 0 || ax[a] > 3)
            return -1;
    }
    if (ax[0] > ax[1]) {
        int64_t t = ax[0];
        ax[0] = ax[1];
        ax[1] = t;
    }
    return 0;
}

int nn_imp_reduce_mean(imp *I, const onnx_node *n)
{
    int x, nhwc, rc = nn_imp_layout_in(I, n, &x, &nhwc, NULL);
    if (rc)
        return rc;
    int64_t ax[2] = { 0, 0 };
    const int64_t want = nhwc ? 1 : 2;
    if (reduce_axes(I, n, ax) != 0 || ax[0] != want || ax[1] != want + 1)
        return nn_imp_err(I, n, "only a mean over the spatial axes (%s of an N x %s map, given "
                          "as constants) is supported",
                          nhwc ? "1, 2" : "2, 3", nhwc ? "H x W x C" : "C x H x W");
    int keep = onnx_attr_int(n, "keepdims", 1) != 0;
    int id = nn_imp_built(I, n, nn_gap(I->m, x));
    if (id < 0)
        return id;
    if ((rc = nn_imp_out_node(I, n, id, 0)) != PT_OK)
        return rc;
    /* [N, 1, 1, C] stays NHWC; [N, C] (keepdims 0) has no layout left. */
    I->v[I->nv - 1].nhwc = nhwc && keep;
    return PT_OK;
}

void nn_import_declared_size(const onnx_model *om, int *h, int *w)
{
    *h = *w = 0;
    for (size_t i = 0; i < om->n_inputs; i++) {
        const onnx_value_info *v = &om->inputs[i];
        if (onnx_find_tensor(om, v->name))
            continue;
        if (v->rank != 4)
            return;
        int nhwc = (v->dims[3] == 3 || v->dims[3] == -1) && read_as_nchw(om, v->name);
        int64_t dh = nhwc ? v->dims[1] : v->dims[2], dw = nhwc ? v->dims[2] : v->dims[3];
        if (dh > 0 && dw > 0 && dh <= 1 << 20 && dw <= 1 << 20) {
            *h = (int)dh;
            *w = (int)dw;
        }
        return;
    }
}
