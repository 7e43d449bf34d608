#!/usr/bin/python3
"""The `small` network of petal-tui, trained in PyTorch on CPU, for a side-by-side
with bench_train: same layers (3x3 conv without bias -> BN(eps 1e-3) -> ReLU -> 2x2
max-pool, with 32/64/128/256 channels, then global average pooling, dropout 0.2 and
a dense layer), same per-thread batch (16), Adam, the loss summed and divided by the
global batch. Threads = replicas: PyTorch gets T intra-op threads for a global batch
of 16 x T. Prints images/s for both memory formats and keeps the better one."""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_serve as ts  # noqa: E402

CLASSES = 5
BATCH = 16


class Small(nn.Module):
    def __init__(self, classes, dropout=0.2):
        super().__init__()
        layers, cin = [], 3
        for cout in (32, 64, 128, 256):
            layers += [nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                       nn.BatchNorm2d(cout, eps=1e-3, momentum=0.01),
                       nn.ReLU(inplace=True), nn.MaxPool2d(2)]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(256, classes)

    def forward(self, x):
        x = self.features(x * 2 - 1)
        x = x.mean((2, 3))
        return self.fc(self.drop(x))


def rate(size, threads, channels_last, min_s):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = Small(CLASSES)
    n = BATCH * threads
    x = torch.rand(n, 3, size, size)
    y = torch.randint(0, CLASSES, (n,))
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    model.train()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y) / n
        loss.backward()
        opt.step()

    return ts.timed(step, n, min_s)[0]


def main():
    min_s = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
    print("== torch_small  torch %s  mkldnn(oneDNN) %s  threads available %d"
          % (torch.__version__, torch.backends.mkldnn.is_available(), torch.get_num_threads()))
    print("%-8s %5s %8s %14s %14s %8s" % ("model", "size", "threads", "NCHW img/s",
                                          "NHWC img/s", "best"))
    for size in (128, 192):
        for threads in (1, 2):
            a = rate(size, threads, False, min_s)
            b = rate(size, threads, True, min_s)
            print("%-8s %5d %8d %14.1f %14.1f %8.1f" % ("small", size, threads, a, b, max(a, b)))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
