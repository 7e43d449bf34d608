/* nn_export_impl — the ONNX writer's state, shared by nn_export.c (the writer and the
 * float export) and nn_export_q.c (what an int8 export adds: the QuantizeLinear /
 * DequantizeLinear pairs, int8 weights and int32 biases, nn_quant.h); not for other
 * modules. The layer kinds' hooks see only nn_layer.h's nn_onnx_* calls.
 *
 * Ownership: one W per nn_export_onnx() call; everything the protobuf-c structs point
 * at is a block of its pool (nn_exw_alloc), freed in one go when the export ends.
 */
#ifndef PT_NN_EXPORT_IMPL_H
#define PT_NN_EXPORT_IMPL_H

#include "nn/nn_export.h"
#include "nn/nn_impl.h"
#include "onnx.pb-c.h"

#define ATTR_MAX 8

/* A node's output as a value of the graph. */
typedef struct wval {
    const char *name;        /* NULL until its node is written */
    const char *name4;       /* a 2-D value reshaped to 4-D, once asked for */
    int rank;                /* 2 or 4 */
    int owner;               /* the node whose value it is (itself, or what it is same as) */
    /* An int8 export: name and name4 through a QuantizeLinear / DequantizeLinear pair,
     * once made; qall: every reader reads them (a Relu, Clip or Add's output). */
    const char *q, *q4;
    int qall;
} wval;

/* The scales of a DequantizeLinear's output (an int8 export): what an int32 bias
 * needs to know of its product's input and weights. */
typedef struct wscale {
    const char *name;
    const float *scale;
    int n;
} wscale;

typedef struct nn_onnx_writer {
    const nn_model *m;
    pt_err *e;
    int err;
    wval *v;                 /* per model node */
    int *fold_next, *fold_prev;
    void **blk;              /* the pool */
    size_t n_blk, cap_blk;
    Pt__Onnx__NodeProto **nodes;
    size_t n_nodes, cap_nodes;
    Pt__Onnx__TensorProto **inits;
    size_t n_inits, cap_inits;
    Pt__Onnx__NodeProto *last;   /* the node the attribute calls add to */
    const nn_export_quant *q;    /* NULL: a float export */
    wscale *sc;                  /* an int8 export's DequantizeLinear outputs */
    size_t n_sc, cap_sc;
    /* One graph among others (an ensemble's members, nn_export_ens.c): what its names
     * start with ("m0."), the value its front reads, the value its logits become.
     * NULL: "", "image", "logits" (a model's own export). */
    const char *prefix, *input, *logits;
} W;

/* The pool (nn_export.c): zeroed blocks, a formatted string, the out-of-memory error
 * (returned), and an initializer of rank dims named name (data_type and data still to
 * set). NULL when out of memory. */
void *nn_exw_alloc(W *w, size_t n);
char *nn_exw_str(W *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int nn_exw_oom(W *w);
Pt__Onnx__TensorProto *nn_exw_tensor(W *w, const char *name, int rank, const int64_t *dims);

/* A graph of model m written into w (w->m = m; w->prefix, input, logits as set): the
 * checks, the folds, every live node, and its logits [N, C] as w->logits. */
int nn_exw_graph(W *w, const nn_model *m);
/* A 1-D int64 initializer named name. */
const char *nn_exw_i64(W *w, const char *name, int n, const int64_t *v);
/* A string attribute on the last node. */
void nn_exw_attr_str(W *w, const char *name, const char *v);
/* A float32 graph input or output of rank dims (a negative dim: "N"). */
Pt__Onnx__ValueInfoProto *nn_exw_value_info(W *w, const char *name, int rank,
                                            const int64_t *dims);
/* A metadata_props entry (room for 8 made by the caller). */
int nn_exw_prop(W *w, Pt__Onnx__ModelProto *mp, const char *key, const char *value);
/* The ModelProto mp (its metadata written) around w's nodes and initializers, input
 * "image" [N, 3, S, S], outputs "logits" and "probabilities" [N, k], packed into *out. */
int nn_exw_pack(W *w, Pt__Onnx__ModelProto *mp, int h, int wd, int k, uint8_t **out,
                size_t *len);
/* Frees the writer's pool and arrays. */
void nn_exw_free(W *w);

/* nn_export_q.c: an int8 export's part of nn_onnx_in (v: the value node's input k
 * holds; name: what a float export would read, name4 when rank4 reshaped it): that
 * value through its QuantizeLinear / DequantizeLinear pair where the reader quantizes
 * it, else name. */
const char *nn_exq_in(W *w, int node, int k, wval *v, int reshaped, const char *name);
/* After node's hook: a Relu, Clip or Add's output gets its pair, which every reader
 * then reads. */
int nn_exq_after(W *w, int node);
/* The metadata_props "quantization" text. */
const char *nn_exq_describe(W *w);

#endif
