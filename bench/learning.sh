#!/bin/sh
# The learning side-by-side of bench/RESULTS.md: petal-tui and PyTorch train the same
# net with the same recipe on the same shards, seed by seed, and bench/learning_table.py
# prints both curves per epoch (validation macro F1 and training loss, mean and range
# over the seeds). The recipe is bench/torch_scratch.py's arguments; that script
# prints the petal-tui command with the same recipe, which is what runs here.
#
#   bench/learning.sh OUTDIR "1 2 3" --data photos --size 64 --epochs 10 --augment none --lr 1e-3
#
# Takes long: a 10-epoch run of `small` at 128 px is about 6 minutes for petal-tui and
# 16 for PyTorch on two cores. Run it alone on the machine (PyTorch slows down badly
# beside another process; petal-tui's figures do not change, only its times).
set -eu
[ $# -ge 2 ] || { sed -n '2,12p' "$0"; exit 2; }
out=$1 seeds=$2
shift 2
here=$(dirname "$0")
petal=${PETAL:-$here/../build/petal-tui}
mkdir -p "$out"
for s in $seeds; do
    cmd=$(/usr/bin/python3 "$here/torch_scratch.py" "$@" --seed "$s" --print-command)
    # shellcheck disable=SC2086 # the command is words by design
    # A finished log is kept: run the command again to add seeds or finish an interrupted set.
    if [ ! -f "$out/petal-$s.log" ]; then
        $petal ${cmd#petal-tui} --out "$out/petal-run-$s" > "$out/petal-$s.tmp" 2>&1
        mv "$out/petal-$s.tmp" "$out/petal-$s.log"
    fi
    if [ ! -f "$out/torch-$s.log" ]; then
        /usr/bin/python3 "$here/torch_scratch.py" "$@" --seed "$s" > "$out/torch-$s.tmp" 2>&1
        mv "$out/torch-$s.tmp" "$out/torch-$s.log"
    fi
done
/usr/bin/python3 "$here/learning_table.py" "$out"
