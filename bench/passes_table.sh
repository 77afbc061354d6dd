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
# ORACLE=lowd takes the low-dimensional oracle instead (docs/samplers.md, "The step on a
# low-dimensional oracle"): bench/onehot_linear.py 2000000 3 --features 500 --reference, 501
# coordinates, in DATA_DIR as lowd.svm, lowd.agld and lowd_exact.npy (about 3 minutes to make).
# EPOCHS="5 10 20" (the default) lists the run lengths; "default" in it runs the default length.
# SEED (default 0) seeds every run.
# Prints one line per run: variant, epochs, passes read, within target, wall seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
data=${2:-/tmp/agld-oracle}
shift $(( $# >= 2 ? 2 : $# ))
variants=("$@")
(( ${#variants[@]} )) || variants=("none=--precondition none" "diag=--precondition diag")
case ${ORACLE:-onehot} in
  onehot) name=onehot_ref; gen=(1000000 1 --reference) ;;
  lowd) name=lowd; gen=(2000000 3 --features 500 --reference) ;;
  *) echo "ORACLE is onehot or lowd" >&2; exit 64 ;;
esac
epochs_list=${EPOCHS:-5 10 20}
seed=${SEED:-0}
mkdir -p "$data"
if [[ ! -f "$data/${name}_exact.npy" ]]; then
  python3 "$here/onehot_linear.py" "${gen[@]}" > "$data/$name.svm"
  "$build/agld" convert "$data/$name.svm" -o "$data/$name.agld" -q
  "$build/sparse_oracle" "$data/$name.agld" - --intercept --out "$data/${name}_exact.npy" > /dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-12s %7s %8s %8s %7s\n' variant epochs passes target wall_s
for epochs in $epochs_list; do
  length=(--epochs "$epochs")
  [[ $epochs == default ]] && length=()
  for v in "${variants[@]}"; do
    variant=${v%%=*}; flags=${v#*=}
    out="$tmp/$variant-$epochs"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$build/agld" sample --train "$data/$name.agld" --model linear --intercept "${length[@]}" \
      --seed "$seed" --out "$out" -q $flags 2> /dev/null
    t1=$(date +%s.%N)
    passes=$(tail -1 "$out/metrics.csv" | cut -d, -f4)
    target=$(python3 "$here/coordinate_classes.py" "$data/$name.svm" "$data/${name}_exact.npy" "$out" | tail -1 | awk '{print $NF}')
    printf '%-12s %7s %8.2f %8s %7.1f\n' "$variant" "$epochs" "$passes" "$target" "$(echo "$t1 - $t0" | bc)"
  done
done
