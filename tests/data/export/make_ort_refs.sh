#!/bin/sh
# make_ort_refs.sh — remakes what tests/test_ort.c checks the committed export fixtures
# (the float ones and their int8 exports, NAME-int8)
# against on a bare clone (no node needed there): for each fixture NAME.onnx of side S,
#   NAME.input.f32              5 images, float32 [5, 3, S, S] NCHW, RGB 0-255 (whole
#                               numbers, as decoded): solid red, a checkerboard, noise
#                               from a fixed LCG, a gradient, 4x4 blocks
#   NAME.ort.logits.f32         ONNX Runtime's outputs on it, float32 [5, C]
#   NAME.ort.probabilities.f32
# all little-endian, and ORIGIN (the ONNX Runtime version and this command).
#
# Run from the repository root after `make ort-deps`:  sh tests/data/export/make_ort_refs.sh
# Rerun when the fixtures change (PT_WRITE_EXPORT_FIXTURES=1, tests/test_export.c).
set -eu
dir=tests/data/export
run=tests/ort/ort_run.js
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for pair in small-8-16:16 every-kind:12 small-8-16-int8:16 every-kind-int8:12; do
    name=${pair%:*}
    side=${pair#*:}
    node -e '
const fs = require("fs");
const [n, s, out] = [5, +process.argv[1], process.argv[2]];
const b = Buffer.alloc(n * 3 * s * s * 4);
let seed = 12345, i = 0;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
for (let k = 0; k < n; k++)
  for (let c = 0; c < 3; c++)
    for (let y = 0; y < s; y++)
      for (let x = 0; x < s; x++) {
        const v = [c === 0 ? 255 : 0, (x + y) % 2 ? 255 : 0, Math.floor(rnd() * 256),
                   (c === 2 ? x : y) * 255 / (s - 1), 255 * (((x >> 2) + (y >> 2) + c) & 1)][k];
        b.writeFloatLE(Math.round(v), i);
        i += 4;
      }
fs.writeFileSync(out, b);' "$side" "$dir/$name.input.f32"
    node "$run" "$dir/$name.onnx" "$dir/$name.input.f32" "5,3,$side,$side" "$tmp/$name" \
        > "$tmp/$name.json"
    cp "$tmp/$name/logits.f32" "$dir/$name.ort.logits.f32"
    cp "$tmp/$name/probabilities.f32" "$dir/$name.ort.probabilities.f32"
done
version=$(node -p 'require("./tests/ort/node_modules/onnxruntime-node/package.json").version')
cat > "$dir/ORIGIN" <<END
tests/data/export: the exporter's fixtures and ONNX Runtime's answers on them

small-8-16.onnx, every-kind.onnx: written by petal-tui's exporter (tests/test_export.c,
export_matches_the_committed_fixtures; PT_WRITE_EXPORT_FIXTURES=1 rewrites them).
small-8-16-int8.onnx, every-kind-int8.onnx: the same two models' int8 exports (export
--int8's QDQ form), calibrated on 8 formula images (tests/test_export.c,
export_int8_fixtures_import_as_int8; PT_WRITE_EXPORT_FIXTURES=1 rewrites them).

NAME.input.f32, NAME.ort.logits.f32, NAME.ort.probabilities.f32: made by
  sh tests/data/export/make_ort_refs.sh
with onnxruntime-node $version (CPU, graph optimisations all, 1 thread; tests/ort/ort_run.js),
$(node --version | sed 's/^/Node.js /'). Inputs: 5 images float32 [5, 3, S, S] NCHW, RGB
0-255; outputs float32 [5, C]; little-endian. tests/test_ort.c (onnxruntime_committed_fixtures)
feeds the same pixels to petal-tui's import of each file, as predict does, and checks
every probability within 1e-4, logits within 1e-4 x max(1, the largest |logit|)
and the same top-1; for the int8 files (onnxruntime_committed_int8_fixtures, against
ONNX Runtime's int8 kernels) within 0.02 and 0.02 x max(1, |logit|), the same top-1.
END
echo "make_ort_refs: wrote $dir/*.input.f32, *.ort.*.f32 and ORIGIN (onnxruntime-node $version)"
