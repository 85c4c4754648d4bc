#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tests/fuzz/long-run.sh [-t SECONDS] [-j JOBS] [-b BUILDDIR] [TARGET...]
#
# Runs libFuzzer targets for longer than CI's smoke run (.ci/run: 15 s
# each) and prints, per target, the executions, their rate, the coverage
# when the corpus was loaded and at the end, the inputs added to the grown
# corpus (on a first run the seeds count too), and the crashes. Defaults: 600 s per target, 2 at a time (libFuzzer uses
# one CPU), every target of BUILDDIR (build-fuzz, set up with clang and
# -Dfuzzing=true when missing). Each target starts from its seed corpus
# (tests/*/corpus/NAME) and keeps what it grows in BUILDDIR/long-run/NAME,
# outside the source tree, so the next run starts from there; crash
# reproducers go to BUILDDIR/long-run/NAME-crash-*. Exits 1 when any
# target crashed, timed out or ran out of memory.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=600 jobs=2 build=$top/build-fuzz
while getopts "t:j:b:h" o; do
        case $o in
        t) seconds=$OPTARG ;;
        j) jobs=$OPTARG ;;
        b) build=$(realpath -m "$OPTARG") ;;
        *) sed -n '4,16s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 2 ;;
        esac
done
shift $((OPTIND - 1))

if [ ! -f "$build/build.ninja" ]; then
        CC=clang meson setup "$build" "$top" -Dfuzzing=true -Dwerror=true >/dev/null
fi
ninja -C "$build" >/dev/null
out=$build/long-run
mkdir -p "$out"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
        mapfile -t targets < <(find "$build/tests/fuzz" -maxdepth 1 -type f -name 'fuzz-*' -perm -u+x -printf '%f\n' | sort)
fi
[ ${#targets[@]} -gt 0 ] || { echo "long-run.sh: no fuzz target in $build/tests/fuzz" >&2; exit 1; }

run_one() {
        local name=$1 exe=$build/tests/fuzz/$1 corpus=$out/$1 seeds
        [ -x "$exe" ] || { echo "no such target: $name" >"$out/$name.log"; echo failed >"$out/$name.result"; return; }
        mkdir -p "$corpus"
        seeds=$(find "$top/tests" -type d -path "*/corpus/$name" | head -1)
        # The grown corpus first, the seeds (read-only) second: new inputs go to the first.
        if "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                -artifact_prefix="$out/$name-crash-" "$corpus" ${seeds:+"$seeds"} >"$out/$name.log" 2>&1; then
                echo ok >"$out/$name.result"
        else
                echo failed >"$out/$name.result"
        fi
}

echo "long-run.sh: ${#targets[@]} targets, $seconds s each, $jobs at a time; logs and corpora in $out"
for t in "${targets[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
        run_one "$t" &
done
wait

failed=0
printf '%-20s %12s %9s %15s %9s %s\n' target executions exec/s "cov start->end" "added" result
for t in "${targets[@]}"; do
        log=$out/$t.log
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
        new=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
        cov0=$(grep -Eo 'INITED cov: [0-9]+' "$log" | head -1 | grep -Eo '[0-9]+$' || true)
        cov1=$(grep -Eo '(DONE|pulse|NEW|REDUCE) +cov: [0-9]+' "$log" | tail -1 | grep -Eo '[0-9]+$' || true)
        result=$(cat "$out/$t.result" 2>/dev/null || echo failed)
        if [ "$result" != ok ]; then
                failed=$((failed + 1))
                result="FAILED: $(grep -Em1 'ERROR: libFuzzer|SUMMARY|no such target' "$log" || echo "see $log")"
        fi
        printf '%-20s %12s %9s %15s %9s %s\n' "$t" "${runs:--}" "${rate:--}" "${cov0:--}->${cov1:--}" "${new:--}" "$result"
done
echo "long-run.sh: $((${#targets[@]} - failed)) clean, $failed failed"
[ "$failed" -eq 0 ]
