#!/usr/bin/env bash
# CI's sanitizer stages (docs/reliability.md), after scripts/test.sh's normal build and suite:
#   asan  build-asan (ASan + UBSan, every error fatal, on the library and the CLI; the test
#         files uninstrumented, which takes 45 % off their compile time and a third off the
#         tests' time: a test's own code is not what ships): the unit and smoke tests (ctest -L;
#         tests/CMakeLists.txt labels them; the stat tests' long runs add nothing that a
#         sanitizer sees); the tests that measure memory skip themselves, and the suites that
#         iterate a cross product of registries take each registry's values once
#         (test_support.hpp, kSanitizedBuild)
#   tsan  build-tsan (TSan): the threading tests of the reader and the sampler
#   fuzz  fuzz/run.sh 60: every libFuzzer target for 60 s (clang; build-fuzz)
#   scripts/sanitize.sh [asan] [tsan] [fuzz]     (default: all three, in that order)
# env: JOBS (build and ctest jobs; default all cores), FUZZ_SECONDS (default 60), CXX_SAN (the
# compiler of asan and tsan; default clang++-14 at -O1, which builds the suite in about half
# g++ -O2's time; the normal build and its -Werror stay g++'s).
# Prints each stage's time; fails at the first stage that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
stages=("$@")
(( ${#stages[@]} )) || stages=(asan tsan fuzz)
jobs="${JOBS:-$(nproc)}"
bash scripts/setup.sh --fuzz
cxx="${CXX_SAN:-$(command -v clang++-14 || command -v g++)}"
flags="-O1 -g1"

# The reader's tests and the sampler's multi-chain tests: the ones whose threads share data;
# the TSan build compiles only their files.
tsan_tests='^(Reader|ReaderBudget|DirectRows|Chains)\.|/(Streams|ChainsInOneRun)\.'
tsan_sources='/tests/(reader/[a-z_]+|sampler/chains)_test\.cpp$'

asan() {
  cmake -S . -B build-asan -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DAGLD_SANITIZE=address,undefined \
    -DAGLD_TEST_FLAGS=-fno-sanitize=address,undefined >/dev/null
  cmake --build build-asan -j"$jobs" --target agld_tests
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -L '^(unit|smoke)$'
}
tsan() {
  cmake -S . -B build-tsan -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DAGLD_SANITIZE=thread -DAGLD_TEST_SOURCES="$tsan_sources" >/dev/null
  cmake --build build-tsan -j"$jobs" --target reader_tests sampler_tests
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp" \
    ctest --test-dir build-tsan --output-on-failure -j"$jobs" -L '^(unit|smoke)$' -R "$tsan_tests"
}
fuzz() {
  JOBS="$jobs" bash fuzz/run.sh "${FUZZ_SECONDS:-60}"
}

for s in "${stages[@]}"; do
  start=$SECONDS
  case "$s" in
    asan|tsan|fuzz) "$s" ;;
    *) echo "sanitize: unknown stage '$s' (asan, tsan, fuzz)" >&2; exit 64 ;;
  esac
  echo "sanitize: stage $s took $((SECONDS - start)) s"
done
