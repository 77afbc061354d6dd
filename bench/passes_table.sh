#!/usr/bin/env bash
# bench/passes_table.sh [BUILD_DIR] [DATA_DIR] [VARIANT...]
#
# Issue #15's passes table: how much of the exact oracle each variant gets within target (mean
# within 0.1 posterior sd and sd within 10 %) for a given number of data passes, counted as
# the run reads them (the preconditioner's sample, snapshot refreshes, a mode search included).
# The oracle: bench/onehot_linear.py 1000000 1 --reference (dummy coding, 11,365 coordinates
# with --intercept), converted by default, its exact posterior from bench/sparse_oracle --out.
# DATA_DIR (default /tmp/agld-oracle) holds onehot_ref.svm, onehot_ref.agld and
# onehot_ref_exact.npy, made here if missing (about 2 minutes). A VARIANT is NAME=FLAGS, FLAGS
# added to its runs (a branch's variant: run the script again with that branch's BUILD_DIR);
# default: none and diag. Every run: the default method unless FLAGS give one, 4 chains, seed
# 0, linear, --intercept, --epochs 5, 10 and 20 (passes of minibatches; ptu and tmu read about
# two passes for each).
# Prints one line per run: variant, epochs, passes read, within target, wall seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
data=${2:-/tmp/agld-oracle}
shift $(( $# >= 2 ? 2 : $# ))
variants=("$@")
(( ${#variants[@]} )) || variants=("none=--precondition none" "diag=--precondition diag")
mkdir -p "$data"
if [[ ! -f "$data/onehot_ref_exact.npy" ]]; then
  python3 "$here/onehot_linear.py" 1000000 1 --reference > "$data/onehot_ref.svm"
  "$build/agld" convert "$data/onehot_ref.svm" -o "$data/onehot_ref.agld" -q
  "$build/sparse_oracle" "$data/onehot_ref.agld" - --intercept --out "$data/onehot_ref_exact.npy" > /dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-12s %6s %8s %8s %7s\n' variant epochs passes target wall_s
for epochs in 5 10 20; do
  for v in "${variants[@]}"; do
    name=${v%%=*}; flags=${v#*=}
    out="$tmp/$name-$epochs"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$build/agld" sample --train "$data/onehot_ref.agld" --model linear --intercept --epochs "$epochs" \
      --seed 0 --out "$out" -q $flags 2> /dev/null
    t1=$(date +%s.%N)
    passes=$(tail -1 "$out/metrics.csv" | cut -d, -f4)
    target=$(python3 "$here/coordinate_classes.py" "$data/onehot_ref.svm" "$data/onehot_ref_exact.npy" "$out" | tail -1 | awk '{print $NF}')
    printf '%-12s %6s %8.2f %8s %7.1f\n' "$name" "$epochs" "$passes" "$target" "$(echo "$t1 - $t0" | bc)"
  done
done
