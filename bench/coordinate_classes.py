#!/usr/bin/env python3
"""coordinate_classes.py DATA.svm EXACT.npy RUN_DIR [RUN_DIR ...]

How far runs are from the exact posterior, by how often each feature occurs: for classes of
coordinates (features in 0, 1-5, 6-20, 21-100, 101-1000, 1001-10^4 or more rows; the last
five coordinates taken as the four numeric columns and the intercept, as in
bench/onehot_linear.py --intercept), the median and 90th percentile of |mean error| in exact
sds, the 5/50/95 % of the sd ratio (run / exact) and the share within #15's target (mean
within 0.1 sd and sd within 10 %). EXACT.npy comes from bench/sparse_oracle --out; the rows'
feature counts are read from DATA.svm once and cached beside it (DATA.svm.counts.json).
Pure Python (no numpy)."""
import json, os, sys
from npy import read_npy
svm, exact = sys.argv[1], sys.argv[2]
cache = svm + ".counts.json"
if os.path.exists(cache):
    counts = json.load(open(cache))
else:
    counts = {}
    for line in open(svm):
        for tok in line.split()[1:]:
            j = int(tok.split(":")[0]) - 1
            counts[j] = counts.get(j, 0) + 1
    counts = {str(k): v for k, v in counts.items()}
    json.dump(counts, open(cache, "w"))
em, es = read_npy(exact)
d = len(em)
def cls(j):
    if j == d - 1: return "intercept"
    if j >= d - 5: return "numeric"
    c = counts.get(str(j), 0)
    for lo, hi in [(0,0),(1,5),(6,20),(21,100),(101,1000),(1001,10000),(10001,10**9)]:
        if lo <= c <= hi: return f"{lo}-{hi}" if hi < 10**9 else f">{lo-1}"
order = ["0-0","1-5","6-20","21-100","101-1000","1001-10000",">10000","numeric","intercept"]
for run in sys.argv[3:]:
    rm, rs = read_npy(os.path.join(run, "posterior.npy"))
    print(f"== {run}")
    print(f"{'class':>12} {'n':>6} {'|err|/sd med':>12} {'p90':>7} {'sdratio med':>11} {'5%':>6} {'95%':>6} {'target%':>8}")
    tot = 0
    for c in order:
        js = [j for j in range(d) if cls(j) == c]
        if not js: continue
        err = sorted(abs(rm[j]-em[j])/es[j] for j in js)
        sr = sorted(rs[j]/es[j] for j in js)
        ok = sum(1 for j in js if abs(rm[j]-em[j]) <= 0.1*es[j] and abs(rs[j]/es[j]-1) <= 0.1)
        tot += ok
        q = lambda a, p: a[min(len(a)-1, int(p*len(a)))]
        print(f"{c:>12} {len(js):>6} {q(err,.5):>12.3f} {q(err,.9):>7.2f} {q(sr,.5):>11.3f} {q(sr,.05):>6.2f} {q(sr,.95):>6.2f} {100*ok/len(js):>8.1f}")
    print(f"{'all':>12} {d:>6} target {100*tot/d:.1f}%")
