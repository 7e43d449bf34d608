/* nn_layer — the table of layer kinds (internal to core/nn/, and tests/test_nn_grad.c).
 *
 * Each kind has one file, layer_<name>.c (a few small kinds that share kernels share
 * one: layer_act.c, layer_pool.c), holding all that is particular to it: its builder
 * (argument and shape checks, the parameter layout: w_len, b_len, buf_len), forward,
 * backward, parameter initialisation, FLOP count, summary text, a small graph for the
 * finite-difference test, its ONNX writer (onnx_write, through the nn_onnx_* calls
 * below; nn_export.h) and its ONNX importer mapping (onnx_ops and onnx_import, through
 * the nn_imp_* calls of nn_import_impl.h). The file defines
 * one `const nn_layer nn_layer_<name>`; nn_layers[] (nn_layer.c) lists them by nn_op.
 * The context's forward and backward (nn_pass.c), the model's init, FLOPs and
 * summary (nn_model.c) and the importer's walk over the ONNX nodes (nn_import.c) are
 * loops that call these hooks. Kernels shared by several kinds live in kernel files:
 * nn_conv.c, nn_dw.c, nn_gemm.c (conv) and nn_elem.c.
 *
 * How to add a layer kind, say "square" (y = x * x):
 *   1. One line at the END of nn_layers.def: NN_LAYER(SQUARE, square). That makes
 *      NN_OP_SQUARE and the table slot for nn_layer_square; existing values stay.
 *   2. One file core/nn/layer_square.c (the Makefile picks it up) with:
 *      - the builder, int nn_square(nn_model *m, int in) (declared in nn.h when it is
 *        public): nn_build_unary() for a node shaped like its input, or
 *        nn_build_check_in() + nn_build_push() + nn_node_set_len() and its own
 *        checks (nn_build_fail() records the first error); a kind with parameters
 *        sets w_len and b_len (and buf_len for buffers) here;
 *      - forward(const nn_fwd *f): writes f->y from f->x (n * len floats);
 *      - backward(const nn_bwd *b): when b->dx, writes it (adds to it when b->acc)
 *        from b->dy; with parameters, adds their gradients into b->G (NULL when
 *        frozen); a second input's target comes from nn_grad_target(b->c, b->i, 1, &a);
 *      - the hooks it needs among init, macs, describe, ws_floats (NULL: none), and
 *        for what a training context keeps: reads_output, replayable and replay
 *        (NULL: its output is kept whenever a backward reads it), as_xform and
 *        takes_xform (a per-channel output its readers compute as they load it),
 *        and the flag NN_LAYER_BWD_NO_INPUT when its backward reads no input value;
 *      - grad: a tiny graph that uses the kind, with its parameters if it has any.
 *        tests/test_nn_grad.c checks every kind's gradients on it against central
 *        differences; a kind without one fails that test.
 *      - onnx_write: its ONNX nodes (nn_export.h);
 *      - onnx_ops and onnx_import: the ONNX op types it reads back (the quantized
 *        QLinear* forms of them too) and the mapping of such a node onto its builder
 *        (#include "nn/nn_import_impl.h": nn_imp_in_node, nn_imp_built,
 *        nn_imp_out_node, ...). The importer asks the kinds in table order; a hook
 *        returns NN_IMP_DECLINE for a form of the op that is another kind's (Clip:
 *        relu, relu6, then clip), so the first kind that names an op has the first say:
 *        a new kind, last in the table, gets only the forms no earlier kind takes
 *        (square's Mul(x, x) comes back as mul(x, x), which computes the same);
 *        tests/test_export.c checks that every kind has a writer and names an op
 *        it imports (the input and the affine say why not there), and round-trips
 *        every kind's grad graph through the writer and the importer;
 *      - const nn_layer nn_layer_square = {.forward = ...};
 *      (its name, "square", is the one nn_layers.def gives: nn_op_name()).
 *   Nothing else changes.
 */
#ifndef PT_NN_LAYER_H
#define PT_NN_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "nn/nn_impl.h"

/* What a forward hook gets. On entry c->outp[i] is y; a kind that passes a value on
 * without computing (the input, an inactive dropout, a fused activation) points
 * c->outp[i] elsewhere instead. */
typedef struct nn_fwd {
    nn_ctx *c;
    const nn_model *m;
    const nn_node *nd;
    int i;                   /* node id */
    int n;                   /* examples */
    int training;
    uint64_t seed;           /* dropout's masks: seed and the first example's index */
    int64_t first;
    const float *input;      /* the model's input (what nn_forward got) */
    const nn_node *src;      /* first input's node and output, NULL when none */
    const float *x;
    const float *P;          /* the node's parameters (weights, then bias) */
    float *y;                /* the node's own output storage */
    long rows;               /* output pixels, n * h * w */
    const nn_xform *xf;      /* replay only, or NULL: the first input as its producer
                                would compute it (x is NULL then; takes_xform) */
} nn_fwd;

/* What a backward hook gets. */
typedef struct nn_bwd {
    nn_ctx *c;
    const nn_model *m;
    const nn_node *nd;
    int i, n;
    const nn_node *src;      /* first input's node and output, NULL when none */
    const float *x;
    const float *y;          /* the node's output in the forward */
    float *dy;               /* gradient of its output; its own storage, dead after this
                                backward (a fused activation may rewrite it in place) */
    const float *P;          /* parameters */
    float *G;                /* their gradients (added to), NULL when frozen */
    long rows;               /* output pixels, n * h * w */
    size_t len;              /* output floats, n * len */
    float *dx;               /* first input's gradient, NULL when not needed; */
    int acc;                 /*   add to it (1) or overwrite it (0) */
    const nn_xform *xf;      /* or NULL: the first input as nn_fwd.xf */
} nn_bwd;

/* The finite-difference test's graph for a kind (tests/test_nn_grad.c): n examples of
 * h x w x c, filled as `input` says, then build() on the input node. */
enum nn_grad_input {
    NN_GRAD_UNIFORM,         /* uniform in [-1, 1] */
    NN_GRAD_AWAY_FROM_0,     /* in [-1, 1], at least 0.05 from 0 (ReLU's kink) */
    NN_GRAD_DISTINCT,        /* distinct values 0.02 apart (max-pool winners stay) */
    NN_GRAD_AWAY_FROM_0_6,   /* in [-1, 7], at least 0.05 from 0 and 6 (ReLU6) */
    NN_GRAD_AWAY_FROM_HALF,  /* in [-1, 1], at least 0.05 from +-0.5 (clip bounds) */
    NN_GRAD_WIDE,            /* uniform in [-6, 6] */
};

typedef struct nn_grad_case {
    int n, h, w, c;
    int input;               /* enum nn_grad_input */
    int (*build)(nn_model *m, int in);   /* returns the output node (or an error) */
} nn_grad_case;

/* Flags of a kind. */
#define NN_LAYER_FUSES_ACT 1u   /* applies a ReLU/ReLU6 reading it alone (fused_act) */
#define NN_LAYER_MASK 2u        /* keeps a per-element mask of its output's size
                                   (c->drop_mask[i]) */
#define NN_LAYER_BWD_NO_INPUT 4u   /* its backward reads none of its inputs' values */
#define NN_LAYER_INFER_ONLY 8u     /* forward only (no backward, no grad case): a training
                                      context of a model using it is refused (nn_ctx.c) */

/* A kind's ONNX writer (nn_export.h): writes node's ONNX nodes and initializers through
 * the nn_onnx_* calls below and returns PT_OK, or the writer's error. */
struct nn_onnx_writer;
typedef int (*nn_onnx_write_fn)(struct nn_onnx_writer *w, const nn_model *m, int node);

/* A kind's ONNX importer (nn_import_impl.h): maps node n of the file, whose op_type
 * is one of the kind's onnx_ops, onto the model being built and names n's output
 * (nn_imp_out_node). Returns PT_OK, the error, or NN_IMP_DECLINE when n is a form
 * of that op this kind does not take (the next kind in the table that names the op
 * is asked, then the importer's graph-level forms). */
struct imp;
struct onnx_node;
typedef int (*nn_onnx_import_fn)(struct imp *im, const struct onnx_node *n);

typedef struct nn_layer {
    int act;                 /* an activation kind: what a BN or conv applies in its
                                place (enum nn_act); NN_ACT_NONE for the others */
    unsigned flags;          /* NN_LAYER_* */
    void (*forward)(const nn_fwd *f);
    void (*backward)(const nn_bwd *b);
    /* Initial parameters p and buffers buf of a node with w_len + b_len parameters,
     * drawing from r (nn_model_init_params). NULL: nothing to set. */
    void (*init)(const nn_model *m, const nn_node *nd, float *p, float *buf, rng *r);
    /* Multiply-adds per example of the forward (nn_flops). NULL: counts 0. */
    double (*macs)(const nn_node *nd);
    /* The layer column of nn_model_summary (size >= 32). NULL: the name, with a '*'
     * when it is fused into the node before it. */
    void (*describe)(const nn_model *m, const nn_node *nd, char *buf, size_t size);
    /* Workspace floats (the context's ws) for batches of max_batch. NULL: none. */
    size_t (*ws_floats)(const nn_model *m, const nn_node *nd, int max_batch);
    /* Bytes of bf16 packing workspace (the context's bws, nn_ctx_set_precision) for
     * batches of max_batch: the kinds whose products take bf16 operands. NULL: none. */
    size_t (*bf16_bytes)(const nn_model *m, const nn_node *nd, int max_batch);
    const nn_grad_case *grad;
    nn_onnx_write_fn onnx_write;
    /* The ONNX op types (NULL-terminated) whose nodes onnx_import maps; NULL: none. */
    const char *const *onnx_ops;
    nn_onnx_import_fn onnx_import;
    /* What a training context keeps (nn_ctx.c). reads_output: whether this node's
     * backward reads its own output (NULL: it does). replayable: whether its output may
     * be dropped after the forward and recomputed in the backward from its inputs (only
     * what is cheap; NULL: never); replay then writes f->y bit for bit as the last
     * training forward did, without the forward's side effects (statistics, records),
     * f being as the forward's. */
    int (*reads_output)(const nn_node *nd);
    int (*replayable)(const nn_model *m, const nn_node *nd);
    void (*replay)(const nn_fwd *f);
    /* A replayable kind whose replay is y = act(x * a + b) per channel of its one
     * input: fills t's a, b and act as the last forward left them (the caller sets
     * t->x). When every reader that needs its output in the backward takes_xform, a
     * training context neither keeps nor replays it (NN_READERS). NULL: not such. */
    void (*as_xform)(const nn_ctx *c, const nn_node *nd, nn_xform *t);
    /* Whether this node's backward and replay can take their first input as an
     * nn_xform (nn_fwd.xf, nn_bwd.xf). NULL: never. */
    int (*takes_xform)(const nn_model *m, const nn_node *nd);
} nn_layer;

#define NN_LAYER(ID, name) extern const nn_layer nn_layer_##name;
#include "nn/nn_layers.def"
#undef NN_LAYER

/* A reads_output hook for the kinds whose backward never reads their output. */
static inline int nn_reads_no_output(const nn_node *nd)
{
    (void)nd;
    return 0;
}

/* Every kind's entry, indexed by nn_op. */
extern const nn_layer *const nn_layers[NN_OP_COUNT];

/* ---- for the hooks ---- */

/* Where node i's backward puts the gradient for its k-th input (nn_pass.c): NULL when
 * that input needs none. *accum says whether a value is already there to add to;
 * asking marks it there, so write a target whole before asking for the next. */
float *nn_grad_target(nn_ctx *c, int i, int k, int *accum);

/* The graph questions a context's memory plan (nn_ctx.c) and its passes (nn_pass.c)
 * both ask. The fused activation that shares node i's output, or -1. */
int nn_alias_of(const nn_model *m, int i);
/* Whether live node j reads node i's output (directly, or through i's fused
 * activation a), not counting a itself. */
int nn_node_reads(const nn_model *m, int j, int i, int a);
/* Whether node j's backward, or its replay, reads the value of its input. */
int nn_uses_input(const uint8_t *rep, const nn_model *m, int j);
/* Whether a node's backward reads its own output. */
int nn_reads_own_output(const nn_node *nd);

/* Builder helpers (nn_build.c). nn_build_fail records the first error and returns
 * code; nn_build_check_in checks that `in` is a usable input (PT_OK or the error);
 * nn_build_push appends a node shaped like in0 (id or error); nn_node_set_len sets
 * len from h, w, c. nn_build_unary is check + push + set_len for a node shaped like
 * its one input. */
int nn_build_fail(nn_model *m, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int nn_build_check_in(nn_model *m, int in, const char *what);
int nn_build_push(nn_model *m, nn_op op, int in0, int in1);
void nn_node_set_len(nn_node *nd);
int nn_build_unary(nn_model *m, nn_op op, int in, const char *what);
/* A windowed node (conv, pools) with a pad of nn_conv2d / nn_maxpool (>= 0,
 * NN_PAD_SAME, NN_PAD_VALID), or with the four explicit pads {top, left, bottom,
 * right} and strides of the _ex forms, checked and placed with its output size. */
int nn_build_window(nn_model *m, nn_op op, int in, int kh, int kw, int stride, int pad,
                    const char *what);
int nn_build_window_ex(nn_model *m, nn_op op, int in, int kh, int kw, int stride_h,
                       int stride_w, const int pads[4], const char *what);

/* ---- the ONNX writer, for the onnx_write hooks (nn_export.c) ----
 * Values are NCHW: a node's output is 4-D [N, C, H, W] or, after a dense layer, 2-D
 * [N, C] (its rank). Names and memory belong to the writer (valid until the export
 * ends). The first error is kept: a call after one does nothing and returns NULL or
 * the error, so a hook may make its calls and return nn_onnx_status(w). */

/* The value node's k-th input holds; rank4: as a 4-D value (a 2-D [N, C] one is
 * reshaped to [N, C, 1, 1] once), else as it is. */
const char *nn_onnx_in(struct nn_onnx_writer *w, int node, int k, int rank4);
/* The value the graph's front reads ("image"; another in an ensemble's member). */
const char *nn_onnx_input(struct nn_onnx_writer *w);
/* The rank of the value node's k-th input holds (2 or 4). */
int nn_onnx_in_rank(const struct nn_onnx_writer *w, int node, int k);
/* The name of node's output value, of that rank ("logits" for the model's 2-D output). */
const char *nn_onnx_out(struct nn_onnx_writer *w, int node, int rank);
/* A name for an intermediate value of node: "<node's name>.<suffix>". */
const char *nn_onnx_tmp(struct nn_onnx_writer *w, int node, const char *suffix);
/* node writes nothing: its output is the value of other (dropout, a folded layer). */
void nn_onnx_same(struct nn_onnx_writer *w, int node, int other);
/* A float initializer "<node's name>.<suffix>" of rank dims (rank 0: a scalar), the
 * data copied. Returns its name. */
const char *nn_onnx_const(struct nn_onnx_writer *w, int node, const char *suffix, int rank,
                          const int64_t *dims, const float *data);
/* The same for integers: an initializer of dtype ONNX_INT8, ONNX_UINT8 or ONNX_INT32
 * (io/onnx.h's numbers) holding data's values (each in the type's range). */
const char *nn_onnx_const_int(struct nn_onnx_writer *w, int node, const char *suffix,
                              int dtype, int rank, const int64_t *dims, const int32_t *data);
/* A Conv or Gemm weight (dims[0]: its output channels) and its bias (n values,
 * the product's input x and weights named as the hook passes them to the op): in a
 * float export nn_onnx_const's; in an int8 one (nn_export.h) the int8 / int32
 * initializers behind a DequantizeLinear whose output is returned, per output
 * channel (a bias whose x or weight is not quantized stays float). nn_export_q.c. */
const char *nn_onnx_weight(struct nn_onnx_writer *w, int node, const char *suffix, int rank,
                           const int64_t *dims, const float *data);
const char *nn_onnx_bias(struct nn_onnx_writer *w, int node, const char *suffix, int n,
                         const float *data, const char *x, const char *weight);
/* In an int8 export, name (what node reads of its input k, reshaped: a dense layer's
 * Flatten) through a QuantizeLinear / DequantizeLinear pair of that input's range;
 * in a float export name itself. */
const char *nn_onnx_qdq(struct nn_onnx_writer *w, int node, int k, const char *name);
/* Floats of scratch memory the writer frees at the end (zeroed), or NULL. */
float *nn_onnx_scratch(struct nn_onnx_writer *w, size_t count);
/* An ONNX node of the default domain reading in[0 .. n_in) ("" for an absent optional
 * input), writing out (it is also the node's name). The attribute calls after it
 * add to it. */
int nn_onnx_op(struct nn_onnx_writer *w, const char *op, int n_in, const char *const *in,
               const char *out);
void nn_onnx_attr_int(struct nn_onnx_writer *w, const char *name, int64_t v);
void nn_onnx_attr_ints(struct nn_onnx_writer *w, const char *name, int n, const int64_t *v);
void nn_onnx_attr_float(struct nn_onnx_writer *w, const char *name, float v);
/* The common case: op reading node's n_in (1 or 2) inputs, writing node's output. Two
 * inputs of different ranks are both taken as 4-D; the output has the inputs' rank. */
int nn_onnx_simple(struct nn_onnx_writer *w, int node, const char *op, int n_in);
/* Folding (decided before any hook runs): the node folded into node (the BN after a
 * conv, the affine after the input), or -1; and the node that node is folded into,
 * or -1. A folded node writes nothing but nn_onnx_same(). */
int nn_onnx_fold_next(const struct nn_onnx_writer *w, int node);
int nn_onnx_fold_prev(const struct nn_onnx_writer *w, int node);
/* Refuse the model: PT_EUSAGE naming the node and its kind, and why. */
int nn_onnx_refuse(struct nn_onnx_writer *w, int node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* PT_OK or the first error. */
int nn_onnx_status(const struct nn_onnx_writer *w);

/* Initialisation helpers (nn_model.c): fan_in of a conv or dense node (weights per
 * output channel), and its biases as nn_model_init_params draws them (0, or
 * PyTorch's uniform +-1 / sqrt(fan_in) under NN_INIT_TORCH). */
double nn_init_fan_in(const nn_node *nd);
void nn_init_bias(const nn_model *m, const nn_node *nd, float *p, rng *r);

#endif
