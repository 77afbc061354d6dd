#!/usr/bin/env python3
"""collinear_rhat.py RUN_DIR [BLOCK_SIZES]

Which directions of a run on bench/onehot_linear.py data (with --intercept, without
--reference) have not mixed: the identified ones, or the ones only the prior bounds. Needs a
run whose draws files track every coordinate (`agld sample ... --track 1-D intercept`).

With an intercept, the five one-hot blocks make five directions that leave every prediction
unchanged: intercept + t, every level of block b - t. Writing m_b for the mean of block b's
levels, these move m_b and the intercept; what they leave unchanged (identified) is every
within-block contrast theta_k - m_b and g = intercept + sum_b m_b. Prints classic split-R-hat
(as diagnostics.npy computes it) of the raw coordinates, of the contrasts, of each m_b, of
the intercept and of g: for each block, how many exceed 1.01 and the largest.
BLOCK_SIZES: comma-separated level counts (default 10,50,300,3000,8000, onehot_linear.py's
default features); the four numeric columns follow, then the intercept. Pure Python."""
import array, math, os, sys

run = sys.argv[1]
sizes = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "10,50,300,3000,8000").split(",")]
names = ["period", "region", "site", "item", "user"] if len(sizes) == 5 else [f"block{b + 1}" for b in range(len(sizes))]


def read_chain(path):
    head, rows = None, []
    for line in open(path):
        if line[0] == "#":
            continue
        if head is None:
            head = line.strip().split(",")
            continue
        rows.append(array.array("d", map(float, line.split(","))))
    return head, rows


chains, head = [], None
for i in range(1, 100):
    p = os.path.join(run, f"draws_{i}.csv")
    if not os.path.exists(p):
        break
    h, rows = read_chain(p)
    assert head is None or h == head
    head = h
    chains.append(rows)
col = {name: k for k, name in enumerate(head)}
d = sum(sizes) + 4
cols = [col[f"theta.{j}"] for j in range(1, d + 1)] + [col["intercept"]]  # KeyError: not every coordinate tracked
n = min(len(c) for c in chains)
h = n // 2
halves = []
for c in chains:
    halves += [c[:h], c[n - h:n]]


def split_rhat(series):  # series: one list of values per half; classic split-R-hat
    means, vars_ = [], []
    for v in series:
        mu = sum(v) / h
        means.append(mu)
        vars_.append(sum((x - mu) ** 2 for x in v) / (h - 1))
    w = sum(vars_) / len(vars_)
    g = sum(means) / len(means)
    b = h * sum((mu - g) ** 2 for mu in means) / (len(means) - 1)
    return math.sqrt(((h - 1) / h * w + b / h) / w) if w > 0 else float("nan")


def rhat(values_of):  # values_of(state) -> value
    return split_rhat([[values_of(s) for s in half] for half in halves])


# Block means per state, once.
starts, at = [], 0
for s in sizes:
    starts.append(at)
    at += s
block_mean = []  # per half, per state: [m_1, ..., m_B]
for half in halves:
    block_mean.append([[sum(st[cols[j]] for j in range(a, a + s)) / s for a, s in zip(starts, sizes)] for st in half])


def rhat_with_means(f):  # f(state, block_means) -> value
    return split_rhat([[f(st, m) for st, m in zip(half, bm)] for half, bm in zip(halves, block_mean)])


print(f"{run}: {len(chains)} chains x {n} kept states, {len(cols)} coordinates tracked")
print(f"{'block':8} {'levels':>6} {'raw > 1.01':>10} {'raw max':>8} {'contrast > 1.01':>15} {'contrast max':>12} {'R-hat of m_b':>12}")
icol = cols[-1]
for b, (name, a, s) in enumerate(zip(names, starts, sizes)):
    raw = [rhat(lambda st, c=cols[j]: st[c]) for j in range(a, a + s)]
    con = [rhat_with_means(lambda st, m, c=cols[j], b=b: st[c] - m[b]) for j in range(a, a + s)]
    mb = rhat_with_means(lambda st, m, b=b: m[b])
    fin = lambda v: [x for x in v if x == x]
    print(f"{name:8} {s:6} {sum(x > 1.01 for x in fin(raw)):10} {max(fin(raw)):8.3f} "
          f"{sum(x > 1.01 for x in fin(con)):15} {max(fin(con)):12.3f} {mb:12.3f}")
num = [rhat(lambda st, c=cols[j]: st[c]) for j in range(sum(sizes), d)]
print(f"numeric columns: " + ", ".join(f"{x:.3f}" for x in num))
print(f"intercept: {rhat(lambda st: st[icol]):.3f}; g = intercept + sum_b m_b (identified): "
      f"{rhat_with_means(lambda st, m: st[icol] + sum(m)):.3f}")
