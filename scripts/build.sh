#!/usr/bin/env bash
# Configures and builds agld in ./build (Release, warnings as errors).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "$@"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DAGLD_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
