#!/usr/bin/python3
"""Fine-tuning an ONNX backbone in PyTorch with petal-tui's recipe: the ONNX zoo's int8
MobileNetV2 for the side-by-side of bench/history/RESULTS-128px-photos-2026-11-24-to-25.md ("Fine-tuning beside PyTorch"), or
a float graph with batch-norm such as the Keras MobileNetV2
(mobilenetv2-1.0-tfslim-float-notop.onnx, "Fine-tuning the float Keras backbone beside
PyTorch"; bench/torch_onnx.py builds it, `--input-norm tf`). Same
shards (a `petal-tui shards` folder), same net (the int8 one dequantized by
bench/torch_common.py, a float one built node by node by bench/torch_onnx.py),
same new head (dropout + dense, Glorot uniform), same schedule per update, same
Adam (eps 1e-7), same two phases (the head alone for --freeze-epochs, then
everything with the backbone's learning rate scaled), same augmentation (flip and
a square random resized crop), the loss averaged over the global batch, the
validation on a moving average of the weights and BN statistics (--ema, petal-tui's
default 0.99). A float graph's batch-norm trains as petal-tui's does: each replica's
slice of the batch (--replicas) normalised on its own statistics, the running ones
moving once per update by the node's momentum (Keras's MobileNetV2: 0.999).

  /usr/bin/python3 bench/torch_finetune.py --data photos --size 224 --epochs 8 \\
      --freeze-epochs 1 --lr-start 1e-4 --lr-max 1e-3 --lr-end 1e-5 --warmup 0.05
  /usr/bin/python3 bench/torch_finetune.py --data photos --size 224 --epochs 10 \
      --model ../shared/data/weights/mobilenetv2-1.0-tfslim-float-notop.onnx --input-norm tf \
      --freeze-epochs 1 --label-smoothing 0.1 --batch 16 --channels-last 1

The petal-tui command with the same recipe is printed first, to run beside it.
"""
import argparse
import copy
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as tc  # noqa: E402
import torch_onnx  # noqa: E402


def is_int8(path):
    import onnx
    return any(n.op_type == "QLinearConv" for n in onnx.load(path).graph.node)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="a `petal-tui shards` folder")
    p.add_argument("--model", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "shared", "data", "weights",
                                                   "mobilenetv2-12-int8.onnx"))
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--freeze-epochs", type=int, default=1)
    p.add_argument("--backbone-lr-scale", type=float, default=0.1)
    p.add_argument("--lr-start", type=float, default=1e-4)
    p.add_argument("--lr-max", type=float, default=1e-3)
    p.add_argument("--lr-end", type=float, default=1e-5)
    p.add_argument("--warmup", type=float, default=0.05)
    p.add_argument("--schedule", default="cosine", choices=("cosine", "exp", "linear"))
    p.add_argument("--crop-scale", type=float, default=0.6, help="1 = no crop")
    p.add_argument("--flip", type=float, default=0.5)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument("--mixup", type=float, default=0.0,
                   help="share of examples mixed with a partner (petal-tui's mixup:P)")
    p.add_argument("--mixup-alpha", type=float, default=0.2)
    p.add_argument("--weight-decay", type=float, default=0.0, help="decoupled (AdamW)")
    p.add_argument("--batch", type=int, default=32, help="global batch (petal-tui: 2 x 16)")
    p.add_argument("--replicas", type=int, default=2,
                   help="petal-tui's replicas: batch-norm statistics per batch / replicas")
    p.add_argument("--input-norm", default="imagenet", choices=tc.NORMS,
                   help="the pixels the backbone takes (petal-tui's --input-norm)")
    p.add_argument("--bn-momentum", type=float, default=None,
                   help="a float graph's batch-norm momentum (default: each node's own)")
    p.add_argument("--ema", type=float, default=0.99,
                   help="validate on the moving average of the weights, decay "
                        "min(EMA, (1+t)/(10+t)) after update t, as petal-tui's --ema (0: off)")
    p.add_argument("--backbone-bn", default="train", choices=("train", "frozen"),
                   help="a float backbone's batch-norm: trained, or kept as imported")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--channels-last", type=int, default=0)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--bf16", action="store_true",
                   help="mixed precision: the forward under torch.autocast('cpu', bfloat16), "
                        "the loss in float32; petal-tui's side gets --precision bf16")
    tc.add_distill_args(p)
    p.add_argument("--print-command", action="store_true",
                   help="print the petal-tui command with the same recipe and stop")
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    print("petal-tui --headless --data %s --model %s --image-size %d --epochs %d "
          "--freeze-epochs %d --backbone-lr-scale %g --lr-start %g --lr-max %g --lr-end %g "
          "--warmup %g --schedule %s --dropout %g --label-smoothing %g --weight-decay %g "
          "--input-norm %s --ema %g --batch-per-replica %d --seed %d "
          "--augment flip:%g,crop:1:scale=%g:ratio=1:interp=bilinear%s"
          % (a.data, a.model, a.size, a.epochs, a.freeze_epochs, a.backbone_lr_scale,
             a.lr_start, a.lr_max, a.lr_end, a.warmup, a.schedule, a.dropout,
             a.label_smoothing, a.weight_decay, a.input_norm, a.ema, a.batch // a.replicas,
             a.seed, a.flip, a.crop_scale,
             ",mixup:%g:alpha=%g" % (a.mixup, a.mixup_alpha) if a.mixup > 0 else "")
          + (" --backbone-bn frozen" if a.backbone_bn == "frozen" else "")
          + " --precision %s" % ("bf16" if a.bf16 else "fp32"), flush=True)
    if a.teacher_probs:
        print("  (petal-tui's side: add --teacher %s --distill-t %g --distill-alpha %g)"
              % (a.teacher, a.distill_t, a.distill_alpha), flush=True)
    if a.print_command:
        return
    t0 = time.time()
    keys = []
    xtr, ytr = tc.load_split(a.data, "train", keys)
    xva, yva = tc.load_split(a.data, "val")
    classes = int(max(ytr.max(), yva.max())) + 1
    soft = tc.distill_soft(a, keys, ytr, classes)
    if is_int8(a.model):
        model = tc.ZooMobileNetV2(a.model, classes, a.dropout)
    else:
        model = torch_onnx.OnnxBackbone(a.model, classes, a.dropout, a.bn_momentum,
                                        a.batch // a.replicas, a.backbone_bn == "frozen")
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    print("torch %s, %d threads, %s; %d train / %d val images, %d classes; %d parameters; "
          "data + import %.1f s"
          % (torch.__version__, a.threads, "channels_last" if a.channels_last else "NCHW",
             len(ytr), len(yva), classes, sum(w.numel() for w in model.parameters()),
             time.time() - t0), flush=True)

    backbone = model.backbone_parameters()
    head = list(model.fc.parameters())
    # petal-tui's decoupled decay is Adam's update plus lr * wd * w: AdamW's.
    opt = torch.optim.AdamW([{"params": backbone}, {"params": head}], eps=1e-7,
                            weight_decay=a.weight_decay)
    per_epoch = len(ytr) // a.batch
    sch = tc.Schedule(a.schedule, a.lr_start, a.lr_max, a.lr_end, a.warmup, per_epoch * a.epochs)
    xva_in = tc.normalise(tc.plain(xva, a.size, imagenet=False),
                          a.input_norm).contiguous(memory_format=fmt)
    # The average covers parameters and BN running statistics, updated after each
    # optimizer step and the step's BN update, as petal-tui does (core/train/ema.h).
    avg = copy.deepcopy(model) if a.ema > 0 else None
    pairs = ([(x, y) for x, y in zip(avg.state_dict().values(), model.state_dict().values())
              if x.is_floating_point()] if avg is not None else [])
    step, total_s = 0, 0.0
    for epoch in range(a.epochs):
        frozen = epoch < a.freeze_epochs
        if hasattr(model, "set_frozen"):
            model.set_frozen(frozen)  # and its batch-norm on the running statistics
        else:
            for w in backbone:
                w.requires_grad_(not frozen)
        t = time.time()
        model.train()
        order = torch.randperm(len(ytr), generator=gen)
        loss_sum, correct, seen = 0.0, 0, 0
        for u in range(per_epoch):
            idx = order[u * a.batch:(u + 1) * a.batch]
            x = tc.augment(xtr[idx], a.size, gen, a.flip, a.crop_scale, imagenet=False)
            x = tc.normalise(x, a.input_norm).contiguous(memory_format=fmt)
            y = ytr[idx]
            partner = []
            y2, own = tc.mixup(x, y, gen, a.mixup, a.mixup_alpha, partner)
            lr = sch(step)
            opt.param_groups[0]["lr"] = lr * a.backbone_lr_scale
            opt.param_groups[1]["lr"] = lr
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
                logits = model(x)
            logits = logits.float()
            ce = F.cross_entropy(logits, y, label_smoothing=a.label_smoothing, reduction="none")
            ce2 = F.cross_entropy(logits, y2, label_smoothing=a.label_smoothing, reduction="none")
            if soft is None:
                loss = (own * ce + (1 - own) * ce2).mean()
            else:
                # the teacher's targets mixed as the images were (petal-tui's cached view)
                ta, tb = soft[idx], soft[idx[partner]]
                o = own.double().unsqueeze(1)
                loss = tc.distill_loss(logits, o * ta + (1 - o) * tb, a.distill_t,
                                       a.distill_alpha, own * ce + (1 - own) * ce2)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if hasattr(model, "update_bn"):
                model.update_bn()
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
        print("epoch %d/%d%s - %.1fs - loss %.4f - acc %.4f - val_loss %.4f - val_acc %.4f - "
              "val_f1 %.4f" % (epoch + 1, a.epochs, " (head only)" if frozen else "", secs,
                               loss_sum / seen, correct / seen, vloss,
                               vacc, vf1), flush=True)
    print("trained in %.0f s" % total_s)


if __name__ == "__main__":
    main()
