#!/usr/bin/python3
"""PyTorch's side of bench_finetune: training img/s of MobileNetV2 on CPU, on the
graph petal-tui trains when it imports the ONNX zoo's mobilenetv2-12-int8.onnx.

That graph is torchvision's MobileNetV2 x1.0 with every batch-norm folded into the
conv before it (conv with bias, ReLU6 clamps, no BN) and a new head of global
average pooling, dropout 0.2 and a dense layer for 5 classes. The peer ("fused") is
torchvision.models.mobilenet_v2 with each Conv+BN pair replaced by
torch.nn.utils.fusion.fuse_conv_bn_eval's conv; "bn" is the unfused torchvision
model, the peer of petal-tui's built-in mobilenetv2. Input normalisation with
ImageNet's mean and std is part of the forward, as petal-tui's affine input layer.

Training as petal-tui's trainer does it: forward, softmax cross-entropy summed and
divided by the batch, backward, Adam (lr 1e-3); 16 images per thread (threads =
petal-tui's replicas): batch 16 x T with torch.set_num_threads(T). Random weights
and synthetic batches: only the speed is measured. Warm-up steps run before timing.

  torch_finetune_speed.py [min_s]   a table: both models, 128 and 192 px, 1 and 2
                                    threads, NCHW and channels-last, the better kept
  torch_finetune_speed.py --serve   for bench_finetune, which interleaves these
                                    measurements with its own: reads lines
                                    "MODEL SIZE THREADS LAYOUT MIN_S" (MODEL fused or
                                    bn, LAYOUT nchw or nhwc) and answers each with one
                                    line "ok IMG_PER_S IMG_PER_CPU_S" (or "error TEXT")
"""
import os
import sys

import torch
import torch.nn as nn
import torchvision
from torch.nn.utils.fusion import fuse_conv_bn_eval

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_serve as ts  # noqa: E402

CLASSES = 5
BATCH = 16
WARMUP = 3
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def fold_bn(module):
    """Replaces every Conv2d directly followed by a BatchNorm2d (in the same
    Sequential) by the conv with the BN folded in, and the BN by Identity."""
    for child in module.children():
        fold_bn(child)
    if isinstance(module, nn.Sequential):
        for i in range(len(module) - 1):
            conv, bn = module[i], module[i + 1]
            if isinstance(conv, nn.Conv2d) and isinstance(bn, nn.BatchNorm2d):
                module[i] = fuse_conv_bn_eval(conv.eval(), bn.eval())
                module[i + 1] = nn.Identity()


class Net(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.body = torchvision.models.mobilenet_v2(num_classes=CLASSES)
        if kind == "fused":
            self.body.eval()
            fold_bn(self.body)
        elif kind != "bn":
            raise ValueError("model must be fused or bn, not %r" % kind)
        self.register_buffer("mean", torch.tensor(MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(STD).view(1, 3, 1, 1))

    def forward(self, x):
        return self.body((x - self.mean) / self.std)


def rate(kind, size, threads, layout, min_s):
    """Images/s of training steps: by the wall clock, and per CPU-second of this
    process (all its threads; on one thread that is the figure other processes on
    the machine disturb least)."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = Net(kind)
    n = BATCH * threads
    x = torch.rand(n, 3, size, size)
    y = torch.randint(0, CLASSES, (n,))
    if layout == "nhwc":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    elif layout != "nchw":
        raise ValueError("layout must be nchw or nhwc, not %r" % layout)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    model.train()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y) / n
        loss.backward()
        opt.step()

    return ts.timed(step, n, min_s, WARMUP)


def answer(parts):
    kind, size, threads, layout, min_s = parts
    return "%.3f %.3f" % rate(kind, int(size), int(threads), layout, float(min_s))


def table(min_s):
    print("== torch_finetune_speed  " + ts.header())
    print("%-6s %5s %8s %12s %12s %8s" % ("model", "size", "threads", "NCHW img/s",
                                          "NHWC img/s", "best"))
    for kind in ("fused", "bn"):
        for size in (128, 192):
            for threads in (1, 2):
                a = rate(kind, size, threads, "nchw", min_s)[0]
                b = rate(kind, size, threads, "nhwc", min_s)[0]
                print("%-6s %5d %8d %12.1f %12.1f %8.1f" % (kind, size, threads, a, b, max(a, b)))
                sys.stdout.flush()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        ts.serve(answer)
    else:
        table(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0)


if __name__ == "__main__":
    main()
