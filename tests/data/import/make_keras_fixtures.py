#!/usr/bin/python3
"""Writes the tf2onnx-shaped fixtures of tests/test_import_keras.c (python3-onnx's
helpers for the graph, Debian's python3-torch for the reference; run with
/usr/bin/python3 from this folder). The graphs are laid out as tf2onnx writes a Keras
model: an NHWC input with a Transpose (0, 3, 1, 2) after it, a stride-2 conv with
TensorFlow's SAME padding as asymmetric pads [0, 0, 1, 1], batch norm with epsilon
1e-3, Clip as ReLU6, a residual Add, and a Transpose (0, 2, 3, 1) back before the
pooling ReduceMean. Weights are seeded random numbers; PyTorch computes the same net
(F.pad for the asymmetric pads) on a seeded input, saved beside each graph.

  keras_block.onnx  pooling as Keras's GlobalAveragePooling2D: ReduceMean over NHWC
                    axes [1, 2], keepdims 0 (opset 13) -> [N, C]
  keras_keep.onnx   the same block; ReduceMean [1, 2] keepdims 1 -> [N, 1, 1, C], a
                    Transpose (0, 3, 1, 2) to [N, C, 1, 1] and a ReduceMean over NCHW
                    axes [2, 3] keepdims 0 given as an input (opset 18)
  keras_bad.onnx    keras_block with a Relu reading the NHWC features: refused, naming it
  NAME.in           the input, float32 little-endian, N x H x W x 3 (NHWC)
  NAME.out          PyTorch's output, float32 little-endian, N x C
"""
import struct

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


def f32(path, t):
    with open(path, 'wb') as f:
        f.write(struct.pack('<%df' % t.numel(), *t.flatten().tolist()))


def main():
    g = torch.Generator().manual_seed(29)
    p = params(g)
    x = rnd(g, N, S, S, 3)
    y = torch_net(p, x)
    for name, keep in (('keras_block', 0), ('keras_keep', 1)):
        onnx.save(graph(p, keep), name + '.onnx')
        f32(name + '.in', x)
        f32(name + '.out', y)
    bad = graph(p, 0)
    last = bad.graph.node[-1]
    last.CopyFrom(helper.make_node('Relu', ['features_nhwc'], ['features'], name='not_a_pool'))
    onnx.save(bad, 'keras_bad.onnx')


main()
