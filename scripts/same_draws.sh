#!/usr/bin/env bash
# Same draws: runs `agld sample` with every method (snapshot x access x dynamics) and
# `agld optimize` on small stores with fixed seeds under two agld binaries, and compares their
# outputs byte for byte: posterior.npy, diagnostics.npy, the draws files (their comment lines
# aside, which name the build) and mode.npy. A change that only restructures the code must
# leave them all equal.
#   BASE=/path/to/old/agld scripts/same_draws.sh      env: NEW (default build/agld),
#   WORK (default a temporary directory), EPOCHS (default 60), METHODS (default: all 96)
# Exits 1, listing the runs that differ, if any does; 0 if all are equal.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${BASE:?BASE=the agld binary to compare against}"
new="${NEW:-build/agld}"
work="${WORK:-$(mktemp -d)}"
epochs="${EPOCHS:-60}"
mkdir -p "$work"
methods=(${METHODS:-})
if (( ${#methods[@]} == 0 )); then
  for d in ld hmc hmc2 svrhmc; do
    for s in none full ptu ptu+ ppu tmu; do
      for a in ca rr ra br; do methods+=("$s-$a$([[ $d == ld ]] || echo "-$d")"); done
    done
  done
fi
# The stores, converted once by BASE: heart_scale as binary and as regression labels, and
# 3,000 sparse rows of 20 one-hot fields of 50 levels and 3 numeric features (d = 1,003), with
# a test split (the predictive).
"$base" convert datasets/heart_scale.svm -o "$work/hs.agld" 2>/dev/null
"$base" convert datasets/heart_scale.svm -o "$work/hsr.agld" --task regression 2>/dev/null
awk 'BEGIN { srand(5)
  for (f = 0; f < 20; ++f) for (l = 0; l < 50; ++l) w[f * 50 + l] = 2 * rand() - 1
  for (r = 0; r < 3000; ++r) {
    line = ""; m = -0.5
    for (f = 0; f < 20; ++f) { l = int(50 * rand() * rand()); j = f * 50 + l; m += w[j]; line = line " " j + 1 ":1" }
    for (k = 0; k < 3; ++k) { v = rand() + rand() - 1; m += v; line = line " " 1001 + k ":" v }
    print (rand() < 1 / (1 + exp(-m)) ? 1 : 0) line
  } }' >"$work/oh.svm"
"$base" convert "$work/oh.svm" -o "$work/oh.agld" --test-fraction 0.2 --test-output "$work/oh-test.agld" 2>/dev/null
cases=(
  "hs|--train $work/hs.agld --model logistic --intercept"
  "hsr|--train $work/hsr.agld --model linear"
  "oh|--train $work/oh.agld --test $work/oh-test.agld --model logistic --intercept"
)
differ=()
failed_alike=0
compare() {  # compare NAME DIR_A DIR_B FILES...: a run that failed under both must fail alike
  local name="$1" a="$2" b="$3"
  shift 3
  if [[ ! -e "$a/$1" && ! -e "$b/$1" ]]; then
    if cmp -s "$a.log" "$b.log"; then ((++failed_alike)); else differ+=("$name: the failures differ"); fi
    return
  fi
  for f in "$@"; do
    local same=0
    if [[ -f "$a/$f" && -f "$b/$f" ]]; then
      if [[ "$f" == *.csv ]]; then
        cmp -s <(grep -v '^#' "$a/$f") <(grep -v '^#' "$b/$f") && same=1
      else
        cmp -s "$a/$f" "$b/$f" && same=1
      fi
    fi
    ((same)) || differ+=("$name: $f")
  done
}
# both NAME COMMAND ARGS...: runs `agld COMMAND ARGS --out WORK/{base,new}/NAME` under each
# binary (its messages in the .log beside).
both() {
  local name="$1" bin
  shift
  for which in base new; do
    bin=$base
    [[ $which == new ]] && bin=$new
    mkdir -p "$(dirname "$work/$which/$name")"
    rm -rf "${work:?}/$which/$name"
    "$bin" "$@" --out "$work/$which/$name" -q >"$work/$which/$name.log" 2>&1 || true
  done
}
runs=0
draws=(posterior.npy diagnostics.npy draws_1.csv draws_2.csv draws_3.csv draws_4.csv)
for c in "${cases[@]}"; do
  tag="${c%%|*}"
  read -r -a args <<<"${c#*|}"
  for m in "${methods[@]}"; do
    both "$tag/$m" sample "${args[@]}" --method "$m" --seed 11 --threads 1 --epochs "$epochs"
    compare "sample $tag $m" "$work/base/$tag/$m" "$work/new/$tag/$m" "${draws[@]}"
    ((++runs))
  done
  both "$tag/optimize" optimize "${args[@]}" --seed 11
  compare "optimize $tag" "$work/base/$tag/optimize" "$work/new/$tag/optimize" mode.npy
  ((++runs))
done
if (( ${#differ[@]} )); then
  printf 'same_draws: differs: %s\n' "${differ[@]}"
  echo "same_draws: ${#differ[@]} outputs differ over $runs runs (work directory $work)"
  exit 1
fi
echo "same_draws: $runs runs, every output byte for byte equal ($failed_alike failed alike under both," \
  "with the same message; work directory $work)"
