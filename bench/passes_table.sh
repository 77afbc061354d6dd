#!/usr/bin/env bash
# Issue #15's passes table: how much of an exact oracle each variant gets within target (mean
# within 0.1 posterior sd and sd within 10 %) for a given number of data passes, counted as
# the run reads them (the preconditioner's sample, snapshot refreshes, a mode search included).
# The oracle (ORACLE=onehot): bench/onehot_linear.py 1000000 1 --reference (dummy coding, 11,365
# coordinates with --intercept), converted by default, its exact posterior from sparse_oracle
# --out; ORACLE=lowd: bench/onehot_linear.py 2000000 3 --features 500 --reference, 501
# coordinates (docs/notes/2026-11-26-step-low-dimensional-oracle.md). Every run: the default
# method unless a variant's flags give one, 4 chains, seed SEED, linear, --intercept, --epochs E
# (passes of minibatches; ptu and tmu read about two passes for each). Prints one line a run:
# variant, epochs, passes read, within target (bench/coordinate_classes.py), wall seconds.
# Results: docs/notes/2026-11-25-preconditioning.md, 2026-11-26-visit-rule.md,
# 2026-11-27-rao-blackwell.md.
#
# Settings (environment; bench/common.sh has AGLD, BUILD, ORACLE_DIR):
#   ORACLE=onehot    onehot or lowd
#   VARIANTS="none=--precondition none;diag=--precondition diag"
#                    NAME=FLAGS entries separated by ';', FLAGS added to the variant's runs (a
#                    branch's variant: run the script again with that branch's AGLD)
#   EPOCHS="5 10 20" the run lengths; "default" in it runs the default length
#   SEED=0           seeds every run
# The oracle's files, made here if missing (about 2 minutes for onehot, 3 for lowd):
# $ORACLE_DIR/onehot_ref.{svm,agld} and onehot_ref_exact.npy, or lowd.{svm,agld}, lowd_exact.npy.
# Runs go to a temporary directory, removed at the end.
#   VARIANTS="default=" EPOCHS=default bench/passes_table.sh
#   ORACLE=lowd SEED=1 VARIANTS="rr=--method ptu-rr" bench/passes_table.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
no_args "$@"
need_agld
need_cmd python3 bc
sparse_oracle=$(need_tool sparse_oracle)
IFS=';' read -r -a variants <<< "${VARIANTS:-none=--precondition none;diag=--precondition diag}"
case ${ORACLE:-onehot} in
  onehot) name=onehot_ref; gen=(1000000 1 --reference) ;;
  lowd) name=lowd; gen=(2000000 3 --features 500 --reference) ;;
  *) die "ORACLE is onehot or lowd" ;;
esac
epochs_list=${EPOCHS:-5 10 20}
seed=${SEED:-0}
data=$ORACLE_DIR
mkdir -p "$data"
if [[ ! -f "$data/${name}_exact.npy" ]]; then
  python3 "$here/onehot_linear.py" "${gen[@]}" > "$data/$name.svm"
  "$AGLD" convert "$data/$name.svm" -o "$data/$name.agld" -q
  "$sparse_oracle" "$data/$name.agld" - --intercept --out "$data/${name}_exact.npy" > /dev/null
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
    "$AGLD" sample --train "$data/$name.agld" --model linear --intercept "${length[@]}" \
      --seed "$seed" --out "$out" -q $flags 2> /dev/null
    t1=$(date +%s.%N)
    passes=$(tail -1 "$out/metrics.csv" | cut -d, -f4)
    target=$(python3 "$here/coordinate_classes.py" "$data/$name.svm" "$data/${name}_exact.npy" "$out" | tail -1 | awk '{print $NF}')
    printf '%-12s %7s %8.2f %8s %7.1f\n' "$variant" "$epochs" "$passes" "$target" "$(echo "$t1 - $t0" | bc)"
  done
done
