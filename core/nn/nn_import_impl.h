/* nn_import_impl — internals shared by nn_import.c (the graph walk and the graph-level
 * forms: Pad, Identity, Softmax, Quantize/DequantizeLinear, shape computations),
 * the layer kinds' importers (onnx_import in layer_*.c: nn_layer.h), nn_import_front.c
 * (the input normalisation and per-channel constants), nn_import_layout.c (tf2onnx's
 * NHWC input, Transposes and ReduceMean), nn_import_vector.c (Reshape, Flatten,
 * Squeeze, Unsqueeze),
 * nn_import_weights.c (the weights' conversion) and nn_import_map.c (the way back:
 * which file tensor each parameter came from); not for other modules.
 *
 * Ownership: one imp per nn_import_onnx() call, which frees its arrays; the ONNX
 * model and the options are borrowed, the nn model is returned to the caller.
 */
#ifndef PT_NN_IMPORT_IMPL_H
#define PT_NN_IMPORT_IMPL_H

#include "nn/nn_import.h"

typedef enum vkind { V_NODE = 1, V_SHAPE } vkind;

/* What an ONNX value name is in the library. */
typedef struct val {
    const char *name;
    vkind kind;
    int node;           /* V_NODE: the layer */
    int flat;           /* the layer's h x w x c map flattened: FLAT_NCHW or FLAT_NHWC order */
    int pad[4];         /* a Pad's zeros (top, left, bottom, right) still to add: only
                           a Conv reads such a value, taking them into its padding */
    int nhwc;           /* the file sees this value as [N, H, W, C] (tf2onnx's layout): only a
                           Transpose back or a ReduceMean over H and W may read it */
    int bgr;            /* the caffe input's channels, in the file's BGR order (library
                           channel k is the file's 2 - k): only per-channel constants, a
                           Pad, a Transpose and a Conv (reversing its weights) may read it */
} val;

/* val.flat: how a flattened map's values are ordered in the file. */
enum { FLAT_NO = 0, FLAT_NCHW = 1, FLAT_NHWC = 2 };

typedef enum fkind { F_CONV, F_QCONV, F_BN, F_DENSE } fkind;

/* A layer whose weights come from the file. */
typedef struct fill {
    fkind kind;
    int node;
    const onnx_node *src;
    int trans_b;        /* F_DENSE: B is [cout][cin] */
    float alpha, beta;  /* F_DENSE: Gemm's factors */
    int quant;          /* F_DENSE: B is quantized (QLinearMatMul) */
    int flat_h, flat_w, flat_c; /* F_DENSE after an NCHW flatten: its map's shape */
    const onnx_node *bias_src;  /* F_DENSE: an Add or QLinearAdd carrying the bias */
    int bias_slot;      /* which input of bias_src is the constant */
    int rev_cin;        /* F_CONV reading the caffe input: library input channel k takes
                           the file's 2 - k */
} fill;

typedef struct imp {
    const onnx_model *om;
    const nn_import_opts *o;
    nn_model *m;
    pt_err *e;
    val *v;
    size_t nv, vcap;
    fill *f;
    size_t nf, fcap;
    int quantized;
    nn_norm norm;           /* the input convention used (o->norm, or the graph's) */
    nn_import_map *map;     /* NULL when the caller wants none */
    onnx_tensor *dq;        /* constants a DequantizeLinear made float (nn_imp_dequantize):
                               named after its output, their data malloc'd */
    size_t ndq, dqcap;
} imp;

/* What a kind's onnx_import returns for a form of its op that is not its own (the
 * importer then asks the next kind that names the op; nn_layer.h). Not a PT_ code. */
#define NN_IMP_DECLINE 1

/* The graph walk's values (nn_import.c): the value called name (the latest), a new
 * one, input slot k of n as a layer (not a flattened map unless allow_flat), n's
 * output as node, and a builder result turned into an error naming n. */
val *nn_imp_find_val(imp *I, const char *name);
int nn_imp_set_val(imp *I, const char *name, vkind kind, int node, int flat);
int nn_imp_in_node(imp *I, const onnx_node *n, size_t k, int allow_flat, int *node);
/* The same for the readers the caffe input's BGR order allows (val.bgr): *bgr says
 * whether it is that (nn_imp_in_node refuses it). */
int nn_imp_in_node_bgr(imp *I, const onnx_node *n, size_t k, int *node, int *bgr);
int nn_imp_out_node(imp *I, const onnx_node *n, int node, int flat);
int nn_imp_built(imp *I, const onnx_node *n, int id);
/* Input slot k of n for a Conv, the one reader of a padded value (val.pad): pad
 * receives the zeros of a Pad still to add and *bgr whether it is the caffe input. */
int nn_imp_in_node_padded(imp *I, const onnx_node *n, size_t k, int *node, int pad[4], int *bgr);
/* n names its input's layer as its own output, flattened as its input is (Identity,
 * Dropout, the Quantize/DequantizeLinear pairs, a final Softmax): no layer. */
int nn_imp_pass(imp *I, const onnx_node *n);
/* Layer node, whose weights the second pass copies from node src of the file
 * (nn_import_weights.c); NULL when out of memory (the error set). */
fill *nn_imp_add_fill(imp *I, fkind kind, int node, const onnx_node *src);

/* Attributes and shared forms of the kinds' importers (nn_import.c). */
/* Kernel k, strides s and pads p (top, left, bottom, right: ONNX's order) of a 2-D
 * conv or pool reading layer in; k comes in from the weights (conv) or as 0 (pools:
 * kernel_shape is required). Dilations, ceil_mode and unknown auto_pads refused. */
int nn_imp_window(imp *I, const onnx_node *n, int in, int64_t k[2], int64_t s[2], int64_t p[4]);
/* Input slot k of n as one constant float, or (slot absent) attribute attr or dflt. */
int nn_imp_const_scalar(imp *I, const onnx_node *n, size_t k, const char *attr, float dflt,
                        float *out);
/* After a quantized op that made layer id: the activation its output's range (scale
 * in slot scale_k, zero point in zp_k) carries: ReLU6 or ReLU from 0, else none.
 * Returns the last layer's id, or the error. */
int nn_imp_q_act(imp *I, const onnx_node *n, int id, size_t scale_k, size_t zp_k);

/* nn_import_weights.c: a DequantizeLinear of a constant (int8, uint8 or int32; a
 * scale and zero point per tensor or per axis) as the float constant it computes,
 * y = (x - zero_point) * scale, exactly as ONNX defines it: the QDQ form's weights
 * and biases (nn_quant.h). nn_imp_dq_free frees what the import made so. */
int nn_imp_dequantize(imp *I, const onnx_node *n);
void nn_imp_dq_free(imp *I);

/* nn_import_front.c: the first layer (the input normalisation o->norm) on the graph
 * input in, and a Mul, Add, Sub or Div of input slot 1 - ck of n by the constant in
 * slot ck (x * c, x + c, x - c, c - x, x / c; c / x refused), as an affine layer. */
int nn_imp_first_layer(imp *I, const onnx_value_info *in);
int nn_imp_const_affine(imp *I, const onnx_node *n, size_t ck);

/* nn_import_layout.c: tf2onnx's NHWC forms. The graph's image input ([N, 3, H, W], or
 * [N, H, W, 3] read only by Transposes (0, 3, 1, 2): *nhwc 1); a Transpose between
 * the layouts (the same layer, seen the other way); a ReduceMean over the spatial axes
 * (a global average pool). */
int nn_imp_graph_input(imp *I, const onnx_value_info **in, int *nhwc);
int nn_imp_transpose(imp *I, const onnx_node *n);
int nn_imp_reduce_mean(imp *I, const onnx_node *n);
/* Input 0 of n as a layer, and whether the file sees it as NHWC (*nhwc) or as the
 * caffe input's BGR channels (*bgr; NULL: refused). */
int nn_imp_layout_in(imp *I, const onnx_node *n, int *node, int *nhwc, int *bgr);

/* nn_import_vector.c: Flatten and Reshape (of a map for a dense layer, or of a
 * vector), Squeeze and Unsqueeze of a vector (a 1 x 1 x C layer): the same layer.
 * nn_imp_is_vector_op: whether n is a Squeeze or Unsqueeze of a layer (not of a
 * shape computation). */
int nn_imp_reshape(imp *I, const onnx_node *n);
int nn_imp_is_vector_op(imp *I, const onnx_node *n);

/* nn_import_head.c: the node that starts the classifier: walking back from the
 * graph's output over Softmax, dequantization, a bias add and reshapes, the first
 * Gemm / MatMul; NULL when there is none. */
const onnx_node *nn_imp_classifier(const onnx_model *om);

/* An error naming the file, node (index, name) and operator. */
int nn_imp_err(imp *I, const onnx_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Input slot k of n when it is a constant (initializer or Constant, or a constant a
 * DequantizeLinear made float), else NULL. */
const onnx_tensor *nn_imp_const(imp *I, const onnx_node *n, size_t k);
nn_node_info nn_imp_info(imp *I, int node);

/* After nn_model_finalize(): copy one layer's weights from the file into P (its
 * parameters) and, for batch norm, buf (its running statistics). */
int nn_imp_fill_conv(imp *I, const fill *f, float *P);
int nn_imp_fill_bn(imp *I, const fill *f, float *P, float *buf);
int nn_imp_fill_dense(imp *I, const fill *f, float *P);
/* What a dense layer's bias is multiplied by at import: Gemm's beta for its own C,
 * 1 for the constant of an Add after it (beta scales only C). */
float nn_imp_bias_scale(const fill *f);

/* nn_import_map.c: a new empty map (NULL when out of memory), and the entries of one
 * filled layer added to it (after its fill succeeded, so its tensors are known good). */
nn_import_map *nn_imp_map_new(void);
int nn_imp_map_add(imp *I, const fill *f);

#endif
