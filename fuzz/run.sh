#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and gives each SECONDS (default 60) of one
# core: all of them at once, for SECONDS x targets / JOBS of wall time. New inputs go to
# $WORK/corpus/TARGET (the committed seeds in fuzz/corpus/TARGET are read, not written); a
# crash, leak, sanitizer report or timeout is saved to $WORK/artifacts/ and makes the script
# fail after every target has run.
#   fuzz/run.sh [SECONDS]      env: BUILD (default build-fuzz), WORK (default BUILD/work),
#                              JOBS (build jobs and cores the targets share; default all cores),
#                              TARGETS (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build="${BUILD:-build-fuzz}"
work="${WORK:-$build/work}"
jobs="${JOBS:-$(nproc)}"
targets=(${TARGETS:-libsvm convert store summary checkpoint})
cxx="${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++)}"
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DAGLD_FUZZ=ON -DAGLD_BUILD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" >/dev/null
cmake --build "$build" -j"$jobs" --target "${targets[@]/%/_fuzz}"
mkdir -p "$work/artifacts"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# libFuzzer runs one process on one core: the targets run at once, each for its share of
# JOBS cores (5 targets on 2 cores: 150 s, where runs of 2 at a time took 3 rounds, 180 s).
wall=$(( (seconds * ${#targets[@]} + jobs - 1) / jobs ))
(( wall >= seconds )) || wall=$seconds
fuzz_one() {
  local t="$1" log="$work/$1.log"
  mkdir -p "$work/corpus/$t"
  echo "fuzz: $t for ${wall}s of wall time (log $log)"
  # -timeout: an input that takes 10 s is a hang; -rss_limit_mb: 2 GB is out of memory.
  "$build/fuzz/${t}_fuzz" -max_total_time="$wall" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/artifacts/${t}-" \
    "$work/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1
}
declare -A pid_of
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  pid_of[$t]=$!
done
status=0
summary=()
for t in "${targets[@]}"; do
  log="$work/$t.log"
  if wait "${pid_of[$t]}"; then
    result=ok
  else
    result="FAILED (see $log and $work/artifacts/)"
    status=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || true)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)
  summary+=("$t: ${execs:-?} executions, ${cov:-no cov line}, $result")
done
printf 'fuzz: %s\n' "${summary[@]}"
exit "$status"
