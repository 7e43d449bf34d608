#!/bin/sh
# Runs every benchmark binary built from bench/*.c (and bench/*.py side-by-sides
# when present). Figures go to stdout; copy them into bench/RESULTS.md.
BUILD=${BUILD:-build}
status=0
for b in "$BUILD"/bench/bench_*; do
    [ -x "$b" ] || continue
    echo
    "$b" || status=1
done
exit $status
