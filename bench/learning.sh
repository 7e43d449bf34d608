#!/bin/sh
# The learning side-by-side of bench/RESULTS.md: petal-tui and PyTorch train the same
# net with the same recipe on the same shards, seed by seed, and bench/learning_table.py
# prints both curves per epoch (validation macro F1 and training loss, mean and range
# over the seeds) and each side's wall time to given validation F1s. The recipe is the
# PyTorch twin's arguments (TWIN: scratch = bench/torch_scratch.py, the default, or
# finetune = bench/torch_finetune.py); the twin prints the petal-tui command with the
# same recipe, which is what runs here.
#
#   bench/learning.sh OUTDIR "1 2 3" --data photos --size 128 --epochs 10
#   TWIN=finetune bench/learning.sh OUTDIR "1 2 3" --data photos320 --size 224 ...
#   SIDES=petal bench/learning.sh ...     one side only (petal or torch)
#   TARGETS="0.75 0.80" bench/learning.sh ...   the F1s the table times (default 0.75 0.80)
#   TEACHER=ENSEMBLE_DIR bench/learning.sh ...   distilled (petal-tui's --teacher, with
#       DISTILL_T and DISTILL_ALPHA, default 4 and 0.9); PyTorch's side reads the teacher's
#       probabilities petal-tui's run wrote (--teacher-probs OUTDIR/petal-run-SEED/
#       teacher_probs.csv), so petal-tui's side of a seed runs first
#
# Without --data it makes (once) and uses the benchmark of record's shards of
# $PT_SHARED_DATA/flower-jpegs-320 (default ../shared/data): `petal-tui shards ... --size N
# --val 0.2` in $PT_BENCH_DATA/flowers320-N (default build/bench-data), N the smallest of
# 128, 192 and 256 at least --size (default 128); it skips (status 0) without the photos,
# and without /usr/bin/python3's torch, which both twins need.
#
# Each log ends with "wall_s S": the seconds from the command's start to its exit, so
# the table's times count start-up and decoding too. Takes long (RESULTS.md gives each
# recipe's minutes); run it alone on the machine: PyTorch slows down badly beside
# another process, and both sides' times are compared.
set -eu
[ $# -ge 2 ] || { sed -n '2,25p' "$0"; exit 2; }
out=$1 seeds=$2
shift 2
here=$(dirname "$0")
petal=${PETAL:-$here/../build/petal-tui}
twin=$here/torch_${TWIN:-scratch}.py
sides=${SIDES:-"petal torch"}
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "learning: skipped: /usr/bin/python3 has no torch (Debian 12: apt-get install python3-torch)"
    exit 0
fi
size=128 data=
prev=
for a in "$@"; do
    case $prev in
    --size) size=$a ;;
    --data) data=$a ;;
    esac
    prev=$a
done
if [ -z "$data" ]; then
    photos=${PT_SHARED_DATA:-$here/../../shared/data}/flower-jpegs-320
    if [ ! -d "$photos" ]; then
        echo "learning: skipped: no $photos (the photos of the benchmark of record)"
        exit 0
    fi
    n=$size
    for c in 256 192 128; do if [ "$size" -le $c ]; then n=$c; fi; done
    data=${PT_BENCH_DATA:-$here/../build/bench-data}/flowers320-$n
    if [ ! -d "$data" ]; then
        # Made beside and renamed: a run stopped half-way leaves no folder taken for whole.
        rm -rf "$data.part"
        "$petal" shards "$photos" "$data.part" --size "$n" --val 0.2
        mv "$data.part" "$data"
    fi
    set -- --data "$data" "$@"
fi
mkdir -p "$out"
now() { date +%s.%N; }
# A finished log is kept: run the command again to add seeds or finish an interrupted set.
for s in $seeds; do
    cmd=$(/usr/bin/python3 "$twin" "$@" --seed "$s" --print-command | head -1)
    kd_petal= kd_torch=
    if [ -n "${TEACHER:-}" ]; then
        kd="--distill-t ${DISTILL_T:-4} --distill-alpha ${DISTILL_ALPHA:-0.9}"
        kd_petal="--teacher $TEACHER $kd"
        kd_torch="--teacher-probs $out/petal-run-$s/teacher_probs.csv $kd"
    fi
    if echo "$sides" | grep -q petal && [ ! -f "$out/petal-$s.log" ]; then
        rm -rf "$out/petal-run-$s"
        t0=$(now)
        # shellcheck disable=SC2086 # the command is words by design
        $petal ${cmd#petal-tui} $kd_petal --out "$out/petal-run-$s" > "$out/petal-$s.tmp" 2>&1
        echo "wall_s $(/usr/bin/python3 -c "print('%.1f' % ($(now) - $t0))")" >> "$out/petal-$s.tmp"
        mv "$out/petal-$s.tmp" "$out/petal-$s.log"
    fi
    if echo "$sides" | grep -q torch && [ ! -f "$out/torch-$s.log" ]; then
        t0=$(now)
        # PyTorch at its best: glibc keeps what it frees (bench/bench_peer.h says why).
        MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-33554432} \
            MALLOC_TRIM_THRESHOLD_=${MALLOC_TRIM_THRESHOLD_:-17179869184} \
            MALLOC_TOP_PAD_=${MALLOC_TOP_PAD_:-1073741824} \
            /usr/bin/python3 "$twin" "$@" --seed "$s" $kd_torch > "$out/torch-$s.tmp" 2>&1
        echo "wall_s $(/usr/bin/python3 -c "print('%.1f' % ($(now) - $t0))")" >> "$out/torch-$s.tmp"
        mv "$out/torch-$s.tmp" "$out/torch-$s.log"
    fi
done
/usr/bin/python3 "$here/learning_table.py" "$out" ${TARGETS:-0.75 0.80}
