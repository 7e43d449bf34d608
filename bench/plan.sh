#!/bin/sh
# The README's planning table: for each built-in net and the ONNX zoo's MobileNetV2 at
# each image size, what a training run on this machine does with the CLI a user types:
# the seconds from the command to the replicas being ready (start-up), training img/s
# (the updates after the first two, from the run's event file), the run's peak memory
# (RSS), whether it recomputed (--recompute auto's choice, from its log), then predict's
# img/s on the validation split with the stopped run's weights. 2 replicas x 16 unless
# REPLICAS says otherwise; the demo data (its 128-px shards, upsampled above 128).
#
#   bench/plan.sh [OUTDIR] [SIZES] [MODELS]     (default /tmp/plan "128 224 256 512"
#                                                "small mobilenetv2 zoo")
#   REPLICAS=1 bench/plan.sh ...                one core's figures, for the scaling
#
# Each run trains for SECONDS (default 30; 90 at 512 px) and is stopped with SIGINT, as
# q does. Prints one line per (model, size); run it alone on the machine.
set -eu
out=${1:-/tmp/plan}
sizes=${2:-"128 224 256 512"}
models=${3:-"small mobilenetv2 zoo"}
here=$(dirname "$0")
petal=${PETAL:-$here/../build/petal-tui}
zoo=${PT_SHARED_DATA:-$here/../../shared/data}/weights/mobilenetv2-12-int8.onnx
R=${REPLICAS:-2}
mkdir -p "$out"
demo="$HOME/.cache/petal-tui"
printf '%-12s %5s %3s | %8s %10s %9s %10s | %11s\n' model size R "start s" "train img/s" \
    "peak MiB" recompute "predict img/s"
for m in $models; do
    model=$m
    [ "$m" = zoo ] && model=$zoo
    if [ "$m" = zoo ] && [ ! -f "$zoo" ]; then
        echo "$m: $zoo not found, skipped"
        continue
    fi
    for s in $sizes; do
        run="$out/$m-$s-r$R"
        rm -rf "$run"
        secs=${SECONDS_PER_RUN:-30}
        [ "$s" -ge 384 ] && secs=${SECONDS_512:-90}
        t0=$(date +%s.%N)
        /usr/bin/time -v timeout -s INT "$secs" "$petal" --headless --model "$model" \
            --image-size "$s" --epochs 1 --replicas "$R" --batch-per-replica 16 \
            --out "$run" > "$run.log" 2>&1 || true
        rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$run.log")
        rec=$(grep -q 'recomputed in the backward' "$run.log" && echo yes || echo no)
        figs=$(/usr/bin/python3 "$here/plan_events.py" "$run" "$t0" $((R * 16)))
        data=$(sed -n 's/^\([^:]*\): [0-9]* train.*/\1/p' "$run.log" | head -1)
        pips=-
        if [ -f "$run/checkpoint.ckpt" ] && [ -n "$data" ]; then
            p0=$(date +%s.%N)
            "$petal" predict "$run" "$data" --split val --replicas "$R" > "$run.csv" 2>/dev/null || true
            p1=$(date +%s.%N)
            n=$(($(wc -l < "$run.csv") - 1))
            pips=$(/usr/bin/python3 -c "print('%.1f' % ($n / ($p1 - $p0)))")
        fi
        # shellcheck disable=SC2086 # figs is two words
        printf '%-12s %5s %3s | %8s %10s %9s %10s | %11s\n' "$m" "$s" "$R" $figs \
            "$((rss / 1024))" "$rec" "$pips"
    done
done
