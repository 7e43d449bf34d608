/* onnx_writer — small ONNX files written byte by byte (protobuf's wire format) for
 * tests that need a graph of a given shape: tf2onnx's Keras layout with a fixed input
 * size (issue 42). Test code only.
 *
 * Ownership: the file is the caller's; nothing stays allocated.
 */
#ifndef PT_ONNX_WRITER_H
#define PT_ONNX_WRITER_H

#include <stdint.h>

typedef enum ow_head {
    OW_GAP = 0,     /* ReduceMean over H and W, MatMul, Add, Softmax: runs at any size */
    OW_FLATTEN,     /* Flatten of the last map, MatMul, Add, Softmax: only at its size */
    OW_NOTOP,       /* no classifier: the pooled features are the output */
} ow_head;

/* A tf2onnx-shaped net at path: input "input" [N, S, S, 3] (N symbolic), Transpose
 * (0, 3, 1, 2), x / 127.5 - 1 (Mul, Add: it normalises itself, so it takes pixels
 * 0-255), Conv 3x3 stride 2 (8) + Relu, Conv 3x3 stride 2 (16) + Relu, then head;
 * k classes ("probs" [N, k]) or 16 features ("features" [N, 16]). Weights from seed.
 * 0, or -1 (the reason printed). */
int ow_keras_net(const char *path, int S, ow_head head, int k, uint64_t seed);

#endif
