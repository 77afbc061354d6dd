#!/usr/bin/env bash
# The AGLD paper's Figure 3 at this machine's scale: average test log-likelihood of the
# posterior predictive against wall time and against data passes, for tmu-ca, ppu-ca,
# ptu-ca, tmu-ra, sgld and lmc, on criteo-shaped data under a memory budget smaller than
# the training store. One chain a method, as the paper plots them. One CSV (every evaluation
# of every run) and one plot (PNG, gnuplot), and the test log-likelihood of the planted
# weights for comparison. Results: docs/notes/2026-11-23-figure3.md.
#
# Settings (environment; bench/common.sh has AGLD, BUILD, DATA_DIR):
#   ROWS=2000000      criteo-shaped rows generated (10 % held out)
#   BUDGET            --memory of every run, bytes or SIZE (default 7/8 of the training store)
#   EPOCHS=4          --epochs of every method but lmc
#   LMC_ITERS=12      --iterations of lmc
#   TIME_LIMIT=120    seconds a run at most (random access out of core may need far longer)
#   CHUNK=256K        the stores' --chunk-bytes: a quarter of convert's default. A tmu run opens
#                     three readers (training, refresh passes, test set), and each reader's least
#                     share grows with the chunk size (26 MiB each for 1 MiB chunks, the three of
#                     them then more than 7/8 of a 2M-row store once the sampler's state is counted)
# Needs gnuplot (bash scripts/setup.sh --bench). Data, runs, figure3.csv and figure3.png:
# $DATA_DIR/figure3-$ROWS-chunk$CHUNK.
#   ROWS=200000 EPOCHS=1 TIME_LIMIT=20 bench/figure3.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
no_args "$@"
need_agld
need_cmd gnuplot python3
ROWS=${ROWS:-2000000}
EPOCHS=${EPOCHS:-4}
LMC_ITERS=${LMC_ITERS:-12}
TIME_LIMIT=${TIME_LIMIT:-120}
CHUNK=${CHUNK:-256K}
DIR=$DATA_DIR/figure3-$ROWS-chunk$CHUNK
mkdir -p "$DIR"
TEXT=$DIR/criteo.svm
[[ -f $TEXT ]] || "$AGLD" gen --shape criteo --rows "$ROWS" --seed 3 -o "$TEXT" -q
[[ -f $DIR/train.agld ]] || "$AGLD" convert "$TEXT" -o "$DIR/train.agld" -q \
  --test-fraction 0.1 --test-output "$DIR/test.agld" --seed 3 --chunk-bytes "$CHUNK"
STORE_BYTES=$(stat -c %s "$DIR/train.agld")
BUDGET=${BUDGET:-$((STORE_BYTES * 7 / 8))}
echo "train store $((STORE_BYTES >> 20)) MiB on disk; budget $BUDGET bytes"

CSV=$DIR/figure3.csv
echo "method,iteration,seconds,passes,grad_evals,test_loglik,test_accuracy,bytes_read,memory_bytes" > "$CSV"
for m in tmu-ca ppu-ca ptu-ca tmu-ra sgld lmc; do
  len="--epochs $EPOCHS"
  [[ $m == lmc ]] && len="--iterations $LMC_ITERS"
  sync; echo 1 > /proc/sys/vm/drop_caches 2>/dev/null || true   # every run starts cold
  # shellcheck disable=SC2086
  "$AGLD" sample --train "$DIR/train.agld" --test "$DIR/test.agld" --model logistic --intercept \
    --method "$m" $len --burn-in 0 --evaluations 20 --memory "$BUDGET" --seed 1 -q \
    --time-limit "$TIME_LIMIT" --chains 1 \
    --out "$DIR/run-$m"
  awk -F, -v m="$m" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s\n", m, $c["iteration"], $c["seconds"], $c["passes"], $c["grad_evals"],
      $c["test_loglik"], $c["test_accuracy"], $c["bytes_read"], $c["memory_bytes"] }' "$DIR/run-$m/metrics.csv" >> "$CSV"
done

# The planted weights' test log-likelihood (and accuracy), from the test rows' text.
PLANTED=$("$AGLD" dump "$DIR/test.agld" | python3 -c "
import csv, math, sys
w, b = {}, 0.0
for row in csv.DictReader(open('$TEXT.weights.csv')):
    if row['feature'] == 'intercept': b = float(row['weight'])
    else: w[int(row['feature'])] = float(row['weight'])
ll = right = n = 0
for line in sys.stdin:
    t = line.split()
    y = 1.0 if float(t[0]) > 0 else -1.0
    m = b + sum(w.get(int(k), 0.0) * float(v) for k, v in (x.split(':') for x in t[1:]))
    z = -y * m
    ll -= z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))
    right += (m > 0) == (y > 0); n += 1
print(f'{ll / n:.6f} {right / n:.4f}')")
echo "planted weights: test log-likelihood ${PLANTED% *}, accuracy ${PLANTED#* }"

echo
echo "final evaluation of each run:"
python3 - "$CSV" "${PLANTED% *}" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
last = {}
for r in rows: last[r["method"]] = r
print(f"{'method':8} {'seconds':>8} {'passes':>7} {'test loglik':>12} {'accuracy':>9} {'MB read':>8} {'peak MB':>8}")
for m, r in last.items():
    peak = max(int(x["memory_bytes"]) for x in rows if x["method"] == m)
    print(f"{m:8} {float(r['seconds']):8.1f} {float(r['passes']):7.2f} {float(r['test_loglik']):12.5f} "
          f"{float(r['test_accuracy']):9.4f} {int(r['bytes_read'])/1e6:8.0f} {peak/1e6:8.0f}")
print(f"{'planted':8} {'':8} {'':7} {float(sys.argv[2]):12.5f}")
PY

gnuplot <<GP
set terminal pngcairo size 1200,480
set output "$DIR/figure3.png"
set datafile separator ","
set key bottom right
set multiplot layout 1,2 title "criteo-shaped, $ROWS rows, budget $BUDGET bytes (planted: ${PLANTED% *})"
set xlabel "wall seconds (evaluations excluded)"; set ylabel "average test log-likelihood"
plot for [m in "tmu-ca ppu-ca ptu-ca tmu-ra sgld lmc"] "< grep '^".m.",' $CSV" using 3:6 with linespoints title m, ${PLANTED% *} title "planted" dt 2
set xlabel "data passes (refresh passes included)"
plot for [m in "tmu-ca ppu-ca ptu-ca tmu-ra sgld lmc"] "< grep '^".m.",' $CSV" using 4:6 with linespoints title m, ${PLANTED% *} title "planted" dt 2
unset multiplot
GP
echo "CSV: $CSV"
echo "plot: $DIR/figure3.png"
