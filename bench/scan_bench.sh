#!/usr/bin/env bash
# Reader I/O benchmark (the I/O half of the paper's Figure 3): `agld scan` read cold on a
# criteo-shaped store several times larger than the memory budget, against the physical
# limit of a pass, the slower of
#   stored bytes / sequential disk read speed (dd with O_DIRECT, median of REPS), and
#   raw bytes / decompression speed (`agld info --verify`, page cache warm, 1 and 2 threads;
#   the reader decompresses on one thread, so the 1-thread figure is the limit).
# For each store (zstd, none) and budget M = S/2, S/4, S/8 (S: file bytes of the zstd store):
# ca and br, one pass, cold (the store's pages dropped before each run); rr and ra, a
# fraction of a pass (random I/O: a chunk per row). Then the case where the store fits:
# a budget of 2x the raw bytes, ca for 1 and FITS_PASSES (11) passes: the difference is
# the rate of the passes after the first, which read nothing from the disk. Every configuration runs once per
# round, REPS rounds, interleaved; the table shows medians.
#
#   bench/scan_bench.sh [ROWS]     (default 5000000 rows: ~375 MB zstd, ~1 GB none, 1.7 GB text)
#   REPS=3 RANDOM_PASSES=0.0006 AGLD_BENCH_DIR=/some/disk bench/scan_bench.sh
#   AGLD=/path/to/agld bench/scan_bench.sh   (use that binary, do not build)
# Needs root for /proc/sys/vm/drop_caches; otherwise the pages of the store are dropped
# with posix_fadvise(DONTNEED), which is enough for a clean file.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROWS=${1:-${ROWS:-5000000}}
REPS=${REPS:-3}
RANDOM_PASSES=${RANDOM_PASSES:-0.0006}
FITS_PASSES=${FITS_PASSES:-11}
DIR=${AGLD_BENCH_DIR:-$ROOT/build/bench-data}
if [[ -z ${AGLD:-} ]]; then
  bash scripts/build.sh --bench >/dev/null
  AGLD=$ROOT/build/agld
fi
PY=/usr/bin/python3
mkdir -p "$DIR"
OUT=$DIR/scan-results
rm -rf "$OUT"
mkdir -p "$OUT"

TEXT=$DIR/criteo-$ROWS.svm
[[ -f $TEXT ]] || "$AGLD" gen --shape criteo --rows "$ROWS" --seed 1 -o "$TEXT" --quiet
declare -A STORE=([zstd]=$DIR/scan-$ROWS-zstd.agld [none]=$DIR/scan-$ROWS-none.agld)
[[ -f ${STORE[zstd]} ]] || "$AGLD" convert "$TEXT" -o "${STORE[zstd]}" -q
[[ -f ${STORE[none]} ]] || "$AGLD" convert "$TEXT" -o "${STORE[none]}" -q --compression none
for s in zstd none; do "$AGLD" info "${STORE[$s]}" --json > "$OUT/info-$s.json"; done
S=$(stat -c %s "${STORE[zstd]}")
RAW=$($PY -c "import json; print(json.load(open('$OUT/info-zstd.json'))['raw_bytes'])")
FITS=$((2 * RAW))
CHUNK_KB=$($PY -c "import json; j=json.load(open('$OUT/info-zstd.json')); print(max(4, j['stored_bytes'] // j['chunks'] // 4096 * 4))")

drop() {  # the file's pages out of the page cache
  sync
  if ! { echo 1 > /proc/sys/vm/drop_caches; } 2>/dev/null; then
    $PY -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" "$1"
  fi
}
scan() {  # scan NAME STORE ARGS...: one cold run, its JSON saved as OUT/NAME.json
  local name=$1 store=$2
  shift 2
  drop "$store"
  "$AGLD" scan "$store" --batch 1024 --json "$@" > "$OUT/$name.json"
}

echo "stores: zstd $((S / 1000000)) MB, none $(($(stat -c %s "${STORE[none]}") / 1000000)) MB," \
  "raw $((RAW / 1000000)) MB, $ROWS rows; $(nproc) cores; budgets S/2 S/4 S/8 of S = $S B;" \
  "fits: $FITS B; $REPS rounds" >&2
for r in $(seq "$REPS"); do
  echo "round $r/$REPS" >&2
  for s in zstd none; do
    f=${STORE[$s]}
    # (a) sequential disk read speed, O_DIRECT: 4 MiB requests, and requests of a chunk's
    # stored size (one at a time: what a reader that reads chunk by chunk can get)
    for bs in 4M "${CHUNK_KB}K"; do
      drop "$f"
      dd if="$f" of=/dev/null bs="$bs" iflag=direct 2> "$OUT/dd-$s-$bs-$r.txt"
    done
    # (b) decompression speed, page cache warm
    cat "$f" > /dev/null
    for t in 1 2; do "$AGLD" info "$f" --verify --threads "$t" --json > "$OUT/verify-$s-t$t-$r.json"; done
    for d in 2 4 8; do
      m=$((S / d))
      for o in ca br; do scan "$s-S$d-$o-$r" "$f" --access "$o" --passes 1 --memory "$m"; done
      for o in rr ra; do scan "$s-S$d-$o-$r" "$f" --access "$o" --passes "$RANDOM_PASSES" --memory "$m"; done
    done
    # diagnosis: ca with no background thread (the consumer's copy done inline)
    scan "$s-S2-ca_prefetch0-$r" "$f" --access ca --passes 1 --memory $((S / 2)) --prefetch 0
    # the store fits the budget: 1 pass, and FITS_PASSES passes
    scan "$s-fits-ca_p1-$r" "$f" --access ca --passes 1 --memory "$FITS"
    scan "$s-fits-ca_pN-$r" "$f" --access ca --passes "$FITS_PASSES" --memory "$FITS"
  done
done

$PY - "$OUT" "$REPS" "$CHUNK_KB" <<'PYEOF' | tee "$DIR/scan_bench.txt"
import glob, json, os, re, statistics, sys
out, reps, chunk_kb = sys.argv[1], int(sys.argv[2]), sys.argv[3]
med = statistics.median
def load(name):
    return [json.load(open(f"{out}/{name}-{r}.json")) for r in range(1, reps + 1)]
def dd_mbs(s, bs):
    v = []
    for r in range(1, reps + 1):
        m = re.search(r"^(\d+) bytes .* copied, ([0-9.e+-]+) s", open(f"{out}/dd-{s}-{bs}-{r}.txt").read(), re.M)
        v.append(int(m.group(1)) / float(m.group(2)) / 1e6)
    return med(v)

print(f"{'store':5} {'budget':>10} {'order':6} {'rows/s':>11} {'stored MB/s':>11} {'disk lim':>10} "
      f"{'dec lim':>10} {'% limit':>7} {'serial':>7} {'disk':>6} {'peak RSS':>9}")
print(f"{'':5} {'':>10} {'':6} {'median':>11} {'achieved':>11} {'rows/s':>10} {'rows/s':>10} "
      f"{'':>7} {'% of':>7} {'/read':>6} {'MiB':>9}")
notes = []
for s in ("zstd", "none"):
    info = json.load(open(f"{out}/info-{s}.json"))
    rows, stored, raw = info["rows"], info["file_bytes"], info["raw_bytes"]
    disk = dd_mbs(s, "4M")
    disk_chunk = dd_mbs(s, f"{chunk_kb}K")
    dec = {t: med(v["verify"]["raw_mb_per_s"] for v in
                  [json.load(open(f"{out}/verify-{s}-t{t}-{r}.json")) for r in range(1, reps + 1)])
           for t in (1, 2)}
    t_disk = stored / 1e6 / disk
    t_dec = raw / 1e6 / dec[1]           # the reader decompresses on one thread
    limit = rows / max(t_disk, t_dec)
    # a producer that reads a chunk, then decodes it, then reads the next: the two add up
    serial = rows / (stored / 1e6 / disk_chunk + t_dec)
    notes.append(f"{s}: {stored / 1e6:.0f} MB stored, {raw / 1e6:.0f} MB raw, {info['chunks']} chunks; "
                 f"disk O_DIRECT {disk:.0f} MB/s (4M requests), {disk_chunk:.0f} MB/s ({chunk_kb}K requests); "
                 f"verify {dec[1]:.0f} MB/s raw on 1 thread, {dec[2]:.0f} on 2; "
                 f"pass limit {max(t_disk, t_dec):.2f} s = {limit / 1e6:.2f} M rows/s "
                 f"({'disk' if t_disk > t_dec else 'decompression'}-bound); "
                 f"read-then-decode serial bound {serial / 1e6:.2f} M rows/s")
    for d in (2, 4, 8):
        for o in ("ca", "br", "rr", "ra"):
            js = load(f"{s}-S{d}-{o}")
            rate = med(j["rows_per_s"] for j in js)
            secs = med(j["seconds"] for j in js)
            mbs = med(j["bytes_read"] / j["seconds"] for j in js) / 1e6
            dr = med(j["disk_read_bytes"] / j["bytes_read"] for j in js)
            rss = max(j["peak_rss_bytes"] for j in js)
            budget = js[0]["memory_bytes"]
            pct = f"{100 * rate / limit:6.0f}%" if o in ("ca", "br") else f"{'-':>7}"
            ser = f"{100 * rate / serial:6.0f}%" if o in ("ca", "br") else f"{'-':>7}"
            flag = "" if rss <= budget else " OVER"
            print(f"{s:5} {'S/%d' % d + ' %dM' % (budget >> 20):>10} {o:6} {rate:11,.0f} {mbs:11.0f} "
                  f"{rows / t_disk:10,.0f} {rows / t_dec:10,.0f} {pct} {ser} {dr:6.2f} "
                  f"{rss / 2**20:9.0f}{flag}")
    js = load(f"{s}-S2-ca_prefetch0")
    rate = med(j["rows_per_s"] for j in js)
    print(f"{s:5} {'S/2':>10} {'ca pf0':6} {rate:11,.0f} {med(j['bytes_read'] / j['seconds'] for j in js) / 1e6:11.0f} "
          f"{'':10} {'':10} {100 * rate / limit:6.0f}% {100 * rate / serial:6.0f}%")
    p1, p3 = load(f"{s}-fits-ca_p1"), load(f"{s}-fits-ca_pN")
    npass = round(p3[0]["passes"])
    t1, t3 = med(j["seconds"] for j in p1), med(j["seconds"] for j in p3)
    r1 = med(j["rows_per_s"] for j in p1)
    steady = (p3[0]["rows"] - p1[0]["rows"]) / (t3 - t1) if t3 > t1 else float("inf")
    d1, d3 = med(j["disk_read_bytes"] for j in p1), med(j["disk_read_bytes"] for j in p3)
    budget = p1[0]["memory_bytes"]
    rss = max(j["peak_rss_bytes"] for j in p1 + p3)
    print(f"{s:5} {'fits %dM' % (budget >> 20):>10} {'ca p1':6} {r1:11,.0f} "
          f"{med(j['bytes_read'] / j['seconds'] for j in p1) / 1e6:11.0f} {rows / t_disk:10,.0f} "
          f"{rows / t_dec:10,.0f} {100 * r1 / limit:6.0f}% {100 * r1 / serial:6.0f}% {d1 / med(j['bytes_read'] for j in p1):6.2f} {rss / 2**20:9.0f}")
    print(f"{s:5} {'fits %dM' % (budget >> 20):>10} {'ca p%d' % npass:6} {med(j['rows_per_s'] for j in p3):11,.0f} "
          f"{'':11} {'':10} {'':10} {'':7} {'':7} {d3 / med(j['bytes_read'] for j in p3):6.2f} {rss / 2**20:9.0f}")
    notes.append(f"{s} fits ({budget >> 20} MiB, whole_store_cached={p3[0]['whole_store_cached']}): pass 1 {t1:.2f} s, "
                 f"{npass} passes {t3:.2f} s; passes 2-{npass}: {steady / 1e6:.1f} M rows/s = "
                 f"{(npass - 1) * raw / (t3 - t1) / 1e9 if t3 > t1 else float('inf'):.1f} GB/s of raw bytes delivered "
                 f"({steady / (rows / t_dec):.1f}x the decompression limit); disk read {d1 / 1e6:.0f} MB "
                 f"in 1 pass, {d3 / 1e6:.0f} MB in {npass} (after pass 1: {(d3 - d1) / 1e6:.0f} MB)")
print()
print("disk lim / dec lim: rows/s if a pass took stored bytes / O_DIRECT speed, raw bytes / 1-thread")
print("decompression speed; % limit: of the slower of the two; serial: % of the bound of reading a")
print("chunk (chunk-sized O_DIRECT requests) and then decoding it, one after the other; disk/read: /proc/self/io")
print("read_bytes over the stored bytes of the chunks read; rr, ra: a fraction of a pass; ca pf0: --prefetch 0.")
for n in notes:
    print("- " + n)
PYEOF
