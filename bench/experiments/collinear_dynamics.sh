#!/usr/bin/env bash
# Issue #16's question on the collinear problem: "passes to issue #15's accuracy target, ld
# against hmc2 under the same preconditioner, on a collinear one-hot problem (blocks +
# intercept): does momentum mix the prior-bounded directions faster, and by how much?"
#
# Results: docs/notes/2026-11-26-dynamics.md ("Momentum and the prior-bounded directions").
#
# Settings (environment; bench/common.sh has AGLD, BUILD, DATA_DIR):
#   DIR=$DATA_DIR/collinear   the data and the runs: the same files as collinear_check.sh's,
#                             so either script reuses the other's data. Steps whose files exist
#                             are not redone: delete DIR/dynamics to rerun the samplers.
#   THREADS=1                 `agld sample --threads` (the draws do not depend on it)
#   EPOCHS="5 10 20 40"       the run lengths
#   SPARSE_ORACLE=$BUILD/sparse_oracle   required: the exact posterior
#   EPOCHS=5 bench/experiments/collinear_dynamics.sh
#
# Data (bench/experiments/collinear_check.sh's steps 1-3, the full-coding variant only):
#  1. bench/onehot_linear.py 1100000 1 --weights planted.csv > full.svm: five one-hot blocks
#     (10, 50, 300, 3000, 8000 levels) and four numeric columns, no --reference.
#  2. collinear_check.sh's split: 100,000 test rows (random.Random(1)), the other 1,000,000
#     in full-train.svm (full-test.svm is written too, but not used here).
#  3. `agld convert full-train.svm` (defaults: shuffled, seed 0), and its exact posterior:
#     `sparse_oracle full-train.agld - --intercept --out exact-full.npy`.
# Runs: `agld sample --model linear --intercept --seed 0 --checkpoint-every off` (4 chains,
# diag, default step), --epochs E for E in EPOCHS, three dynamics with the same snapshot-access
# (the default method's, read back from config.json):
#  - ld: the default method (ptu-ca);
#  - hmc2: METHOD-hmc2 at its default friction (1/h);
#  - hmc2 low friction: METHOD-hmc2 --friction 0.3/h, h the step the default hmc2 run of the
#    same length resolved (config.json `step`).
# Every run tracks features 1-10, 11, 61, 361, 3361 and the intercept (every period level and
# the other blocks' first, Zipf-commonest, levels: the default --track plus four; tracking does
# not change the chains).
# Printed, by bench/experiments/prior_bounded.py: per run, the data passes read (metrics.csv's
# last `passes`: every row each chain read, the preconditioner's sample and refreshes included),
# the wall seconds of `agld sample`, the share of coordinates within #15's target (mean within
# 0.1 exact sd, sd within 10 %) overall and by feature-frequency class
# (bench/coordinate_classes.py), and the prior-bounded directions: the intercept and each
# block's commonest level (by training rows), their mean error in exact sds, sd ratio, online
# split-R-hat (diagnostics.npy) and rank-normalized R-hat (`agld summary --json`); the largest
# online R-hat over every coordinate, and whether the run warned that the chains have not mixed.
# Needs python3 (no numpy).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=$(cd "$here/.." && pwd)
source "$bench/common.sh"
no_args "$@"
need_agld
need_cmd python3
ORACLE=${SPARSE_ORACLE:-$(need_tool sparse_oracle)}
DIR=$(abs_path "${DIR:-$DATA_DIR/collinear}")
THREADS=${THREADS:-1}
EPOCHS=${EPOCHS:-5 10 20 40}
ROWS=1100000 TEST=100000 SEED=1
mkdir -p "$DIR/dynamics"
cd "$DIR"

# 1. data
if [[ ! -f full.svm ]]; then
  python3 "$bench/onehot_linear.py" $ROWS $SEED --weights planted.csv > full.svm.part
  mv full.svm.part full.svm
fi
# 2. the split (collinear_check.sh's rows)
if [[ ! -f full-train.svm || ! -f full-test.svm ]]; then
  python3 - $ROWS $TEST <<'PY'
import random, sys
rows, test = int(sys.argv[1]), int(sys.argv[2])
held = bytearray(rows)
for t in random.Random(1).sample(range(rows), test):
    held[t] = 1
with open("full.svm") as src, open("full-train.svm.part", "w") as tr, open("full-test.svm.part", "w") as te:
    n = 0
    for n, line in enumerate(src, 1):
        (te if held[n - 1] else tr).write(line)
    assert n == rows, n
PY
  mv full-train.svm.part full-train.svm
  mv full-test.svm.part full-test.svm
fi
# 3. the training store and its exact posterior
[[ -f full-train.agld ]] || "$AGLD" convert -q full-train.svm -o full-train.agld
if [[ ! -f exact-full.npy ]]; then
  "$ORACLE" full-train.agld - --intercept --out exact-full.npy.part > exact-full.oracle.txt
  mv exact-full.npy.part exact-full.npy
fi

# 4. runs
run() {  # name epochs extra...
  local name=$1 epochs=$2; shift 2
  local out=dynamics/$name-$epochs
  [[ -f $out/metrics.csv && -f $out.summary.json ]] && return
  rm -rf "$out"
  local t0 t1
  t0=$(date +%s.%N)
  "$AGLD" sample --train full-train.agld --model linear --intercept --seed 0 --epochs "$epochs" \
    --threads "$THREADS" --checkpoint-every off --track 1-10 11 61 361 3361 intercept \
    --out "$out" "$@" > "$out.stdout" 2> "$out.stderr"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' > "$out.wall"
  "$AGLD" summary "$out" > "$out.summary"
  "$AGLD" summary --json "$out" > "$out.summary.json"
}
cfg() {  # run-dir key
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1] + "/config.json"))[sys.argv[2]])' "$1" "$2"
}
for e in $EPOCHS; do
  run ld "$e"
  method=$(cfg "dynamics/ld-$e" method)
  method=${method%-ld}
  run hmc2 "$e" --method "$method-hmc2"
  h=$(cfg "dynamics/hmc2-$e" step)
  friction=$(python3 -c "import sys; print(repr(0.3 / float(sys.argv[1])))" "$h")
  run hmc2-f0.3 "$e" --method "$method-hmc2" --friction "$friction"
done

# 5. the tables
runs=()
for e in $EPOCHS; do
  for name in ld hmc2 hmc2-f0.3; do
    runs+=("dynamics/$name-$e")
  done
done
for r in "${runs[@]}"; do
  [[ -f $r.classes ]] || python3 "$bench/coordinate_classes.py" full-train.svm exact-full.npy "$r" > "$r.classes"
done
python3 "$here/prior_bounded.py" full-train.svm exact-full.npy "${runs[@]}"
