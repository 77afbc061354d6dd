#!/usr/bin/env bash
# Builds agld and runs the default test suite: every test but those labelled "long" (the
# labels unit, stat, smoke and long: tests/CMakeLists.txt; run the long ones with
# ctest --test-dir build -L long).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" -LE long
