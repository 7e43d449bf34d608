#!/usr/bin/python3
"""Checks bench/torch_onnx.py before it trains anything: its eval-mode features of a
few photos against ONNX Runtime's on the same pixels (tests/ort/ort_run.js, the
onnxruntime-node of `make ort-deps`; NODE_PATH may point at another checkout's
node_modules). Exit status 1 when the largest difference passes --tol.

  /usr/bin/python3 bench/torch_onnx_check.py --data photos \\
      --model ../shared/data/weights/mobilenetv2-1.0-tfslim-float-notop.onnx --input-norm tf
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as tc  # noqa: E402
import torch_onnx  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="a `petal-tui shards` folder")
    p.add_argument("--model", required=True)
    p.add_argument("--input-norm", default="tf", choices=tc.NORMS)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--photos", type=int, default=8)
    p.add_argument("--tol", type=float, default=1e-4)
    a = p.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))

    x, _ = tc.load_split(a.data, "val")
    x = tc.normalise(tc.plain(x[:a.photos], a.size, imagenet=False), a.input_norm)
    model = torch_onnx.OnnxBackbone(a.model, 5)
    model.eval()
    with torch.no_grad():
        ours = model.features(x)
    with tempfile.TemporaryDirectory() as tmp:
        feed = x.permute(0, 2, 3, 1) if model.nhwc else x
        feed.contiguous().numpy().astype("<f4").tofile(os.path.join(tmp, "in.f32"))
        r = subprocess.run(["node", os.path.join(here, "..", "tests", "ort", "ort_run.js"),
                            a.model, os.path.join(tmp, "in.f32"),
                            ",".join(str(d) for d in feed.shape), tmp],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("ort_run.js failed: " + r.stderr.strip())
        info = json.loads(r.stdout.strip().splitlines()[-1])
        name = [f for f in os.listdir(tmp) if f.endswith(".f32") and f != "in.f32"][0]
        with open(os.path.join(tmp, name), "rb") as f:
            theirs = torch.frombuffer(bytearray(f.read()), dtype=torch.float32)
    theirs = theirs.reshape(ours.shape)
    diff = float((ours - theirs).abs().max())
    print("%d photos at %d px, %s input: features %s, largest |PyTorch - ONNX Runtime| %.2e "
          "(largest feature %.2f); onnxruntime %s"
          % (len(x), a.size, a.input_norm, tuple(ours.shape), diff, float(theirs.abs().max()),
             info.get("ort", "?")))
    sys.exit(0 if diff <= a.tol else 1)


if __name__ == "__main__":
    main()
