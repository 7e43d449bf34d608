"""A float ONNX backbone as a trainable PyTorch module, built from the graph's nodes
independently of petal-tui's importer (core/nn/nn_import.c), for the side-by-side of
bench/RESULTS.md ("Fine-tuning the float Keras backbone beside PyTorch").

The nodes it knows are those of a Keras MobileNetV2 as tf2onnx writes it (and of
torch.onnx.export's plain convnets): Transpose, Conv (explicit, possibly asymmetric
pads), BatchNormalization, Clip, Relu, Add, Pad, ReduceMean, GlobalAveragePool.
Conv weights and biases and BN's gamma and beta are nn.Parameters; BN's running mean
and variance are buffers, with the node's epsilon and momentum (the ONNX default 0.9
where the node has none; `bn_momentum` overrides). The graph is cut before its
classifier (Flatten / Reshape / Gemm / MatMul), as petal-tui does, and a new head
follows the features: dropout and a dense layer, Glorot uniform, zero bias.

Batch-norm as petal-tui trains it (core/nn/layer_bn.c, nn_model_update_bn):
- training: each replica's examples are normalised with their own batch statistics
  (`ghost` = petal-tui's --batch-per-replica; the graph runs once per slice of the
  batch), and the running statistics move once per update, after the optimizer step
  (`update_bn()`), by the node's momentum towards the mean over the slices of the
  batch mean and unbiased variance;
- a frozen backbone (`set_frozen(True)`) and eval mode use the running statistics,
  as Keras does with trainable=False;
- `bn_frozen` (petal-tui's --backbone-bn frozen, torchvision's FrozenBatchNorm2d):
  the batch-norm keeps its running statistics, gamma and beta in training too, while
  the convolutions learn.

Input: N x 3 x H x W pixels in the convention the graph takes (the caller scales;
[-1, 1] for a Keras MobileNet, petal-tui's `--input-norm tf`). An NHWC graph input
(as tf2onnx writes) gets the tensor permuted to NHWC first; its own Transpose turns
it back, so the rest runs as the graph says.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CLASSIFIER_OPS = ("Flatten", "Reshape", "Gemm", "MatMul")


class OnnxBackbone(nn.Module):
    def __init__(self, path, classes, dropout=0.2, bn_momentum=None, ghost=0, bn_frozen=False):
        super().__init__()
        import onnx
        from onnx import numpy_helper
        g = onnx.load(path).graph
        init = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in g.initializer}
        self.weights = nn.ParameterList()
        self.ops, self.bn = [], []  # bn: (gamma, beta index, mean, var buffer names, eps, mom)
        self.ghost, self.frozen, self.bn_frozen = ghost, False, bn_frozen
        self._records = []
        inputs = [i for i in g.input if i.name not in init]
        self.input = inputs[0].name
        dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
        self.nhwc = len(dims) == 4 and dims[3] in (1, 3) and dims[1] not in (1, 3)

        def param(name):
            self.weights.append(nn.Parameter(init[name].float()))
            return len(self.weights) - 1

        out = None
        for node in g.node:
            a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
            i, o, op = list(node.input), list(node.output), node.op_type
            if op in CLASSIFIER_OPS:
                break
            if op == "Conv":
                w = param(i[1])
                b = param(i[2]) if len(i) > 2 and i[2] else None
                pads = list(a.get("pads", [0, 0, 0, 0]))
                # ONNX pads: (top, left, bottom, right); F.pad wants (left, right, top, bottom)
                pad = (pads[1], pads[3], pads[0], pads[2])
                self.ops.append(("conv", i[0], o[0], w, b, tuple(a.get("strides", [1, 1])),
                                 pad, a.get("group", 1), tuple(a.get("dilations", [1, 1]))))
            elif op == "BatchNormalization":
                k = len(self.bn)
                self.register_buffer("bn_mean_%d" % k, init[i[3]].float().clone())
                self.register_buffer("bn_var_%d" % k, init[i[4]].float().clone())
                mom = a.get("momentum", 0.9) if bn_momentum is None else bn_momentum
                self.bn.append((param(i[1]), param(i[2]), float(a.get("epsilon", 1e-5)),
                                float(mom)))
                self.ops.append(("bn", i[0], o[0], k))
            elif op == "Clip":
                lo = float(init[i[1]]) if len(i) > 1 and i[1] else a.get("min", None)
                hi = float(init[i[2]]) if len(i) > 2 and i[2] else a.get("max", None)
                self.ops.append(("clip", i[0], o[0], lo, hi))
            elif op == "Relu":
                self.ops.append(("relu", i[0], o[0]))
            elif op == "Add":
                self.ops.append(("add", (i[0], i[1]), o[0]))
            elif op == "Transpose":
                self.ops.append(("transpose", i[0], o[0], tuple(a["perm"])))
            elif op == "Pad":
                p = [int(v) for v in (init[i[1]] if len(i) > 1 else a["pads"])]
                mode = a.get("mode", b"constant")
                mode = mode.decode() if isinstance(mode, bytes) else mode
                assert len(p) == 8 and p[0] == p[1] == p[4] == p[5] == 0, "Pad: NCHW spatial only"
                self.ops.append(("pad", i[0], o[0], (p[3], p[7], p[2], p[6]), mode))
            elif op == "ReduceMean":
                axes = a.get("axes") or [int(v) for v in init[i[1]]]
                self.ops.append(("mean", i[0], o[0], tuple(axes), bool(a.get("keepdims", 1))))
            elif op == "GlobalAveragePool":
                self.ops.append(("mean", i[0], o[0], (2, 3), True))
            else:
                raise ValueError("%s: node %s (%s) is not one this module knows"
                                 % (path, node.name, op))
            out = o[0]
        self.features_out = out
        self.eval()
        with torch.no_grad():
            c = self._features(torch.zeros(1, 3, 32, 32)).shape[1]
        self.train()
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(c, classes)
        nn.init.xavier_uniform_(self.fc.weight)  # petal-tui's dense init (Glorot uniform)
        nn.init.zeros_(self.fc.bias)

    def backbone_parameters(self):
        return list(self.weights)

    def set_frozen(self, frozen):
        """A frozen backbone: no gradients, and its BN on the running statistics."""
        self.frozen = frozen
        for w in self.weights:
            w.requires_grad_(not frozen)
        if self.bn_frozen:
            for g, b, _, _ in self.bn:
                self.weights[g].requires_grad_(False)
                self.weights[b].requires_grad_(False)

    def _bn(self, x, k):
        g, b, eps, _ = self.bn[k]
        rm, rv = getattr(self, "bn_mean_%d" % k), getattr(self, "bn_var_%d" % k)
        if not self.training or self.frozen or self.bn_frozen:
            return F.batch_norm(x, rm, rv, self.weights[g], self.weights[b], False, 0.0, eps)
        # With momentum 1 the "running" pair receives this batch's mean and unbiased
        # variance: the record, from the same pass.
        mean, var = torch.zeros_like(rm), torch.ones_like(rv)
        y = F.batch_norm(x, mean, var, self.weights[g], self.weights[b], True, 1.0, eps)
        self._records[k].append((mean, var))
        return y

    def _features(self, x):
        if self.nhwc:
            x = x.permute(0, 2, 3, 1)
        v = {self.input: x}
        for op in self.ops:
            kind, s, o = op[0], op[1], op[2]
            if kind == "conv":
                _, _, _, w, b, stride, pad, groups, dil = op
                y = F.pad(v[s], pad) if any(pad) else v[s]
                v[o] = F.conv2d(y, self.weights[w], self.weights[b] if b is not None else None,
                                stride, 0, dil, groups)
            elif kind == "bn":
                v[o] = self._bn(v[s], op[3])
            elif kind == "clip" and op[3] is not None and op[4] is not None:
                v[o] = F.hardtanh(v[s], op[3], op[4])  # ReLU6: one kernel each way
            elif kind == "clip":
                v[o] = torch.clamp(v[s], op[3], op[4])
            elif kind == "relu":
                v[o] = F.relu(v[s])
            elif kind == "add":
                v[o] = v[s[0]] + v[s[1]]
            elif kind == "transpose":
                v[o] = v[s].permute(*op[3])
            elif kind == "pad":
                v[o] = F.pad(v[s], op[3], mode=op[4])
            elif kind == "mean":
                v[o] = v[s].mean(op[3], keepdim=op[4])
        return v[self.features_out].flatten(1)

    def features(self, x):
        """The backbone's output (N x C): eval mode gives what ONNX Runtime gives."""
        still = self.frozen or self.bn_frozen
        if not self.training or still or not self.ghost or x.shape[0] <= self.ghost:
            if self.training and not still and not self._records:
                self._records = [[] for _ in self.bn]
            return self._features(x)
        if not self._records:
            self._records = [[] for _ in self.bn]
        return torch.cat([self._features(x[i:i + self.ghost])
                          for i in range(0, x.shape[0], self.ghost)])

    def forward(self, x):
        return self.fc(self.drop(self.features(x)))

    @torch.no_grad()
    def update_bn(self):
        """After the optimizer step: the running statistics move once, by each node's
        momentum, towards the mean of the slices' batch statistics."""
        if not self._records:
            return
        for k, recs in enumerate(self._records):
            if not recs:
                continue
            mom = self.bn[k][3]
            mean = torch.stack([r[0] for r in recs]).mean(0)
            var = torch.stack([r[1] for r in recs]).mean(0)
            rm, rv = getattr(self, "bn_mean_%d" % k), getattr(self, "bn_var_%d" % k)
            rm.mul_(mom).add_(mean, alpha=1 - mom)
            rv.mul_(mom).add_(var, alpha=1 - mom)
        self._records = []
