"""Grad-CAM references for tests/test_explain.c, computed by PyTorch on the committed
ONNX graphs, independently of petal-tui (its importer, nn, core/infer/explain.c).

Run:  /usr/bin/python3 tests/data/gradcam/make_gradcam.py   (from the repository root;
python3-torch 1.13 and python3-onnx). Writes tests/data/gradcam/gradcam.ref.

The graphs (committed elsewhere):
  tests/data/export/small-8-16.onnx         petal-tui's export of its built-in `small`
                                            net (16 px, 5 classes): input pixels 0-255,
                                            the graph normalises itself
  tests/data/conform/mobilenet_v2-bn.onnx   torchvision's MobileNetV2, narrow (64 px,
  tests/data/conform/mobilenet_v2-folded.onnx  10 classes), BatchNormalization kept /
                                            folded into the convolutions: input
                                            (pixels / 255 - ImageNet mean) / std, what
                                            petal-tui's predict assumes of such a file

The evaluator below runs the ONNX nodes with torch.nn.functional in float64 (Conv,
BatchNormalization in inference form, Clip, Relu, Add, Mul, Sub, Div, MaxPool,
GlobalAveragePool, Flatten, Gemm; Constant; it stops at Softmax): the logits are the
Gemm's output, before any softmax.

The image: S x S x 3 bytes, byte (y, x, c) = (37 x + 91 y + 53 c + 5 ((x y) mod 17))
mod 256 (tests/test_explain.c computes the same), scaled as above.

Grad-CAM (Selvaraju et al.; the Keras example): for class c at the tensor A
(1 x K x H x W) a node outputs, G = d logit_c / d A (autograd, A.retain_grad), alpha_k
= mean over H, W of G_k, map = ReLU(sum_k alpha_k A_k), divided by its maximum (an
all-zero map stays zero). For each graph two layers: the map the GlobalAveragePool
reads (petal-tui's default) and an earlier one (two for small-8-16), each for the
predicted class and one other: the first after it, (predicted + d) mod classes, whose
map is not all zero (an all-zero map checks less), else predicted + 1.

gradcam.ref, text: lines starting '#' are comments; then per case one line
  case MODEL NODE TENSOR CLASS PRED H W
(MODEL the graph's path from the repository root, NODE the node id `petal-tui model
MODEL` lists for that tensor (checked by hand against its listing, written here),
TENSOR the ONNX tensor name, CLASS the class explained, PRED the predicted class)
followed by one line of H x W values, row-major, %.9g.
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])

# (graph, input convention, size, [(petal-tui node id, ONNX tensor)]): the first layer
# of each is the GlobalAveragePool's input.
CASES = [
    ("tests/data/export/small-8-16.onnx", "raw", 16,
     [(7, "maxpool9"), (3, "relu4"), (6, "relu8")]),
    ("tests/data/conform/mobilenet_v2-bn.onnx", "imagenet", 64,
     [(98, "/features/features.12/features.12.2/Clip_output_0"),
      (47, "/features/features.6/conv/conv.0/conv.0.2/Clip_output_0")]),
    ("tests/data/conform/mobilenet_v2-folded.onnx", "imagenet", 64,
     [(64, "/features/features.12/features.12.2/Clip_output_0"),
      (31, "/features/features.6/conv/conv.0/conv.0.2/Clip_output_0")]),
]


def image(s):
    y, x, c = np.meshgrid(np.arange(s), np.arange(s), np.arange(3), indexing="ij")
    return (37 * x + 91 * y + 53 * c + 5 * ((x * y) % 17)) % 256


def graph_input(b, norm):
    x = b.astype(np.float64)
    if norm == "imagenet":
        x = (x / 255.0 - MEAN) / STD
    return torch.from_numpy(x.transpose(2, 0, 1)[None].copy())


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def run(path, x, watch):
    """The graph on x (1 x 3 x S x S); returns (logits, {tensor: value}) with every
    watched tensor's grad retained."""
    g = onnx.load(os.path.join(ROOT, path)).graph
    v = {t.name: torch.from_numpy(numpy_helper.to_array(t).astype(np.float64))
         for t in g.initializer if numpy_helper.to_array(t).dtype.kind == "f"}
    v.update({t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
              for t in g.initializer if numpy_helper.to_array(t).dtype.kind != "f"})
    inputs = [i.name for i in g.input if i.name not in v]
    v[inputs[0]] = x
    logits = None
    for n in g.node:
        a, i, op = attrs(n), list(n.input), n.op_type
        if op == "Softmax":
            break
        X = v[i[0]] if i and i[0] else None
        if op == "Constant":
            y = torch.from_numpy(numpy_helper.to_array(a["value"]).astype(np.float64))
        elif op == "Conv":
            p = list(a.get("pads", [0, 0, 0, 0]))
            X = F.pad(X, (p[1], p[3], p[0], p[2]))
            y = F.conv2d(X, v[i[1]], v[i[2]] if len(i) > 2 and i[2] else None,
                         tuple(a.get("strides", [1, 1])), 0, tuple(a.get("dilations", [1, 1])),
                         a.get("group", 1))
        elif op == "BatchNormalization":
            y = F.batch_norm(X, v[i[3]], v[i[4]], v[i[1]], v[i[2]], False, 0.0,
                             a.get("epsilon", 1e-5))
        elif op == "Clip":
            lo = float(v[i[1]]) if len(i) > 1 and i[1] else a.get("min")
            hi = float(v[i[2]]) if len(i) > 2 and i[2] else a.get("max")
            y = torch.clamp(X, lo, hi)
        elif op == "Relu":
            y = F.relu(X)
        elif op in ("Add", "Mul", "Sub", "Div"):
            B = v[i[1]]
            y = {"Add": X + B, "Mul": X * B, "Sub": X - B, "Div": X / B}[op]
        elif op == "MaxPool":
            p = list(a.get("pads", [0, 0, 0, 0]))
            assert p == [0, 0, 0, 0], "MaxPool: no padding here"
            y = F.max_pool2d(X, tuple(a["kernel_shape"]), tuple(a.get("strides", [1, 1])))
        elif op == "GlobalAveragePool":
            y = X.mean((2, 3), keepdim=True)
        elif op == "Flatten":
            y = X.flatten(1)
        elif op == "Gemm":
            W = v[i[1]].t() if a.get("transB", 0) else v[i[1]]
            y = X @ W + v[i[2]]
            logits = y
        else:
            raise ValueError("%s: %s (%s) is not an op this evaluator knows" % (path, n.name, op))
        if n.output[0] in watch:
            y.retain_grad()
        v[n.output[0]] = y
    return logits, v


def grad_cam(path, norm, s, tensor, cls):
    x = graph_input(image(s), norm).requires_grad_(True)
    logits, v = run(path, x, {tensor})
    pred = int(torch.argmax(logits[0]))
    c = pred if cls is None else cls(pred, logits.shape[1])
    logits[0, c].backward()
    A, G = v[tensor], v[tensor].grad
    alpha = G.mean((2, 3), keepdim=True)
    m = F.relu((alpha * A).sum(1))[0]
    mx = float(m.max())
    m = m / mx if mx > 0 else m
    return c, pred, m.detach().numpy()


def main():
    out = os.path.join(ROOT, "tests/data/gradcam/gradcam.ref")
    lines = ["# Grad-CAM references: tests/data/gradcam/make_gradcam.py (its docstring says",
             "# the format); torch %s, onnx %s, float64" % (torch.__version__, onnx.__version__)]
    for path, norm, s, layers in CASES:
        for node, tensor in layers:
            for other in (0, 1):
                c, pred, m = grad_cam(path, norm, s, tensor, None)
                # the other class: the first after the predicted one whose map is not
                # all zero (an all-zero map checks less), else the one after it
                for d in range(1, 64 if other else 0):
                    c2, _, m2 = grad_cam(path, norm, s, tensor, lambda p, k: (p + d) % k)
                    if d == 1 or m2.max() > 0:
                        c, m = c2, m2
                    if m2.max() > 0 or c2 == pred:
                        break
                lines.append("case %s %d %s %d %d %d %d" % (path, node, tensor, c, pred,
                                                            m.shape[0], m.shape[1]))
                lines.append(" ".join("%.9g" % float(t) for t in m.flatten()))
                print("%s node %d (%s) class %d (predicted %d): %dx%d, %d of %d > 0"
                      % (path, node, tensor, c, pred, m.shape[0], m.shape[1],
                         int((m > 0).sum()), m.size))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    sys.exit(main())
