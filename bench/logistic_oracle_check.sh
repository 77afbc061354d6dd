#!/usr/bin/env bash
# Checks bench/logistic_oracle against Stan: on heart_scale (270 rows, 13 features, no
# intercept, prior N(0, I)), whose posterior by Stan's NUTS (4 x 5,000 draws) is
# ../shared/data/heart_scale.ref.csv, the oracle (4 chains x DRAWS, default 4,000) must put
# every mean within TOL (default 0.05) posterior sd of Stan's and every sd within TOL of it
# (relative). The Monte Carlo error of either side is about 0.01 sd for a mean and 1 % for
# an sd (the oracle's own MCSE is printed), so TOL is about five of them. A small posterior far
# from Gaussian (the Laplace mode is 0.27 sd from the mean on one coordinate, its sds 4 % off):
# what the Metropolis test corrects, and what a large one hides. Fails (exit 1) beyond TOL.
# Needs python3 (no numpy).
#   bench/logistic_oracle_check.sh          env: DRAWS=4000 TOL=0.05 SEED=1
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
no_args "$@"
need_agld
need_cmd python3
logistic_oracle=$(need_tool logistic_oracle)
ref="$here/../../shared/data/heart_scale.ref.csv"
[[ -f "$ref" ]] || { echo "logistic_oracle_check: no $ref" >&2; exit 66; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$AGLD" convert "$here/../../shared/data/heart_scale.svm" -o "$tmp/hs.agld" --quiet
"$logistic_oracle" "$tmp/hs.agld" - --draws "${DRAWS:-4000}" --seed "${SEED:-1}" --out "$tmp/oracle.npy"
PYTHONPATH="$here" python3 - "$tmp/oracle.npy" "$ref" "${TOL:-0.05}" <<'PY'
import csv, sys
from npy import read_npy
path, ref_path, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
mean, sd = read_npy(path)
ref = list(csv.DictReader(open(ref_path)))
assert len(mean) == len(ref), (len(mean), len(ref))
mean_err = [abs(m - float(r["mean"])) / float(r["sd"]) for m, r in zip(mean, ref)]
sd_err = [abs(s / float(r["sd"]) - 1) for s, r in zip(sd, ref)]
print("against Stan: largest mean error %.4f sd, largest sd error %.4f (tolerance %g)" % (max(mean_err), max(sd_err), tol))
sys.exit(0 if max(mean_err) <= tol and max(sd_err) <= tol else 1)
PY
