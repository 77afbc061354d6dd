#!/usr/bin/env bash
# Conversion benchmark: text MB/s of `agld convert` with 1 and 2 threads (zstd on), beside
# `cat FILE > /dev/null` and xgboost's LIBSVM loader, measured side by side in one
# hyperfine run (medians); the same with the rows shuffled (the default; the other runs keep
# the source's order, as they were first measured, before the shuffle was the default); peak
# memory of convert on 1x and 2x the input, and shuffled under --memory 256M; compression ratio
# and `agld info --verify` read speed. Results: docs/notes/2026-11-22-parser-and-conversion-speed.md.
#
# Settings (environment; bench/common.sh has AGLD, BUILD, DATA_DIR):
#   ROWS=1000000   criteo-shaped rows (about 340 MB of text)
#   RUNS=5         hyperfine runs of each command (medians)
# Needs hyperfine, GNU time and Debian's python3-xgboost (bash scripts/setup.sh --bench).
# Data: $DATA_DIR/criteo-$ROWS.svm and the stores c1-c3.agld (kept), convert.json, info.json,
# verify.json.
#   ROWS=100000 RUNS=2 bench/convert_bench.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
no_args "$@"
need_agld
need_cmd hyperfine /usr/bin/time /usr/bin/python3
ROWS=${ROWS:-1000000}
RUNS=${RUNS:-5}
DIR=$DATA_DIR
mkdir -p "$DIR"
FILE=$DIR/criteo-$ROWS.svm
[[ -f $FILE ]] || "$AGLD" gen --shape criteo --rows "$ROWS" --seed 1 -o "$FILE" --quiet
SIZE=$(stat -c %s "$FILE")
PY=/usr/bin/python3   # Debian's python, which has python3-xgboost
XGB="import xgboost; xgboost.DMatrix('$FILE?format=libsvm', nthread=%d)"

echo "input: $FILE ($ROWS rows, $((SIZE / 1000000)) MB), $(nproc) cores, page cache warm"
hyperfine --style none --warmup 1 --runs "$RUNS" --export-json "$DIR/convert.json" \
  -n cat "cat '$FILE' > /dev/null" \
  -n agld-1t "'$AGLD' convert '$FILE' -o '$DIR/c1.agld' --threads 1 -q --keep-order" \
  -n agld-2t "'$AGLD' convert '$FILE' -o '$DIR/c2.agld' --threads 2 -q --keep-order" \
  -n agld-1t-fast "'$AGLD' convert '$FILE' -o '$DIR/c3.agld' --threads 1 -q --keep-order --compression zstd:-1" \
  -n agld-2t-shuffled "'$AGLD' convert '$FILE' -o '$DIR/c4.agld' --threads 2 -q" \
  -n xgboost-1t "$PY -c \"$(printf "$XGB" 1)\"" \
  -n xgboost-2t "$PY -c \"$(printf "$XGB" 2)\"" \
  -n python-import-xgboost "$PY -c 'import xgboost'" >/dev/null

peak_rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
RSS1=$(peak_rss "$AGLD" convert "$FILE" -o "$DIR/m1.agld" --threads 2 -q --keep-order)
RSS2=$(bash -c "/usr/bin/time -f %M bash -c \"cat '$FILE' '$FILE' | '$AGLD' convert - -o '$DIR/m2.agld' --threads 2 -q --keep-order\"" 2>&1 | tail -1)
RSS_SHUF=$(peak_rss "$AGLD" convert "$FILE" -o "$DIR/s.agld" --threads 2 -q --memory 256M)
JSON_SHUF=$("$AGLD" convert "$FILE" -o "$DIR/s.agld" --threads 2 --memory 256M --json)
"$AGLD" info "$DIR/c2.agld" --json > "$DIR/info.json"
for i in 1 2 3; do "$AGLD" info "$DIR/c2.agld" --verify --json; done > "$DIR/verify.json"
rm -f "$DIR/m1.agld" "$DIR/m2.agld" "$DIR/s.agld" "$DIR/c4.agld"

$PY - "$DIR" "$SIZE" "$RSS1" "$RSS2" "$RSS_SHUF" "$JSON_SHUF" <<'PYEOF'
import json, sys, statistics
d, size, rss1, rss2, rss_shuf, shuf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), json.loads(sys.argv[6])
res = {r["command"]: r for r in json.load(open(f"{d}/convert.json"))["results"]}
med = {k: statistics.median(v["times"]) for k, v in res.items()}
imp = med["python-import-xgboost"]
rows = [("cat FILE > /dev/null", med["cat"]),
        ("agld convert, 1 thread", med["agld-1t"]),
        ("agld convert, 2 threads", med["agld-2t"]),
        ("agld convert, 2 threads, shuffled (the default)", med["agld-2t-shuffled"]),
        ("agld convert, 1 thread, --compression zstd:-1", med["agld-1t-fast"]),
        ("xgboost DMatrix, 1 thread (import subtracted)", med["xgboost-1t"] - imp),
        ("xgboost DMatrix, 2 threads (import subtracted)", med["xgboost-2t"] - imp)]
print(f"{'what':48} {'median s':>9} {'text MB/s':>10} {'vs agld-1t':>10}")
for name, t in rows:
    print(f"{name:48} {t:9.3f} {size / 1e6 / t:10.0f} {med['agld-1t'] / t:10.2f}")
info = json.load(open(f"{d}/info.json"))
verifies = [json.loads(x) for x in open(f"{d}/verify.json").read().replace("}\n{", "}\x00{").split("\x00")]
vs = statistics.median(v["verify"]["stored_mb_per_s"] for v in verifies)
vr = statistics.median(v["verify"]["raw_mb_per_s"] for v in verifies)
print(f"\nstore: {info['file_bytes'] / 1e6:.1f} MB on disk, compression ratio {info['compression_ratio']:.2f} (raw/stored), "
      f"text/store {size / info['file_bytes']:.2f}")
print(f"info --verify: {vs:.0f} MB/s of stored bytes, {vr:.0f} MB/s raw (median of 3)")
print(f"peak RSS, 2 threads: {rss1 / 1024:.0f} MiB on the input, {rss2 / 1024:.0f} MiB on twice the input (stdin)")
print(f"peak RSS shuffled with --memory 256M: {rss_shuf / 1024:.0f} MiB ({shuf['shuffle_runs']} runs spilled, "
      f"{shuf['shuffle_disk_bytes'] / 1e6:.0f} MB of them on disk at most)")
PYEOF
