/* nn — the neural-network library: a graph of layers built through a builder API,
 * per-replica contexts that run forward and backward, the softmax cross-entropy loss,
 * FLOP counts and the built-in models (nn_models.h).
 *
 * Layout and numbers: float32, NHWC (channels fastest), 64-byte aligned buffers.
 *
 * Ownership:
 *   - nn_model owns its node list, ONE contiguous parameter array (every conv/dense
 *     weight and bias, every BN gamma/beta), ONE contiguous buffer array (BN running
 *     mean/var) and the per-parameter trainable mask. nn_model_free() releases them.
 *     The trainer may read and write both arrays in place (optimizer, checkpoints).
 *   - nn_ctx (one per replica thread) owns everything a forward/backward writes:
 *     activations, gradients of activations, workspaces, the dropout masks, the BN
 *     batch statistics it recorded, and ONE contiguous gradient array with the same
 *     length and layout as the model's parameter array. It keeps a const pointer to
 *     its model; free every context before its model. nn_ctx_free() releases it.
 *   - nn_forward() keeps the caller's input pointer for nn_backward(): the input must
 *     stay valid and unchanged until the backward of that forward has run.
 *
 * Threads: several contexts may run forward/backward at once on one model; forward
 * and backward only read the model. Everything that writes the model (the builder,
 * nn_model_init_params, nn_model_freeze_backbone, nn_model_update_bn) must not run at
 * the same time as them. Call nn_init() once before starting threads: it makes
 * OpenBLAS single-threaded, so each replica's sgemm runs on its own thread.
 *
 * Errors: library code never prints or aborts. Builder calls return a node id >= 0 or
 * a negative PT_E* code; the first builder error is kept and nn_model_finalize()
 * reports it, so a model can be described without checking every call.
 *
 * Sources: one file per layer kind, layer_*.c (its builder call below, forward,
 * backward, init, FLOPs, summary text), listed in one table (nn_layers.def, nn_layer.c;
 * nn_layer.h says how to add a kind); nn_build.c (the builder's common part),
 * nn_model.c (finalize, layout, init, freezing, FLOPs, summary, BN update), nn_ctx.c
 * (contexts), nn_pass.c (forward, backward: loops over the table), the kernels nn_conv.c, nn_dw.c
 * (depthwise), nn_gemm.c (1x1 conv products) and nn_elem.c (shared elementwise),
 * nn_loss.c, and nn_models.c (nn_models.h: the built-in models). nn_impl.h and
 * nn_layer.h are internal.
 */
#ifndef PT_NN_H
#define PT_NN_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Padding arguments of nn_conv2d / nn_maxpool / nn_avgpool: a value >= 0 pads every
 * side by that many pixels; these two follow TensorFlow's padding strings. "same"
 * pads so the output is ceil(in / stride), the extra pixel (if any) at the bottom
 * and right, exactly as TensorFlow does. */
#define NN_PAD_SAME (-1)
#define NN_PAD_VALID (-2)

/* BatchNormalization's defaults (Keras's): nn_batchnorm() uses them; nn_batchnorm_ex()
 * takes a layer's own, as imported graphs carry them (PyTorch: 1e-5 and 0.9). */
#define NN_BN_EPS 1e-3f
#define NN_BN_MOMENTUM 0.99f

/* The layer kinds, in the order of nn_layers.def (their values never change). */
typedef enum nn_op {
#define NN_LAYER(ID, name) NN_OP_##ID,
#include "nn/nn_layers.def"
#undef NN_LAYER
    NN_OP_COUNT     /* the number of kinds, not a kind */
} nn_op;

/* How nn_model_init_params() draws conv and dense weights (fan_in = kh * kw * cin /
 * groups for a conv). BN starts at gamma 1, beta 0, running mean 0 and variance 1
 * under every kind. */
typedef enum nn_init_kind {
    NN_INIT_HE_NORMAL,   /* convs: normal truncated at 2 std, std sqrt(2 / fan_in) (Keras
                            he_normal); dense: Glorot uniform; biases 0 */
    NN_INIT_HE_UNIFORM,  /* convs: uniform +-sqrt(6 / fan_in); dense and biases as above */
    NN_INIT_TORCH,       /* PyTorch's defaults for Conv2d and Linear: weights and biases
                            uniform +-1 / sqrt(fan_in), a std 2.45x under He's */
} nn_init_kind;

typedef struct nn_model nn_model;
typedef struct nn_ctx nn_ctx;

/* Make OpenBLAS run single-threaded (each replica thread calls sgemm itself).
 * Call once before starting replica threads. */
void nn_init(void);
/* The OpenBLAS kernel set in use (e.g. "Haswell"), to print beside speed figures. */
const char *nn_blas_corename(void);

/* ---- building a model ----------------------------------------------------------- */

/* A model whose input is h x w x c. NULL when out of memory or a size is <= 0. */
nn_model *nn_model_new(int h, int w, int c);
void nn_model_free(nn_model *m);

/* Each returns the new node's id (>= 0), or a negative PT_E* code. Passing a negative
 * id (a failed earlier call) returns that error again. Nodes are numbered in the
 * order they are added, which is a topological order. */
int nn_input(nn_model *m);
/* scale and shift have c entries each (copied). No parameters. */
int nn_affine(nn_model *m, int in, const float *scale, const float *shift);
/* groups divides cin and cout; groups == cin == cout is depthwise. pad: >= 0,
 * NN_PAD_SAME or NN_PAD_VALID. Weights are HWIO: [kh][kw][cin/groups][cout]. */
int nn_conv2d(nn_model *m, int in, int cout, int kh, int kw, int stride, int pad, int groups,
              int bias);
int nn_batchnorm(nn_model *m, int in);
/* eps is added to the variance; the running statistics move as
 * running = momentum * running + (1 - momentum) * batch. */
int nn_batchnorm_ex(nn_model *m, int in, float eps, float momentum);
int nn_relu(nn_model *m, int in);
int nn_relu6(nn_model *m, int in);
/* Windows k x k. Padded pixels never win a max and are not counted by the average. */
int nn_maxpool(nn_model *m, int in, int k, int stride, int pad);
int nn_avgpool(nn_model *m, int in, int k, int stride, int pad);
/* ONNX-style windows: kh x kw, a stride per axis and explicit padding on each side,
 * as ONNX's pads = [top, left, bottom, right] give it (auto_pad SAME_UPPER is the
 * NN_PAD_SAME of the functions above). Each pad is >= 0 and smaller than the window
 * side it extends. Output per axis: floor((in + lead + trail - k) / stride) + 1.
 * What the kernels do not do is refused (PT_EUSAGE): stride_h != stride_w, and pool
 * windows with kh != kw. Pools as above: padding never wins a max nor counts in an
 * average (ONNX's count_include_pad = 0). nn_conv2d / nn_maxpool / nn_avgpool are
 * these with their pad resolved to the four sides. */
int nn_conv2d_ex(nn_model *m, int in, int cout, int kh, int kw, int stride_h, int stride_w,
                 int pad_t, int pad_l, int pad_b, int pad_r, int groups, int bias);
int nn_maxpool_ex(nn_model *m, int in, int kh, int kw, int stride_h, int stride_w, int pad_t,
                  int pad_l, int pad_b, int pad_r);
int nn_avgpool_ex(nn_model *m, int in, int kh, int kw, int stride_h, int stride_w, int pad_t,
                  int pad_l, int pad_b, int pad_r);
int nn_gap(nn_model *m, int in);
/* Inverted dropout: keeps with probability 1 - rate and scales kept values by
 * 1 / (1 - rate) in training; identity in inference. 0 <= rate < 1. */
int nn_dropout(nn_model *m, int in, float rate);
/* Weights [h*w*c][cout] row-major, then cout biases. */
int nn_dense(nn_model *m, int in, int cout);
int nn_add(nn_model *m, int a, int b);
/* y = 1 / (1 + exp(-x)), computed without overflow for any x (saturates to 0 and 1). */
int nn_sigmoid(nn_model *m, int in);
/* y = a * b. b has a's shape, or b is 1 x 1 x C against a's H x W x C: each channel of
 * a scaled by b's value for it (squeeze-and-excitation). Multiplication commutes, so a
 * 1 x 1 x C a against an H x W x C b is accepted too; the node then records the full
 * size operand as its first input. a == b, or b computed from a (SiLU is
 * nn_mul(m, x, nn_sigmoid(m, x))), is fine: both gradients add up. */
int nn_mul(nn_model *m, int a, int b);
/* Channel concatenation: H x W x Ca and H x W x Cb -> H x W x (Ca + Cb), a's channels
 * first. More inputs: chain the calls. */
int nn_concat(nn_model *m, int a, int b);
/* y = min(max(x, lo), hi), lo <= hi (either may be infinite). The gradient passes
 * where lo <= x <= hi, boundaries included, as torch.clamp's does (hardtanh and
 * nn_relu6 pass none at the boundaries); NaN passes none. */
int nn_clip(nn_model *m, int in, float lo, float hi);
/* Fake quantization, as ONNX's QuantizeLinear then DequantizeLinear compute it:
 * y = (clamp(round_half_even(x / scale) + zero_point, qlo, qhi) - zero_point) * scale,
 * the integer range [qlo, qhi] that of uint8 (0, 255) or int8 (-128, 127). What an
 * int8 export's activations go through (nn_quant.h); scale > 0 and finite, zero_point
 * in [qlo, qhi]. Inference only: it has no backward, and a training context
 * (nn_ctx_new) of a model that uses it is refused (PT_EUSAGE). */
int nn_fakequant(nn_model *m, int in, float scale, int zero_point, int qlo, int qhi);
/* Set the running-statistics momentum of every BN layer (Keras's convention: running =
 * momentum x running + (1 - momentum) x batch; PyTorch's momentum is 1 minus it).
 * PT_EUSAGE unless 0 <= momentum < 1. */
int nn_model_set_bn_momentum(nn_model *m, float momentum);
/* Choose how nn_model_init_params() initialises the weights from now on (default He
 * normal). It changes no weight itself. */
void nn_model_set_init(nn_model *m, nn_init_kind kind);

/* Close the description: out is the node whose output is the logits. Lays out the
 * parameter and buffer arrays and initialises them with seed 0. Nodes that do not
 * lead to out are kept but never run. Reports the first builder error.
 * A BN or conv whose only reader is a ReLU/ReLU6 applies that activation itself (no
 * pass of its own, no stored pre-activation); the two nodes then share their output. */
int nn_model_finalize(nn_model *m, int out, pt_err *e);

/* ---- parameters ------------------------------------------------------------------- */

float *nn_params(nn_model *m);
const float *nn_params_const(const nn_model *m);
size_t nn_param_count(const nn_model *m);
/* Non-trainable state: per BN layer, running mean[c] then running var[c]. */
float *nn_buffers(nn_model *m);
size_t nn_buffer_count(const nn_model *m);

/* Seeded initialisation of every parameter and buffer: He (conv), Glorot-uniform
 * (dense), zero biases, BN gamma 1 / beta 0, running mean 0 / var 1. Each tensor's
 * values depend only on (seed, node id), so they are identical on every run. */
void nn_model_init_params(nn_model *m, uint64_t seed);

/* Transfer learning: every parameter except those of the last dense layer becomes
 * non-trainable. Backward then writes no gradient for them (they stay 0) and stops
 * below the first trainable layer. Frozen BN layers run in inference mode (running
 * statistics, nothing recorded) even in a training forward, as Keras does.
 * PT_EUSAGE (and nothing changed) when the model has no dense layer. Change freezing
 * between optimizer updates only, never between a forward and its backward. */
int nn_model_freeze_backbone(nn_model *m);
/* Every parameter trainable again. */
void nn_model_unfreeze(nn_model *m);
/* Every batch norm non-trainable (after nn_model_unfreeze, for the rest of a
 * fine-tune): running statistics in training forwards too, gamma and beta kept, as
 * torchvision's FrozenBatchNorm2d and Keras's BatchNormalization called with
 * training=False: what a pretrained backbone needs when a replica sees a handful of
 * images, whose batch statistics are noise. Same rule of when as freezing. */
void nn_model_freeze_bn(nn_model *m);
/* Make backward also compute the gradient with respect to the model's input
 * (off by default: nothing needs it in training). */
void nn_model_set_input_grad(nn_model *m, int on);
/* Its setting (1 on). */
int nn_model_input_grad(const nn_model *m);
/* 1 when parameter index i receives gradients. */
int nn_param_trainable(const nn_model *m, size_t i);
/* Per parameter: 1 trainable, 0 frozen (nn_param_count() entries, owned by m). */
const uint8_t *nn_param_mask(const nn_model *m);
size_t nn_trainable_count(const nn_model *m);

/* ---- describing a model ----------------------------------------------------------- */

typedef struct nn_node_info {
    nn_op op;
    int in[2];           /* input node ids, -1 when unused */
    int h, w, c;         /* output shape per example */
    int kh, kw, stride, groups, has_bias;   /* conv and pools */
    int pad_t, pad_l, pad_b, pad_r;         /* conv and pools: padding on each side */
    float rate;          /* dropout */
    float lo, hi;        /* clip */
    float q_scale;       /* quant (nn_fakequant): scale, zero point, integer range */
    int q_zp, q_lo, q_hi;
    size_t param_offset; /* into nn_params(): weights (or BN gamma), then bias (BN beta) */
    size_t weight_count; /* conv/dense weights; BN gamma */
    size_t bias_count;   /* conv/dense bias; BN beta */
    size_t buffer_offset, buffer_count;  /* BN running mean, var */
    int trainable;
} nn_node_info;

int nn_node_count(const nn_model *m);
int nn_output_node(const nn_model *m);
int nn_node_get(const nn_model *m, int node, nn_node_info *out);
const char *nn_op_name(nn_op op);
/* Output classes (size of the output node per example). */
int nn_model_classes(const nn_model *m);
void nn_model_input_shape(const nn_model *m, int *h, int *w, int *c);

/* FLOPs for n examples, counting only the multiply-adds of conv (depthwise included)
 * and dense layers, 2 per multiply-add: the work a matrix unit does. Elementwise
 * layers (BN, activations, pooling, add, mul, concat, clip, dropout) count 0.
 * with_backward adds what backward actually runs under the current freezing: the
 * weight gradient of each trainable layer and the input gradient where one is needed
 * (never for the first conv). nn_node_flops is the same for one node. */
double nn_flops(const nn_model *m, int n, int with_backward);
double nn_node_flops(const nn_model *m, int node, int n, int with_backward);

/* One line per node (id, op, inputs, output shape, params, forward MFLOPs per example)
 * and a total, written into buf (always NUL-terminated when size > 0). Returns the
 * length the full text needs, like snprintf. */
size_t nn_model_summary(const nn_model *m, char *buf, size_t size);

/* ---- running a model: one context per replica ---------------------------------------- */

/* Allocates every activation, gradient and workspace for batches of up to max_batch
 * examples; nothing is allocated later. m must be finalized. The outputs that are
 * cheap to recompute (BN, depthwise conv at stride 1) are not kept for the backward
 * but recomputed there, bit for bit, a BN's by its readers as they load it where
 * they can (nn_set_recompute, nn_ctx_keep, nn_ctx_mem_get). */
nn_ctx *nn_ctx_new(const nn_model *m, int max_batch, pt_err *e);
/* (Those training contexts, and nn_ctx_new_cancel's, are refused, PT_EUSAGE naming the
 * node, for a model with an inference-only layer: nn_fakequant.) */
/* nn_ctx_new() that asks stop(stop_ctx) between the chunks it first-touches (zeroing
 * gigabytes at a large image size takes seconds to a minute): when it answers nonzero,
 * everything is freed and NULL comes back with PT_ESTOPPED. */
typedef int (*nn_stop_fn)(void *stop_ctx);
nn_ctx *nn_ctx_new_cancel(const nn_model *m, int max_batch, int recompute, nn_stop_fn stop,
                          void *stop_ctx, pt_err *e);
/* recompute above: 1 recomputes the cheap outputs in the backward (about half the
 * memory of a MobileNetV2, about 5% slower at 512 px: memory-bound passes), 0 keeps every
 * output (nn_set_recompute's setting is only nn_ctx_new's). What a training context
 * keeping every output holds in activations, without building one: for choosing. */
size_t nn_ctx_keep_all_bytes(const nn_model *m, int max_batch);
/* An inference-only context: no gradient arena, no gradient array, no dropout masks,
 * and activations that share one arena by lifetime (a node's output lives from the
 * node to its last reader), a fraction of nn_ctx_new's memory. nn_forward with
 * training != 0 returns NULL on it and nn_backward PT_EUSAGE; nn_grads is NULL and
 * nn_ctx_output gives only the output node's values (earlier nodes' storage is
 * reused). Its logits are bit-identical to a training context's inference forward. */
nn_ctx *nn_ctx_new_infer(const nn_model *m, int max_batch, pt_err *e);
/* 1 for a context from nn_ctx_new_infer. */
int nn_ctx_is_infer(const nn_ctx *c);
void nn_ctx_free(nn_ctx *c);

/* The precision of the products of convolutions and dense layers (forward, input
 * gradient, weight gradient): NN_FP32, or NN_BF16, mixed precision: bf16 operands
 * (rounded to nearest even) summed in float32, while the weights, optimizer state,
 * batch norm, activations, loss and softmax stay float32 (nn_bf16.h). Depthwise and
 * grouped convolutions, and products shallower than 32 or narrower than 24 (where bf16
 * does not pay), stay float32.
 * A new context is NN_FP32. Setting NN_BF16 the first time allocates the packing
 * workspace: PT_OK, or PT_ENOMEM (the context unchanged). Not while a pass runs. */
typedef enum nn_precision { NN_FP32 = 0, NN_BF16 = 1 } nn_precision;
int nn_ctx_set_precision(nn_ctx *c, nn_precision p, pt_err *e);
nn_precision nn_ctx_precision(const nn_ctx *c);

/* Intra-op parallelism: a team of threads that an inference forward splits its
 * operators across (the convolutions' output rows), so one image uses several cores.
 * The threads are the owner's (rpool: the other replicas serve while one runs a batch
 * too small to split by images). run(t, fn, arg) calls fn(arg, part) for every part
 * in [0, parts), part 0 on the calling thread, and returns when all have returned.
 * parts may change between forwards (1: everything on the calling thread), up to
 * max_parts. */
typedef struct nn_team nn_team;
struct nn_team {
    int max_parts;
    int parts;
    void (*run)(nn_team *t, void (*fn)(void *arg, int part), void *arg);
};
/* Gives c a team (borrowed; it must outlive c or be taken back with NULL) and the
 * per-part workspace for its max_parts, allocated now: PT_OK or PT_ENOMEM (c
 * unchanged). The results are the same bits with or without it. Not while a pass
 * runs. A bf16 context's products, and training passes, stay on the calling thread. */
int nn_ctx_set_team(nn_ctx *c, nn_team *t, pt_err *e);
/* An inference context keeps its own copy of the convolutions' weights packed for the
 * AVX-512F products (each block of columns contiguous, as the kernels read it), taken
 * now: from here on the model's weights must not change while c lives (predict's,
 * classify's and the int8 calibration's models do not). The same bits; 5-12% faster
 * convolutions (`small`). PT_OK (also where it does not apply: a training context,
 * no AVX-512F) or PT_ENOMEM, c unchanged. Costs the packed weights' memory. */
int nn_ctx_pack_weights(nn_ctx *c, pt_err *e);

/* What runs the bf16 products on this CPU: "amx", "avx512_bf16", or "emulated" (the
 * portable C engine: the same numbers, several times slower than float32), and
 * whether that is a CPU instruction (not emulated). */
const char *nn_bf16_engine_name(void);
int nn_bf16_native(void);
/* The bf16 products' single-core GFLOP/s (C = A B, 512 x 512 x 512), best over about
 * `seconds`: the compute estimate's peak when a run is in bf16. */
double nn_bf16_peak_gflops(double seconds);
int nn_ctx_max_batch(const nn_ctx *c);
/* Bytes the context allocated. */
size_t nn_ctx_bytes(const nn_ctx *c);
/* Where a context's bytes go (nn_ctx_mem_get), for max_batch examples. kept[op]: the
 * activations of that layer kind kept from a training forward for the backward (an
 * inference context's by-lifetime arena counts under shared instead); masks: dropout's;
 * shared: the arena laid out by lifetime (gradients of activations, and in training the
 * outputs the backward recomputes instead of keeping); params: the gradient array;
 * other: workspace and per-channel arrays. They sum to nn_ctx_bytes(). */
typedef struct nn_ctx_mem {
    size_t kept[NN_OP_COUNT];
    size_t masks, shared, params, other;
} nn_ctx_mem;
void nn_ctx_mem_get(const nn_ctx *c, nn_ctx_mem *out);
/* A training context recomputes cheap outputs (BN, depthwise conv) in the backward
 * instead of keeping them, with bit-identical results; nn_set_recompute(0) makes the
 * contexts created after it keep every output as before (for tests and benchmarks;
 * not while another thread creates a context). Returns the previous setting. */
int nn_set_recompute(int on);

/* Forward n (1..max_batch) examples, NHWC floats. training: BN uses batch statistics
 * (and records them, see nn_model_update_bn) and dropout is active, keeping what
 * backward needs; otherwise inference. Dropout's mask for (example, element j) is a
 * function of (seed, first_example + example index, j, node) alone, so it does not
 * depend on how a global batch is split across replicas. Returns the logits
 * [n][classes] (owned by the context, valid until its next forward), or NULL when n
 * is out of range or the model is not finalized. */
const float *nn_forward(nn_ctx *c, const float *input, int n, int training, uint64_t seed,
                        int64_t first_example);
/* Told during a forward, after each live node, its output: count = n x the node's
 * h x w x c floats, NHWC (a conv or BN with a fused activation, and that activation,
 * show the activated values; a dropout in inference, its input's). y is valid only
 * during the call. For measuring activations (nn_quant.h's calibration); called on
 * the context's own thread; NULL turns it off. */
typedef void (*nn_node_observer)(void *arg, int node, const float *y, size_t count);
void nn_ctx_on_node(nn_ctx *c, nn_node_observer fn, void *arg);
/* The inference forward (batch norm with its running statistics, dropout off: the
 * logits nn_forward(training 0) gives) on a training context, keeping what a backward
 * needs: nn_backward then gives the gradients of that function (what explaining a
 * prediction needs, Grad-CAM). Batch norm records no statistics; after it nn_backward
 * writes no gradient for a batch norm's gamma and beta (the other layers' as usual).
 * NULL as nn_forward, and on an inference context. */
const float *nn_forward_eval_grad(nn_ctx *c, const float *input, int n);
/* Backward of the last (training) forward, from dlogits [n][classes]. ACCUMULATES
 * (+=) into the gradient array. PT_EUSAGE when the last forward was not training. */
int nn_backward(nn_ctx *c, const float *dlogits);
/* Told during a backward, after each node, that the gradients of parameters
 * [final_from, nn_param_count()) are final for this backward: nothing after it writes
 * them (nodes run from the output back, and each node's parameters lie after those
 * of the nodes before it). final_from only falls. Lets a caller send the last
 * layers' gradients while the first layers' are still being computed. */
typedef void (*nn_backward_progress)(void *arg, size_t final_from);
/* Called on the context's own thread, inside nn_backward(); NULL turns it off. */
void nn_ctx_on_backward_progress(nn_ctx *c, nn_backward_progress fn, void *arg);
/* Told during a backward, for each live node that carries a gradient (grad, y) with
 * y the gradient of the backward's start (dlogits . logits) with respect to the
 * node's output as nn_ctx_on_node shows it (a conv or BN with a fused activation: the
 * activated values; count floats, NHWC), once it is whole and before anything
 * consumes it; a node no gradient reaches is not told. Nodes carry gradients only
 * above something trainable: nn_model_set_input_grad(m, 1) makes every node carry
 * one. While it is set, a conv does not take its input's gradient through the
 * activation fused into the conv below (the shortcut that would overwrite it); the
 * results are the same. On the context's thread; NULL turns it off. */
void nn_ctx_on_node_grad(nn_ctx *c, nn_node_observer fn, void *arg);
/* The context's gradient array (nn_param_count() floats, layout of nn_params());
 * NULL for an inference context (nn_zero_grads does nothing there). */
float *nn_grads(nn_ctx *c);
void nn_zero_grads(nn_ctx *c);
/* What a training context does with a node's output (nn_ctx_keep): keeps it for the
 * backward; holds it only while the forward needs it (no backward reads it); or that,
 * and recomputes it in the backward; or that, and the backward and replays of its
 * readers compute it from its input as they load it (a BN read only by depthwise and
 * 1x1 convs). An inference context, and a node without storage, answer NN_KEPT. */
enum nn_keep { NN_KEPT, NN_TRANSIENT, NN_REPLAYED, NN_READERS };
int nn_ctx_keep(const nn_ctx *c, int node);
/* Output of any node in the last forward ([n][h*w*c]), for tests and inspection (a
 * BN or conv with a fused activation shows the activated values); NULL for a node a
 * training context recomputes in the backward instead of keeping (nn_set_recompute). */
const float *nn_ctx_output(const nn_ctx *c, int node);
/* The gradient of the loss with respect to the input of the last backward
 * ([n][h*w*c]), or NULL unless nn_model_set_input_grad(m, 1) was called. */
const float *nn_ctx_input_grad(const nn_ctx *c);

/* Averages the BN batch statistics recorded by the training forwards of these
 * contexts since the last update (each forward weighted by its example count), applies
 * one momentum update to the model's running mean/var (var uses the unbiased batch
 * variance, as Keras and PyTorch do), and clears the records. Layers with no record
 * are left alone. Call once per optimizer update, with no forward running.
 *
 * update is this update's number (1, 2, ...) counted from the initialisation, or 0.
 * While the model's statistics are fresh (see nn_model_set_bn_warm_start) and update
 * > 0, the momentum is min(momentum, (update - 1) / update): the first updates are
 * averaged with equal weight until the window 1 / (1 - momentum) fills, instead of
 * leaving the placeholder mean 0 and variance 1 a third of the weight after 100
 * updates at 0.99 (a net whose activations are far from unit variance then validates
 * as one class for its first epoch). Depends only on update, so a resumed run does
 * the same. */
void nn_model_update_bn(nn_model *m, nn_ctx *const *ctxs, int count, long long update);
/* The same in two halves, for records summed across processes (train/dist.h):
 * nn_bn_records_take() sums the records of count contexts (in context order) into
 * out, nn_bn_record_count(m) doubles, and clears them; nn_model_update_bn_records()
 * applies such a sum (of any number of processes' records) as nn_model_update_bn
 * would. */
size_t nn_bn_record_count(const nn_model *m);
void nn_bn_records_take(nn_ctx *const *ctxs, int count, double *out);
void nn_model_update_bn_records(nn_model *m, const double *rec, long long update);
/* Whether the running statistics are placeholders (on after nn_model_init_params; the
 * importer turns it off when it loads trained ones). */
void nn_model_set_bn_warm_start(nn_model *m, int on);
/* Drop the recorded statistics without applying them. */
void nn_ctx_clear_bn_records(nn_ctx *c);

/* Per-node timing (for benchmarks): when on, forward and backward add the calling
 * thread's CPU time spent in each node into the context (everything, sgemm included,
 * runs on that thread, so this is busy time, unaffected by other processes). */
void nn_ctx_set_profile(nn_ctx *c, int on);
void nn_ctx_node_time(const nn_ctx *c, int node, double *fwd_s, double *bwd_s);
void nn_ctx_reset_profile(nn_ctx *c);

/* ---- loss ------------------------------------------------------------------------------ */

/* Softmax cross-entropy from logits [n][k], SUM reduction, numerically stable.
 * Targets in the batch's form: example i is class a[i] with weight mix[i] and class
 * b[i] with weight 1 - mix[i]. b and mix may be NULL (hard labels a). Writes *loss
 * (the sum over the n examples; may be NULL), dlogits = scale * d(loss)/d(logits)
 * (may be NULL) and the argmax class of each example into pred (may be NULL).
 * PT_ECLASS when a label is outside [0, k); nothing is written then. */
int nn_softmax_ce(const float *logits, int n, int k, const int32_t *a, const int32_t *b,
                  const float *mix, float scale, double *loss, float *dlogits, int32_t *pred,
                  pt_err *e);

/* The same against smoothed targets: (1 - smooth) x the batch's targets + smooth / k
 * on every class (label smoothing; smooth = 0 is nn_softmax_ce). */
int nn_softmax_ce_smooth(const float *logits, int n, int k, const int32_t *a, const int32_t *b,
                         const float *mix, float smooth, float scale, double *loss,
                         float *dlogits, int32_t *pred, pt_err *e);

/* Knowledge distillation (Hinton et al.): per example
 *   alpha x T^2 x KL(soft || softmax(z / T)) + (1 - alpha) x CE
 * with CE nn_softmax_ce_smooth's loss against the batch's targets, and soft [n][k] the
 * teacher's probabilities already at temperature T (softmax(log p / T)), each row
 * summing to 1. *loss is the sum over the n examples; dlogits = scale x its gradient,
 * alpha T (q_T - soft) + (1 - alpha) x CE's. PT_EUSAGE without soft, with T <= 0 or
 * alpha outside [0, 1]; PT_ECLASS as nn_softmax_ce_smooth. */
int nn_distill_ce(const float *logits, int n, int k, const int32_t *a, const int32_t *b,
                  const float *mix, float smooth, const float *soft, float t, float alpha,
                  float scale, double *loss, float *dlogits, int32_t *pred, pt_err *e);

#endif
