/* nn_import_front — the importer's per-channel constants: the first layer (the input
 * normalisation, nn_norm) and a Mul, Add, Sub or Div of a feature map by constants,
 * which becomes an affine layer. Such a layer is merged into the affine it reads when
 * nothing else reads that one, so an exported model's front (NN_NORM_RAW's x255, then
 * its Mul, then its Add) is one layer again, and so is Keras's EfficientNet's
 * (Rescaling's Mul, Normalization's Sub and Div).
 *
 * With NN_NORM_CAFFE the library keeps the pixels' RGB order where the file has BGR:
 * the first layer's value is marked (val.bgr), per-channel constants on it read the
 * file's constant 2 - k for channel k, and the convolutions reading it reverse their
 * input channels (nn_imp_fill_conv).
 */
#include <stdlib.h>
#include <string.h>

#include "nn/nn_impl.h"
#include "nn/nn_import_impl.h"

int nn_imp_first_layer(imp *I, const onnx_value_info *in)
{
    int x = nn_input(I->m);
    static const float mean[3] = { 0.485f, 0.456f, 0.406f }, std[3] = { 0.229f, 0.224f, 0.225f };
    /* Keras's caffe-mode means (R, G, B here), not 255 x ImageNet's mean. */
    static const float caffe_mean[3] = { 123.68f, 116.779f, 103.939f };
    float scale[3], shift[3];
    for (int k = 0; k < 3; k++) {
        switch (I->norm) {
        case NN_NORM_IMAGENET:
            scale[k] = 1.0f / std[k];
            shift[k] = -mean[k] / std[k];
            break;
        case NN_NORM_TF:
            scale[k] = 2.0f;
            shift[k] = -1.0f;
            break;
        case NN_NORM_RAW:
            scale[k] = 255.0f;
            shift[k] = 0.0f;
            break;
        case NN_NORM_CAFFE:
            /* Library channel k holds colour k, normalised as caffe does that colour;
             * the convolutions reading it take the file's channel 2 - k (BGR). */
            scale[k] = 255.0f;
            shift[k] = -caffe_mean[k];
            break;
        case NN_NORM_UNIT:
        case NN_NORM_COUNT:
            scale[k] = 1.0f;
            shift[k] = 0.0f;
            break;
        }
    }
    if (I->norm != NN_NORM_UNIT)
        x = nn_affine(I->m, x, scale, shift);
    if (x < 0) {
        pt_err be;
        nn_model_finalize(I->m, x, &be);
        return err_set(I->e, PT_EFORMAT, I->om->path, PT_NO_RECORD, PT_NO_OFFSET, "%s", be.msg);
    }
    int rc = nn_imp_set_val(I, in->name, V_NODE, x, 0);
    if (rc == PT_OK)
        I->v[I->nv - 1].bgr = I->norm == NN_NORM_CAFFE;
    return rc;
}

/* Whether t holds one value for every channel of a c-channel value of layer x: a
 * scalar (any rank, one element), or [.., C, 1, 1] against a map. A dense layer's
 * output is [N, C] in the file, against which only [C] or [1, C] are per channel. */
static int per_channel(const onnx_tensor *t, int c, int dense)
{
    if (t->count == 1)
        return 1;
    if (t->count != c)
        return 0;
    if (dense)
        return t->rank <= 2 && t->dims[t->rank - 1] == c;
    return t->rank >= 3 && t->dims[t->rank - 3] == c;
}

/* Whether value name is read after node index at (by a later node or as a graph output). */
static int read_later(imp *I, const char *name, int at)
{
    for (size_t i = (size_t)at + 1; i < I->om->n_nodes; i++)
        for (size_t k = 0; k < I->om->nodes[i].n_inputs; k++)
            if (!strcmp(I->om->nodes[i].inputs[k], name))
                return 1;
    for (size_t i = 0; i < I->om->n_outputs; i++)
        if (!strcmp(I->om->outputs[i].name, name))
            return 1;
    return 0;
}

/* Whether the affine layer x is read by n's slot k alone: that value is read once, no
 * other value naming x is read after n, and no layer reads x yet. */
static int sole_reader(imp *I, const onnx_node *n, size_t k, int x)
{
    if (onnx_consumers(I->om, n->inputs[k]) != 1)
        return 0;
    for (size_t i = 0; i < I->nv; i++)
        if (I->v[i].kind == V_NODE && I->v[i].node == x && strcmp(I->v[i].name, n->inputs[k]) &&
            read_later(I, I->v[i].name, n->index))
            return 0;
    for (int i = x + 1; i < I->m->n_nodes; i++)
        if (I->m->nodes[i].in[0] == x || I->m->nodes[i].in[1] == x)
            return 0;
    return 1;
}

/* What n does with its constant c (in slot ck) to a map x, as x * scale + shift. */
static void const_op(const onnx_node *n, size_t ck, float c, float *scale, float *shift)
{
    const char *op = n->op_type;
    *scale = 1.0f;
    *shift = 0.0f;
    if (!strcmp(op, "Mul")) {
        *scale = c;
    } else if (!strcmp(op, "Add")) {
        *shift = c;
    } else if (!strcmp(op, "Sub")) {
        *scale = ck == 1 ? 1.0f : -1.0f; /* x - c, or c - x */
        *shift = ck == 1 ? -c : c;
    } else {
        *scale = 1.0f / c; /* Div: x / c (c / x is refused before) */
    }
}

int nn_imp_const_affine(imp *I, const onnx_node *n, size_t ck)
{
    int x, bgr, rc = nn_imp_in_node_bgr(I, n, 1 - ck, &x, &bgr);
    if (rc)
        return rc;
    int div = !strcmp(n->op_type, "Div");
    if (div && ck == 0)
        return nn_imp_err(I, n, "a constant divided by a feature map (c / x) is not supported; "
                          "only x / c");
    nn_node_info ni = nn_imp_info(I, x);
    const onnx_tensor *t = nn_imp_const(I, n, ck);
    if (!per_channel(t, ni.c, ni.op == NN_OP_DENSE))
        return nn_imp_err(I, n, "a constant operand of %lld values (rank %d) against %d "
                          "channels; one value, or one per channel ([1, C, 1, 1]) is supported",
                          (long long)t->count, t->rank, ni.c);
    const void *d;
    if ((rc = onnx_tensor_data(I->om, t, ONNX_FLOAT, &d, I->e)) != PT_OK)
        return rc;
    for (int64_t k = 0; div && k < t->count; k++)
        if (((const float *)d)[k] == 0.0f)
            return nn_imp_err(I, n, "a division by a constant of 0");
    float *sc = malloc(2 * (size_t)ni.c * sizeof *sc);
    if (!sc)
        return err_set(I->e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    float *sh = sc + ni.c;
    for (int k = 0; k < ni.c; k++) {
        /* The caffe input's library channel k is the file's 2 - k. */
        int at = t->count == 1 ? 0 : bgr ? ni.c - 1 - k : k;
        const_op(n, ck, ((const float *)d)[at], &sc[k], &sh[k]);
    }
    int id;
    nn_node *prev = &I->m->nodes[x];
    if (prev->op == NN_OP_AFFINE && sole_reader(I, n, 1 - ck, x)) {
        /* (x * a + b) * s + h = x * (a * s) + (b * s + h) */
        for (int k = 0; k < ni.c; k++) {
            prev->aff[k] *= sc[k];
            prev->aff[ni.c + k] = prev->aff[ni.c + k] * sc[k] + sh[k];
        }
        id = x;
    } else {
        id = nn_imp_built(I, n, nn_affine(I->m, x, sc, sh));
    }
    free(sc);
    if (id < 0 || (rc = nn_imp_out_node(I, n, id, 0)) != PT_OK)
        return id < 0 ? id : rc;
    I->v[I->nv - 1].bgr = bgr;
    return PT_OK;
}
