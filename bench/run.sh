#!/bin/sh
# Runs every benchmark binary built from bench/*.c, then the PyTorch side-by-side
# (bench/torch_small.py, with Debian's python3-torch, installed here when missing).
# Figures go to stdout; copy them into bench/RESULTS.md with the date and CPU.
BUILD=${BUILD:-build}
status=0
for b in "$BUILD"/bench/bench_*; do
    [ -x "$b" ] || continue
    echo
    "$b" || status=1
done
echo
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "installing Debian's python3-torch for the side-by-side benchmark"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-torch
fi
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    /usr/bin/python3 bench/torch_small.py || status=1
else
    echo "python3-torch unavailable: skipped the PyTorch side-by-side"
fi
exit $status
