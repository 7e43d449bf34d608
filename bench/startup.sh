#!/bin/bash
# Start-up of a training run: the seconds from the command to its train event file
# appearing (written once the replicas are ready), polled every 20 ms. The run is then
# stopped with SIGINT, as q does, and its folder removed. Run it alone on the machine.
#
#   bench/startup.sh MODEL SIZE [REPS]       e.g. bench/startup.sh mobilenetv2 512 3
#   PETAL=path/to/petal-tui bench/startup.sh ../shared/data/weights/mobilenetv2-12-int8.onnx 512
#
# 2 replicas x 16 on the demo data; prints one line per run and the memory line of the log.
set -u
here=$(dirname "$0")
petal=${PETAL:-$here/../build/petal-tui}
model=$1 size=$2 reps=${3:-1}
for _ in $(seq "$reps"); do
    run=$(mktemp -d /tmp/startup-XXXXXX)
    rmdir "$run"
    t0=$(date +%s.%N) t1=
    timeout -s INT 120 "$petal" --headless --model "$model" --image-size "$size" \
        --epochs 1 --replicas 2 --batch-per-replica 16 --out "$run" > "$run.log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        if ls "$run"/train/events* > /dev/null 2>&1; then
            t1=$(date +%s.%N)
            break
        fi
        sleep 0.02
    done
    kill -INT "$pid" 2>/dev/null
    wait "$pid"
    if [ -n "$t1" ]; then
        /usr/bin/python3 -c "print('%s %s px: start-up %.2f s' % ('$model'.split('/')[-1], $size, $t1 - $t0))"
    else
        echo "$model $size px: no event file (see the log below)"
    fi
    grep -m1 -E 'memory:|error' "$run.log"
    rm -rf "$run" "$run.log"
done
