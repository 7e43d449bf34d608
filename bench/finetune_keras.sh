#!/bin/sh
# The float Keras backbone fine-tuned beside PyTorch (bench/RESULTS.md, "Fine-tuning the
# float Keras backbone beside PyTorch"): petal-tui, then PyTorch (bench/torch_finetune.py
# on bench/torch_onnx.py's copy of the graph), the same recipe, shards and seed, one at a
# time, then bench/finetune_table.py's per-epoch table of both.
#
#   bench/finetune_keras.sh OUTDIR [base|lr03|all] [SEED] [both|petal|torch]
#
# base: the README's recipe at 224 px; lr03: the same with the backbone at 0.3 x the
# head's learning rate (--backbone-lr-scale 0.3), about the notebooks' backbone step.
# Default: all, seed 42, both sides (petal: petal-tui's runs only; torch: PyTorch's).
# Takes long: on the 2-core Xeon VM of 2026-11-27, shared, 3-10 min an epoch for
# petal-tui and longer for PyTorch; run it alone on the machine. Where OpenBLAS does not
# know the CPU (petal-tui's log says "sgemm peak ... (Prescott)"), OPENBLAS_CORETYPE
# (e.g. Cooperlake, SkylakeX or Haswell, what the CPU has) makes petal-tui several
# times faster.
# A finished log is kept: run it again to finish an interrupted set. Needs
# $PT_SHARED_DATA (default ../shared/data) with flower-jpegs-128/ and
# weights/mobilenetv2-1.0-tfslim-float-notop.onnx, and /usr/bin/python3 with
# python3-torch and python3-onnx; skips (status 0) without them.
set -eu
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
out=$1 which=${2:-all} seed=${3:-42} sides=${4:-both}
here=$(dirname "$0")
petal=${PETAL:-$here/../build/petal-tui}
data=${PT_SHARED_DATA:-$here/../../shared/data}
model=$data/weights/mobilenetv2-1.0-tfslim-float-notop.onnx
if [ ! -d "$data/flower-jpegs-128" ] || [ ! -f "$model" ]; then
    echo "finetune_keras: skipped: no $data/flower-jpegs-128 or $model"
    exit 0
fi
if ! /usr/bin/python3 -c 'import torch, onnx' 2>/dev/null; then
    echo "finetune_keras: skipped: /usr/bin/python3 has no torch or onnx"
    exit 0
fi
[ -x "$petal" ] || { echo "finetune_keras: $petal: build it first (make)"; exit 2; }
case $which in
all | base | lr03) ;;
*) echo "finetune_keras: unknown recipe $which (base, lr03, all)"; exit 2 ;;
esac
case $sides in
both | petal | torch) ;;
*) echo "finetune_keras: unknown sides $sides (both, petal, torch)"; exit 2 ;;
esac
mkdir -p "$out"
[ -d "$out/photos" ] || "$petal" shards "$data/flower-jpegs-128" "$out/photos" --size 128 --val 0.2

echo "$(date -u +%F) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores," \
     "$(/usr/bin/python3 -c 'import torch; print("torch", torch.__version__)')"
# The PyTorch copy must give ONNX Runtime's features before its curve means anything
# (where node and onnxruntime-node are: make ort-deps).
if command -v node > /dev/null && [ -d "${NODE_PATH:-$here/../tests/ort/node_modules}" ]; then
    /usr/bin/python3 "$here/torch_onnx_check.py" --data "$out/photos" --model "$model" \
        --input-norm tf
fi

recipe() {
    case $1 in
    base) echo "--backbone-lr-scale 0.1" ;;
    lr03) echo "--backbone-lr-scale 0.3" ;;
    esac
}

run() {
    name=$1
    # The README's recipe (its "Pretrained backbones" section), at the graph's 224 px;
    # the recipe's option is two words by design.
    # shellcheck disable=SC2046
    set -- --data "$out/photos" --model "$model" --input-norm tf --size 224 --epochs 10 \
        --freeze-epochs 1 --lr-start 1e-4 --lr-max 1e-3 --lr-end 1e-5 --schedule cosine \
        --warmup 0.05 --label-smoothing 0.1 --batch 16 --replicas 2 --channels-last 1 \
        --seed "$seed" $(recipe "$name")
    cmd=$(/usr/bin/python3 "$here/torch_finetune.py" "$@" --print-command)
    if [ "$sides" != torch ] && [ ! -f "$out/petal-$name-$seed.log" ]; then
        echo "$cmd --out $out/petal-$name-$seed-run"
        # shellcheck disable=SC2086 # the command is words by design
        /usr/bin/time -v $petal ${cmd#petal-tui} --out "$out/petal-$name-$seed-run" \
            > "$out/petal-$name-$seed.tmp" 2>&1
        mv "$out/petal-$name-$seed.tmp" "$out/petal-$name-$seed.log"
    fi
    if [ "$sides" != petal ] && [ ! -f "$out/torch-$name-$seed.log" ]; then
        echo "/usr/bin/python3 $here/torch_finetune.py $*"
        /usr/bin/time -v /usr/bin/python3 "$here/torch_finetune.py" "$@" \
            > "$out/torch-$name-$seed.tmp" 2>&1
        mv "$out/torch-$name-$seed.tmp" "$out/torch-$name-$seed.log"
    fi
    logs=
    for side in petal torch; do
        [ -f "$out/$side-$name-$seed.log" ] && logs="$logs $side-$name=$out/$side-$name-$seed.log"
    done
    grep -m1 -o 'sgemm peak.*' "$out/petal-$name-$seed.log" 2> /dev/null || true
    # shellcheck disable=SC2086 # label=path words, no spaces in them
    [ -z "$logs" ] || /usr/bin/python3 "$here/finetune_table.py" $logs
}

case $which in
all) run base; run lr03 ;;
*) run "$which" ;;
esac
