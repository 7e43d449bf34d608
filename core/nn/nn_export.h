/* nn_export — a model as a standard ONNX file (ir_version 8, opset 13), for ONNX Runtime
 * and any other ONNX consumer; nn_import reads it back (NN_NORM_RAW).
 *
 * The file's contract:
 *   - input `image`: float32 [N, 3, S, S], N symbolic ("N"), RGB in 0-255 as decoded,
 *     NCHW, resized as petal-tui's validation does (centre crop to a square, then
 *     resize to S). The first nodes scale it to the model's [0, 1] input: one Mul by
 *     per-channel constants [1, 3, 1, 1] (1/255, or the model's first affine layer's
 *     scale / 255 when it has one: that layer is folded in) and, when that affine has
 *     a shift, one Add.
 *   - outputs `logits` float32 [N, C] and `probabilities` = Softmax(logits, axis 1).
 *   - the net in NCHW: conv weights as OIHW, a dense layer as Gemm (transB = 1) after a
 *     Flatten, its rows permuted from NHWC's flattening order to NCHW's when it reads a
 *     map larger than 1x1. Inference form: dropout is left out; ReLU is Relu, ReLU6 is
 *     Clip(0, 6), a fused activation included.
 *   - metadata_props: class_names (a JSON array of strings), image_size,
 *     petal_tui_version, source_run, epoch, update, input (the contract above); the model's
 *     doc_string says the same in words.
 *   - initializers named "<kind><node id>.<what>" ("conv3.weight", "bn4.var"); a
 *     value is named after the node that makes it ("conv3"), the output "logits".
 *
 * Batch norm: a BN whose input is a conv read by nothing else is folded into that
 * conv (w' = w * gamma / sqrt(var + eps) per output channel, b' = (b - mean) * gamma /
 * sqrt(var + eps) + beta, computed in double): inference runs one node instead of two,
 * which is what runtimes do to such a pair anyway, and the file is smaller. Any other
 * BN (after a pool, an add, a dense layer, or after a conv that something else reads
 * too) is written as a BatchNormalization node in inference mode with its own epsilon
 * and momentum, since folding it would change what the other readers see.
 *
 * Every layer kind has a writer (nn_layer.h: onnx_write). What no writer expresses is
 * refused with PT_EUSAGE naming the node and its kind, and nothing is written: a model
 * with a channel count other than 3 at its input, or whose output is a map larger
 * than 1x1 with more than one channel (logits are [N, C]).
 *
 * The int8 form (meta->quant; nn_quant.h's arithmetic), for ONNX Runtime's int8
 * kernels (its QDQ fusions make QLinearConv, QGemm, QLinearAdd of the pairs):
 *   - every Conv and Gemm weight an int8 initializer ("<node>.weight_q", per output
 *     channel symmetric, zero point 0) read through a DequantizeLinear of axis 0 whose
 *     output is "<node>.weight"; a bias likewise from int32 ("<node>.bias_q", scale the
 *     input's times the weight's, zero point 0);
 *   - a QuantizeLinear -> DequantizeLinear pair (uint8, per tensor, the value's
 *     calibrated range widened to hold 0) on every value a Conv, Gemm, Add, pool
 *     (MaxPool, AveragePool, GlobalAveragePool) or Concat reads, the Gemm's after its
 *     Flatten, named "<value>.q" and "<value>.dq" (or "<node>.flat.q", ...); and on the
 *     output of every Relu, Clip and Add (not the graph's output), read then by all;
 *   - input 'image', the front's Mul / Add, 'logits' and 'probabilities' stay float32;
 *   - metadata_props as above plus "quantization" (the scheme and the images).
 *
 * Output is deterministic: the same model and meta give the same bytes.
 * Built with protobuf-c's generated structs (core/io/onnx.proto) and its packer.
 *
 * Ownership: the model and meta are only read; *out is malloc'd, the caller's.
 */
#ifndef PT_NN_EXPORT_H
#define PT_NN_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "nn/nn.h"

/* An int8 export (the QDQ form, nn_quant.h's scheme): the calibrated range of every
 * model node's output, and how many images measured them. */
typedef struct nn_export_quant {
    const float *lo, *hi;           /* per model node (nn_calib's) */
    long long images;
    const char *images_what;        /* what they were ("training images"), or NULL */
} nn_export_quant;

typedef struct nn_export_meta {
    const char *const *class_names; /* nn_model_classes(m) entries, or NULL: "class N" */
    int image_size;                 /* S: the input is [N, 3, S, S] */
    const char *source_run;         /* the run folder ("" or NULL: none) */
    int epoch;                      /* epochs the weights trained (-1 unknown) */
    int update;                     /* optimizer updates they trained (-1 unknown): what
                                       tells an export from its run's later checkpoints */
    const nn_export_quant *quant;   /* NULL: float32; else the int8 QDQ form below */
} nn_export_meta;

/* The text of metadata_props "input" (and the doc string's first sentence). */
#define NN_EXPORT_INPUT                                                                 \
    "RGB 0-255 NCHW, resized as petal-tui's validation: centre crop to a square, then " \
    "resize"

/* Serialises m (its parameters and buffers as they are now: the caller puts the
 * moving-average weights in first) as an ONNX ModelProto. *out malloc'd. meta may be
 * NULL (class N names, image size the model's, no run, epoch -1); a meta image_size
 * of 0 means the model's; another size than the model's input is PT_EUSAGE. */
int nn_export_onnx(const nn_model *m, const nn_export_meta *meta, uint8_t **out,
                   size_t *len, pt_err *e);
/* The same to a file, atomically (temporary name in the same folder, fsync, rename). */
int nn_export_onnx_file(const nn_model *m, const nn_export_meta *meta, const char *path,
                        pt_err *e);

/* ---- an ensemble: several models side by side in one file (nn_export_ens.c) ----
 * The same input contract as above (`image` [N, 3, S, S], S the largest member's side
 * unless given). Each member a branch: Resize (linear, half-pixel centres) to its side
 * when that differs, its test-time views (crops: the centre and the four corners,
 * crop x crop each, by Slice, each Resized back to its side; flip: each view's mirror
 * image too, by a Slice of step -1 on the width axis) stacked on the batch axis, its
 * own front and net (initializers and values named "m<i>." + the names above), Softmax,
 * the mean over its views, its classes in the ensemble's order (Gather), times its
 * weight. Outputs: `probabilities` [N, k], their Sum; `logits` = Log(probabilities),
 * for tools that read logits. metadata_props: class_names, image_size, ensemble (a
 * JSON array of each member's source, weight, image_size, tta), petal_tui_version,
 * input. Float32 only. Deterministic as above. */
#define NN_EXPORT_MAX_MEMBERS 32

typedef struct nn_export_member {
    const nn_model *m;              /* its input side is m->h (square) */
    double weight;                  /* the weights sum to 1 (the caller's) */
    int flip, crops;                /* its test-time views */
    int crop;                       /* crops: their side, 1..m->h */
    const int *class_of;            /* its output c is the ensemble's class class_of[c]
                                       (a permutation); NULL: c */
    const char *source;             /* for the metadata ("" or NULL: none) */
} nn_export_member;

typedef struct nn_export_ens {
    const char *const *class_names; /* k names, or NULL: "class N" */
    int k;                          /* classes (every member's output count) */
    int image_size;                 /* S; 0: the largest member's */
} nn_export_ens;

int nn_export_ensemble_onnx(const nn_export_member *mem, int n, const nn_export_ens *meta,
                            uint8_t **out, size_t *len, pt_err *e);
int nn_export_ensemble_file(const nn_export_member *mem, int n, const nn_export_ens *meta,
                            const char *path, pt_err *e);

#endif
