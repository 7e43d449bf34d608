#!/bin/sh
# Where the 2-rank job's time goes (issue 15; bench/RESULTS.md, "Data parallel"):
# three layouts of the same work, 16 images per replica per update, the demo data at
# 128 px, ms per update of the 2nd epoch, in turn for ROUNDS rounds:
#   A  one process, 2 replicas, 2 decode workers (1 x 2)
#   B  two plain processes at once, 1 replica and 1 worker each, each bound to one
#      core as mpirun binds its ranks, no MPI at all: the 2-process layout without
#      any communication or waiting for each other
#   C  mpirun -np 2, 1 replica and 1 worker per rank (2 x 1), --overlap (what
#      --overlap auto takes across hosts): the gradient sent in buckets during the
#      backward pass, every rank stepping the whole optimizer
#   D  C with --no-overlap (what auto takes on one host, as here): the gradient
#      summed after the backward pass, the optimizer sliced across the ranks
# (B - A) / A is what two processes cost against one, (C - B) / A what the
# communication and the ranks' waiting for each other add. (Until 2026-11-25 D was
# C with --bind-to none, which cost 18% against A: bench/RESULTS.md.)
#
#   bench/dist_layout.sh [ROUNDS] [MODEL]      (defaults 5, small; about 2 minutes a round)
set -eu
rounds=${1:-5} model=${2:-small}
here=$(cd "$(dirname "$0")" && pwd)
bin=${PT_BIN:-$here/../build/petal-tui}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=""
[ "$(id -u)" = 0 ] && root="--allow-run-as-root"
common="--headless --model $model --image-size 128 --batch-per-replica 16 --epochs 2"
# The 2nd epoch's "NNNms/update".
ms() { sed -n 's/^epoch 2\/2 .* - \([0-9]*\)ms\/update .*/\1/p' "$1"; }
echo "bench/dist_layout.sh  $(date +%F)  cpu \"$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)\"  model $model"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%5s %8s %8s %8s %8s %8s %10s %10s %10s\n' round A B0 B1 C D "(B-A)/A" "(C-B)/A" "(D-B)/A"
for k in $(seq "$rounds"); do
    # The runs' folders and logs only: the rows of the rounds stay for the medians.
    # (Until 2026-11-25 this removed the rows too, so the medians printed were the
    # last round's figures.)
    rm -rf "$tmp"/a* "$tmp"/b* "$tmp"/c* "$tmp"/d*
    $bin $common --replicas 2 --workers 2 --out "$tmp/a" > "$tmp/a.log" 2>&1
    taskset -c 0 $bin $common --replicas 1 --workers 1 --out "$tmp/b0" > "$tmp/b0.log" 2>&1 &
    p0=$!
    taskset -c 1 $bin $common --replicas 1 --workers 1 --out "$tmp/b1" > "$tmp/b1.log" 2>&1 &
    p1=$!
    wait $p0 $p1
    mpirun $root -np 2 $bin $common --replicas 1 --workers 1 --overlap --out "$tmp/c" > "$tmp/c.log" 2>&1
    mpirun $root -np 2 $bin $common --replicas 1 --workers 1 --no-overlap --out "$tmp/d" > "$tmp/d.log" 2>&1
    a=$(ms "$tmp/a.log") b0=$(ms "$tmp/b0.log") b1=$(ms "$tmp/b1.log") c=$(ms "$tmp/c.log") d=$(ms "$tmp/d.log")
    echo "$k $a $b0 $b1 $c $d" >> "$tmp/rows"
    awk -v k="$k" -v a="$a" -v b0="$b0" -v b1="$b1" -v c="$c" -v d="$d" 'BEGIN {
        b = b0 > b1 ? b0 : b1
        printf "%5d %8d %8d %8d %8d %8d %9.1f%% %9.1f%% %9.1f%%\n", k, a, b0, b1, c, d, 100 * (b - a) / a, 100 * (c - b) / a, 100 * (d - b) / a }'
done
# Medians of the rounds' figures (B: the slower of the two processes, as a job
# waits for its slower rank).
sort -n -k1 "$tmp/rows" | awk '{
    # + 0: numbers, not strings, for the sort below ("101" < "95" as strings)
    a[NR] = $2 + 0; b = $3 + 0 > $4 + 0 ? $3 + 0 : $4 + 0; bb[NR] = b; c[NR] = $5 + 0
    d[NR] = $6 + 0; w[NR] = 100 * ($6 - $2) / $2
    x[NR] = 100 * (b - $2) / $2; y[NR] = 100 * ($5 - b) / $2; z[NR] = 100 * ($5 - $2) / $2 }
    function med(v, n,   i, j, t) {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        return v[int((n + 1) / 2)] }
    END { n = NR
        printf "median: A %d, B %d, C %d, D %d ms/update; (B-A)/A %+.1f%%, (C-B)/A %+.1f%%, (C-A)/A %+.1f%%, (D-A)/A %+.1f%%\n",
            med(a, n), med(bb, n), med(c, n), med(d, n), med(x, n), med(y, n), med(z, n), med(w, n) }'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
