#!/usr/bin/python3
"""Writes the ONNX import fixtures of tests/test_import.c (Debian's python3-torch,
python3-onnx; run with /usr/bin/python3 from this folder). Weights are seeded random
numbers (nothing is downloaded); PyTorch's logits for a seeded input are saved beside
each net, so the C test compares against PyTorch without Python.

  NAME.onnx     the net, exported by torch.onnx.export (opset 12)
  NAME.in       the input, float32 little-endian, N x H x W x C (NHWC, as petal-tui feeds it)
  NAME.out      PyTorch's logits, float32 little-endian, N x classes
"""
import struct

import onnx
import torch
import torch.nn as nn
from onnx import helper, TensorProto


def bn(c):
    b = nn.BatchNorm2d(c)
    # Random statistics, so that batch norm is not the identity in the test.
    b.running_mean.uniform_(-0.5, 0.5)
    b.running_var.uniform_(0.5, 2.0)
    b.weight.data.uniform_(0.5, 1.5)
    b.bias.data.uniform_(-0.3, 0.3)
    return b


class SE(nn.Module):
    def __init__(self, c, r):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.a = nn.Conv2d(c, r, 1)
        self.b = nn.Conv2d(r, c, 1)

    def forward(self, x):
        s = torch.sigmoid(self.b(torch.relu(self.a(self.pool(x)))))
        return x * s


class Blocks(nn.Module):
    """The layers of the five families in small: conv + BN + ReLU6 (MobileNetV2),
    depthwise, a residual add (ResNet), SiLU and squeeze-and-excitation
    (EfficientNet), a channel concat (DenseNet), max and average pools, and a
    global average pool before the classifier."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), bn(8), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(8, 8, 3, 1, 1, groups=8, bias=False), bn(8), nn.ReLU())
        self.pw = nn.Sequential(nn.Conv2d(8, 8, 1, bias=False), bn(8))
        self.se = SE(8, 4)
        self.grow = nn.Sequential(nn.Conv2d(8, 6, 3, 1, 1), bn(6))
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.avg = nn.AvgPool2d(2, 2, count_include_pad=False)
        self.head = nn.Linear(14, 10)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.pw(self.dw(x))          # residual
        x = x * torch.sigmoid(x)             # SiLU
        x = self.se(x)
        x = torch.cat([x, self.grow(x)], 1)  # dense connection
        x = self.avg(self.pool(x))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.head(x)


class Flat(nn.Module):
    """VGG's tail: a feature map flattened in NCHW order straight into a Linear,
    which petal-tui must re-order for its NHWC layout."""

    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 4, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2))
        self.c = nn.Sequential(nn.Linear(4 * 4 * 4, 12), nn.ReLU(), nn.Dropout(0.5),
                               nn.Linear(12, 7))

    def forward(self, x):
        return self.c(torch.flatten(self.f(x), 1))


def save(name, net, n, h, w):
    torch.manual_seed(1)
    net.eval()
    x = torch.randn(n, 3, h, w)
    with torch.no_grad():
        y = net(x)
    # No constant folding: it would fold batch norm into the convs, and the test wants
    # BatchNormalization nodes as torchvision's exports of training-ready nets have.
    torch.onnx.export(net, x, name + ".onnx", opset_version=12, input_names=["input"],
                      output_names=["logits"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE)
    onnx.checker.check_model(onnx.load(name + ".onnx"))
    with open(name + ".in", "wb") as f:
        f.write(struct.pack("<%df" % x.numel(), *x.permute(0, 2, 3, 1).flatten().tolist()))
    with open(name + ".out", "wb") as f:
        f.write(struct.pack("<%df" % y.numel(), *y.flatten().tolist()))


def unsupported():
    """A graph with an operator petal-tui does not have (Tanh), for the error test."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 1, 1], [0.1] * 12)
    g = helper.make_graph(
        [helper.make_node("Conv", ["input", "w"], ["c"], name="conv0"),
         helper.make_node("Tanh", ["c"], ["t"], name="squash"),
         helper.make_node("GlobalAveragePool", ["t"], ["logits"], name="gap")],
        "unsupported",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 4, 1, 1])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
    onnx.checker.check_model(m)
    onnx.save(m, "unsupported.onnx")


if __name__ == "__main__":
    torch.manual_seed(0)
    save("blocks", Blocks(), 2, 32, 32)
    torch.manual_seed(0)
    save("flat", Flat(), 3, 8, 8)
    unsupported()
