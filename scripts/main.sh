#!/usr/bin/env bash
# The main job: convert the shipped heart_scale dataset into a store and describe it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
mkdir -p out
./build/agld convert datasets/heart_scale.svm -o out/heart_scale.agld --quiet
./build/agld info out/heart_scale.agld --verify
