#!/usr/bin/python3
"""Training petal-tui's VGG-style `small` net from scratch in PyTorch, for the
learning side-by-side of bench/history/RESULTS-128px-photos-2026-11-24-to-25.md ("Learning from scratch beside PyTorch").

The same net as `petal-tui --model small --widths W`: the input's x * 2 - 1, then per
width a 3x3 conv without bias, batch-norm (epsilon 1e-3, Keras momentum 0.99 =
PyTorch's 0.01), ReLU and a 2x2 max-pool (a width written Cs: a stride-2 conv with
Keras's "same" padding and no pool; a: a 2x2 average pool alone); global average
pooling, dropout, dense.
The same initialisation (--init he: petal-tui's, truncated He-normal convs and
Glorot-uniform dense; --init torch: PyTorch's defaults, which petal-tui's
`--init torch` reproduces). The same batch-norm statistics: petal-tui normalises each
replica's 16 images on their own and, once per update, moves the running statistics
by the replicas' average; --replicas 2 does the same here (--replicas 1: over the
whole batch). The same Adam (epsilon 1e-7), schedule, shards, split and augmentation
(flip and a square random resized crop); the loss is the mean over the global batch.

  /usr/bin/python3 bench/torch_scratch.py --data photos --size 128 --epochs 10 \\
      --augment none --lr 1e-3 --seed 1

The petal-tui command with the same recipe is printed first, to run beside it.
"""
import argparse
import copy
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as tc  # noqa: E402


class ReplicaBatchNorm(nn.Module):
    """Batch-norm whose training statistics come from each replica's share of the
    batch, and whose running statistics move once per forward by the replicas'
    average (mean, and variance with Bessel's correction), as petal-tui's do; the
    first 1 / momentum updates with equal weight, as petal-tui's fresh nets do
    (nn_model_update_bn: momentum max(momentum, 1 / update) in PyTorch's terms)."""

    def __init__(self, c, replicas, eps=1e-3, momentum=0.01):
        super().__init__()
        self.replicas, self.eps, self.momentum = replicas, eps, momentum
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.register_buffer("running_mean", torch.zeros(c))
        self.register_buffer("running_var", torch.ones(c))
        self.updates = 0

    def forward(self, x):
        if not self.training:
            return F.batch_norm(x, self.running_mean, self.running_var, self.weight,
                                self.bias, False, 0.0, self.eps)
        parts = x.chunk(self.replicas) if x.shape[0] % self.replicas == 0 else (x,)
        with torch.no_grad():
            n = parts[0].numel() // parts[0].shape[1]
            mean = torch.stack([p.mean((0, 2, 3)) for p in parts]).mean(0)
            var = torch.stack([p.var((0, 2, 3), unbiased=False) for p in parts]).mean(0)
            self.updates += 1
            mom = max(self.momentum, 1.0 / self.updates)
            self.running_mean.mul_(1 - mom).add_(mom * mean)
            self.running_var.mul_(1 - mom).add_(mom * var * n / max(n - 1, 1))
        return torch.cat([F.batch_norm(p, None, None, self.weight, self.bias, True, 0.0,
                                       self.eps) for p in parts])


def conv3x3(cin, cout, strided):
    """A 3x3 conv without bias, as petal-tui's: at stride 2 with its (Keras's) "same"
    padding, the extra row and column at the bottom and right, not one on each side."""
    if strided:
        return [nn.ZeroPad2d((0, 1, 0, 1)),
                nn.Conv2d(cin, cout, 3, stride=2, padding=0, bias=False)]
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False)]


class Residual(nn.Module):
    """petal-tui's `--residual yes` block: ResNet's basic block (He et al. 2016), two 3x3
    convs with batch-norm and the block's input added before the last ReLU; a 1x1
    conv with batch-norm on the shortcut where the channels or the stride change."""

    def __init__(self, cin, cout, strided, bn):
        super().__init__()
        self.conv1 = nn.Sequential(*conv3x3(cin, cout, strided))
        self.bn1, self.bn2 = bn(cout), bn(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.short = None
        if strided or cin != cout:
            self.short = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=2 if strided else 1, bias=False), bn(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (x if self.short is None else self.short(x)))


class Small(nn.Module):
    def __init__(self, widths, classes, dropout, replicas, init, bn_momentum, convs=1,
                 residual=False):
        super().__init__()
        layers, cin = [], 3

        def bn(c):
            return ReplicaBatchNorm(c, replicas, momentum=1 - bn_momentum)
        for width in widths:
            if width == "a":  # an average-pool block: no conv, the channels pass through
                layers.append(nn.AvgPool2d(2))
                continue
            strided = width.endswith("s")
            cout = int(width.rstrip("s"))
            if residual:
                layers.append(Residual(cin, cout, strided, bn))
            else:
                for k in range(convs):
                    layers += conv3x3(cin if k == 0 else cout, cout, strided and k == 0)
                    layers += [bn(cout), nn.ReLU()]
            cin = cout
            if not strided:
                layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(cin, classes)
        if init == "he":
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    fan_in = m.weight[0].numel()
                    # Keras' he_normal: truncated at 2 sigma, the std corrected for it
                    std = math.sqrt(2.0 / fan_in) / 0.87962566103423978
                    nn.init.trunc_normal_(m.weight, 0.0, std, -2 * std, 2 * std)
            nn.init.xavier_uniform_(self.fc.weight)
            nn.init.zeros_(self.fc.bias)

    def forward(self, x):
        x = self.features(x * 2 - 1)
        return self.fc(self.drop(x.mean((2, 3))))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="a `petal-tui shards` folder")
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--widths", default="32,64,128,256",
                   help="channels per block, as petal-tui's --widths (16s: a strided block, "
                        "a: an average pool)")
    p.add_argument("--convs", type=int, default=1, choices=(1, 2),
                   help="3x3 convs per block, as petal-tui's --convs")
    p.add_argument("--residual", action="store_true",
                   help="each block a ResNet basic block, as petal-tui's --residual yes")
    p.add_argument("--init", default="he", choices=("he", "torch"))
    p.add_argument("--bn-momentum", type=float, default=0.99,
                   help="Keras's convention, as petal-tui's (PyTorch's momentum is 1 - M)")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=None, help="a fixed learning rate")
    p.add_argument("--lr-start", type=float, default=1e-4)
    p.add_argument("--lr-max", type=float, default=2e-3)
    p.add_argument("--lr-end", type=float, default=1e-4)
    p.add_argument("--warmup", type=float, default=0.1)
    p.add_argument("--schedule", default="exp", choices=("cosine", "exp", "linear"))
    p.add_argument("--augment", default="flip+crop", choices=("none", "flip", "flip+crop"))
    p.add_argument("--crop-scale", type=float, default=0.6)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--ema", type=float, default=0.99,
                   help="validate a moving average of the weights and BN statistics, decay "
                        "min(EMA, (1+t)/(10+t)) after update t, as petal-tui's --ema (0: off)")
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument("--weight-decay", type=float, default=0.0, help="decoupled (AdamW)")
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--batch-per-replica", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--bf16", action="store_true",
                   help="mixed precision: the forward under torch.autocast('cpu', bfloat16), "
                        "the loss in float32; petal-tui's side gets --precision bf16")
    tc.add_distill_args(p)
    p.add_argument("--print-command", action="store_true",
                   help="print the petal-tui command of this recipe and stop")
    a = p.parse_args()
    if a.lr is not None:
        a.lr_start = a.lr_max = a.lr_end = a.lr
    widths = a.widths.split(",")
    flip = 0.0 if a.augment == "none" else 0.5
    crop = a.crop_scale if a.augment == "flip+crop" else 1.0
    batch = a.replicas * a.batch_per_replica

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    aug = {"none": "none", "flip": "flip:0.5",
           "flip+crop": "flip:0.5,crop:1:scale=%g:ratio=1:interp=bilinear" % crop}[a.augment]
    print("petal-tui --headless --data %s --model small --widths %s --convs %d --init %s --bn-momentum %g "
          "--image-size %d "
          "--epochs %d --replicas %d --batch-per-replica %d --lr-start %g --lr-max %g "
          "--lr-end %g --warmup %g --schedule %s --dropout %g --label-smoothing %g "
          "--weight-decay %g --ema %g --augment %s --seed %d%s"
          % (a.data, a.widths, a.convs, a.init, a.bn_momentum, a.size, a.epochs, a.replicas, a.batch_per_replica,
             a.lr_start, a.lr_max, a.lr_end, a.warmup, a.schedule, a.dropout,
             a.label_smoothing, a.weight_decay, a.ema, aug, a.seed,
             " --residual yes" if a.residual else "")
          + " --precision %s" % ("bf16" if a.bf16 else "fp32"), flush=True)
    if a.teacher_probs:
        print("  (petal-tui's side: add --teacher %s --distill-t %g --distill-alpha %g)"
              % (a.teacher, a.distill_t, a.distill_alpha), flush=True)
    if a.print_command:
        return
    keys = []
    xtr, ytr = tc.load_split(a.data, "train", keys)
    xva, yva = tc.load_split(a.data, "val")
    classes = int(max(ytr.max(), yva.max())) + 1
    soft = tc.distill_soft(a, keys, ytr, classes)
    model = Small(widths, classes, a.dropout, a.replicas, a.init, a.bn_momentum, a.convs,
                  a.residual)
    print("torch %s, %d threads; %d train / %d val images, %d classes; %d parameters"
          % (torch.__version__, a.threads, len(ytr), len(yva), classes,
             sum(t.numel() for t in model.parameters())), flush=True)

    # petal-tui decays conv and dense weights, not biases or batch-norm's gamma and beta
    decay = [m.weight for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    other = [t for t in model.parameters() if all(t is not d for d in decay)]
    opt = torch.optim.AdamW([{"params": decay}, {"params": other, "weight_decay": 0.0}],
                            eps=1e-7, weight_decay=a.weight_decay)
    per_epoch = len(ytr) // batch
    sch = tc.Schedule(a.schedule, a.lr_start, a.lr_max, a.lr_end, a.warmup, per_epoch * a.epochs)
    xva_in = tc.plain(xva, a.size, imagenet=False)
    # The average covers parameters and BN running statistics, updated after each
    # optimizer step (and after the step's BN update), as petal-tui does.
    avg = copy.deepcopy(model) if a.ema > 0 else None
    pairs = ([(x, y) for x, y in zip(avg.state_dict().values(), model.state_dict().values())
              if x.is_floating_point()] if avg is not None else [])
    step, total_s = 0, 0.0
    for epoch in range(a.epochs):
        t = time.time()
        model.train()
        order = torch.randperm(len(ytr), generator=gen)
        loss_sum, correct, seen = 0.0, 0, 0
        for u in range(per_epoch):
            idx = order[u * batch:(u + 1) * batch]
            x = tc.augment(xtr[idx], a.size, gen, flip, crop, imagenet=False)
            y = ytr[idx]
            for g in opt.param_groups:
                g["lr"] = sch(step)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
                logits = model(x)
            logits = logits.float()
            if soft is None:
                loss = F.cross_entropy(logits, y, label_smoothing=a.label_smoothing)
            else:
                ce = F.cross_entropy(logits, y, label_smoothing=a.label_smoothing,
                                     reduction="none")
                loss = tc.distill_loss(logits, soft[idx], a.distill_t, a.distill_alpha, ce)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            if avg is not None:
                d = min(a.ema, (1.0 + step) / (10.0 + step))
                with torch.no_grad():
                    for x_avg, x_live in pairs:
                        x_avg.mul_(d).add_(x_live, alpha=1.0 - d)
            loss_sum += float(loss) * len(y)
            correct += int((logits.argmax(1) == y).sum())
            seen += len(y)
        vloss, vacc, vf1 = tc.validate(avg if avg is not None else model, xva_in, yva, classes,
                                      a.bf16)
        secs = time.time() - t
        total_s += secs
        print("epoch %d/%d - %.1fs - loss %.4f - acc %.4f - val_loss %.4f - val_acc %.4f - "
              "val_f1 %.4f" % (epoch + 1, a.epochs, secs, loss_sum / seen, correct / seen, vloss,
                               vacc, vf1), flush=True)
    print("trained in %.0f s" % total_s)


if __name__ == "__main__":
    main()
