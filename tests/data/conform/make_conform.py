#!/usr/bin/python3
"""Conformance references: torchvision's families exported to ONNX, with PyTorch's
logits and one training step's gradients beside each, for petal-tui's C checker
(tests/conform.c). Run from the repository root with Debian's python3-torch 1.13 /
torchvision 0.14 (which only /usr/bin/python3 sees):

    /usr/bin/python3 tests/data/conform/make_conform.py          # narrow fixtures, committed here
    /usr/bin/python3 tests/data/conform/make_conform.py --full build/conformance
                                                                   # full width, 224 px (make conformance)

Weights are random and seeded (nothing is downloaded), batch norm statistics measured
so that activations stay of order 1 (randomize below). The narrow nets (64 px, batch
4, 2.6 MB in all) are the same torchvision classes (DenseNet, MobileNetV2,
EfficientNet) built small, or subclasses that only take widths (NarrowVGG,
NarrowResNet below), so the module structure and the export are the same as the full
nets' (224 px, batch 2, about 1.3 GB, VGG-11's classifier most of it; 2 to 10
minutes on 2 shared cores). Each narrow net takes the first of a few seeds for which
PyTorch pins every gradient down (see spread below), so that 1e-3 is a fair test of
each.

Each net NAME gives NAME.onnx and NAME.ref. Two variants of each net with batch norm:
  NAME-folded  the export users get: torch.onnx.export in eval mode folds every
               Conv -> BatchNorm pair into the Conv. So that PyTorch's parameters are
               exactly the file's initializers, the pairs are fused in PyTorch first
               (torch.nn.utils.fusion.fuse_conv_bn_eval); DenseNet's batch norms that
               follow no conv (pre-activation) stay BatchNormalization nodes.
  NAME-bn      every BatchNorm kept as a node (training=PRESERVE, no constant
               folding), as a net exported for fine-tuning is.
VGG-11 has no batch norm: one variant, NAME-folded; so has quirks (narrow set only),
a small net of what exporters write beyond the families' layers (Quirks below).

The training step: every batch norm left in the graph in training mode (batch
statistics), as petal-tui's training forward runs a trainable batch norm; dropout
and stochastic depth off (their modules in eval mode: identity); softmax
cross-entropy summed over the batch, gradients of that sum / N, which is the
trainer's scale (core/pool/rpool.c: dlogits scaled by 1 / update size).
Eval logits: the whole net in eval mode (running statistics).

NAME.ref ("PTREF1" files, all little-endian): b"PTREF1\\n\\0", u32 count, then per
tensor u32 name length, the name, u32 rank, u32 dims[rank], float32 data:
  setup         [N, H, W, classes]
  labels        [N]
  logits        [N, classes]   eval mode
  train_logits  [N, classes]   the training step's forward
  loss          [1]            the step's summed cross-entropy
  grad/INIT     the gradient with respect to ONNX initializer INIT, in its shape
  spread/INIT   [1] PyTorch's own spread on that gradient: max ||g' - g|| / ||g|| over g'
                the same step in float64, in float32 on channels-last tensors (other
                kernels and summation orders), and in float32 with the weights moved by
                up to 4 units in the last place (two seeds)
The input is not stored: both sides compute it (input_nhwc below, conform.c).
"""
import argparse
import copy
import io
import os
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.nn.utils.fusion import fuse_conv_bn_eval
from torchvision.models.densenet import DenseNet
from torchvision.models.efficientnet import EfficientNet, MBConvConfig
from torchvision.models.mobilenetv2 import MobileNetV2
from torchvision.models.resnet import BasicBlock, ResNet
from torchvision.models.vgg import VGG, make_layers
from torchvision.ops.misc import Conv2dNormActivation
from torchvision.ops.stochastic_depth import StochasticDepth

HERE = os.path.dirname(os.path.abspath(__file__))
CLASSES = 10
# tests/conform.h: CF_TOL_GRAD / CF_SPREAD_FACTOR and CF_UNDETERMINED.
SENSITIVE = 5e-4
UNDETERMINED = 0.1


# ---- the input, as tests/conform.c computes it ------------------------------------------

def fmix32(h):
    """MurmurHash3's finaliser on uint32 arrays (wrapping arithmetic)."""
    h = h.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def input_nhwc(n, hw):
    """Element k of the N x H x W x 3 input: (fmix32(k + 1) >> 20) / 1024 - 2, a
    multiple of 1/1024 in [-2, 2), exact in float32."""
    k = np.arange(n * hw * hw * 3, dtype=np.uint32) + np.uint32(1)
    v = ((fmix32(k) >> np.uint32(20)).astype(np.int32) - 2048).astype(np.float32) / 1024.0
    return v.reshape(n, hw, hw, 3)


def labels_of(n):
    return (fmix32(np.arange(n, dtype=np.uint32) + np.uint32(1000)) % CLASSES).astype(np.int64)


# ---- narrow copies of the classes that take no widths ------------------------------------

class NarrowVGG(VGG):
    """VGG with its classifier's widths and pooled size as arguments (VGG's own
    __init__ fixes 512 * 7 * 7 -> 4096 -> 4096); the forward is VGG's."""

    def __init__(self, cfg, pooled, hidden, num_classes):
        nn.Module.__init__(self)
        self.features = make_layers(cfg, batch_norm=False)
        self.avgpool = nn.AdaptiveAvgPool2d((pooled, pooled))
        c = [v for v in cfg if v != "M"][-1]
        self.classifier = nn.Sequential(
            nn.Linear(c * pooled * pooled, hidden), nn.ReLU(True), nn.Dropout(p=0.5),
            nn.Linear(hidden, hidden), nn.ReLU(True), nn.Dropout(p=0.5),
            nn.Linear(hidden, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.05)


class NarrowResNet(ResNet):
    """ResNet whose stem and four stages have the given widths (ResNet's own
    __init__ fixes 64, 128, 256, 512); blocks come from ResNet._make_layer and the
    forward is ResNet's."""

    def __init__(self, block, layers, widths, num_classes):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = widths[0]
        self.dilation = 1
        self.groups = 1
        self.base_width = 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, widths[0], layers[0])
        self.layer2 = self._make_layer(block, widths[1], layers[1], stride=2)
        self.layer3 = self._make_layer(block, widths[2], layers[2], stride=2)
        self.layer4 = self._make_layer(block, widths[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3] * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")


def narrow_mobilenet_v2():
    """torchvision's MobileNetV2 at width 0.25 with narrower stages and fewer
    repeats (every kind of block kept: with and without a residual, strided); its
    last 1x1 conv (1280 wide whatever the width) narrowed to 64 with the same
    Conv2dNormActivation, and the classifier's Linear to match."""
    setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 2, 2], [6, 48, 2, 2], [6, 64, 2, 1],
               [6, 64, 1, 2], [6, 96, 1, 1]]
    m = MobileNetV2(num_classes=CLASSES, width_mult=0.25, inverted_residual_setting=setting)
    cin = m.features[-1][0].in_channels
    m.features[-1] = Conv2dNormActivation(cin, 64, kernel_size=1, norm_layer=nn.BatchNorm2d,
                                          activation_layer=nn.ReLU6)
    m.last_channel = 64
    m.classifier[1] = nn.Linear(64, CLASSES)
    return m


def efficientnet(width, depth):
    """EfficientNet-B0's stages (torchvision's _efficientnet_conf) at a width and
    depth multiplier; 1.0, 1.0 is efficientnet_b0."""
    conf = lambda *a: MBConvConfig(*a, width_mult=width, depth_mult=depth)
    setting = [conf(1, 3, 1, 32, 16, 1), conf(6, 3, 2, 16, 24, 2), conf(6, 5, 2, 24, 40, 2),
               conf(6, 3, 2, 40, 80, 3), conf(6, 5, 1, 80, 112, 3), conf(6, 5, 2, 112, 192, 4),
               conf(6, 3, 1, 192, 320, 1)]
    return EfficientNet(setting, dropout=0.2, stochastic_depth_prob=0.2, num_classes=CLASSES)


class Quirks(nn.Module):
    """What exporters write beyond the families' plain layers: a ZeroPad2d before a
    strided conv (TensorFlow's "same", as a Pad node; exported at opset 10, see
    export()), two convs with equal biases (one initializer, and an Identity of it
    for the second), a flatten of a 4 x 4 map into the classifier."""

    def __init__(self):
        super().__init__()
        self.pad = nn.ZeroPad2d((0, 1, 0, 1))
        self.a = nn.Conv2d(3, 6, 3, stride=2)
        self.b = nn.Conv2d(6, 6, 3, padding=1)
        self.c = nn.Conv2d(6, 6, 1)
        self.pool = nn.AvgPool2d(2)
        self.fc = nn.Linear(6 * 4 * 4, CLASSES)

    def forward(self, x):
        x = torch.relu(self.a(self.pad(x)))
        x = torch.relu(self.b(x)) + self.c(x)
        return self.fc(torch.flatten(self.pool(x), 1))


def quirks():
    net = Quirks()
    with torch.no_grad():
        net.b.bias.uniform_(-0.1, 0.1)
    net.randomize_after = lambda: net.c.bias.data.copy_(net.b.bias.data)
    return net


NO_BN = ("vgg11", "quirks")

NARROW = {  # name: (builder, input size, batch)
    "vgg11": (lambda: NarrowVGG([4, "M", 8, "M", 16, 16, "M", 16, 16, "M", 32, 32, "M"],
                                2, 32, CLASSES), 64, 4),
    "resnet18": (lambda: NarrowResNet(BasicBlock, [1, 1, 1, 1], [8, 12, 16, 24], CLASSES), 64, 4),
    "densenet121": (lambda: DenseNet(growth_rate=6, block_config=(2, 2, 2, 2),
                                     num_init_features=12, bn_size=2, num_classes=CLASSES), 64, 4),
    "mobilenet_v2": (narrow_mobilenet_v2, 64, 4),
    "efficientnet_b0": (lambda: efficientnet(0.125, 0.5), 64, 4),
    "quirks": (quirks, 16, 2),
}

FULL = {
    "vgg11": (lambda: torchvision.models.vgg11(num_classes=CLASSES), 224, 2),
    "resnet18": (lambda: torchvision.models.resnet18(num_classes=CLASSES), 224, 2),
    "densenet121": (lambda: torchvision.models.densenet121(num_classes=CLASSES), 224, 2),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(num_classes=CLASSES), 224, 2),
    "efficientnet_b0": (lambda: efficientnet(1.0, 1.0), 224, 2),
}


# ---- preparing a net -----------------------------------------------------------------------

def dropouts_off(net):
    """Dropout and stochastic depth as identities, the rest left as it is."""
    for m in net.modules():
        if isinstance(m, (nn.Dropout, StochasticDepth)):
            m.eval()


def randomize(net, hw):
    """Seeded random state that keeps activations of order 1 in eval mode, as a
    trained net's are: random batch norm scales and shifts and random biases
    (exporters share one initializer for equal tensors, such as all-zero biases,
    which would blur the names), then the batch norms' running statistics measured
    on random batches (a cumulative average) with those in place, so that each
    normalises what actually reaches it."""
    bns = [m for m in net.modules() if isinstance(m, nn.BatchNorm2d)]
    with torch.no_grad():
        for b in bns:
            b.weight.uniform_(0.5, 1.5)
        for name, p in net.named_parameters():
            if name.endswith("bias"):
                p.uniform_(-0.25, 0.25)
        if hasattr(net, "randomize_after"):
            net.randomize_after()
        for b in bns:
            b.reset_running_stats()
            b.momentum = None
        net.train()
        dropouts_off(net)
        # Uniform in [-2, 2), like the input: a deep random net in eval mode
        # amplifies any difference between the distribution its statistics were
        # measured on and the one it sees (Gaussian inputs here made EfficientNet's
        # logits reach 1e3 on the uniform ones).
        for _ in range(2):
            net(torch.rand(4, 3, hw, hw) * 4.0 - 2.0)
        for b in bns:
            b.momentum = 0.1
    net.eval()


def fuse_pairs(module):
    """Every Conv2d directly followed by a BatchNorm2d among a module's children (in
    torchvision's families that order is also the data flow: checked on the export,
    where no BatchNormalization may follow a Conv) fused into the conv, the batch
    norm replaced by an Identity. Recursive."""
    names = list(module._modules.keys())
    for a, b in zip(names, names[1:]):
        ca, cb = module._modules[a], module._modules[b]
        if isinstance(ca, nn.Conv2d) and isinstance(cb, nn.BatchNorm2d):
            module._modules[a] = fuse_conv_bn_eval(ca, cb)
            module._modules[b] = nn.Identity()
    for child in module._modules.values():
        if child is not None:
            fuse_pairs(child)


def export(net, x, path, keep_bn):
    kw = dict(input_names=["input"], output_names=["logits"])
    if isinstance(net, Quirks):
        # Before opset 11 a Pad's pads are an attribute; from 11 on PyTorch 1.13
        # computes ZeroPad2d's at run time (ConstantOfShape, Slice, Transpose...),
        # which petal-tui does not evaluate. DenseNet's Pads test the input form.
        kw["opset_version"] = 10
    if keep_bn:
        kw.update(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    buf = io.BytesIO()
    torch.onnx.export(net, x, buf, **kw)
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return model


def initializer_of(net, model):
    """PyTorch parameter name -> the ONNX initializer holding it. The exporter keeps
    parameter names, and gives a set of equal tensors one initializer (named after
    the first): a parameter missing by name is found by its value."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    state = net.state_dict()
    for name in inits:
        if name not in state:
            sys.exit(f"initializer {name} is not a PyTorch parameter or buffer: "
                     "the export changed the weights")
    out = {}
    for name, p in net.named_parameters():
        if name in inits:
            out[name] = name
            continue
        v = p.detach().numpy()
        same = [k for k, t in inits.items() if t.shape == v.shape and np.array_equal(t, v)]
        if len(same) != 1:
            sys.exit(f"parameter {name} is in no initializer (or in several)")
        out[name] = same[0]
    return out


def check_folded(model):
    """No BatchNormalization may read a Conv's output in a folded export."""
    producer = {o: n for n in model.graph.node for o in n.output}
    for n in model.graph.node:
        if n.op_type == "BatchNormalization":
            p = producer.get(n.input[0])
            if p is not None and p.op_type == "Conv":
                sys.exit(f"{n.name}: a batch norm after a conv was not fused")


def write_ref(path, tensors):
    with open(path, "wb") as f:
        f.write(b"PTREF1\n\0")
        f.write(struct.pack("<I", len(tensors)))
        for name, a in tensors:
            a = np.ascontiguousarray(a, dtype="<f4")
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)) + nb)
            f.write(struct.pack("<I", a.ndim) + struct.pack("<%dI" % a.ndim, *a.shape))
            f.write(a.tobytes())


def step(net, x, y, where):
    """One training step: batch norm on batch statistics, no dropout, the summed
    cross-entropy, gradients of sum / N per ONNX initializer (float64 arrays)."""
    net.train()
    dropouts_off(net)
    net.zero_grad()
    logits = net(x)
    loss = F.cross_entropy(logits, y, reduction="sum")
    (loss / x.shape[0]).backward()
    grads = {}
    for pname, p in net.named_parameters():
        g = p.grad.detach().numpy().astype(np.float64)
        init = where[pname]
        grads[init] = grads[init] + g if init in grads else g
    return logits.detach().float(), loss, grads


def make(out, name, build, hw, n, variant, seed):
    torch.manual_seed(seed)
    net = build()
    randomize(net, hw)
    if variant == "folded":
        fuse_pairs(net)
    x = torch.from_numpy(input_nhwc(n, hw)).permute(0, 3, 1, 2).contiguous()
    y = torch.from_numpy(labels_of(n))
    with torch.no_grad():
        logits = net(x)
    base = os.path.join(out, f"{name}-{variant}")
    model = export(net, x, base + ".onnx", keep_bn=variant == "bn")
    if variant == "folded":
        check_folded(model)
    where = initializer_of(net, model)

    # PyTorch's own spread on each tensor: how far other computations of the same
    # step land from the reference: in float64; in float32 through other kernels
    # (channels-last memory: other summation orders); and in float32 with every
    # weight moved by up to 4 units in the last place (two seeds), rounding of the
    # size any float32 implementation adds on the way through a deep net. A gradient
    # that a cancellation, or an activation sitting within rounding of a ReLU's kink
    # (one such element moves the last layers' gradients of MobileNetV2 by 1e-3 at
    # 224 px), makes sensitive moves by more than 1e-3 under these, and the checker
    # then holds petal-tui to this spread instead (tests/conform.h).
    # Each made from the untouched net (a step changes its running statistics) and
    # dropped before the next: VGG-11's copies are 0.5 to 1 GB each.
    gen = torch.Generator().manual_seed(seed)

    def moved(src):
        out = copy.deepcopy(src)
        with torch.no_grad():
            for p in out.parameters():
                p.mul_(1.0 + torch.randint(-4, 5, p.shape, generator=gen).float() * 2.0 ** -23)
        return out, x

    others = [lambda src: (copy.deepcopy(src).double(), x.double()),
              lambda src: (copy.deepcopy(src).to(memory_format=torch.channels_last),
                           x.to(memory_format=torch.channels_last)),
              moved, moved]
    untouched = copy.deepcopy(net)
    train_logits, loss, grads = step(net, x, y, where)
    spread = {k: 0.0 for k in grads}
    for make_other in others:
        other, xo = make_other(untouched)
        _, _, go = step(other, xo, y, where)
        del other
        for k, g in grads.items():
            spread[k] = max(spread[k], np.linalg.norm(go[k] - g) / max(np.linalg.norm(g), 1e-300))
        del go

    write_ref(base + ".ref",
              [("setup", np.array([n, hw, hw, CLASSES], np.float32)),
               ("labels", y.numpy().astype(np.float32)),
               ("logits", logits.numpy()),
               ("train_logits", train_logits.numpy()),
               ("loss", np.array([loss.item()], np.float32))] +
              [("grad/" + k, v.astype(np.float32)) for k, v in sorted(grads.items())] +
              [("spread/" + k, np.array([v], np.float32)) for k, v in sorted(spread.items())])
    nparams = sum(p.numel() for p in net.parameters())
    size = os.path.getsize(base + ".onnx") + os.path.getsize(base + ".ref")
    sensitive = sum(1 for v in spread.values() if SENSITIVE < v <= UNDETERMINED)
    print(f"{name}-{variant}: {hw} px, batch {n}, seed {seed}, {nparams} parameters, "
          f"{len(grads)} tensors ({sensitive} sensitive), {size / 1024:.0f} KiB", flush=True)
    return sensitive


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", metavar="DIR", help="full-width nets at 224 px into DIR")
    ap.add_argument("nets", nargs="*", help="only these (vgg11 resnet18 densenet121 "
                    "mobilenet_v2 efficientnet_b0)")
    a = ap.parse_args()
    table = FULL if a.full else NARROW
    out = a.full or HERE
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(2)
    for i, (name, (build, hw, n)) in enumerate(table.items()):
        if a.nets and name not in a.nets:
            continue
        for variant in ("folded",) if name in NO_BN else ("folded", "bn"):
            # The narrow nets, which `make test` holds to 1e-3, are seeded so that no
            # tensor PyTorch determines is sensitive (spread above SENSITIVE: an
            # activation within rounding of a kink); the first of a few seeds with
            # none, else the one with fewest. The full-width nets take the first.
            tries = [100 + i + 1000 * t for t in range(1 if a.full else 6)]
            found = [(make(out, name, build, hw, n, variant, tries[0]), tries[0])]
            for seed in tries[1:]:
                if min(found)[0] == 0:
                    break
                found.append((make(out, name, build, hw, n, variant, seed), seed))
            if min(found)[1] != found[-1][1]:
                make(out, name, build, hw, n, variant, min(found)[1])


if __name__ == "__main__":
    main()
