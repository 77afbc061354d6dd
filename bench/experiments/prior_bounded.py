#!/usr/bin/env python3
"""prior_bounded.py DATA.svm EXACT.npy RUN [RUN ...]

The tables of bench/experiments/collinear_dynamics.sh: for runs of `agld sample --model linear
--intercept` on bench/onehot_linear.py data without --reference (five one-hot blocks of 10,
50, 300, 3000 and 8000 levels, four numeric columns, the intercept last), against the exact
posterior (bench/sparse_oracle --out):
  1. per run: method, friction (and D_f h), epochs, data passes read (metrics.csv's last
     `passes`), wall seconds (RUN.wall, else config.json's sampling seconds), the share of
     coordinates within #15's target (mean within 0.1 exact sd, sd within 10 %), the
     intercept's mean error in exact sds, sd ratio and online split-R-hat, the largest online
     split-R-hat and how many exceed 1.01 (config.json's diagnostics), the median lp__ of the
     kept draws (`agld summary --json`) and whether RUN.stderr warned that the chains have not
     mixed;
  2. the share within target by feature-frequency class, from RUN.classes
     (bench/coordinate_classes.py's output) when present;
  3. the prior-bounded directions: the intercept and each block's commonest level (most
     training rows, from DATA.svm.counts.json, which coordinate_classes.py writes): mean error
     in exact sds, sd ratio (run / exact), online split-R-hat (diagnostics.npy) and, for
     tracked coordinates, the rank-normalized R-hat of `agld summary --json` (RUN.summary.json).
Pure Python (no numpy)."""
import csv, json, os, struct, sys

BLOCKS = [("period", 10), ("region", 50), ("site", 300), ("item", 3000), ("user", 8000)]


def read_npy(path, cols):
    raw = open(path, "rb").read()
    hl = struct.unpack("<H", raw[8:10])[0]
    v = struct.unpack(f"<{(len(raw) - 10 - hl) // 8}d", raw[10 + hl:])
    return [v[k::cols] for k in range(cols)]


svm, exact_path, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
em, es = read_npy(exact_path, 2)
d = len(em)
assert d == sum(n for _, n in BLOCKS) + 5, d
counts = {int(k): v for k, v in json.load(open(svm + ".counts.json")).items()}
# The prior-bounded directions: (label, 0-based coordinate, summary column name).
dirs = [("intercept", d - 1, "intercept")]
at = 0
for name, n in BLOCKS:
    j = max(range(at, at + n), key=lambda j: (counts.get(j, 0), -j))
    dirs.append((f"{name}[{j + 1}]", j, f"theta.{j + 1}"))
    at += n


def summary_columns(run):  # column name -> its entry in `agld summary --json` (rhat: rank-normalized)
    path = run + ".summary.json"
    if not os.path.exists(path):
        return {}
    return {c["name"]: c for c in json.load(open(path))["columns"]}


rows = []
for run in runs:
    cfg = json.load(open(os.path.join(run, "config.json")))
    m = list(csv.DictReader(open(os.path.join(run, "metrics.csv"))))
    rm, rs = read_npy(os.path.join(run, "posterior.npy"), 2)
    rhat = read_npy(os.path.join(run, "diagnostics.npy"), 3)[0]
    ok = sum(1 for j in range(d) if abs(rm[j] - em[j]) <= 0.1 * es[j] and abs(rs[j] / es[j] - 1) <= 0.1)
    wall = float(open(run + ".wall").read()) if os.path.exists(run + ".wall") else cfg["result"]["seconds"]
    stderr = open(run + ".stderr").read() if os.path.exists(run + ".stderr") else ""
    fr = cfg.get("friction")
    rows.append(dict(
        run=run, method=cfg["method"], friction=fr, fh=(fr * cfg["step"] if isinstance(fr, (int, float)) else None),
        step=cfg["step"], epochs=cfg["epochs"], passes=float(m[-1]["passes"]), wall=wall, target=100 * ok / d,
        dg=cfg["diagnostics"], warned="have not mixed" in stderr, rm=rm, rs=rs, rhat=rhat, srh=summary_columns(run),
        classes=run + ".classes"))

print("1. runs (linear, --intercept, diag, 4 chains, seed 0; passes = training rows read / N, shared by the chains under ca)")
print(f"{'method':14} {'friction':>9} {'D_f*h':>5} {'h':>7} {'epochs':>6} {'passes':>6} {'wall_s':>7} {'target%':>7} "
      f"{'icpt_err/sd':>11} {'icpt_sdrat':>10} {'icpt_Rhat':>9} {'max_Rhat':>8} {'Rhat>1.01':>9} {'lp__q50':>9} warned")
for r in rows:
    i = d - 1
    fr = "-" if r["friction"] is None else f"{r['friction']:.4g}"
    fh = "-" if r["fh"] is None else f"{r['fh']:.2f}"
    lp = r["srh"].get("lp__", {}).get("q50")
    lp = f"{lp:.3g}" if isinstance(lp, (int, float)) else "-"
    h = f"{r['step'] ** 0.5:.4g}" if r["fh"] is None else f"{r['step']:.4g}"  # ld: sqrt(eta), the h hmc2 takes
    print(f"{r['method']:14} {fr:>9} {fh:>5} {h:>7} {r['epochs']:6g} {r['passes']:6.2f} {r['wall']:7.1f} {r['target']:7.1f} "
          f"{(r['rm'][i] - em[i]) / es[i]:+11.2f} {r['rs'][i] / es[i]:10.3f} {r['rhat'][i]:9.3f} "
          f"{r['dg']['max_rhat']:8.3f} {r['dg']['rhat_above_1_01']:9} {lp:>9} {'yes' if r['warned'] else 'no'}")
print("(h: the step hmc2 takes; for ld, sqrt of its eta, the h hmc2's default resolves to. icpt_Rhat, max_Rhat: online")
print(" split-R-hat, diagnostics.npy; Rhat>1.01: coordinates above it; lp__q50: the kept draws' median lp__, a chain")
print(" that drifts away from the posterior shows there first)")

order = ["0-0", "1-5", "6-20", "21-100", "101-1000", "1001-10000", ">10000", "numeric", "intercept"]
if all(os.path.exists(r["classes"]) for r in rows):
    print()
    print("2. share within target (%) by training rows of the feature (bench/coordinate_classes.py)")
    table, ns = [], {}
    for r in rows:
        got = {}
        for line in open(r["classes"]):
            t = line.split()
            if t and t[0] in order:
                got[t[0]] = float(t[-1])
                ns[t[0]] = int(t[1])
        table.append(got)
    cls = [c for c in order if c in ns]
    print(f"{'method':14} {'D_f*h':>5} {'epochs':>6} " + " ".join(f"{c:>10}" for c in cls))
    print(f"{'(coordinates)':14} {'':>5} {'':>6} " + " ".join(f"{ns[c]:>10}" for c in cls))
    for r, got in zip(rows, table):
        fh = "-" if r["fh"] is None else f"{r['fh']:.2f}"
        print(f"{r['method']:14} {fh:>5} {r['epochs']:6g} " + " ".join(f"{got.get(c, float('nan')):10.1f}" for c in cls))

print()
print("3. prior-bounded directions: mean error in exact sds / sd ratio / online split-R-hat / rank-normalized R-hat (tracked)")
print("   exact sd: " + ", ".join(f"{lab} {es[j]:.3g}" for lab, j, _ in dirs))
for r in rows:
    fh = "-" if r["fh"] is None else f"{r['fh']:.2f}"
    print(f"{r['method']} D_f*h {fh}, epochs {r['epochs']:g}, passes {r['passes']:.2f}:")
    for lab, j, col in dirs:
        rn = r["srh"].get(col, {}).get("rhat")
        rn = f"{rn:.3f}" if isinstance(rn, (int, float)) else "-"
        print(f"    {lab:14} err {(r['rm'][j] - em[j]) / es[j]:+9.2f} sd  sd ratio {r['rs'][j] / es[j]:7.3f}  "
              f"R-hat {r['rhat'][j]:8.3f}  rank-norm. {rn:>8}")
