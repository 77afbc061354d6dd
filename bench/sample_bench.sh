#!/usr/bin/env bash
# d-independence of the lazy sampler: the time of one iteration of tmu-ca (METHOD) on kdd12-shaped
# rows (11 one-hot features a row out of d = 54.7M) against the same rows folded into
# d = 1M (index j -> (j - 1) mod 1M + 1, duplicates in a row dropped), and the dense path on
# both for contrast.
#
# An iteration's time is (T(3K) - T(K)) / 2K within one run of 3K iterations of one chain, from
# the sampling seconds that metrics.csv records at its evaluations (K, 2K, 3K; there is no test
# set, so an evaluation only brings every coordinate current). The setup (allocating and
# zeroing the state, the starting pass, the first pages touched) falls before K. The refresh
# passes and their catch-ups fall in the interval as in a long run.
# Kept states cost O(d) each (every coordinate brought current and added to the moments), and
# the default thinning keeps one every 4 d / (nnz of a batch) iterations at every d
# (sampler/resolve.cpp), so that they cost about what the iterations between cost. KEPT=default
# (the default) runs each store at that rate, read from `agld info`: a state every 198,860
# iterations at d = 54.7M, every 3,637 at 1M, from K on. The evaluations at 2K and 3K bring
# every coordinate current too, in both runs: at d = 54.7M that is two more O(d) catch-ups in
# the interval (three where a default run has one), so the ratio errs high. KEPT=end keeps one
# state, at 3K (the method before 2026-11-27): the interval then holds two O(d) catch-ups at
# d = 54.7M and two at 1M, far fewer than a default run has at 1M, and the ratio errs higher.
# Two processes' totals
# (T(3K) from one run, T(K) from another) were used before: on this shared host single figures
# then ranged from 73 to 186 us for the same command. The runs are interleaved, REPS of each
# (default 5); the ratio is the median of each repetition's pair (adjacent runs share the
# host's state), beside the ratio of medians. The process's CPU time (user + sys, from
# /usr/bin/time, setup included) is reported too, a check on the host's steal. AGLD=path/to/agld
# measures another binary (an A/B against an older build).
# The default 5M rows make N x 11 nonzeros about d (kdd12 itself, 149.6M rows, has about 30 d):
# each refresh's work beside its pass weighs about 30 times more here than there, and with far
# fewer rows it would dominate a pass. 3.6M of the 54.7M features occur in these rows.
#
# Results: docs/notes/2026-11-23-d-independence.md.
#
# Settings (environment; bench/common.sh has AGLD, BUILD, DATA_DIR):
#   ROWS=5000000     kdd12-shaped rows generated (gen --seed 1)
#   REPS=5           interleaved repetitions of each store
#   ITERS=200000     K: a run is 3K iterations, timed between K and 3K
#   METHOD=tmu-ca    any --method
#   KEPT=default     default: each store's default thinning rate; end: one kept state, at 3K
#   DENSE=1          1: also the dense path (DENSE_ITERS=20 iterations) on both stores; 0: not
# Data: $DATA_DIR/kdd-$ROWS.svm, kdd-$ROWS-d1m.svm, kdd-$ROWS-big.agld, kdd-$ROWS-small.agld
# (kept; delete the stores to convert again), sample-run/ and sample-cpu (each run's).
#   METHOD=tmu-ca-hmc2 REPS=3 ITERS=100000 DENSE=0 bench/sample_bench.sh
#   ROWS=200000 REPS=1 ITERS=2000 DENSE=0 bench/sample_bench.sh     (a quick check)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
no_args "$@"
need_agld
need_cmd /usr/bin/time python3
ROWS=${ROWS:-5000000}
REPS=${REPS:-5}
ITERS=${ITERS:-200000}
DENSE_ITERS=${DENSE_ITERS:-20}
METHOD=${METHOD:-tmu-ca}
DENSE=${DENSE:-1}
KEPT=${KEPT:-default}
[[ $KEPT == default || $KEPT == end ]] || die "KEPT is default or end, not $KEPT"
DIR=$DATA_DIR
mkdir -p "$DIR"
# The help is read once: `agld ... --help | grep -q` fails under pipefail when grep exits
# before agld has written everything (SIGPIPE), and the flag was then silently left out.
HELP=$("$AGLD" sample --help)
CHAINS=$(grep -q -- --chains <<< "$HELP" && echo "--chains 1" || true)
# The end-of-burn-in checkpoint would write the whole state (6.5 GB at d = 54.7M) in every run.
CKPT=$(grep -q -- --checkpoint-every <<< "$HELP" && echo "--checkpoint-every off" || true)
BIG=$DIR/kdd-$ROWS.svm
SMALL=$DIR/kdd-$ROWS-d1m.svm
[[ -f $BIG ]] || "$AGLD" gen --shape kdd12 --rows "$ROWS" --seed 1 -o "$BIG" -q
[[ -f $SMALL ]] || awk '{ printf "%s", $1; delete seen;
    for (i = 2; i <= NF; i++) { split($i, p, ":"); j = (p[1] - 1) % 1000000 + 1;
      if (!(j in seen)) { seen[j] = 1; printf " %d:%s", j, p[2] } } printf "\n" }' "$BIG" > "$SMALL"
# The generated rows are independent draws; the stores keep their order (as before convert
# shuffled by default), which an older AGLD keeps without being asked.
KEEP=$(grep -q -- --keep-order <<< "$("$AGLD" convert --help)" && echo --keep-order || true)
# shellcheck disable=SC2086
[[ -f $DIR/kdd-$ROWS-big.agld ]] || "$AGLD" convert "$BIG" -o "$DIR/kdd-$ROWS-big.agld" -q --features 54686452 $KEEP
# shellcheck disable=SC2086
[[ -f $DIR/kdd-$ROWS-small.agld ]] || "$AGLD" convert "$SMALL" -o "$DIR/kdd-$ROWS-small.agld" -q --features 1000000 $KEEP

run() {  # store iterations extra... -> the run's directory (metrics.csv; sample-cpu: user and sys seconds)
  local store=$1 iters=$2; shift 2
  rm -rf "$DIR/sample-run"
  /usr/bin/time -f "%U %S" -o "$DIR/sample-cpu" \
    "$AGLD" sample --train "$DIR/$store" --method "$METHOD" --batch 100 --iterations "$iters" \
    --evaluations 3 --memory 12G --seed 1 -q --out "$DIR/sample-run" $CHAINS $CKPT "$@"
}
seconds_at() {  # iteration -> the sampling seconds metrics.csv records there
  awk -F, -v k="$1" '$1 == k { print $2 }' "$DIR/sample-run/metrics.csv"
}

default_thin() {  # store -> the default thinning's rate at batch 100: ceil(4 d / (100 nnz a row))
  "$AGLD" info "$DIR/$1" | awk '$1 == "rows" { n = $2 } $1 == "features" { d = $2 } $1 == "nnz" { z = $2 }
    END { t = 4 * d / (100 * z / n); printf "%d\n", (t == int(t)) ? t : int(t) + 1 }'
}
declare -A T C KEEP_ARGS
for s in big small; do
  if [[ $KEPT == default ]]; then
    KEEP_ARGS[$s]="--burn-in $ITERS --thin $(default_thin kdd-$ROWS-$s.agld)"
  else
    KEEP_ARGS[$s]="--burn-in $((3 * ITERS - 1)) --thin 1"
  fi
  echo "$s: ${KEEP_ARGS[$s]}" >&2
done
for r in $(seq "$REPS"); do
  for s in big small; do
    # shellcheck disable=SC2086
    run kdd-$ROWS-$s.agld $((3 * ITERS)) ${KEEP_ARGS[$s]}
    t1=$(seconds_at "$ITERS")
    t3=$(seconds_at $((3 * ITERS)))
    [[ -n $t1 && -n $t3 ]] || { echo "no evaluation at $ITERS or $((3 * ITERS)) in metrics.csv" >&2; exit 1; }
    T[$s]+="$(python3 -c "print(($t3 - $t1) / (2 * $ITERS))") "
    C[$s]+="$(awk '{ print $1 + $2 }' "$DIR/sample-cpu") "
  done
done
T[big_dense]=nan
T[small_dense]=nan
if [[ $DENSE == 1 ]]; then
  run kdd-$ROWS-big.agld "$DENSE_ITERS" --dense --thin 1000000
  T[big_dense]=$(seconds_at "$DENSE_ITERS")
  run kdd-$ROWS-small.agld "$DENSE_ITERS" --dense --thin 1000000
  T[small_dense]=$(seconds_at "$DENSE_ITERS")
fi

python3 - "$ROWS" "$ITERS" "$DENSE_ITERS" "${T[big]}" "${T[small]}" "${T[big_dense]}" "${T[small_dense]}" "$METHOD" "${C[big]}" "${C[small]}" "$KEPT" <<'PY'
import statistics, sys
rows, iters, dense_iters = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
method = sys.argv[8]
big = [float(x) for x in sys.argv[4].split()]
small = [float(x) for x in sys.argv[5].split()]
cpu_big = [float(x) for x in sys.argv[9].split()]
cpu_small = [float(x) for x in sys.argv[10].split()]
bd, sd = float(sys.argv[6]) / dense_iters, float(sys.argv[7]) / dense_iters
mb, ms = statistics.median(big), statistics.median(small)
print(f"{method}, batch 100 (1,100 nonzeros an iteration), {rows} kdd12-shaped rows; (T({3*iters}) - T({iters})) / {2*iters} within a run; kept states: {sys.argv[11]}")
print(f"{'what':34} {'us/iteration':>14}  runs")
print(f"{'lazy, d = 54.7M':34} {mb*1e6:14.1f}  {' '.join(f'{x*1e6:.1f}' for x in big)}")
print(f"{'lazy, d = 1M':34} {ms*1e6:14.1f}  {' '.join(f'{x*1e6:.1f}' for x in small)}")
pairs = [b / s for b, s in zip(big, small)]
print(f"{'ratio, median of the pairs':34} {statistics.median(pairs):14.2f}  {' '.join(f'{x:.2f}' for x in pairs)}")
print(f"{'ratio of the medians':34} {mb/ms:14.2f}")
cb, cs = statistics.median(cpu_big), statistics.median(cpu_small)
print(f"{'CPU seconds of a run, d = 54.7M':34} {cb:14.1f}  {' '.join(f'{x:.1f}' for x in cpu_big)}  (setup included)")
print(f"{'CPU seconds of a run, d = 1M':34} {cs:14.1f}  {' '.join(f'{x:.1f}' for x in cpu_small)}")
print(f"{'dense, d = 54.7M':34} {bd*1e6:14.0f}  ({dense_iters} iterations, setup included)")
print(f"{'dense, d = 1M':34} {sd*1e6:14.0f}")
PY
