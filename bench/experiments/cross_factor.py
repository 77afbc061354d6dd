#!/usr/bin/env python3
# Whether a diagonal second-order control variate could speed up the rare coordinates (issue
# #15, 2026-11-26: docs/notes/2026-11-25-what-limits-diag.md). For each coordinate j, the worst
# row's cross factor
#     F_j = max over rows i with j of (N/n) sum_{k != j} c M_k x_ik^2,
# with M_k = 1 / max(h_k, q_k) from the data (the preconditioner before the visit rule; c and the
# prior cancel or are ignored) and the intercept counted in every row. The term would let M_j
# grow by about 1 / F_j over today's cap. Pure Python (no numpy here): about 30 s of CPU a
# million rows.
#   python3 bench/experiments/cross_factor.py STORE.svm BATCH
import sys
path, n = sys.argv[1], int(sys.argv[2])
rows = []
d = 0
with open(path) as f:
    for line in f:
        p = line.split()
        r = [(int(a), float(b)) for a, b in (t.split(':') for t in p[1:])]
        rows.append(r)
        for j, _ in r: d = max(d, j)
N = len(rows); icpt = d + 1; D = d + 2
sumsq = [0.0] * D; mx = [0.0] * D; cnt = [0] * D
for r in rows:
    for j, v in r:
        s = v * v; sumsq[j] += s; cnt[j] += 1
        if s > mx[j]: mx[j] = s
sumsq[icpt] = N; mx[icpt] = 1; cnt[icpt] = N
R = N / n
cM = [1.0 / max(sumsq[j], R * mx[j]) if cnt[j] else 0.0 for j in range(D)]
F = [0.0] * D
for r in rows:
    w = [(j, v * v * cM[j]) for j, v in r]
    tot = sum(x for _, x in w) + cM[icpt]
    for j, x in w:
        f = R * (tot - x)
        if f > F[j]: F[j] = f
def q(a, p): a = sorted(a); return a[min(len(a) - 1, int(p * len(a)))]
for lo, hi in [(1, 5), (6, 20), (21, 100), (101, 1000), (1001, 10**4), (10**4 + 1, 10**9)]:
    sel = [F[j] for j in range(D - 1) if lo <= cnt[j] <= hi]
    if not sel: continue
    print(f"rows {lo}-{hi}: {len(sel)} coords; worst-row cross factor F: 10% {q(sel,.1):.3g}, median {q(sel,.5):.3g}, 90% {q(sel,.9):.3g}")
