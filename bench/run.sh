#!/bin/sh
# Runs every benchmark binary built from bench/*.c, then the PyTorch side-by-side
# (bench/torch_small.py). Debian's python3-torch and python3-torchvision are
# installed first when missing: bench_finetune runs bench/torch_finetune_speed.py
# itself, interleaved with its own measurements, so PyTorch must be there before the
# binaries run.
# Figures go to stdout; copy them into bench/RESULTS.md with the date and CPU.
BUILD=${BUILD:-build}
status=0
if ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
    echo "installing Debian's python3-torch and python3-torchvision for the side-by-side benchmarks"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-torch python3-torchvision
fi
for b in "$BUILD"/bench/bench_*; do
    [ -x "$b" ] || continue
    echo
    "$b" || status=1
done
echo
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    /usr/bin/python3 bench/torch_small.py || status=1
else
    echo "python3-torch unavailable: skipped the PyTorch side-by-side"
fi
exit $status
