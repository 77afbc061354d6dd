#!/usr/bin/env bash
# The main job: convert the shipped heart_scale dataset into a training store and a held-out
# test store, describe the training store, sample the posterior of a Bayesian logistic
# regression with every default (the method, the step, the preconditioner, the run length, 4
# chains: docs/samplers.md, "Defaults"), and print the summary (tracked coordinates, test log-likelihood,
# time). The run directory is out/heart_scale_run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
mkdir -p out
./build/agld convert datasets/heart_scale.svm -o out/heart_scale.agld --quiet \
  --test-fraction 0.2 --test-output out/heart_scale_test.agld --seed 1
./build/agld info out/heart_scale.agld --verify
echo
./build/agld sample --train out/heart_scale.agld --test out/heart_scale_test.agld \
  --model logistic --intercept --seed 1 \
  --out out/heart_scale_run
