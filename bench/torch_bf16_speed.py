#!/usr/bin/python3
"""PyTorch's side of bench_bf16: training img/s on CPU in float32 and with bf16
autocast (torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's mixed precision:
oneDNN's bf16 kernels where the CPU has them), each in NCHW and channels-last, the
better layout kept, so the peer is at its best settings.

Nets: "small", petal-tui's default `small` at 128 px (widths a,32,64,128,256,256: a
2x2 average pool, then 3x3 conv without bias -> BN(eps 1e-3) -> ReLU -> 2x2 max-pool
per width, global average pooling, dropout 0.2, dense); "mnv2", torchvision's
MobileNetV2 x1.0 with batch norm (petal-tui's built-in mobilenetv2), ImageNet's
normalisation in the forward. Training as petal-tui's trainer does it: forward,
cross-entropy averaged over the batch, backward, Adam; 16 images per thread (threads =
petal-tui's replicas). Random weights and synthetic batches: only the speed counts.

  torch_bf16_speed.py --serve   for bench_bf16, which interleaves these measurements
                                with its own: reads lines "NET SIZE THREADS PREC MIN_S"
                                (PREC fp32 or bf16) and answers each with one line
                                "ok IMG_PER_S LAYOUT" (or "error TEXT")
"""
import os
import sys

import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_serve as ts  # noqa: E402

CLASSES = 5
BATCH = 16
WARMUP = 3
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        layers, cin = [nn.AvgPool2d(2)], 3
        for cout in (32, 64, 128, 256, 256):
            layers += [nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                       nn.BatchNorm2d(cout, eps=1e-3, momentum=0.01), nn.ReLU(inplace=True),
                       nn.MaxPool2d(2)]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(cin, CLASSES)

    def forward(self, x):
        x = self.features(x * 2 - 1)
        return self.fc(self.drop(x.mean((2, 3))))


class Clamp6(nn.Module):
    """ReLU6 as a clamp: PyTorch 1.13's ReLU6 (hardtanh) has no bf16 backward on CPU
    ("hardshrink_backward_cpu" not implemented for 'BFloat16'); the clamp is the same
    function in both precisions."""

    def forward(self, x):
        return x.clamp(0.0, 6.0)


def swap_relu6(module):
    for name, child in module.named_children():
        if isinstance(child, nn.ReLU6):
            setattr(module, name, Clamp6())
        else:
            swap_relu6(child)


class Mnv2(nn.Module):
    def __init__(self, prec):
        super().__init__()
        self.body = torchvision.models.mobilenet_v2(num_classes=CLASSES)
        if prec == "bf16":  # fp32 keeps ReLU6: faster there than the clamp (2x at 128 px)
            swap_relu6(self.body)
        self.register_buffer("mean", torch.tensor(MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(STD).view(1, 3, 1, 1))

    def forward(self, x):
        return self.body((x - self.mean) / self.std)


def rate(net, size, threads, prec, layout, min_s):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = Small() if net == "small" else Mnv2(prec)
    n = BATCH * threads
    x = torch.rand(n, 3, size, size)
    y = torch.randint(0, CLASSES, (n,))
    if layout == "nhwc":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    model.train()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=prec == "bf16"):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return ts.timed(step, n, min_s, WARMUP)[0]


def best(net, size, threads, prec, min_s):
    a = rate(net, size, threads, prec, "nchw", min_s)
    b = rate(net, size, threads, prec, "nhwc", min_s)
    return (a, "nchw") if a >= b else (b, "nhwc")


def answer(parts):
    net, size, threads, prec, min_s = parts
    return "%.3f %s" % best(net, int(size), int(threads), prec, float(min_s))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        ts.serve(answer)
    else:
        print(ts.header())
        for net, size in (("small", 128), ("mnv2", 128), ("mnv2", 224)):
            for prec in ("fp32", "bf16"):
                r, layout = best(net, size, 2, prec, 3.0)
                print("%-6s %4d %s %8.1f img/s (%s)" % (net, size, prec, r, layout), flush=True)
