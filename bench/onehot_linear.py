#!/usr/bin/env python3
"""onehot_linear.py ROWS SEED [--features N] [--reference] [--logistic] [--weights PATH] > FILE.svm

Linear-model data at the scale of issue #15's exact oracle: many sparse features with a
realistic frequency spread, in the shape of click logs (criteo, kdd12) and of the flights data
of bench/ordered_linear.py. Deterministic in (ROWS, SEED, N); LIBSVM on stdout, 1-based
indices sorted within each line, y = x . beta + 0.3 + N(0, 1).

Layout (the default N = 11,364 features; 1-based, in this order):
  - five one-hot blocks; every row has exactly one level of each, so each block sums to 1 in
    every row (with --intercept the blocks are collinear with it, and with each other without
    it: directions that only the prior bounds):
      period  10 levels     features     1-10     the row's position in the file (a trend)
      region  50 levels     features    11-60     Zipf, exponent 0.8
      site    300 levels    features    61-360    Zipf, exponent 1.0
      item    3,000 levels  features   361-3360   Zipf, exponent 1.1
      user    8,000 levels  features  3361-11360  Zipf, exponent 1.2
    (Zipf: level k, 0-based, drawn with probability proportional to 1 / (k + 1)^exponent, so
    each block's first level is the commonest; levels are not shuffled.) At 1M rows (seed 1) the
    rows per level run: region 6,679 to 153,635 (median 11,609); site 506 to 159,330 (1,049);
    item 10 to 164,026 (53); user 0 to 210,965 (10), with 1,682 user levels in 5 rows or fewer
    and 16 in none (features that never occur: their posterior is the prior).
  - four dense numeric columns, features N-3 .. N: N(0, 1); N(0, 1) / 2; Exp(1) - 1; and
    N(0, 1) + 2 t - 1 (t = row / ROWS, a drift with the position). The last feature is always
    present, so a store's dimension is N whatever the draws.
  --reference drops each block's first level (its commonest) from the rows: dummy coding
    with a reference level, as a statistician codes a factor beside an intercept. The
    blocks then no longer sum to 1, and with --intercept the model is identified (the
    reference levels' features occur in no row: their posterior is the prior). The planted
    beta and y are the same as without it, y's reference effects absorbed in the intercept
    direction's posterior.
  --logistic: binary labels from the same planted model, y = 1 with probability
    1 / (1 + exp(-eta)), eta = x . beta + 0.3 (else 0): logistic data of the same shape, whose
    posterior bench/logistic_oracle computes. The rows' x are the same as without it.
  --features N scales the five blocks in proportion (at least 2 levels each; the user block
  takes the remainder), with the four numeric columns last; N >= 14.
  --weights PATH writes the planted model as `agld gen` writes its weights (docs/gen.md):
    feature,weight
    intercept,0.3
    <j>,<beta_j>     one line for every feature 1..N, ascending (those in no row too)
  numbers in shortest round-trip form. The rows on stdout are byte-identical with or without
  it (it draws nothing). Under --reference the file is the same: the planted beta of every
  level, the reference levels included, which the rows then leave out.

Rows are in time order: the period (and its effect, which rises by 1.5 through the file) and
the drifting column follow the position, as in ordered_linear.py; `agld convert` shuffles them
unless --keep-order. Planted coefficients: N(0, 0.5^2) for every level and numeric column,
plus 1.5 k / (levels - 1) on period level k (0-based), the trend. The exact posterior is Gaussian:
bench/sparse_oracle computes it from the store (there, the blocks' fill sets the cost: with
--intercept at 1M rows, nnz(X'X) 0.9M and nnz(L) 4.6M). 1M rows take 12 s and make 93 MB.
"""
import argparse
import itertools
import math
import random
import sys

BLOCKS = [("period", 10, None), ("region", 50, 0.8), ("site", 300, 1.0), ("item", 3000, 1.1), ("user", 8000, 1.2)]
NUMERIC = 4
DEFAULT_FEATURES = sum(levels for _, levels, _ in BLOCKS) + NUMERIC

parser = argparse.ArgumentParser(description="one-hot linear-model data (LIBSVM on stdout)")
parser.add_argument("rows", type=int)
parser.add_argument("seed", type=int)
parser.add_argument("--features", type=int, default=DEFAULT_FEATURES, help=f"total features (default {DEFAULT_FEATURES})")
parser.add_argument("--reference", action="store_true", help="drop each block's first level (dummy coding)")
parser.add_argument("--logistic", action="store_true", help="binary labels, y ~ Bernoulli(1 / (1 + exp(-eta)))")
parser.add_argument("--weights", metavar="PATH", help="write the planted beta (and the 0.3 offset as intercept) to PATH")
args = parser.parse_args()
if args.rows < 1 or args.features < 14:
    parser.error("ROWS must be >= 1 and --features >= 14")

# Block sizes: in proportion to BLOCKS, the last taking the remainder.
onehot = args.features - NUMERIC
default_onehot = DEFAULT_FEATURES - NUMERIC
sizes = [max(2, round(levels * onehot / default_onehot)) for _, levels, _ in BLOCKS[:-1]]
sizes.append(onehot - sum(sizes))
if sizes[-1] < 2:
    parser.error(f"--features {args.features} leaves fewer than 2 levels for the last block")

rng = random.Random(args.seed)
rows = args.rows
bases, at = [], 1
for levels in sizes:
    bases.append(at)
    at += levels
numeric_base = at
beta = [0.0] + [rng.gauss(0, 0.5) for _ in range(args.features)]  # 1-based
for k in range(sizes[0]):  # the trend through the file
    beta[bases[0] + k] += 1.5 * k / (sizes[0] - 1)
OFFSET = 0.3
if args.weights:  # before the rows' draws, and drawing nothing: the rows do not depend on it
    with open(args.weights, "w") as f:
        f.write("feature,weight\n")
        f.write(f"intercept,{OFFSET!r}\n")
        f.writelines(f"{j},{beta[j]!r}\n" for j in range(1, args.features + 1))

# Each block's level of every row, drawn in bulk (period: the position).
levels_of = [[t * sizes[0] // rows for t in range(rows)]]
for (_, _, exponent), levels in zip(BLOCKS[1:], sizes[1:]):
    cum = list(itertools.accumulate(1 / (k + 1) ** exponent for k in range(levels)))
    levels_of.append(rng.choices(range(levels), cum_weights=cum, k=rows))
gauss, expo = rng.gauss, rng.expovariate
numeric = [
    [gauss(0, 1) for _ in range(rows)],
    [gauss(0, 1) * 0.5 for _ in range(rows)],
    [expo(1.0) - 1.0 for _ in range(rows)],
    [gauss(0, 1) + 2 * t / rows - 1 for t in range(rows)],
]
noise = [gauss(0, 1) for _ in range(rows)]
uniform = [rng.random() for _ in range(rows)] if args.logistic else None  # after every other draw

out = sys.stdout
lines = []
numeric_beta = beta[numeric_base:numeric_base + NUMERIC]
numeric_ids = list(range(numeric_base, numeric_base + NUMERIC))
for t in range(rows):
    idx = [base + levels_of[b][t] for b, base in enumerate(bases)]
    vals = [f"{column[t]:.5g}" for column in numeric]
    # y from the values as written, so that the store holds exactly the planted model's x.
    eta = OFFSET + sum(beta[j] for j in idx) + sum(w * float(v) for w, v in zip(numeric_beta, vals))
    label = (f"{1 if uniform[t] * (1 + math.exp(-eta)) < 1 else 0}" if args.logistic else f"{eta + noise[t]:.6g}")
    shown = [j for b, j in enumerate(idx) if not (args.reference and levels_of[b][t] == 0)]
    lines.append(f"{label} " + " ".join(f"{j}:1" for j in shown) + (" " if shown else "") +
                 " ".join(f"{j}:{v}" for j, v in zip(numeric_ids, vals)) + "\n")
    if len(lines) >= 65536:
        out.writelines(lines)
        lines = []
out.writelines(lines)
