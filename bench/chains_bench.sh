#!/usr/bin/env bash
# What K chains cost against one (issue #14): wall time, CPU and bytes read of the default
# run's first stage (20 passes of the data a chain; --until-mixed off), K = 1 and K = 4, for
#   tmu-ca             (every chain steps on the same batches: read once),
#   tmu-br             (a random order: each chain reads its own sequence),
#   tmu-br --share-batches (every chain the first chain's sequence),
# with the store kept in memory, and out of core (the training reader's share a quarter of
# the store: the run's own state, from an in-memory run's config.json, plus S/4 and 64 MiB for
# the process and the other readers). Runs are interleaved, REPS of each, every run started
# with the page cache dropped (when root); medians. Logistic with intercept on criteo-shaped
# rows. Results: docs/notes/2026-11-25-chains-cost.md.
#
# Settings (environment; bench/common.sh has AGLD, BUILD, DATA_DIR):
#   ROWS=2000000   criteo-shaped rows generated (10 % held out)
#   REPS=3         interleaved repetitions of each case
# Data and runs: $DATA_DIR/chains-$ROWS (criteo.svm, train.agld, test.agld, run/, chains.csv).
#   REPS=1 ROWS=200000 bench/chains_bench.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
no_args "$@"
need_agld
need_cmd /usr/bin/time python3
ROWS=${ROWS:-2000000}
REPS=${REPS:-3}
DIR=$DATA_DIR/chains-$ROWS
mkdir -p "$DIR"
cd "$ROOT"
TEXT=$DIR/criteo.svm
[[ -f $TEXT ]] || "$AGLD" gen --shape criteo --rows "$ROWS" --seed 3 -o "$TEXT" -q
[[ -f $DIR/train.agld ]] || "$AGLD" convert "$TEXT" -o "$DIR/train.agld" -q --seed 3 \
  --test-fraction 0.1 --test-output "$DIR/test.agld"
STORE=$(stat -c %s "$DIR/train.agld")

run() {  # name chains budget extra... -> one result line
  local name=$1 k=$2 budget=$3; shift 3
  sync; echo 1 > /proc/sys/vm/drop_caches 2>/dev/null || true
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S %M" -o "$DIR/time.txt" "$AGLD" sample --train "$DIR/train.agld" --test "$DIR/test.agld" \
    --model logistic --intercept --chains "$k" --memory "$budget" --seed 1 -q --until-mixed off --out "$DIR/run" "$@" 2>/dev/null
  t1=$(date +%s.%N)
  python3 - "$name" "$k" "$t0" "$t1" "$DIR" <<'PY'
import csv, json, sys
name, k, t0, t1, d = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
user, sys_, rss = open(f"{d}/time.txt").read().split()
last = list(csv.DictReader(open(f"{d}/run/metrics.csv")))[-1]
cfg = json.load(open(f"{d}/run/config.json"))
print(name, k, f"{t1 - t0:.2f}", f"{float(user) + float(sys_):.2f}", last["bytes_read"], last["passes"],
      last["test_loglik"], rss, cfg["state_bytes"], cfg["reader_bytes"], cfg["diagnostics"]["max_rhat"], sep=",")
PY
}

OUT=$DIR/chains.csv
echo "case,where,chains,wall_s,cpu_s,bytes_read,passes,test_loglik,peak_rss_kb,state_bytes,reader_bytes,max_rhat" > "$OUT"
declare -A BUDGET
for r in $(seq "$REPS"); do
  for k in 1 4; do
    for m in ca br br-shared; do
      extra=(--method "tmu-${m%-shared}")
      [[ $m == br-shared ]] && extra+=(--share-batches)
      run "$m,mem" "$k" 8G "${extra[@]}" >> "$OUT"
      key=$m-$k
      if [[ -z ${BUDGET[$key]:-} ]]; then
        state=$(python3 -c "import json; print(json.load(open('$DIR/run/config.json'))['state_bytes'])")
        BUDGET[$key]=$((state + STORE / 4 + (64 << 20)))
      fi
      run "$m,ooc" "$k" "${BUDGET[$key]}" "${extra[@]}" >> "$OUT"
    done
  done
done
echo "training store: $((STORE >> 20)) MiB"
python3 - "$OUT" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
groups = {}
for r in rows:
    groups.setdefault((r["case"], r["where"], r["chains"]), []).append(r)
print(f"{'case':10} {'where':5} {'K':>2} {'wall s':>8} {'CPU s':>8} {'MB read':>9} {'passes':>7} {'loglik':>9} {'RSS MB':>7} {'reader MB':>9} {'max R-hat':>9}")
for (case, where, k), rs in sorted(groups.items()):
    med = lambda f: statistics.median(float(r[f]) for r in rs)
    print(f"{case:10} {where:5} {k:>2} {med('wall_s'):8.1f} {med('cpu_s'):8.1f} {med('bytes_read') / 1e6:9.0f} {med('passes'):7.1f} "
          f"{med('test_loglik'):9.5f} {med('peak_rss_kb') / 1024:7.0f} {med('reader_bytes') / 2**20:9.0f} {med('max_rhat'):9.3g}")
PY
