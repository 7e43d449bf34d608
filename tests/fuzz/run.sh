#!/bin/sh
# make fuzz: run each libFuzzer harness for SECONDS, one after the other, and print
# a table of what each did.
#
#   sh tests/fuzz/run.sh BUILD SECONDS TARGET...
#
# Each target fuzzes BUILD/corpus/TARGET (a scratch corpus: the committed seeds of
# tests/fuzz/corpus/TARGET are copied in first, and what libFuzzer adds stays there
# for the next run), after running the crash reproducers of tests/fuzz/regress/TARGET.
# One process, no -jobs or -workers. Its output goes to BUILD/logs/TARGET.log; a crash
# leaves its input in BUILD/crashes/TARGET/ and makes this script exit 1 at once,
# naming the reproducer. Nothing is written under tests/. The columns: executions,
# their rate, libFuzzer's final coverage (cov: edges, ft: features), the corpus it
# kept (inputs/bytes), peak memory, and the crash inputs in BUILD/crashes/TARGET.
set -u
build=$1
seconds=$2
shift 2

printf '%-11s %12s %9s %7s %7s %8s %9s %s\n' target execs exec/s cov ft corpus "rss MB" crashes
total=0
for t in "$@"; do
    bin=$build/fuzz/fuzz_$t
    corpus=$build/corpus/$t
    crashes=$build/crashes/$t
    log=$build/logs/$t.log
    mkdir -p "$corpus" "$crashes" "$build/logs"
    if [ -d "tests/fuzz/corpus/$t" ]; then
        cp -p tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null
    fi
    # Paths here are the build folder's and tests/'s: no spaces, so plain words.
    args="-max_total_time=$seconds -print_final_stats=1 -timeout=10 -rss_limit_mb=2048"
    args="$args -artifact_prefix=$crashes/"
    [ -f "tests/fuzz/$t.dict" ] && args="$args -dict=tests/fuzz/$t.dict"
    args="$args $corpus"
    [ -d "tests/fuzz/regress/$t" ] && args="$args tests/fuzz/regress/$t"
    # shellcheck disable=SC2086
    "$bin" $args >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n 1)
    cov=$(printf '%s\n' "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    ft=$(printf '%s\n' "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
    kept=$(printf '%s\n' "$last" | sed -n 's/.* corp: \([0-9]*\/[0-9]*[KMb]*\).*/\1/p')
    found=$(find "$crashes" -type f | wc -l)
    printf '%-11s %12s %9s %7s %7s %8s %9s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
        "${ft:-?}" "${kept:-?}" "${rss:-?}" "$found"
    total=$((total + ${execs:-0}))
    if [ "$rc" -ne 0 ]; then
        unit=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
        echo "fuzz: $t failed (exit $rc); log: $log; reproducer: ${unit:-none written}" >&2
        echo "fuzz: run it again with: $bin ${unit:-}" >&2
        exit 1
    fi
done
echo "total: $total executions, no crash"
