#!/usr/bin/env bash
# Checks bench/sparse_oracle (sparse Cholesky, selected inversion) against bench/linear_oracle
# (dense Cholesky, d solves), with and without --intercept, on two data sets: ROWS rows
# (default 200000) of bench/ordered_linear.py, seed 3 (361 features, little fill), and ROWS / 2
# rows of bench/onehot_linear.py --features 600, seed 1 (five Zipf one-hot blocks: more fill in
# L, and a dense trailing block where the selected inversion works on long columns). Fails
# (exit 1) when they differ by more than TOL = 1e-8. linear_oracle writes no posterior, only
# how far a run is from it, so the exact posteriors are compared through runs made for that:
#  1. both tools on a short real run (--json): every figure (mean error quantiles, sd ratio
#     quantiles, fractions within 0.1 / 0.5 sd, R-hat) equal to TOL relative;
#  2. linear_oracle on a fake run whose posterior.npy is sparse_oracle's exact (mean, sd):
#     its largest mean error is max_j |mean_s - mean_d| / sd_d (the mean difference, in sds);
#  3. a fake run with means mean_s + T sd_s (T = 1e6): its largest "mean error" over T is
#     max_j sd_s / sd_d (to 1e-14), the largest sd ratio;
#  4. fake runs with means mean_s + (0.5 + E) sd_s / (1 - eps), E the mean difference of 2:
#     none is within 0.5 sd if every sd_s / sd_d > 1 - eps, and only if every one is above
#     (1 - eps)(1 - 4 E); tried for eps = 1e-8, 1e-9, ... to bound the smallest sd ratio.
# Prints the differences; needs python3 (no numpy).
#
# Settings (environment; bench/common.sh has AGLD and BUILD, which must hold sparse_oracle and
# linear_oracle, built with agld):
#   ROWS=200000    rows of the ordered_linear.py data set (the onehot one has ROWS / 2)
# Everything goes to a temporary directory, removed at the end.
#   ROWS=20000 bench/oracle_check.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
no_args "$@"
need_agld
need_cmd python3
sparse_oracle=$(need_tool sparse_oracle)
linear_oracle=$(need_tool linear_oracle)
rows=${ROWS:-200000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 "$here/ordered_linear.py" "$rows" 3 > "$tmp/ordered.svm"
python3 "$here/onehot_linear.py" $((rows / 2)) 1 --features 600 > "$tmp/onehot.svm"

status=0
for data in ordered onehot; do
  "$AGLD" convert -q "$tmp/$data.svm" -o "$tmp/$data.agld"
  for flag in --intercept ""; do
    name=$data-intercept
    [ -n "$flag" ] || name=$data-no-intercept
    store=$tmp/$data.agld
    run=$tmp/run-$name
    # The run only has to exist: a pass of the default sampler, which has not mixed.
    "$AGLD" sample --train "$store" --model linear $flag --epochs 1 --seed 1 --threads 1 --out "$run" -q 2> /dev/null
    "$sparse_oracle" "$store" "$run" $flag --json --out "$tmp/exact.npy" > "$tmp/sparse.json"
    "$linear_oracle" "$store" "$run" $flag --json > "$tmp/dense.json"
    PYTHONPATH="$here" python3 - "$tmp" "$BUILD" "$store" "$name" $flag << 'EOF' || status=1
import json, os, shutil, struct, subprocess, sys

TOL, T = 1e-8, 1e6
tmp, build, store, name, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]

from npy import read_npy

def write_npy(path, pairs):
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, 2), }" % len(pairs)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    flat = [x for pair in pairs for x in pair]
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack(f"<{len(flat)}d", *flat))

def dense_against(pairs):  # linear_oracle's figures for a fake run with this posterior
    run = os.path.join(tmp, "fake")
    shutil.rmtree(run, ignore_errors=True)
    os.mkdir(run)
    write_npy(os.path.join(run, "posterior.npy"), pairs)
    out = subprocess.run([os.path.join(build, "linear_oracle"), store, run, *flags, "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)

def leaves(obj, prefix=""):
    for key, value in obj.items():
        if isinstance(value, dict):
            yield from leaves(value, prefix + key + ".")
        else:
            yield prefix + key, value

failures = []
# 1. The same figures on a real run.
sparse = dict(leaves(json.load(open(os.path.join(tmp, "sparse.json")))))
dense = dict(leaves(json.load(open(os.path.join(tmp, "dense.json")))))
worst_field = 0.0
for key, value in dense.items():
    if key == "condition_number" or value is None:
        continue
    rel = abs(sparse[key] - value) / max(abs(value), 1e-300) if value != 0 else abs(sparse[key])
    worst_field = max(worst_field, rel)
    if rel > TOL:
        failures.append(f"{key}: sparse {sparse[key]!r}, dense {value!r}")
kappa = sparse["condition_number"] / dense["condition_number"]

mean, sd = read_npy(os.path.join(tmp, "exact.npy"))
# 2. Means, in exact sds.
mean_diff = dense_against(list(zip(mean, sd)))["mean_error_sd"]["max"]
# 3. The largest sd ratio.
max_ratio = dense_against([(m + T * s, s) for m, s in zip(mean, sd)])["mean_error_sd"]["max"] / T
# 4. A bound on the smallest sd ratio, 1 - bound: the smallest eps (decades from 1e-8) whose
# test passes, with the mean difference's share.
bound = None
for k in range(8, 16):
    eps = 10.0 ** -k
    if dense_against([(m + (0.5 + mean_diff) * s / (1 - eps), s) for m, s in zip(mean, sd)])["within_0_5_sd"] != 0:
        break
    bound = eps + 4 * mean_diff
if mean_diff > TOL:
    failures.append(f"mean difference {mean_diff:.3g} sd")
if max_ratio - 1 > TOL:
    failures.append(f"largest sd ratio sparse / dense 1 + {max_ratio - 1:.3g}")
if bound is None or bound > TOL:
    failures.append(f"smallest sd ratio sparse / dense not shown above 1 - {TOL:g}")
print(f"{name}: {len(mean)} coordinates; max |mean_s - mean_d| / sd {mean_diff:.3g}; "
      f"sd_s / sd_d: max 1 + {max_ratio - 1:.3g}, min > 1 - {f'{bound:.2g}' if bound else '?'}; "
      f"run figures: max relative difference {worst_field:.3g}; condition estimate / exact {kappa:.6f}")
for failure in failures:
    print(f"  FAIL {failure}")
sys.exit(1 if failures else 0)
EOF
  done
done
[ "$status" = 0 ] && echo "oracle_check: sparse_oracle agrees with linear_oracle to 1e-8" || echo "oracle_check: FAILED"
exit "$status"
