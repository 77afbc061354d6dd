#!/usr/bin/env bash
# Chunk size: compression ratio, conversion CPU time and single-thread read (verify) speed
# for several --chunk-bytes, on criteo- and kdd12-shaped data (rows in the generated order,
# --keep-order, as first measured). Medians of RUNS runs. Results:
# docs/notes/2026-11-22-chunk-encoding-and-size.md (docs/design.md, "Chunk size").
#
# Settings (environment; bench/common.sh has AGLD, BUILD, DATA_DIR):
#   ROWS=1000000   criteo-shaped rows; the kdd12-shaped data has 3 x ROWS
#   RUNS=3         runs of each measurement (medians)
# Data: $DATA_DIR/criteo-$ROWS.svm, $DATA_DIR/kdd12-$((3 * ROWS)).svm (kept), cs.agld (removed).
#   ROWS=100000 RUNS=1 bench/chunk_size_bench.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
no_args "$@"
need_agld
need_cmd /usr/bin/time /usr/bin/python3
ROWS=${ROWS:-1000000}
RUNS=${RUNS:-3}
DIR=$DATA_DIR
mkdir -p "$DIR"
CRITEO=$DIR/criteo-$ROWS.svm
KDD=$DIR/kdd12-$((3 * ROWS)).svm
[[ -f $CRITEO ]] || "$AGLD" gen --shape criteo --rows "$ROWS" --seed 1 -o "$CRITEO" --quiet
[[ -f $KDD ]] || "$AGLD" gen --shape kdd12 --rows $((3 * ROWS)) --seed 1 -o "$KDD" --quiet
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
