#!/usr/bin/env bash
# Configures and builds agld in ./build (Release, warnings as errors; the test files at -O1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "$@"
# The test files at -O1 (AGLD_TEST_FLAGS, after Release's -O3; the library and the CLI they
# run keep -O3): a third less of their compile time, about 80 s of the build's wall time on 2
# cores, for about 20 s more of the suite (docs/notes/2026-11-29-ci-time.md).
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DAGLD_WERROR=ON -DAGLD_TEST_FLAGS=-O1 >/dev/null
cmake --build build -j"$(nproc)"
