#!/usr/bin/python3
"""Writes the tf2onnx-shaped fixtures of tests/test_import_keras.c (python3-onnx's
helpers for the graphs, Debian's python3-torch for the references, ONNX Runtime for a
second opinion). Run from anywhere with /usr/bin/python3 (which sees torch and onnx),
after `make ort-deps` (node runs tests/ort/ort_run.js with onnxruntime-node):

    /usr/bin/python3 tests/data/import/make_keras_fixtures.py

The graphs are laid out as tf2onnx writes a Keras model: an NHWC input with a
Transpose (0, 3, 1, 2) after it, a stride-2 conv with TensorFlow's SAME padding as
asymmetric pads [0, 0, 1, 1] (or a Pad before it), batch norm with epsilon 1e-3, a
Transpose (0, 2, 3, 1) back before the pooling ReduceMean or Keras's Flatten. Weights
are seeded random numbers; PyTorch computes the same net functionally (F.pad for the
asymmetric pads) on a seeded input, saved beside each graph.

  keras_block.onnx  a MobileNet-style block (Clip as ReLU6, a depthwise conv, a
                    residual Add); pooling as Keras's GlobalAveragePooling2D:
                    ReduceMean over NHWC axes [1, 2], keepdims 0 (opset 13) -> [N, C]
  keras_keep.onnx   the same block; ReduceMean [1, 2] keepdims 1 -> [N, 1, 1, C], a
                    Transpose (0, 3, 1, 2) to [N, C, 1, 1] and a ReduceMean over NCHW
                    axes [2, 3] keepdims 0 given as an input (opset 18)
  keras_bad.onnx    keras_block with a Relu reading the NHWC features: refused, naming it
  keras_se.onnx     keras_block with Keras's squeeze-and-excitation: GAP to [N, C], a
                    Reshape to [N, 1, 1, C] (NHWC) and a Transpose to the gate
  NAME.in           the input, float32 little-endian, N x H x W x 3 (NHWC)
  NAME.out          PyTorch's output, float32 little-endian, N x C

Whole tiny nets (12 px, 10 classes, opset 13), see effnet_graph and vgg_graph:
  keras_effnet.onnx EfficientNet-style: raw 0-255 input normalised in the graph (Mul
                    1/255, Sub mean, Div std), SiLU, depthwise conv, squeeze-and-
                    excitation, vector Reshape / Squeeze / Unsqueeze, Dense, Softmax
  keras_vgg.onnx    VGG-style in caffe mode (BGR, means subtracted outside the graph),
                    3x3 convs + ReLU, MaxPool, Keras's Flatten (NHWC order), Dense x 2
  NAME.in           what petal-tui feeds: 2 images of whole pixels / 255 in [0, 1], RGB,
                    NHWC; the test imports keras_effnet with NN_NORM_RAW (auto) and
                    keras_vgg with NN_NORM_CAFFE, and the references computed the graph
                    on those pixels so converted (raw_of, caffe_of)
  NAME.out          PyTorch's probabilities (the graph's output), float32, 2 x 10
  NAME.ort          ONNX Runtime's (tests/ort/ort_run.js on the same converted input)
  NAME.ref          a PTREF1 gradient reference (tests/data/conform/make_conform.py's
                    format: eval logits, one training step with batch norm on batch
                    statistics, loss, grad/INIT and spread/INIT) on conform.c's input
                    (cf_input, 4 x 12 x 12) converted the same way
  keras_bad_div.onnx  keras_effnet with the Div's operands swapped (std / x): refused
  keras_bad_bgr.onnx  keras_vgg with a Relu reading the input: refused with caffe input
  keras_bad_reshape.onnx  keras_effnet with its pooled vector reshaped to [-1, 2, 4, 1]:
                    refused (not a vector's move)
"""
import os
import struct
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

N, S, C = 2, 9, 6   # 9 px: odd, so SAME at stride 2 pads one pixel at the end only


def rnd(g, *shape, lo=-1.0, hi=1.0):
    return (torch.rand(*shape, generator=g) * (hi - lo) + lo).float()


def params(g):
    p = {'stem_w': rnd(g, C, 3, 3, 3, lo=-0.5, hi=0.5), 'dw_w': rnd(g, C, 1, 3, 3),
         'pw_w': rnd(g, C, C, 1, 1, lo=-0.5, hi=0.5)}
    for b in ('stem', 'dw', 'pw'):
        p[b + '_gamma'] = rnd(g, C, lo=0.5, hi=1.5)
        p[b + '_beta'] = rnd(g, C, lo=-0.3, hi=0.3)
        p[b + '_mean'] = rnd(g, C, lo=-0.5, hi=0.5)
        p[b + '_var'] = rnd(g, C, lo=0.5, hi=2.0)
    return p


def torch_net(p, x_nhwc):
    x = x_nhwc.permute(0, 3, 1, 2)

    def bn(y, b):
        return F.batch_norm(y, p[b + '_mean'], p[b + '_var'], p[b + '_gamma'], p[b + '_beta'],
                            False, 0.0, 1e-3)
    y = F.conv2d(F.pad(x, (0, 1, 0, 1)), p['stem_w'], stride=2)
    y = torch.clamp(bn(y, 'stem'), 0, 6)
    z = torch.clamp(bn(F.conv2d(y, p['dw_w'], padding=1, groups=C), 'dw'), 0, 6)
    y = y + bn(F.conv2d(z, p['pw_w']), 'pw')
    return y.mean(dim=(2, 3))


def graph(p, keep):
    inits = [numpy_helper.from_array(v.numpy(), k) for k, v in p.items()]
    inits += [numpy_helper.from_array(np.array(0.0, np.float32), 'clip_min'),
              numpy_helper.from_array(np.array(6.0, np.float32), 'clip_max')]
    nodes = [helper.make_node('Transpose', ['input_1'], ['input_nchw'], perm=[0, 3, 1, 2]),
             helper.make_node('Conv', ['input_nchw', 'stem_w'], ['stem'], kernel_shape=[3, 3],
                              strides=[2, 2], pads=[0, 0, 1, 1])]

    def bn(x, b, out):
        nodes.append(helper.make_node('BatchNormalization',
                                      [x, b + '_gamma', b + '_beta', b + '_mean', b + '_var'],
                                      [out], epsilon=1e-3))
    bn('stem', 'stem', 'stem_bn')
    nodes.append(helper.make_node('Clip', ['stem_bn', 'clip_min', 'clip_max'], ['stem_relu']))
    nodes.append(helper.make_node('Conv', ['stem_relu', 'dw_w'], ['dw'], kernel_shape=[3, 3],
                                  group=C, pads=[1, 1, 1, 1]))
    bn('dw', 'dw', 'dw_bn')
    nodes.append(helper.make_node('Clip', ['dw_bn', 'clip_min', 'clip_max'], ['dw_relu']))
    nodes.append(helper.make_node('Conv', ['dw_relu', 'pw_w'], ['pw'], kernel_shape=[1, 1]))
    bn('pw', 'pw', 'pw_bn')
    nodes.append(helper.make_node('Add', ['stem_relu', 'pw_bn'], ['block']))
    nodes.append(helper.make_node('Transpose', ['block'], ['features_nhwc'], perm=[0, 2, 3, 1]))
    if not keep:
        nodes.append(helper.make_node('ReduceMean', ['features_nhwc'], ['features'], axes=[1, 2],
                                      keepdims=0))
        opset = 13
    else:
        inits.append(numpy_helper.from_array(np.array([2, 3], np.int64), 'hw_axes'))
        inits.append(numpy_helper.from_array(np.array([1, 2], np.int64), 'nhwc_axes'))
        nodes.append(helper.make_node('ReduceMean', ['features_nhwc', 'nhwc_axes'], ['pooled'],
                                      keepdims=1))
        nodes.append(helper.make_node('Transpose', ['pooled'], ['pooled_nchw'],
                                      perm=[0, 3, 1, 2]))
        nodes.append(helper.make_node('ReduceMean', ['pooled_nchw', 'hw_axes'], ['features'],
                                      keepdims=0))
        opset = 18
    g = helper.make_graph(
        nodes, 'keras_keep' if keep else 'keras_block',
        [helper.make_tensor_value_info('input_1', TensorProto.FLOAT, ['N', S, S, 3])],
        [helper.make_tensor_value_info('features', TensorProto.FLOAT, ['N', C])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)],
                          producer_name='make_keras_fixtures.py (tf2onnx-shaped)')
    if opset <= 17:
        onnx.checker.check_model(m, full_check=True)   # Debian's onnx 1.12 knows up to 17
    return m


def se_graph(p):
    """keras_block with squeeze-and-excitation in Keras's own form as tf2onnx writes it
    (GlobalAveragePooling2D, Reshape((1, 1, C)), then back to NCHW for the conv-free
    gate): Transpose to NHWC, ReduceMean [1, 2] keepdims 0 -> [N, C], Reshape to
    [-1, 1, 1, C] (NHWC), Transpose (0, 3, 1, 2), Sigmoid, Mul with the block."""
    m = graph(p, 0)
    m.graph.name = 'keras_se'
    nodes = list(m.graph.node)
    at = [i for i, n in enumerate(nodes) if n.op_type == 'Transpose' and n.input[0] == 'block'][0]
    nodes[at].input[0] = 'se'
    nd = helper.make_node
    se = [nd('Transpose', ['block'], ['se_nhwc'], perm=[0, 2, 3, 1]),
          nd('ReduceMean', ['se_nhwc'], ['se_gap'], axes=[1, 2], keepdims=0),
          nd('Reshape', ['se_gap', 'se_shape'], ['se_11c']),
          nd('Transpose', ['se_11c'], ['se_c11'], perm=[0, 3, 1, 2]),
          nd('Sigmoid', ['se_c11'], ['se_gate']),
          nd('Mul', ['block', 'se_gate'], ['se'])]
    del m.graph.node[:]
    m.graph.node.extend(nodes[:at] + se + nodes[at:])
    m.graph.initializer.append(numpy_helper.from_array(np.array([-1, 1, 1, C], np.int64),
                                                       'se_shape'))
    onnx.checker.check_model(m, full_check=True)
    return m


def torch_se(p, x_nhwc):
    """se_graph's net: torch_net with the gate before its pooling."""
    x = x_nhwc.permute(0, 3, 1, 2)

    def bn(y, b):
        return F.batch_norm(y, p[b + '_mean'], p[b + '_var'], p[b + '_gamma'], p[b + '_beta'],
                            False, 0.0, 1e-3)
    y = torch.clamp(bn(F.conv2d(F.pad(x, (0, 1, 0, 1)), p['stem_w'], stride=2), 'stem'), 0, 6)
    z = torch.clamp(bn(F.conv2d(y, p['dw_w'], padding=1, groups=C), 'dw'), 0, 6)
    y = y + bn(F.conv2d(z, p['pw_w']), 'pw')
    y = y * torch.sigmoid(y.mean(dim=(2, 3), keepdim=True))
    return y.mean(dim=(2, 3))


def f32(path, t):
    with open(path, 'wb') as f:
        f.write(struct.pack('<%df' % t.numel(), *t.flatten().tolist()))



# ---- keras_effnet and keras_vgg: whole (tiny) nets, checked by ONNX Runtime too ---------

S2, K = 12, 10                  # their input size and classes (conform's labels are % 10)
CONFORM_N = 4                   # the batch of the gradient references
CAFFE_BGR_MEAN = (103.939, 116.779, 123.68)   # Keras's caffe mode, B, G, R in 0-255
EFF_MEAN = (0.485, 0.456, 0.406)              # Keras's EfficientNet Normalization layer
EFF_STD = (0.229, 0.224, 0.225)


def t32(*v):
    return torch.tensor(v, dtype=torch.float32)


def bn_params(g, p, b, c):
    p[b + '_gamma'] = rnd(g, c, lo=0.5, hi=1.5)
    p[b + '_beta'] = rnd(g, c, lo=-0.3, hi=0.3)
    p[b + '_mean'] = rnd(g, c, lo=-0.5, hi=0.5)
    p[b + '_var'] = rnd(g, c, lo=0.5, hi=2.0)


def effnet_params(g):
    c, r = 8, 2
    p = {'stem_w': rnd(g, c, 3, 3, 3, lo=-0.5, hi=0.5), 'dw_w': rnd(g, c, 1, 3, 3),
         'se_r_w': rnd(g, r, c, 1, 1), 'se_r_b': rnd(g, r, lo=-0.2, hi=0.2),
         'se_e_w': rnd(g, c, r, 1, 1), 'se_e_b': rnd(g, c, lo=-0.2, hi=0.2),
         'proj_w': rnd(g, c, c, 1, 1, lo=-0.5, hi=0.5),
         'dense_w': rnd(g, c, K, lo=-0.5, hi=0.5), 'dense_b': rnd(g, K, lo=-0.2, hi=0.2)}
    for b in ('stem', 'dw', 'proj'):
        bn_params(g, p, b, c)
    return p


# Constants of the graphs (not trained, no gradient).
EFF_CONST = {'rescale': np.array(1.0 / 255.0, np.float32),
             'norm_mean': np.array(EFF_MEAN, np.float32).reshape(1, 3, 1, 1),
             'norm_std': np.array(EFF_STD, np.float32).reshape(1, 3, 1, 1)}


def bn_f(p, y, b, train):
    # Clones: training mode updates the running statistics in place.
    return F.batch_norm(y, p[b + '_mean'].clone(), p[b + '_var'].clone(), p[b + '_gamma'],
                        p[b + '_beta'], train, 0.0, 1e-3)


def silu(y):
    return y * torch.sigmoid(y)


def effnet_logits(p, x_nhwc, train=False):
    """keras_effnet's graph on its file input (raw 0-255 pixels, NHWC) up to the logits."""
    cst = {k: torch.from_numpy(v).to(x_nhwc.dtype) for k, v in EFF_CONST.items()}
    x = x_nhwc.permute(0, 3, 1, 2)
    x = (x * cst['rescale'] - cst['norm_mean']) / cst['norm_std']
    y = silu(bn_f(p, F.conv2d(F.pad(x, (0, 1, 0, 1)), p['stem_w'], stride=2), 'stem', train))
    z = silu(bn_f(p, F.conv2d(y, p['dw_w'], padding=1, groups=y.shape[1]), 'dw', train))
    s = z.mean(dim=(2, 3), keepdim=True)
    s = silu(F.conv2d(s, p['se_r_w'], p['se_r_b']))
    s = torch.sigmoid(F.conv2d(s, p['se_e_w'], p['se_e_b']))
    y = y + bn_f(p, F.conv2d(z * s, p['proj_w']), 'proj', train)
    f = y.mean(dim=(2, 3))
    return f @ p['dense_w'] + p['dense_b']


def effnet_graph(p, name='keras_effnet', c_over_x=False):
    """tf2onnx's form of a Keras EfficientNet-style net: NHWC input of raw 0-255 pixels,
    Rescaling (Mul 1/255) and Normalization (Sub mean, Div std) at the front, a Pad and
    a stride-2 conv (SAME), batch norm (epsilon 1e-3), SiLU (Sigmoid, Mul), a depthwise
    conv, squeeze-and-excitation (ReduceMean keepdims 1, conv, SiLU, conv, Sigmoid,
    Mul), a projecting conv + batch norm added to the block's input, then the pooling
    as tf2onnx writes Keras's: Transpose back, ReduceMean over NHWC [1, 2] keepdims 1
    ([N, 1, 1, C]), and the vector moved about as Keras's heads do (Reshape to
    [-1, C, 1, 1], Squeeze [2, 3] and Unsqueeze [1, 2] with their axes as inputs,
    Reshape to [-1, C]), a Dense (MatMul + Add) and Softmax."""
    c = p['stem_w'].shape[0]
    inits = [numpy_helper.from_array(v.numpy(), k) for k, v in p.items()]
    inits += [numpy_helper.from_array(v, k) for k, v in EFF_CONST.items()]
    inits += [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in
              (('pads', [0, 0, 0, 0, 0, 0, 1, 1]), ('to_nchw_vec', [-1, c, 1, 1]),
               ('ax23', [2, 3]), ('ax12', [1, 2]), ('to_nc', [-1, c]))]
    nd = helper.make_node
    nodes = [nd('Transpose', ['input_1'], ['x'], perm=[0, 3, 1, 2]),
             nd('Mul', ['x', 'rescale'], ['rescaled']),
             nd('Sub', ['rescaled', 'norm_mean'], ['centred']),
             nd('Div', ['norm_std', 'centred'] if c_over_x else ['centred', 'norm_std'],
                ['normalised'], name='normalization/truediv'),
             nd('Pad', ['normalised', 'pads'], ['padded']),
             nd('Conv', ['padded', 'stem_w'], ['stem'], kernel_shape=[3, 3], strides=[2, 2])]

    def bn(x, b, out):
        nodes.append(nd('BatchNormalization', [x, b + '_gamma', b + '_beta', b + '_mean',
                                               b + '_var'], [out], epsilon=1e-3))

    def swish(x, out):
        nodes.append(nd('Sigmoid', [x], [out + '_sig']))
        nodes.append(nd('Mul', [x, out + '_sig'], [out]))
    bn('stem', 'stem', 'stem_bn')
    swish('stem_bn', 'stem_act')
    nodes.append(nd('Conv', ['stem_act', 'dw_w'], ['dw'], kernel_shape=[3, 3], group=c,
                    pads=[1, 1, 1, 1]))
    bn('dw', 'dw', 'dw_bn')
    swish('dw_bn', 'dw_act')
    nodes += [nd('ReduceMean', ['dw_act'], ['se_sq'], axes=[2, 3], keepdims=1),
              nd('Conv', ['se_sq', 'se_r_w', 'se_r_b'], ['se_r'], kernel_shape=[1, 1])]
    swish('se_r', 'se_r_act')
    nodes += [nd('Conv', ['se_r_act', 'se_e_w', 'se_e_b'], ['se_e'], kernel_shape=[1, 1]),
              nd('Sigmoid', ['se_e'], ['se_gate']),
              nd('Mul', ['dw_act', 'se_gate'], ['se_out']),
              nd('Conv', ['se_out', 'proj_w'], ['proj'], kernel_shape=[1, 1])]
    bn('proj', 'proj', 'proj_bn')
    nodes += [nd('Add', ['stem_act', 'proj_bn'], ['block']),
              nd('Transpose', ['block'], ['block_nhwc'], perm=[0, 2, 3, 1]),
              nd('ReduceMean', ['block_nhwc'], ['pooled'], axes=[1, 2], keepdims=1),
              nd('Reshape', ['pooled', 'to_nchw_vec'], ['pooled_nchw']),
              nd('Squeeze', ['pooled_nchw', 'ax23'], ['vec']),
              nd('Unsqueeze', ['vec', 'ax12'], ['vec_nhwc']),
              nd('Reshape', ['vec_nhwc', 'to_nc'], ['features']),
              nd('MatMul', ['features', 'dense_w'], ['dense']),
              nd('Add', ['dense', 'dense_b'], ['logits']),
              nd('Softmax', ['logits'], ['probabilities'], axis=-1)]
    return finish(nodes, inits, name, 3)


def vgg_params(g):
    c1, c2, h = 4, 8, 16
    # Small first weights: the caffe input is about +-130.
    p = {'conv1_w': rnd(g, c1, 3, 3, 3, lo=-0.01, hi=0.01), 'conv1_b': rnd(g, c1, lo=-0.2, hi=0.2),
         'conv2_w': rnd(g, c1, c1, 3, 3, lo=-0.3, hi=0.3), 'conv2_b': rnd(g, c1, lo=-0.2, hi=0.2),
         'conv3_w': rnd(g, c2, c1, 3, 3, lo=-0.3, hi=0.3), 'conv3_b': rnd(g, c2, lo=-0.2, hi=0.2),
         'fc1_w': rnd(g, c2 * (S2 // 4) ** 2, h, lo=-0.2, hi=0.2),
         'fc1_b': rnd(g, h, lo=-0.2, hi=0.2),
         'fc2_w': rnd(g, h, K, lo=-0.5, hi=0.5), 'fc2_b': rnd(g, K, lo=-0.2, hi=0.2)}
    return p


# keras_vgg's per-channel constants on the input (B, G, R): c - x, then x * s.
VGG_CONST = {'chan_offset': np.array([2.0, -3.0, 5.0], np.float32).reshape(1, 3, 1, 1),
             'chan_scale': np.array([-1.0, -0.5, -2.0], np.float32).reshape(1, 3, 1, 1)}


def vgg_logits(p, x_nhwc, train=False):
    """keras_vgg's graph on its file input (BGR, caffe means subtracted, NHWC)."""
    del train   # no batch norm
    cst = {k: torch.from_numpy(v).to(x_nhwc.dtype) for k, v in VGG_CONST.items()}
    x = x_nhwc.permute(0, 3, 1, 2)
    x = (cst['chan_offset'] - x) * cst['chan_scale']
    x = F.relu(F.conv2d(F.pad(x, (1, 1, 1, 1)), p['conv1_w'], p['conv1_b']))
    x = F.relu(F.conv2d(x, p['conv2_w'], p['conv2_b'], padding=1))
    x = F.max_pool2d(x, 2)
    x = F.relu(F.conv2d(x, p['conv3_w'], p['conv3_b'], padding=1))
    x = F.max_pool2d(x, 2)
    f = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)   # Keras's Flatten: NHWC order
    f = F.relu(f @ p['fc1_w'] + p['fc1_b'])
    return f @ p['fc2_w'] + p['fc2_b']


def vgg_graph(p, name='keras_vgg', bad=False):
    """tf2onnx's form of a Keras VGG-style net: NHWC input in caffe mode (BGR, means
    subtracted in 0-255, done outside the graph as Keras's preprocess_input does),
    3x3 convs with ReLU, MaxPool, Keras's Flatten (a Transpose back to NHWC and a
    Reshape [-1, H*W*C]), two Dense (MatMul + Add) and Softmax. Between the input and
    the first conv, what may read the caffe input's BGR channels besides a conv: per-
    channel constants (c - x, then x * s: petal-tui reverses them) and a Pad. bad: a
    Relu reads the input before the first conv (refused with the caffe input)."""
    inits = [numpy_helper.from_array(v.numpy(), k) for k, v in p.items()]
    inits += [numpy_helper.from_array(v, k) for k, v in VGG_CONST.items()]
    flat = p['fc1_w'].shape[0]
    inits.append(numpy_helper.from_array(np.array([-1, flat], np.int64), 'flat_shape'))
    inits.append(numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), 'pads'))
    nd = helper.make_node
    nodes = [nd('Transpose', ['input_1'], ['x'], perm=[0, 3, 1, 2]),
             nd('Sub', ['chan_offset', 'x'], ['x_off']),
             nd('Mul', ['x_off', 'chan_scale'], ['x_scaled'])]
    if bad:
        nodes.append(nd('Relu', ['x_scaled'], ['x_relu'], name='reads_bgr'))
    nodes.append(nd('Pad', ['x_relu' if bad else 'x_scaled', 'pads'], ['x_padded']))
    for i, src in ((1, 'x_padded'), (2, 'r1'), (3, 'p2')):
        nodes += [nd('Conv', [src, 'conv%d_w' % i, 'conv%d_b' % i], ['c%d' % i],
                     kernel_shape=[3, 3], pads=[0, 0, 0, 0] if i == 1 else [1, 1, 1, 1]),
                  nd('Relu', ['c%d' % i], ['r%d' % i])]
        if i > 1:
            nodes.append(nd('MaxPool', ['r%d' % i], ['p%d' % i], kernel_shape=[2, 2],
                            strides=[2, 2]))
    nodes += [nd('Transpose', ['p3'], ['p3_nhwc'], perm=[0, 2, 3, 1]),
              nd('Reshape', ['p3_nhwc', 'flat_shape'], ['flat']),
              nd('MatMul', ['flat', 'fc1_w'], ['fc1']),
              nd('Add', ['fc1', 'fc1_b'], ['fc1_biased']),
              nd('Relu', ['fc1_biased'], ['fc1_act']),
              nd('MatMul', ['fc1_act', 'fc2_w'], ['fc2']),
              nd('Add', ['fc2', 'fc2_b'], ['logits']),
              nd('Softmax', ['logits'], ['probabilities'], axis=-1)]
    return finish(nodes, inits, name, 3)


def finish(nodes, inits, name, c_in):
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info('input_1', TensorProto.FLOAT, ['N', S2, S2, c_in])],
        [helper.make_tensor_value_info('probabilities', TensorProto.FLOAT, ['N', K])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)],
                          producer_name='make_keras_fixtures.py (tf2onnx-shaped)')
    onnx.checker.check_model(m, full_check=True)
    return m


# ---- what petal-tui feeds, and what the graphs take ----------------------------------------

def pixels(g, n):
    """n seeded images of whole 0-255 pixels, RGB, NHWC (float32)."""
    return torch.randint(0, 256, (n, S2, S2, 3), generator=g).float()


def raw_of(unit):
    """NN_NORM_RAW: the graph's input from petal-tui's [0, 1] pixels."""
    return unit * 255.0


def caffe_of(unit):
    """NN_NORM_CAFFE (Keras's preprocess_input, caffe mode): BGR, 255x minus the means."""
    bgr = (unit * 255.0).flip(-1)
    return bgr - t32(*CAFFE_BGR_MEAN)


def ort_run(onnx_path, x_nhwc, out_path, output='probabilities'):
    """ONNX Runtime's output on x: tests/ort/ort_run.js (node, with onnxruntime-node
    installed by `make ort-deps`), its output called output copied to out_path."""
    import shutil
    import subprocess
    import tempfile
    here = os.path.dirname(os.path.abspath(__file__))
    runner = os.path.join(here, '..', '..', 'ort', 'ort_run.js')
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, 'input.f32')
        f32(inp, x_nhwc)
        dims = ','.join(str(d) for d in x_nhwc.shape)
        subprocess.run(['node', runner, onnx_path, inp, dims, os.path.join(tmp, 'out')],
                       check=True, stdout=subprocess.DEVNULL)
        shutil.copyfile(os.path.join(tmp, 'out', output + '.f32'), out_path)


# ---- gradient references (tests/data/conform/make_conform.py's PTREF1 format) -----------

def conform_ref(path, logits_of, p, to_file, n):
    """The eval logits, one training step (batch norm on batch statistics, summed
    cross-entropy, gradients of sum / N) and PyTorch's spread on each gradient (the
    same step in float64, and in float32 with the weights moved by up to 4 units in the
    last place, two seeds), on conform.c's input (cf_input) converted as petal-tui's
    norm does (to_file), in make_conform.py's PTREF1 layout."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                                    'conform'))
    import make_conform as mc
    unit = torch.from_numpy(mc.input_nhwc(n, S2))
    y = torch.from_numpy(mc.labels_of(n))
    trained = [k for k in p if not k.endswith('_mean') and not k.endswith('_var')]

    def step(q, x):
        q = {k: v.clone().requires_grad_(k in trained) for k, v in q.items()}
        logits = logits_of(q, x, train=True)
        loss = F.cross_entropy(logits, y, reduction='sum')
        (loss / n).backward()
        return logits.detach().float(), loss, {k: q[k].grad.double().numpy() for k in trained}

    x = to_file(unit)
    with torch.no_grad():
        logits = logits_of(p, x)
    train_logits, loss, grads = step(p, x)
    gen = torch.Generator().manual_seed(7)
    others = [({k: v.double() for k, v in p.items()}, to_file(unit.double()))]
    for _ in range(2):
        others.append(({k: v * (1.0 + torch.randint(-4, 5, v.shape, generator=gen).float()
                                * 2.0 ** -23) for k, v in p.items()}, x))
    spread = {k: 0.0 for k in grads}
    for q, xo in others:
        _, _, go = step(q, xo)
        for k, gr in grads.items():
            spread[k] = max(spread[k], np.linalg.norm(go[k] - gr) / max(np.linalg.norm(gr), 1e-300))
    mc.write_ref(path, [('setup', np.array([n, S2, S2, K], np.float32)),
                        ('labels', y.numpy().astype(np.float32)),
                        ('logits', logits.numpy()), ('train_logits', train_logits.numpy()),
                        ('loss', np.array([loss.item()], np.float32))] +
                 [('grad/' + k, v.astype(np.float32)) for k, v in sorted(grads.items())] +
                 [('spread/' + k, np.array([v], np.float32)) for k, v in sorted(spread.items())])
    worst = max(spread.values())
    print(f'{os.path.basename(path)}: {len(grads)} tensors, largest spread {worst:.2g}')


def whole_net(name, g, make_params, logits_of, make_graph, to_file):
    p = make_params(g)
    unit = pixels(g, N) / 255.0
    onnx.save(make_graph(p), name + '.onnx')
    f32(name + '.in', unit)
    with torch.no_grad():
        f32(name + '.out', torch.softmax(logits_of(p, to_file(unit)), dim=1))
    ort_run(name + '.onnx', to_file(unit), name + '.ort')
    conform_ref(name + '.ref', logits_of, p, to_file, CONFORM_N)
    return p


def main():
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    g = torch.Generator().manual_seed(29)
    p = params(g)
    x = rnd(g, N, S, S, 3)
    y = torch_net(p, x)
    for name, keep in (('keras_block', 0), ('keras_keep', 1)):
        onnx.save(graph(p, keep), name + '.onnx')
        f32(name + '.in', x)
        f32(name + '.out', y)
        ort_run(name + '.onnx', x, name + '.ort', 'features')
    bad = graph(p, 0)
    last = bad.graph.node[-1]
    last.CopyFrom(helper.make_node('Relu', ['features_nhwc'], ['features'], name='not_a_pool'))
    onnx.save(bad, 'keras_bad.onnx')
    onnx.save(se_graph(p), 'keras_se.onnx')
    f32('keras_se.in', x)
    f32('keras_se.out', torch_se(p, x))
    ort_run('keras_se.onnx', x, 'keras_se.ort', 'features')

    torch.set_num_threads(2)
    g = torch.Generator().manual_seed(2029)
    pe = whole_net('keras_effnet', g, effnet_params, effnet_logits, effnet_graph, raw_of)
    onnx.save(effnet_graph(pe, 'keras_bad_div', c_over_x=True), 'keras_bad_div.onnx')
    bad = effnet_graph(pe, 'keras_bad_reshape')
    for t in bad.graph.initializer:
        if t.name == 'to_nchw_vec':
            t.CopyFrom(numpy_helper.from_array(np.array([-1, 2, 4, 1], np.int64), t.name))
    onnx.save(bad, 'keras_bad_reshape.onnx')
    pv = whole_net('keras_vgg', g, vgg_params, vgg_logits, vgg_graph, caffe_of)
    onnx.save(vgg_graph(pv, 'keras_bad_bgr', bad=True), 'keras_bad_bgr.onnx')


main()
