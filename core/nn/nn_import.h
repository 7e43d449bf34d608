/* nn_import — an ONNX graph (as core/io/onnx reads it) mapped onto the layer
 * library: pretrained backbones, and any architecture the layers can express.
 *
 * The graph is NCHW; the library is NHWC. Weights are converted once: conv
 * [cout][cin/g][kh][kw] -> [kh][kw][cin/g][cout]; Gemm/MatMul to [cin][cout], with
 * the rows of a flattened feature map permuted from NCHW's order to NHWC's.
 * Quantized graphs (the ONNX zoo's int8 files) are dequantized once into float
 * layers: w = (q - zero_point) * scale per output channel, bias = q * x_scale *
 * w_scale. Such a graph carries its ReLU6s as clamps to each output's quantized
 * range: a range that starts at 0 is read as ReLU6 (the float model's op; the upper
 * end is only where calibration stopped), any other as no activation. The QDQ form
 * (export --int8's, nn_export.h; ONNX Runtime's quantizer's) is read as it computes: a
 * DequantizeLinear of a constant (int8, uint8 or int32, per tensor or per axis) is the
 * float constant it makes, exactly, which the Conv or Gemm reading it takes as its
 * weights or bias; a QuantizeLinear of a feature map read only by DequantizeLinears of
 * its scale and zero point is a fake-quantization layer (nn_fakequant: the same
 * rounding and saturation, in float), which makes the model inference-only. A
 * QuantizeLinear read by anything else (the zoo's QLinear* files) passes as before.
 *
 * A Mul, Add, Sub or Div of a map by constants (one value, or one per channel; x / c
 * but not c / x) is an affine layer, merged into the affine it reads when nothing else
 * reads that one: petal-tui's own exports (nn_export.h) and Keras's EfficientNet
 * (Rescaling, Normalization) start so, and NN_NORM_RAW reads them back to the graph's
 * output. With NN_NORM_CAFFE the library keeps RGB: the convolutions that read the
 * image (through per-channel constants, Pads and Transposes only) take the file's
 * input channel 2 - k for channel k, per-channel constants there are reversed too, and
 * anything else reading the image is refused naming the node. nn_onnx_meta_read() gives what such a file says about
 * itself (class names, image size, run, epoch).
 *
 * With n_classes > 0 the ImageNet classifier (the last Gemm / MatMul and what
 * follows it: bias, softmax, dequantization) is cut and replaced by global average
 * pooling (when the features are not already pooled), dropout and a dense layer
 * for the dataset's classes, as the notebooks do. A graph with no classifier (a
 * feature extractor, Keras's include_top=False) gets the same head after its output.
 * With n_classes == 0 the graph's own classifier (or features) is kept (for
 * `petal-tui classify`).
 *
 * tf2onnx's Keras layout is read too: an [N, H, W, 3] input read only through
 * Transposes (0, 3, 1, 2), a Transpose (0, 2, 3, 1) back, ReduceMean over the
 * spatial axes (keepdims 0 or 1) as global average pooling, Keras's Flatten of an
 * NHWC map, and Reshape / Squeeze / Unsqueeze moving a vector between [N, C],
 * [N, C, 1, 1] and [N, 1, 1, C]; anything else reading an NHWC-seen value is refused
 * naming the node (nn_import_layout.c, nn_import_vector.c).
 *
 * nn_import_onnx_map() also returns where every parameter came from: for each
 * float ONNX tensor that became a layer's parameters (or BN's running statistics),
 * its name, shape and place in nn_params() / nn_buffers(), and the conversion back
 * to the file's layout, for values and for gradients (the gradient with respect to
 * the ONNX tensor). That is how a training step's gradients are compared with
 * another framework's (tests/conform.c), and what writing a model back would use.
 *
 * Ownership: the model returned belongs to the caller (nn_model_free), as does the
 * map (nn_import_map_free; it copies the names it keeps, so the ONNX model may go
 * first). The ONNX model is only read.
 */
#ifndef PT_NN_IMPORT_H
#define PT_NN_IMPORT_H

#include <stdint.h>

#include "base/err.h"
#include "io/onnx.h"
#include "nn/nn.h"

/* How input pixels in [0, 1] (RGB as decoded / 255) become what the graph's first
 * layer takes: the model's input convention, `--input-norm`. */
typedef enum nn_norm {
    NN_NORM_IMAGENET = 0,   /* (x - mean) / std with ImageNet's mean and std (torchvision,
                               the ONNX zoo, Keras's DenseNet: "torch" mode) */
    NN_NORM_UNIT,           /* as they are, in [0, 1] */
    NN_NORM_TF,             /* 2x - 1, in [-1, 1] (Keras's MobileNet, Inception: "tf" mode) */
    NN_NORM_RAW,            /* 255x: pixels in 0-255 (petal-tui's exports, Keras's
                               EfficientNet: graphs that normalise themselves) */
    NN_NORM_CAFFE,          /* BGR, 255x minus ImageNet's mean in 0-255, no std (Keras's VGG
                               and ResNet50: "caffe" mode); the import reverses the input
                               channels of the convolutions that read the image instead */
    NN_NORM_COUNT
} nn_norm;

/* "imagenet", "unit", "tf", "raw", "caffe"; "?" out of range. */
const char *nn_norm_name(nn_norm n);
/* What n does to a pixel x in [0, 1], in a few words ("2x - 1, in [-1, 1]"). */
const char *nn_norm_formula(nn_norm n);
/* The convention spelt s (a name above; "torch" is imagenet): 0, or -1 unknown. */
int nn_norm_parse(const char *s, nn_norm *out);

/* The convention a graph says it takes, when it says: a petal-tui export (its
 * metadata's input property) and a graph whose image input goes first, past any
 * Transpose, into a Mul, Sub, Div or Add by constants (it normalises itself, as
 * Keras's EfficientNet does) take raw pixels; anything else gets imagenet, the
 * convention of torchvision and the ONNX zoo. why (n bytes, may be NULL) receives
 * the reason in a few words, for the run log and `petal-tui model`. */
nn_norm nn_import_norm_auto(const onnx_model *om, char *why, size_t n);

/* With n_classes 0, what the graph's end becomes. */
typedef enum nn_head {
    NN_HEAD_AS_IS = 0,      /* the graph's output, whatever it is (`petal-tui model`, tests) */
    NN_HEAD_CLASSIFIER,     /* its own classifier: a feature extractor (nn_import_head) is
                               refused, saying so and how to get a classifier from it */
    NN_HEAD_FEATURES        /* the feature vector: what its classifier reads (the Gemm /
                               MatMul nn_import_head finds), else the graph's output */
} nn_head;

/* The side an image input that leaves its size free is built for by default. */
#define NN_IMPORT_DEFAULT_SIZE 224

typedef struct nn_import_opts {
    int h, w;               /* the input size to build for; 0: the size the graph declares,
                               else NN_IMPORT_DEFAULT_SIZE. Another than a size the graph
                               fixes is taken only where the graph builds at it (fully
                               convolutional with global pooling); else refused */
    int n_classes;          /* > 0: a new head for this many classes; 0: see head */
    nn_head head;           /* with n_classes 0 */
    float dropout;          /* before the new head's dense layer */
    nn_norm norm;           /* the input convention, unless norm_auto */
    int norm_auto;          /* 1: the graph's own (nn_import_norm_auto) */
    int reinit;             /* 1: keep the architecture, initialise every weight afresh */
    uint64_t seed;          /* for the new head (and everything with reinit) */
} nn_import_opts;

/* Whether the graph ends in a classifier: 1 when its output comes (past Softmax,
 * reshapes, dequantization, a bias) from a Gemm / MatMul or a Softmax, or from a 1x1
 * Conv (past a ReLU and a global pool), unless its names or doc string call it
 * features ('notop', 'feature', 'embedding'); 0 a feature extractor (Keras's
 * include_top=False). why (n bytes) gets the reason in a few words. */
int nn_import_head(const onnx_model *om, char *why, size_t n);

/* The size the graph's image input declares: *h, *w > 0 when fixed, else 0. */
void nn_import_declared_size(const onnx_model *om, int *h, int *w);

typedef struct nn_import_info {
    int onnx_nodes;         /* nodes in the file */
    int mapped;             /* layers of the library they became */
    int quantized;          /* 1 when weights were dequantized */
    int cut_from;           /* index of the first ONNX node cut for the new head; -1 none */
    char cut[512];          /* what was cut, for `petal-tui model` */
    int feature_c;          /* channels of the features the head reads */
    nn_norm norm;           /* the input convention the first layer applies */
    char norm_why[160];     /* why that one: "as asked", or nn_import_norm_auto's reason */
    int h, w;               /* the input size built for */
    int decl_h, decl_w;     /* the size the graph declares; 0: it leaves it free */
    char size_why[160];     /* why that size: "declared by the graph", "as asked", ... */
    int features;           /* NN_HEAD_FEATURES: 1 the classifier's input, 0 the output */
    int classifier;         /* nn_import_head(): 1 the graph ends in a classifier */
    char head_why[160];     /* its reason */
    double seconds;         /* nn_import_onnx_file(): reading and importing the file */
} nn_import_info;

/* Builds the model. Errors name the file, the node (index, name), its operator and
 * what is supported; nothing is left allocated on error. */
nn_model *nn_import_onnx(const onnx_model *om, const nn_import_opts *o, nn_import_info *info,
                         pt_err *e);

/* The same from a file: onnx_load(), nn_import_onnx(), and the ONNX model freed. */
nn_model *nn_import_onnx_file(const char *path, const nn_import_opts *o, nn_import_info *info,
                              pt_err *e);

/* ---- what a petal-tui export says about itself (metadata_props, nn_export.h) ---- */

typedef struct nn_onnx_meta {
    int petal;            /* 1: written by petal-tui export (petal_tui_version present) */
    int ensemble;         /* 1: by petal-tui ensemble --export (its "ensemble" property) */
    int image_size;       /* 0: unknown */
    int epoch;            /* -1: unknown */
    int update;           /* -1: unknown (an export before it was written) */
    int n_classes;        /* class names given: how many; 0 none */
    char **class_names;   /* malloc'd, n_classes entries, or NULL */
    char *source_run;     /* malloc'd, "" when none */
} nn_onnx_meta;

/* Reads the properties of any ONNX file (missing ones: the defaults above). Bad JSON
 * in class_names (not an array of strings), or an image_size / epoch that is not a
 * whole number: PT_EFORMAT naming the file and the property; *out is then empty
 * (nn_onnx_meta_free is still safe). */
int nn_onnx_meta_read(const onnx_model *om, nn_onnx_meta *out, pt_err *e);
void nn_onnx_meta_free(nn_onnx_meta *m);

/* ---- where the parameters came from ---------------------------------------------- */

typedef struct nn_import_map nn_import_map;

/* One float ONNX tensor read into a layer. Quantized tensors (dequantized, so with
 * no float counterpart in the file), the new head and everything under reinit have
 * no entry. One tensor read by two layers (an exporter's shared constant) has an
 * entry per layer: its gradient is the sum of theirs. */
typedef struct nn_import_param {
    const char *name;       /* the initializer or Constant (owned by the map) */
    int node;               /* the layer */
    int buffer;             /* 1: in nn_buffers() (BN running mean / variance) */
    size_t offset, count;   /* where in nn_params() (or nn_buffers()), how many floats */
    int rank;               /* the file's shape */
    int64_t dims[4];
    int64_t file_count;     /* the file tensor's elements (1 for a bias broadcast from one) */
} nn_import_param;

/* nn_import_onnx() that also returns the map (*map NULL on error). */
nn_model *nn_import_onnx_map(const onnx_model *om, const nn_import_opts *o,
                             nn_import_info *info, nn_import_map **map, pt_err *e);
size_t nn_import_map_count(const nn_import_map *mp);
/* Entry k (< count), in the order of the layers. */
const nn_import_param *nn_import_map_get(const nn_import_map *mp, size_t k);

typedef enum nn_map_what {
    NN_MAP_VALUES,          /* lib is laid out as nn_params() or nn_buffers() */
    NN_MAP_GRADS,           /* lib is laid out as nn_grads() */
} nn_map_what;

/* Entry k's part of lib in the file tensor's layout, into out (file_count floats):
 * the values the file holds (a round trip of the import), or the gradient with
 * respect to the file's tensor (transposed back, Gemm's alpha and beta applied by
 * the chain rule, a broadcast bias summed). PT_EUSAGE when k is out of range, or
 * for values through a Gemm alpha or beta of 0 (nothing to divide by). */
int nn_import_map_to_onnx(const nn_import_map *mp, size_t k, const float *lib,
                          nn_map_what what, float *out, pt_err *e);
void nn_import_map_free(nn_import_map *mp);

#endif
