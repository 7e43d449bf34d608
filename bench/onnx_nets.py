#!/usr/bin/python3
"""Candidate nets for learning from scratch at 128 px (issue 12), written as ONNX
files with random weights, to train in petal-tui with `--model FILE.onnx --reinit`
(the importer keeps the architecture, initialises every weight afresh by --init and
replaces the final Linear with dropout and a new dense head; see
bench/history/RESULTS-128px-photos-2026-11-24-to-25.md, "Other nets at 128 px").

  /usr/bin/python3 bench/onnx_nets.py OUTDIR [NAME...]     # all nets without NAMEs

writes OUTDIR/NAME.onnx and prints each net's parameters (with a 5-class head) and
its MFLOP per 128-px image (2 x multiply-adds of the convolutions and the dense
layer, as `petal-tui model` counts them). What the importer differs in from the
built-in `small`: it normalises the input with ImageNet's mean and std (not 2x - 1);
batch-norm is exported with epsilon 1e-3 as small's; convs have no bias.

Nets:
  default  the built-in `--widths auto` at 128 px (16s,32,64,128,256,256), built by
           bench/torch_scratch.py's Small: the check that the ONNX route reproduces it
  avg64    a 2x2 average-pool stem (128 -> 64), then the 64-px default
           32,64,128,256,256
  avg32    a 4x4 average-pool stem (128 -> 32), then the 32-px default 32,64,128,256:
           do these files hold no more than 32 px of what the classes need?
  res9h    a ResNet-9 in David Page's layout (prep conv; conv-pool + residual of two
           convs; conv-pool; conv-pool + residual) at half of his widths (32, 64,
           128, 256), after a 2x2 average-pool stem and a pool after the prep conv:
           the residual stages run on 32, 16, 8 and 4 px maps
  res9w    the same at 3/4 of his widths (48, 96, 192, 384)
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_scratch as ts  # noqa: E402

EPS = 1e-3  # small's batch-norm epsilon


def cbr(cin, cout, pool=False):
    layers = [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout, eps=EPS),
              nn.ReLU()]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(cbr(c, c), cbr(c, c))

    def forward(self, x):
        return x + self.body(x)


class Head(nn.Module):
    """Features, global average pooling, a Linear the importer cuts."""

    def __init__(self, features, cout, classes=5):
        super().__init__()
        self.features = features
        self.pool = nn.AdaptiveAvgPool2d(1)  # GlobalAveragePool, then Flatten
        self.fc = nn.Linear(cout, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


class _KerasPad(torch.autograd.Function):
    """Zeros at the bottom and right (small's stride-2 "same" padding), exported as one
    Pad with constant pads: ZeroPad2d's export computes them at run time
    (ConstantOfShape, Slice, ...), which the importer does not take."""

    @staticmethod
    def forward(ctx, x):
        return nn.functional.pad(x, (0, 1, 0, 1))

    @staticmethod
    def symbolic(g, x):
        pads = g.op("Constant", value_t=torch.tensor([0, 0, 0, 0, 0, 0, 1, 1]))
        return g.op("Pad", x, pads, mode_s="constant")


class KerasPad(nn.Module):
    def forward(self, x):
        return _KerasPad.apply(x)


def default_net():
    small = ts.Small(["16s", "32", "64", "128", "256", "256"], 5, 0.2, 1, "torch", 0.99)
    # its replica batch-norm exports with momentum 1, which the importer refuses
    layers = [KerasPad() if isinstance(m, nn.ZeroPad2d) else
              nn.BatchNorm2d(m.weight.numel(), eps=m.eps) if isinstance(m, ts.ReplicaBatchNorm)
              else m for m in small.features]
    return Head(nn.Sequential(*layers), 256)


def avg_stem(k, widths):
    layers, cin = [nn.AvgPool2d(k)], 3
    for c in widths:
        layers.append(cbr(cin, c, pool=True))
        cin = c
    return Head(nn.Sequential(*layers), cin)


def res9(w):
    f = nn.Sequential(
        nn.AvgPool2d(2),                      # 128 -> 64
        cbr(3, w[0], pool=True),              # prep, 64 -> 32
        cbr(w[0], w[1], pool=True),           # 32 -> 16
        Residual(w[1]),
        cbr(w[1], w[2], pool=True),           # 16 -> 8
        cbr(w[2], w[3], pool=True),           # 8 -> 4
        Residual(w[3]))
    return Head(f, w[3])


NETS = {
    "default": default_net,
    "avg64": lambda: avg_stem(2, (32, 64, 128, 256, 256)),
    "avg32": lambda: avg_stem(4, (32, 64, 128, 256)),
    "res9h": lambda: res9((32, 64, 128, 256)),
    "res9w": lambda: res9((48, 96, 192, 384)),
}


def mflop(model, size):
    macs = [0]

    def hook(m, inp, out):
        if isinstance(m, nn.Conv2d):
            k = m.weight[0].numel()
            macs[0] += out.numel() * k
        elif isinstance(m, nn.Linear):
            macs[0] += m.weight.numel()

    hs = [m.register_forward_hook(hook) for m in model.modules()
          if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        model(torch.zeros(1, 3, size, size))
    for h in hs:
        h.remove()
    return 2 * macs[0] / 1e6


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    names = sys.argv[2:] or list(NETS)
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name in names:
        model = NETS[name]().eval()
        path = os.path.join(out, name + ".onnx")
        # PRESERVE (of a model in eval mode): batch-norm stays a BatchNormalization
        # node; EVAL would fold it into the conv before, leaving a net without it.
        torch.onnx.export(model, torch.zeros(1, 3, 128, 128), path, opset_version=13,
                          training=torch.onnx.TrainingMode.PRESERVE,
                          input_names=["image"], output_names=["logits"])
        params = sum(t.numel() for t in model.parameters())
        print("%-8s %9d parameters  %6.0f MFLOP at 128 px  %s"
              % (name, params, mflop(model, 128), path))


if __name__ == "__main__":
    main()
