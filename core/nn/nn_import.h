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
 * end is only where calibration stopped), any other as no activation.
 *
 * With n_classes > 0 the ImageNet classifier (the last Gemm / MatMul and what
 * follows it: bias, softmax, dequantization) is cut and replaced by global average
 * pooling (when the features are not already pooled), dropout and a dense layer
 * for the dataset's classes, as the notebooks do. With n_classes == 0 the graph's
 * own classifier is kept (for `petal-tui classify`).
 *
 * Ownership: the model returned belongs to the caller (nn_model_free). The ONNX
 * model is only read.
 */
#ifndef PT_NN_IMPORT_H
#define PT_NN_IMPORT_H

#include <stdint.h>

#include "base/err.h"
#include "io/onnx.h"
#include "nn/nn.h"

/* How input pixels in [0, 1] are normalised before the first layer. */
typedef enum nn_norm {
    NN_NORM_IMAGENET = 0,   /* (x - mean) / std with ImageNet's mean and std (torchvision, the zoo) */
    NN_NORM_NONE,           /* as they are, in [0, 1] */
    NN_NORM_SIGNED,         /* 2x - 1, in [-1, 1] (Keras's MobileNet / EfficientNet "tf" mode) */
} nn_norm;

typedef struct nn_import_opts {
    int h, w;               /* the input size to build for (a fully convolutional graph takes any) */
    int n_classes;          /* > 0: a new head for this many classes; 0: keep the graph's classifier */
    float dropout;          /* before the new head's dense layer */
    nn_norm norm;
    int reinit;             /* 1: keep the architecture, initialise every weight afresh */
    uint64_t seed;          /* for the new head (and everything with reinit) */
} nn_import_opts;

typedef struct nn_import_info {
    int onnx_nodes;         /* nodes in the file */
    int mapped;             /* layers of the library they became */
    int quantized;          /* 1 when weights were dequantized */
    int cut_from;           /* index of the first ONNX node cut for the new head; -1 none */
    char cut[512];          /* what was cut, for `petal-tui model` */
    int feature_c;          /* channels of the features the head reads */
    double seconds;         /* nn_import_onnx_file(): reading and importing the file */
} nn_import_info;

/* Builds the model. Errors name the file, the node (index, name), its operator and
 * what is supported; nothing is left allocated on error. */
nn_model *nn_import_onnx(const onnx_model *om, const nn_import_opts *o, nn_import_info *info,
                         pt_err *e);

/* The same from a file: onnx_load(), nn_import_onnx(), and the ONNX model freed. */
nn_model *nn_import_onnx_file(const char *path, const nn_import_opts *o, nn_import_info *info,
                              pt_err *e);

#endif
