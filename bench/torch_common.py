"""What petal-tui's PyTorch side-by-sides share (Debian's python3-torch, run with
/usr/bin/python3): the shards petal-tui wrote, read without TensorFlow (TFRecord
framing and tf.train.Example decoded here), petal-tui's learning-rate schedule,
its augmentation recipe (flip + random resized crop), macro F1, and the ONNX
zoo's int8 MobileNetV2 dequantized into a trainable float net the way petal-tui's
importer does it (core/nn/nn_import.h), written again here independently."""
import glob
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.io import decode_jpeg
import torchvision.transforms.functional as TF


# --- data --------------------------------------------------------------------------

def _varint(b, i):
    v, shift = 0, 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def _fields(b):
    """The (field number, wire type, value) of a protobuf message's top level."""
    i, out = 0, []
    while i < len(b):
        key, i = _varint(b, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = _varint(b, i)
        elif w == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        else:
            raise ValueError("wire type %d" % w)
        out.append((f, w, v))
    return out


def parse_example(b):
    """tf.train.Example -> {key: bytes | [int] | [float]}."""
    feats = {}
    for f, _, features in _fields(b):
        if f != 1:
            continue
        for g, _, entry in _fields(features):
            if g != 1:
                continue
            key, value = None, None
            for h, _, v in _fields(entry):
                if h == 1:
                    key = v.decode()
                elif h == 2:
                    value = v
            for kind, _, lst in _fields(value or b""):
                items = _fields(lst)
                if kind == 1:
                    feats[key] = items[0][2] if items else b""
                elif kind == 3:
                    vals = []
                    for _, w, v in items:
                        if w == 2:  # packed
                            j = 0
                            while j < len(v):
                                x, j = _varint(v, j)
                                vals.append(x)
                        else:
                            vals.append(v)
                    feats[key] = vals
                elif kind == 2:
                    vals = []
                    for _, w, v in items:
                        vals += list(struct.unpack("<%df" % (len(v) // 4), v))
                    feats[key] = vals
    return feats


def read_tfrecords(path):
    """Payloads of one TFRecord file (length, its CRC, data, its CRC; CRCs not
    checked here: petal-tui wrote and checked these files)."""
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i < len(data):
        (n,) = struct.unpack_from("<Q", data, i)
        yield data[i + 12:i + 12 + n]
        i += 12 + n + 4


def load_split(shards, split, keys=None):
    """All images of a split of a `petal-tui shards` folder, decoded: a uint8
    tensor N x 3 x H x W and the labels, in file order. keys (a list) gets each
    image's (shard file name, record index in it), the key of teacher_probs.csv."""
    files = sorted(glob.glob(os.path.join(shards, "tfrecords-jpeg-*", split, "*.tfrec")))
    if not files:
        raise SystemExit("no %s shards under %s" % (split, shards))
    images, labels = [], []
    for path in files:
        for r, rec in enumerate(read_tfrecords(path)):
            ex = parse_example(rec)
            img = decode_jpeg(torch.frombuffer(bytearray(ex["image"]), dtype=torch.uint8))
            images.append(img)
            labels.append(ex["class"][0])
            if keys is not None:
                keys.append((os.path.basename(path), r))
    return torch.stack(images), torch.tensor(labels)


# --- distillation (petal-tui's --teacher) ---------------------------------------------

def add_distill_args(p):
    """The twins' distillation options (petal-tui's --teacher side)."""
    p.add_argument("--teacher-probs", default=None,
                   help="distil: a distilled petal-tui run's teacher_probs.csv (the teacher's "
                        "probabilities of every training image), the loss then petal-tui's "
                        "--teacher loss: alpha * T^2 * KL(teacher_T || student_T) + (1 - alpha) "
                        "* cross-entropy")
    p.add_argument("--teacher", default="TEACHER",
                   help="the teacher petal-tui's printed command names (run, .onnx or ensemble)")
    p.add_argument("--distill-t", type=float, default=4.0)
    p.add_argument("--distill-alpha", type=float, default=0.9)


def distill_soft(a, keys, labels, classes):
    """The training images' tempered teacher targets (N x classes, float64) from
    --teacher-probs, or None without it."""
    if not a.teacher_probs:
        return None
    return distill_targets(teacher_probs(a.teacher_probs, keys, labels, classes), a.distill_t)


def teacher_probs(path, keys, labels, classes):
    """A distilled run's teacher_probs.csv (header shard_file,record,label,<classes>;
    one row per training record: the teacher's probabilities at temperature 1) as an
    N x classes tensor in the order of keys (load_split's). Every training image must
    have its row, with the same label: anything else is another dataset."""
    rows = {}
    with open(path) as f:
        head = f.readline().rstrip("\n").split(",")
        if head[:3] != ["shard_file", "record", "label"] or len(head) - 3 != classes:
            raise SystemExit("%s: not a teacher_probs.csv of %d classes" % (path, classes))
        for line in f:
            v = line.rstrip("\n").split(",")
            rows[(v[0], int(v[1]))] = (int(v[2]), [float(x) for x in v[3:]])
    out = torch.empty(len(keys), classes, dtype=torch.float64)
    for i, k in enumerate(keys):
        if k not in rows or rows[k][0] != int(labels[i]):
            raise SystemExit("%s: no row (or another label) for %s record %d: the teacher "
                             "predicted another dataset" % (path, k[0], k[1]))
        out[i] = torch.tensor(rows[k][1], dtype=torch.float64)
    return out


def distill_targets(p, t):
    """The teacher's probabilities p (rows) at temperature t: softmax(log p / t),
    computed in float64 (probabilities of 0 stay 0)."""
    logp = torch.log(p.clamp_min(1e-300)) / t
    return torch.softmax(logp, dim=1)


def distill_loss(logits, target_t, t, alpha, ce):
    """petal-tui's distillation loss, the mean over the batch of
    alpha * t^2 * KL(target_t || softmax(logits / t)) + (1 - alpha) * ce, where
    target_t is the teacher's tempered probabilities (mixed as the images were) and
    ce the per-example cross-entropy the recipe has without a teacher."""
    logq = F.log_softmax(logits.double() / t, dim=1)
    tt = target_t.double()
    kl = (tt * (torch.log(tt.clamp_min(1e-300)) - logq)).sum(1)
    return (alpha * t * t * kl + (1 - alpha) * ce.double()).mean().float()


# --- recipe ------------------------------------------------------------------------

class Schedule:
    """petal-tui's schedule (core/train/schedule.c): linear warmup from lr_start to
    lr_max over the first int(total * warmup) updates, then cosine or exponential
    decay to lr_end at the last update."""

    def __init__(self, kind, lr_start, lr_max, lr_end, warmup, total):
        self.kind, self.s, self.m, self.e = kind, lr_start, lr_max, lr_end
        self.total = max(total, 1)
        self.w = int(self.total * warmup)

    def __call__(self, step):
        if step < self.w:
            return self.s + (self.m - self.s) / max(self.w, 1) * step
        d = max(self.total - self.w, 1)
        f = min((step - self.w) / d, 1.0)
        if self.kind == "cosine":
            return self.e + (self.m - self.e) * 0.5 * (1 + math.cos(math.pi * f))
        if self.kind == "linear":
            return (self.m - self.e) * (1 - f) + self.e
        return self.m * (self.e / self.m) ** ((step - self.w) / d)


MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def augment(images, size, gen, flip=0.5, crop_scale=0.6, imagenet=True):
    """flip:0.5,crop:1:scale=S:ratio=1:interp=bilinear, then resize to size; then
    ImageNet's mean and std, or (imagenet=False) the [0, 1] pixels as they are, for
    nets that normalise inside (petal-tui's built-in ones do x * 2 - 1)."""
    out = torch.empty(images.shape[0], 3, size, size)
    h, w = images.shape[2], images.shape[3]
    for k in range(images.shape[0]):
        x = images[k].float() / 255
        if torch.rand(1, generator=gen).item() < flip:
            x = x.flip(2)
        if crop_scale < 1:
            area = crop_scale + (1 - crop_scale) * torch.rand(1, generator=gen).item()
            side = max(1, int(round(math.sqrt(area * h * w))))
            side = min(side, h, w)
            top = int(torch.randint(0, h - side + 1, (1,), generator=gen))
            left = int(torch.randint(0, w - side + 1, (1,), generator=gen))
            x = TF.resized_crop(x, top, left, side, side, [size, size], antialias=True)
        elif size != h:
            x = TF.resize(x, [size, size], antialias=True)
        out[k] = x
    return (out - MEAN) / STD if imagenet else out


NORMS = ("imagenet", "tf", "unit")


def normalise(x, norm):
    """[0, 1] pixels in the convention petal-tui's --input-norm names: ImageNet's mean
    and std, 2x - 1 (tf: a Keras MobileNet's [-1, 1]) or as they are (unit)."""
    if norm == "imagenet":
        return (x - MEAN) / STD
    if norm == "tf":
        return x * 2 - 1
    return x


def mixup(x, y, gen, prob, alpha, partner_out=None):
    """petal-tui's mixup:P:alpha=A, in place on the batch x: each example is, with
    probability P, mixed with its partner in a random cycle (nobody with itself),
    lambda ~ Beta(A, A) being its own share. Returns the partner labels and each
    example's own share (1 where unmixed); partner_out (a list) gets each
    example's partner index in the batch (itself where unmixed)."""
    n = len(y)
    own = torch.ones(n)
    if prob <= 0 or n < 2:
        if partner_out is not None:
            partner_out.extend(range(n))
        return y.clone(), own
    order = torch.randperm(n, generator=gen)
    partner = torch.empty(n, dtype=torch.long)
    partner[order] = order.roll(-1)
    beta = torch.distributions.Beta(alpha, alpha)
    src = x.clone()
    for i in range(n):
        if torch.rand(1, generator=gen).item() < prob:
            # Beta's sampler takes no generator: draw it from the global seed.
            lam = float(beta.sample())
            x[i] = lam * src[i] + (1 - lam) * src[partner[i]]
            own[i] = lam
    if partner_out is not None:
        partner_out.extend(int(partner[i]) if own[i] < 1 else i for i in range(n))
    return y[partner], own


def plain(images, size, imagenet=True):
    x = images.float() / 255
    if size != images.shape[2]:
        x = TF.resize(x, [size, size], antialias=True)
    return (x - MEAN) / STD if imagenet else x


def validate(model, x, y, classes, bf16=False):
    """The model's validation loss, accuracy and macro F1 on the prepared inputs x (in
    eval mode, batches of 64): what petal-tui prints as val_loss, val_acc, val_f1.
    bf16: the forward under bf16 autocast (as a --precision bf16 run validates)."""
    model.eval()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits = torch.cat([model(x[i:i + 64]).float() for i in range(0, len(y), 64)])
        pred = logits.argmax(1)
    return (float(F.cross_entropy(logits, y)), float((pred == y).float().mean()),
            macro_f1(pred, y, classes))


def macro_f1(pred, label, classes):
    f1s = []
    for c in range(classes):
        tp = int(((pred == c) & (label == c)).sum())
        fp = int(((pred == c) & (label != c)).sum())
        fn = int(((pred != c) & (label == c)).sum())
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        f1s.append(2 * p * r / (p + r) if p + r else 0.0)
    return sum(f1s) / classes


# --- the ONNX zoo's int8 MobileNetV2 as a float net ------------------------------------

def _q_act(scale, zero_point):
    """The activation an output's quantized range stands for: none unless the
    range starts at 0; then ReLU6, or ReLU when it reaches past 6."""
    info = torch.iinfo(zero_point.dtype)
    lo = (info.min - int(zero_point)) * float(scale)
    hi = (info.max - int(zero_point)) * float(scale)
    if lo != 0:
        return None
    return relu6 if hi <= 6.0 + 1e-3 else F.relu


def relu6(x):
    """ReLU6; as a clamp under bf16 autocast, where PyTorch 1.13's relu6 (hardtanh) has
    no CPU backward for bfloat16 (the same function)."""
    return x.clamp(0.0, 6.0) if x.dtype == torch.bfloat16 else F.relu6(x)


class ZooMobileNetV2(nn.Module):
    """Each QLinearConv becomes a float convolution with bias (w = (q - zp) * scale
    per output channel, bias = q * x_scale * w_scale) followed by ReLU6 when its
    output's quantized range starts at 0 and ends by 6 (ReLU past 6; how the int8
    graph carries its activations), QLinearAdd an add (the same rule after it), QLinearGlobalAveragePool the mean; the classifier from the
    Reshape on is cut and replaced by dropout and a new dense layer."""

    def __init__(self, path, classes, dropout=0.2):
        super().__init__()
        import onnx
        from onnx import numpy_helper
        g = onnx.load(path).graph
        init = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in g.initializer}
        self.ops, self.weights, self.biases = [], nn.ParameterList(), nn.ParameterList()
        alias = {}

        def src(name):
            return alias.get(name, name)

        for node in g.node:
            a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
            i, o = list(node.input), list(node.output)
            if node.op_type == "QuantizeLinear":
                alias[o[0]] = src(i[0])
            elif node.op_type == "QLinearConv":
                q, ws, wz = init[i[3]].float(), init[i[4]].float(), init[i[5]].float()
                shape = [-1] + [1] * (q.dim() - 1)
                w = (q - wz.reshape(shape)) * ws.reshape(shape)
                xs = init[i[1]].float()
                b = init[i[8]].float() * xs * ws if len(i) > 8 else torch.zeros(w.shape[0])
                pads = a.get("pads", [0, 0, 0, 0])
                assert pads[0] == pads[2] and pads[1] == pads[3]
                act = _q_act(init[i[6]], init[i[7]])
                self.weights.append(nn.Parameter(w))
                self.biases.append(nn.Parameter(b))
                self.ops.append(("conv", src(i[0]), o[0], len(self.weights) - 1,
                                 a.get("strides", [1, 1]), (pads[0], pads[1]), a.get("group", 1),
                                 act))
            elif node.op_type == "QLinearAdd":
                self.ops.append(("add", (src(i[0]), src(i[3])), o[0], _q_act(init[i[6]], init[i[7]])))
            elif node.op_type == "QLinearGlobalAveragePool":
                self.ops.append(("gap", src(i[0]), o[0]))
                self.features_out = o[0]
            elif node.op_type in ("Reshape", "QLinearMatMul"):
                break  # the ImageNet classifier: cut here
        self.input = g.input[0].name
        c = self.weights[-1].shape[0]  # the features the new head reads
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(c, classes)
        nn.init.xavier_uniform_(self.fc.weight)  # petal-tui's dense init (Glorot uniform)
        nn.init.zeros_(self.fc.bias)

    def backbone_parameters(self):
        return list(self.weights) + list(self.biases)

    def forward(self, x):
        v = {self.input: x}
        for op in self.ops:
            if op[0] == "conv":
                _, s, o, k, stride, pad, groups, act = op
                y = F.conv2d(v[s], self.weights[k], self.biases[k], stride, pad, 1, groups)
                v[o] = act(y) if act else y
            elif op[0] == "add":
                y = v[op[1][0]] + v[op[1][1]]
                v[op[2]] = op[3](y) if op[3] else y
            else:
                v[op[2]] = v[op[1]].mean((2, 3))
        return self.fc(self.drop(v[self.features_out]))
