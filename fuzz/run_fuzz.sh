#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs each
# one, at low priority, to FUZZ_RUNS executions (default 1,000,000) or FUZZ_SECONDS (default
# 900 s), whichever comes first; then prints a table: target, executions, coverage (libFuzzer's
# "cov", edges reached), features, corpus size, seconds, findings.
#
# A finding (crash-*, leak-*, timeout-*, oom-* under build-fuzz/findings/TARGET/) fails the
# run: fix the reader, then copy the input into fuzz/corpus/TARGET/ as a regression input
# (the normal test suite replays that folder). New inputs a campaign discovers stay in
# build-fuzz/corpus/TARGET/ and seed the next campaign.
#
# usage: fuzz/run_fuzz.sh [TARGET...]     (default: every fuzz/fuzz_*.cpp)
# env:   FUZZ_RUNS FUZZ_SECONDS FUZZ_BUILD (build folder) FUZZ_JOBS (build jobs) FUZZ_NO_BUILD=1
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-$src/build-fuzz}
runs=${FUZZ_RUNS:-1000000}
seconds=${FUZZ_SECONDS:-900}

if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing: run packaging/install-fuzz-deps.sh" >&2; exit 1; }
  CC=clang CXX=clang++ cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCROSSLAB_FUZZ=ON -DCROSSLAB_BUILD_GUI=OFF -DCROSSLAB_BUILD_TESTS=OFF -DCROSSLAB_BUILD_BENCH=OFF >/dev/null
  nice -n 19 cmake --build "$build" --target fuzz_all -j "${FUZZ_JOBS:-2}"
fi

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in "$src"/fuzz/fuzz_*.cpp; do
    n=$(basename "$f" .cpp)
    targets+=("${n#fuzz_}")
  done
fi

mkdir -p "$build/logs"
rows=()
total_findings=0
for t in "${targets[@]}"; do
  exe="$build/fuzz/fuzz_$t"
  [ -x "$exe" ] || { echo "fuzz: no program $exe" >&2; exit 1; }
  work="$build/corpus/$t" findings="$build/findings/$t" log="$build/logs/$t.log"
  mkdir -p "$work" "$findings"
  echo "fuzz: $t (up to $runs executions or $seconds s) ..." >&2
  start=$(date +%s)
  # The first folder receives new inputs; the seeds in the source tree stay as they are.
  seeds=()
  [ -d "$src/fuzz/corpus/$t" ] && seeds=("$src/fuzz/corpus/$t")
  nice -n 19 "$exe" -runs="$runs" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2560 \
    -print_final_stats=1 -artifact_prefix="$findings/" "$work" "${seeds[@]}" >"$log" 2>&1 || true
  elapsed=$(( $(date +%s) - start ))
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(grep -o 'cov: [0-9]*' <<<"$last" | awk '{print $2}' || true)
  ft=$(grep -o 'ft: [0-9]*' <<<"$last" | awk '{print $2}' || true)
  corpus=$(find "$work" -type f | wc -l)
  found=$(find "$findings" -type f | wc -l)
  total_findings=$((total_findings + found))
  rows+=("$(printf '%-20s %12s %8s %8s %8s %8s %9s' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$corpus" "$elapsed" "$found")")
done

printf '%-20s %12s %8s %8s %8s %8s %9s\n' target executions coverage features corpus seconds findings
printf '%s\n' "${rows[@]}"
if [ "$total_findings" -gt 0 ]; then
  echo "fuzz: $total_findings finding(s): see $build/findings/ and the logs in $build/logs/" >&2
  exit 1
fi
