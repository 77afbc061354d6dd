#!/usr/bin/env bash
# Chunk size: compression ratio, conversion CPU time and single-thread read (verify) speed
# for several --chunk-bytes, on criteo- and kdd12-shaped data (rows in the generated order,
# --keep-order, as measured in docs/design.md). Medians of RUNS runs.
#   bench/chunk_size_bench.sh [ROWS]      (default 1000000 criteo rows, 3000000 kdd12 rows)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
bash scripts/build.sh --bench >/dev/null
RUNS=${RUNS:-3}
DIR=${AGLD_BENCH_DIR:-$ROOT/build/bench-data}
mkdir -p "$DIR"
AGLD=$ROOT/build/agld
CRITEO=$DIR/criteo-${1:-1000000}.svm
KDD=$DIR/kdd12-$((3 * ${1:-1000000})).svm
[[ -f $CRITEO ]] || "$AGLD" gen --shape criteo --rows "${1:-1000000}" --seed 1 -o "$CRITEO" --quiet
[[ -f $KDD ]] || "$AGLD" gen --shape kdd12 --rows $((3 * ${1:-1000000})) --seed 1 -o "$KDD" --quiet
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "%-8s %-10s %8s %10s %12s %14s\n" shape chunk chunks ratio "convert cpu" "verify-1t raw"
for f in "$CRITEO" "$KDD"; do
  shape=$(basename "$f" | cut -d- -f1)
  for cb in 256K 1M 4M 16M; do
    cpu=$(for i in $(seq "$RUNS"); do /usr/bin/time -f "%U %S" "$AGLD" convert "$f" -o "$DIR/cs.agld" \
          --threads 1 -q --keep-order --chunk-bytes "$cb" --chunk-rows 10000000 2>&1 | awk '{print $1 + $2}'; done | median)
    read -r chunks ratio < <("$AGLD" info "$DIR/cs.agld" --json | /usr/bin/python3 -c \
      "import json,sys; j=json.load(sys.stdin); print(j['chunks'], round(j['compression_ratio'], 2))")
    vr=$(for i in $(seq "$RUNS"); do "$AGLD" info "$DIR/cs.agld" --verify --threads 1 --json | /usr/bin/python3 -c \
          "import json,sys; print(json.load(sys.stdin)['verify']['raw_mb_per_s'])"; done | median)
    printf "%-8s %-10s %8s %10s %11.2fs %10.0f MB/s\n" "$shape" "$cb" "$chunks" "$ratio" "$cpu" "$vr"
  done
done
rm -f "$DIR/cs.agld"
