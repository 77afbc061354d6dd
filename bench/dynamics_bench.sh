#!/usr/bin/env bash
# Issue #16's papers at our scale: do the underdamped dynamics beat Langevin per data pass?
#
# Results: docs/notes/2026-11-26-dynamics.md.
#
# Settings (environment; bench/common.sh has AGLD, BUILD, DATA_DIR, ORACLE_DIR):
#   DIR=$DATA_DIR/dyn          the criteo data (about 800 MB) and runs/
#   ORACLE=$ORACLE_DIR/onehot_ref   the oracle's files: ORACLE.svm, ORACLE.agld,
#                              ORACLE_exact.npy (bench/passes_table.sh makes them)
#   ORACLE_EPOCHS="2 5 10 20"  run lengths on the oracle (empty: skip problem 1)
#   CRITEO_EPOCHS="2 5 10"     run lengths on criteo-shaped data (empty: skip problem 2)
#   METHODS="svrg-ld svrg-hmc svrg2nd-hmc saga-ld saga-hmc saga2nd-hmc svr-hmc tmu-ca tmu-ca-hmc2"
# Steps whose files exist are not redone (delete DIR/runs/... to rerun a sampler).
#   ORACLE_EPOCHS="2 5" CRITEO_EPOCHS= METHODS="svrg-ld svr-hmc" bench/dynamics_bench.sh
#
# Two claims of the source papers (../shared/papers; ALGORITHMS.md section 3):
#  - Li et al.: the 2nd-order HMC variants beat their LD counterparts per data pass:
#    svrg-ld (ptu-ra), svrg-hmc (ptu-ra-hmc), svrg2nd-hmc (ptu-ra-hmc2); saga-ld (ppu-ra),
#    saga-hmc (ppu-ra-hmc), saga2nd-hmc (ppu-ra-hmc2).
#  - Zou et al.: svr-hmc (ptu-ra-svrhmc) reaches a lower error than svrg-ld.
#  And our lazy pair tmu-ca against tmu-ca-hmc2.
# Every run: agld's default step and friction (no --step, no --friction), diag, 4 chains,
# seed 0, --threads 1, --checkpoint-every off, under nice -n 10, one run at a time.
#
# Problem 1, the exact linear oracle (bench/passes_table.sh's): ORACLE (1M rows, 11,365 coordinates,
# `--model linear --intercept`). Error: bench/coordinate_classes.py's share of coordinates
# within #15's target (mean within 0.1 exact sd, sd within 10 %), and the median over all
# coordinates of |mean error| / exact sd (computed here from posterior.npy, as the script does
# per class). --epochs 2, 5, 10, 20.
#
# Problem 2, criteo-shaped logistic: `agld gen --shape criteo --rows 1100000 --seed 7`
# (binary), the first 1,000,000 lines for training and the last 100,000 for test, each
# converted with `agld convert`'s defaults; `agld sample --train --test --model logistic`.
# Error: the final row of metrics.csv (test_loglik, the posterior predictive pooled over the
# chains, and test_accuracy), against the planted model's test log-likelihood (mean over the
# test rows of log sigmoid(+-(x.w + b)), x as the test store holds it, read back by
# `agld dump`; w and b from gen's criteo.svm.weights.csv). --epochs 2, 5, 10 (on a shared
# 2-core machine, one thread: 40-90 s a run at 2, 70-120 s at 5, 120-170 s at 10).
#
# Columns: passes is metrics.csv's final `passes` (training rows read / N, all chains: the
# preconditioner's sample, the snapshot refreshes and ppu's start included; under random
# access each chain reads its own rows, so 4 chains read 4 times the rows of one); grads/NK is
# the final `grad_evals` / (N x chains), component gradients a chain per row (ptu's second dot
# counted). wall_s is the whole `agld sample` command's wall time (test evaluations included).
# warn: "yes" if stderr says the chains have not mixed; maxRhat: config.json's largest online
# split-R-hat over every coordinate; a failed run (e.g. a divergence) prints
# FAILED and its stderr's last line.
#
# Needs python3 (no numpy).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
no_args "$@"
need_agld
need_cmd python3
DIR=$(abs_path "${DIR:-$DATA_DIR/dyn}")
ORACLE=$(abs_path "${ORACLE:-$ORACLE_DIR/onehot_ref}")
ORACLE_EPOCHS=${ORACLE_EPOCHS-2 5 10 20}
CRITEO_EPOCHS=${CRITEO_EPOCHS-2 5 10}
METHODS=${METHODS:-svrg-ld svrg-hmc svrg2nd-hmc saga-ld saga-hmc saga2nd-hmc svr-hmc tmu-ca tmu-ca-hmc2}
TRAIN_ROWS=1000000 TEST_ROWS=100000
for f in "$ORACLE.svm" "$ORACLE.agld" "${ORACLE}_exact.npy"; do
  [[ -f $f ]] || die "missing $f (bench/passes_table.sh makes it)"
done
mkdir -p "$DIR/runs/oracle" "$DIR/runs/criteo"
cd "$DIR"
agld() { nice -n 10 "$AGLD" "$@"; }
start=$(date +%s.%N)

# criteo data: gen, split (last TEST_ROWS lines for test), convert, planted log-likelihood
if [[ ! -f criteo.svm || ! -f criteo.svm.weights.csv ]]; then
  agld gen --shape criteo --rows $((TRAIN_ROWS + TEST_ROWS)) --seed 7 --threads 1 -q -o criteo.svm
fi
if [[ ! -f criteo-train.svm || ! -f criteo-test.svm ]]; then
  head -n $TRAIN_ROWS criteo.svm > criteo-train.svm.part && mv criteo-train.svm.part criteo-train.svm
  tail -n +$((TRAIN_ROWS + 1)) criteo.svm > criteo-test.svm.part && mv criteo-test.svm.part criteo-test.svm
  [[ $(wc -l < criteo-test.svm) -eq $TEST_ROWS ]] || { echo "criteo-test.svm: not $TEST_ROWS rows" >&2; exit 1; }
fi
for part in train test; do
  [[ -f criteo-$part.agld ]] || agld convert -q --threads 1 "criteo-$part.svm" -o "criteo-$part.agld"
done
if [[ ! -f planted_loglik.txt ]]; then
  agld dump criteo-test.agld | python3 -c '
import csv, math, sys
w = {r["feature"]: float(r["weight"]) for r in csv.DictReader(open("criteo.svm.weights.csv"))}
b = w.pop("intercept")
w = {int(k): v for k, v in w.items()}
def log_sigmoid(z):
    return -math.log1p(math.exp(-z)) if z >= 0 else z - math.log1p(math.exp(z))
s = hits = n = 0
for line in sys.stdin:
    tok = line.split()
    m = b + sum(w.get(int(j), 0.0) * float(x) for j, x in (t.split(":") for t in tok[1:]))
    pos = float(tok[0]) > 0
    s += log_sigmoid(m if pos else -m)
    hits += (m > 0) == pos
    n += 1
print(f"{s / n:.6f} {hits / n:.6f} {n}")' > planted_loglik.txt.part
  mv planted_loglik.txt.part planted_loglik.txt
fi

run() {  # out train_flags...: one `agld sample` run into $out, unless it has run
  local out=$1; shift
  [[ -f $out.rc ]] && return 0
  rm -rf "$out"
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  agld sample "$@" --seed 0 --threads 1 --checkpoint-every off --out "$out" \
    > "$out.stdout" 2> "$out.stderr" || rc=$?
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' > "$out.wall"
  echo "$rc" > "$out.rc"
}
runs_wall=0
add_wall() { runs_wall=$(awk -v a="$runs_wall" -v b="$(cat "$1.wall")" 'BEGIN { printf "%.1f", a + b }'); }
common() {  # out: passes grads/NK wall warn (or FAILED ...)
  local out=$1
  if [[ $(cat "$out.rc") != 0 || ! -f $out/metrics.csv ]]; then
    printf 'FAILED(rc=%s,%ss): %s' "$(cat "$out.rc")" "$(cat "$out.wall")" \
      "$(tr '\r' '\n' < "$out.stderr" | grep -v '^\s*$' | tail -1)"
    return 1
  fi
  python3 - "$out" "$(cat "$out.wall")" <<'PY'
import csv, json, sys
out, wall = sys.argv[1], float(sys.argv[2])
cfg = json.load(open(f"{out}/config.json"))
last = list(csv.DictReader(open(f"{out}/metrics.csv")))[-1]
warn = "yes" if "have not mixed" in open(f"{out}.stderr").read() else "no"
grads = float(last["grad_evals"]) / (cfg["rows"] * cfg["chains"])
rhat = cfg["diagnostics"]["max_rhat"]
print(f"{float(last['passes']):7.2f} {grads:8.2f} {wall:7.1f} {warn:>5} {rhat:7.2f}", end="")
PY
}

# problem 1: the oracle
[[ -n $ORACLE_EPOCHS ]] && printf '\n== exact linear oracle (%s.agld): linear, --intercept\n' "$ORACLE"
[[ -n $ORACLE_EPOCHS ]] && printf '%-12s %6s %7s %8s %7s %5s %7s %8s %8s %8s\n' method epochs passes grads/NK wall_s warn maxRhat target% med_err med_sdr
for epochs in $ORACLE_EPOCHS; do
  for m in $METHODS; do
    out=runs/oracle/$m-e$epochs
    run "$out" --train "$ORACLE.agld" --model linear --intercept --method "$m" --epochs "$epochs"
    add_wall "$out"
    printf '%-12s %6s ' "$m" "$epochs"
    if common "$out"; then
      [[ -f $out.classes ]] ||
        python3 "$here/coordinate_classes.py" "$ORACLE.svm" "${ORACLE}_exact.npy" "$out" > "$out.classes"
      target=$(awk '$1 == "all" { print $NF }' "$out.classes")
      PYTHONPATH="$here" python3 - "$out/posterior.npy" "${ORACLE}_exact.npy" "$target" <<'PY'
import sys
from npy import read_npy
(rm, rs), (em, es) = read_npy(sys.argv[1]), read_npy(sys.argv[2])
err = sorted(abs(a - b) / s for a, b, s in zip(rm, em, es))
sdr = sorted(a / s for a, s in zip(rs, es))
print(f" {sys.argv[3].rstrip('%'):>8} {err[len(err) // 2]:8.3f} {sdr[len(sdr) // 2]:8.3f}")
PY
    else
      echo
    fi
  done
done

# problem 2: criteo-shaped logistic
read -r planted planted_acc test_n < planted_loglik.txt
[[ -n $CRITEO_EPOCHS ]] && printf '\n== criteo-shaped logistic (gen --seed 7; %s train, %s test rows)\n' "$TRAIN_ROWS" "$test_n"
[[ -n $CRITEO_EPOCHS ]] && printf 'planted model: test_loglik %s, test_accuracy %s\n' "$planted" "$planted_acc"
[[ -n $CRITEO_EPOCHS ]] && printf '%-12s %6s %7s %8s %7s %5s %7s %10s %9s %9s\n' method epochs passes grads/NK wall_s warn maxRhat test_ll -planted test_acc
for epochs in $CRITEO_EPOCHS; do
  for m in $METHODS; do
    out=runs/criteo/$m-e$epochs
    run "$out" --train criteo-train.agld --test criteo-test.agld --model logistic --method "$m" --epochs "$epochs"
    add_wall "$out"
    printf '%-12s %6s ' "$m" "$epochs"
    if common "$out"; then
      python3 - "$out/metrics.csv" "$planted" <<'PY'
import csv, sys
last = list(csv.DictReader(open(sys.argv[1])))[-1]
ll, planted = float(last["test_loglik"]), float(sys.argv[2])
print(f" {ll:10.5f} {ll - planted:+9.5f} {float(last['test_accuracy']):9.5f}")
PY
    else
      echo
    fi
  done
done
awk -v a="$start" -v b="$(date +%s.%N)" -v r="$runs_wall" \
  'BEGIN { printf "\nthe runs above: %.0f s of agld sample wall time; this invocation: %.0f s (runs already done are not rerun)\n", r, b - a }'
