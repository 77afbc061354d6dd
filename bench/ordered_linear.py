#!/usr/bin/env python3
"""ordered_linear.py ROWS SEED > FILE.svm

Linear-model data shaped like the flights dataset that first broke agld (issue #14): rows in
time order with a trend, one-hot blocks that each sum to 1 in every row (month, weekday,
hour, carrier, origin; with --intercept they leave directions bounded only by the prior), rare
levels (origin: 300 airports, Zipf), and three numeric features. y = x . beta + N(0, 1).
The exact posterior is Gaussian: bench/linear_oracle computes it from the store.

Features (1-based): month 1-12, weekday 13-19, hour 20-43, carrier 44-58, origin 59-358,
numeric 359-361. Rows run through the year in order: month and the month effect (the trend)
rise through the file.
"""
import math
import random
import sys

rows, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
blocks = [("month", 12), ("weekday", 7), ("hour", 24), ("carrier", 15), ("origin", 300)]
base, beta = {}, {}
at = 1
for name, levels in blocks:
    base[name] = at
    for k in range(levels):
        beta[at + k] = rng.gauss(0, 0.5)
    at += levels
for k in range(12):  # a trend through the year
    beta[base["month"] + k] += 1.5 * k / 11
numeric = [at, at + 1, at + 2]
for j in numeric:
    beta[j] = rng.gauss(0, 0.5)
zipf = [1 / (k + 1) ** 1.1 for k in range(300)]
carrier_w = [1 / (k + 1) for k in range(15)]
out = sys.stdout
lines = []
for t in range(rows):
    day = t * 365 // rows
    month = min(11, day * 12 // 365)
    weekday = day % 7
    hour = min(23, int(rng.triangular(5, 24, 14)))
    carrier = rng.choices(range(15), carrier_w)[0]
    origin = rng.choices(range(300), zipf)[0]
    idx = [base["month"] + month, base["weekday"] + weekday, base["hour"] + hour,
           base["carrier"] + carrier, base["origin"] + origin]
    vals = [rng.gauss(0, 1), rng.gauss(0, 1) * 0.5, rng.expovariate(1.0) - 1.0]
    y = 0.3 + sum(beta[j] for j in idx) + sum(beta[j] * v for j, v in zip(numeric, vals)) + rng.gauss(0, 1)
    feats = " ".join(f"{j}:1" for j in sorted(idx)) + " " + " ".join(f"{j}:{v:.5g}" for j, v in zip(numeric, vals))
    lines.append(f"{y:.6g} {feats}\n")
    if len(lines) >= 65536:
        out.writelines(lines)
        lines = []
out.writelines(lines)
