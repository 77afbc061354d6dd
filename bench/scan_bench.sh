#!/usr/bin/env bash
# Reader I/O benchmark (the I/O half of the paper's Figure 3): `agld scan` read cold on a
# criteo-shaped store several times larger than the memory budget, against the physical
# limit of a pass, the slower of
#   stored bytes / sequential disk read speed (dd with O_DIRECT: the median of REPS, and for
#   each ca, br run of the binary under test one just before it, the %pair column: the VM's
#   disk measured 140 to 2,100 MB/s within one run), and
#   raw bytes / decompression speed, page cache warm, 1 and 2 threads (the reader decompresses
#   on as many threads as cores, here 2, so the limit with the threads in use is the 2-thread
#   one; the 1-thread one is shown too), measured two ways: `agld info --verify` (what the
#   reader does to a chunk: checksum, zstd, checks, unshuffling) and zstd alone
#   (build/zstd_bench: ZSTD_decompressDCtx on the chunks' bytes in memory, nothing else).
#   The %lim columns use the first; the %zstd column, the strict second (2 threads). The
#   %ceil column: against the ceiling of any reader that delivers checked rows of the store
#   (zstd_bench's "ceiling": zstd, the CRC and a streaming write of each decoded chunk, no
#   transform, no I/O, on 2 threads), in place of zstd alone. Round 1 also measures zstd alone
#   on the same rows stored as plain CSR chunks (zstd_bench --plain), in the notes.
# For each store (zstd, the default, with raw literals; zstd-huf: --huffman-literals; none)
# and budget M = S/2, S/4, S/8 (S: file bytes of the zstd store):
# ca and br, one pass, cold (the page cache dropped before each run); rr and ra, a fraction
# of a pass (RANDOM_PASSES; and, on the none store, where rows are read on their own,
# LONG_RANDOM_PASSES with the binary under test only). Then the case where the store fits:
# a budget of 1.25x the decoded bytes, ca for 1 and FITS_PASSES (11) passes: the difference is the
# rate of the passes after the first, which read nothing from the disk. Every configuration
# runs once per round, REPS rounds, interleaved (with AGLD_BASE, the base binary and the
# binary under test one after the other, A B A B); the table shows medians.
#
# Results: docs/notes/2026-11-23-reader-throughput.md (docs/readers.md, "Which targets hold").
#
# Settings (environment; bench/common.sh has AGLD, BUILD, DATA_DIR):
#   ROWS=5000000             criteo-shaped rows (~381 MB zstd, ~1 GB none, 1.7 GB of text)
#   REPS=3                   rounds
#   RANDOM_PASSES=0.0006     rr, ra: the fraction of a pass read (3,072 rows of 5M)
#   LONG_RANDOM_PASSES=0.01  rr, ra on the none store, binary under test only
#   FITS_PASSES=11           passes of the run where the store fits
#   AGLD_BASE                an older agld to compare with, run by run (default: none)
#   ZSTD_BENCH               default: $BUILD/zstd_bench
#   IDLE_WAIT=0              1: before each run, wait until the CPUs are idle (a shared machine)
#   RESULTS                  where the runs' JSON go (default $DATA_DIR/scan-results; the table
#                            goes to RESULTS.txt)
# Needs root for /proc/sys/vm/drop_caches; otherwise the pages of the store are dropped
# with posix_fadvise(DONTNEED), which is enough for a clean file.
# Data: $DATA_DIR/criteo-$ROWS.svm and the three stores scan-$ROWS-*.agld (kept).
#   REPS=3 IDLE_WAIT=1 bench/scan_bench.sh
#   AGLD_BASE=/path/to/old/agld bench/scan_bench.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
no_args "$@"
need_agld
need_cmd /usr/bin/python3 dd
ROWS=${ROWS:-5000000}
REPS=${REPS:-3}
RANDOM_PASSES=${RANDOM_PASSES:-0.0006}
LONG_RANDOM_PASSES=${LONG_RANDOM_PASSES:-0.01}
FITS_PASSES=${FITS_PASSES:-11}
DIR=$DATA_DIR
ZSTD_BENCH=${ZSTD_BENCH:-$(need_tool zstd_bench)}
BINS=(new)
declare -A BIN=([new]=$AGLD)
if [[ -n ${AGLD_BASE:-} ]]; then
  BINS=(base new)
  BIN[base]=$AGLD_BASE
fi
PY=/usr/bin/python3
mkdir -p "$DIR"
OUT=${RESULTS:-$DIR/scan-results}
rm -rf "$OUT"
mkdir -p "$OUT"

TEXT=$DIR/criteo-$ROWS.svm
[[ -f $TEXT ]] || "$AGLD" gen --shape criteo --rows "$ROWS" --seed 1 -o "$TEXT" --quiet
# zstd: the default (raw literals); zstd-huf: --huffman-literals (Huffman-coded literals).
declare -A STORE=([zstd]=$DIR/scan-$ROWS-zstdraw.agld [zstd-huf]=$DIR/scan-$ROWS-zstd.agld
                  [none]=$DIR/scan-$ROWS-none.agld)
# The generated rows are independent draws: their order does not matter to a reader, and
# --keep-order keeps the stores as they were measured before convert shuffled by default.
[[ -f ${STORE[zstd]} ]] || "$AGLD" convert "$TEXT" -o "${STORE[zstd]}" -q --keep-order
[[ -f ${STORE[zstd-huf]} ]] || "$AGLD" convert "$TEXT" -o "${STORE[zstd-huf]}" -q --keep-order --huffman-literals
[[ -f ${STORE[none]} ]] || "$AGLD" convert "$TEXT" -o "${STORE[none]}" -q --keep-order --compression none
STORES=(zstd zstd-huf none)
for s in "${STORES[@]}"; do "$AGLD" info "${STORE[$s]}" --json > "$OUT/info-$s.json"; done
S=$(stat -c %s "${STORE[zstd]}")
RAW=$($PY -c "import json; print(json.load(open('$OUT/info-zstd.json'))['raw_bytes'])")
# The store fits: a budget of its decoded bytes and a quarter more (the process, the ring).
DECODED=$($PY -c "import json; print(json.load(open('$OUT/info-zstd.json'))['decoded_bytes'])")
FITS=$((DECODED + DECODED / 4))
CHUNK_KB=$($PY -c "import json; j=json.load(open('$OUT/info-zstd.json')); print(max(4, j['stored_bytes'] // j['chunks'] // 4096 * 4))")

idle() {  # with IDLE_WAIT=1: until the CPUs were >= 92% idle over a second (at most 10 min)
  [[ ${IDLE_WAIT:-0} == 1 ]] || return 0
  local i a b
  for ((i = 0; i < 600; i++)); do
    a=($(head -1 /proc/stat)); sleep 1; b=($(head -1 /proc/stat))
    local busy=$(( (b[1]+b[2]+b[3]+b[6]+b[7]+b[8]) - (a[1]+a[2]+a[3]+a[6]+a[7]+a[8]) ))
    local all=$(( busy + (b[4]+b[5]) - (a[4]+a[5]) ))
    (( all > 0 && busy * 100 < 8 * all )) && return 0
  done
}
drop() {  # the file's pages out of the page cache
  sync
  if ! { echo 1 > /proc/sys/vm/drop_caches; } 2>/dev/null; then
    $PY -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" "$1"
  fi
}
scan() {  # scan NAME STORE ARGS...: one cold run per binary, the JSON saved as OUT/BIN-NAME.json
  local name=$1 store=$2 b
  shift 2
  for b in "${BINS[@]}"; do
    idle
    drop "$store"
    "${BIN[$b]}" scan "$store" --batch 1024 --json "$@" > "$OUT/$b-$name.json"
  done
}
paired() {  # paired NAME STORE ARGS...: scan, each run just after a dd of the store (its own
  # limit: the VM's disk speed swings from one minute to the next), OUT/BIN-NAME.dd
  local name=$1 store=$2 b
  shift 2
  for b in "${BINS[@]}"; do
    idle
    drop "$store"
    dd if="$store" of=/dev/null bs=4M iflag=direct 2> "$OUT/$b-$name.dd"
    drop "$store"
    "${BIN[$b]}" scan "$store" --batch 1024 --json "$@" > "$OUT/$b-$name.json"
  done
}

echo "stores: zstd $((S / 1000000)) MB, zstd-huf $(($(stat -c %s "${STORE[zstd-huf]}") / 1000000)) MB," \
  "none $(($(stat -c %s "${STORE[none]}") / 1000000)) MB," \
  "raw $((RAW / 1000000)) MB, $ROWS rows; $(nproc) cores; budgets S/2 S/4 S/8 of S = $S B;" \
  "fits: $FITS B; $REPS rounds; binaries: ${BINS[*]}" >&2
for r in $(seq "$REPS"); do
  echo "round $r/$REPS" >&2
  for s in "${STORES[@]}"; do
    f=${STORE[$s]}
    # (a) sequential disk read speed, O_DIRECT: 4 MiB requests, and requests of a chunk's
    # stored size (one at a time: what a reader that reads chunk by chunk can get)
    for bs in 4M "${CHUNK_KB}K"; do
      idle
      drop "$f"
      dd if="$f" of=/dev/null bs="$bs" iflag=direct 2> "$OUT/dd-$s-$bs-$r.txt"
    done
    # (b) decompression speed, page cache warm
    cat "$f" > /dev/null
    for t in 1 2; do
      idle
      "$AGLD" info "$f" --verify --threads "$t" --json > "$OUT/verify-$s-t$t-$r.json"
      if [[ $s != none ]]; then
        idle
        plain=()
        [[ $r == 1 && $s == zstd && $t == 2 ]] && plain=(--plain)
        "$ZSTD_BENCH" "$f" "$t" 3 "${plain[@]}" > "$OUT/zstd-$s-t$t-$r.json"
      fi
    done
    for d in 2 4 8; do
      m=$((S / d))
      for o in ca br; do paired "$s-S$d-$o-$r" "$f" --access "$o" --passes 1 --memory "$m"; done
      for o in rr ra; do scan "$s-S$d-$o-$r" "$f" --access "$o" --passes "$RANDOM_PASSES" --memory "$m"; done
      if [[ $s == none ]]; then  # direct rows: past the first reads of the row indexes
        for o in rr ra; do
          idle
          drop "$f"
          "$AGLD" scan "$f" --batch 1024 --json --access "$o" --passes "$LONG_RANDOM_PASSES" \
            --memory "$m" > "$OUT/new-$s-S$d-${o}_long-$r.json"
        done
      fi
    done
    # ca over 3 passes out of core: later passes hit the chunks the cache kept
    scan "$s-S2-ca_p3-$r" "$f" --access ca --passes 3 --memory $((S / 2))
    # ca with no background thread (the consumer reads and decodes chunks itself)
    scan "$s-S2-ca_prefetch0-$r" "$f" --access ca --passes 1 --memory $((S / 2)) --prefetch 0
    # the store fits the budget: 1 pass, and FITS_PASSES passes
    scan "$s-fits-ca_p1-$r" "$f" --access ca --passes 1 --memory "$FITS"
    scan "$s-fits-ca_pN-$r" "$f" --access ca --passes "$FITS_PASSES" --memory "$FITS"
  done
done

$PY - "$OUT" "$REPS" "$CHUNK_KB" "${BINS[*]}" <<'PYEOF' | tee "$OUT.txt"
import json, os, re, statistics, sys
out, reps, chunk_kb, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split()
med = statistics.median
def load(b, name):
    return [json.load(open(f"{out}/{b}-{name}-{r}.json")) for r in range(1, reps + 1)]
def dd_file(path):
    m = re.search(r"^(\d+) bytes .* copied, ([0-9.e+-]+) s", open(path).read(), re.M)
    return int(m.group(1)) / float(m.group(2)) / 1e6
def dd_all(s, bs):
    return [dd_file(f"{out}/dd-{s}-{bs}-{r}.txt") for r in range(1, reps + 1)]
def dd_mbs(s, bs):
    return med(dd_all(s, bs))

two = len(bins) == 2
hdr = f"{'store':8} {'budget':>10} {'order':9}"
if two:
    hdr += f" {'base rows/s':>12} {'new rows/s':>12} {'new/base':>8}"
else:
    hdr += f" {'rows/s':>12}"
hdr += f" {'%lim 1t':>7} {'%lim 2t':>7} {'%zstd':>6} {'%ceil':>6} {'%pair':>6} {'stored MB/s':>11} {'disk/read':>9} {'peak RSS MiB (' + '/'.join(bins) + ')':>22}"
print(hdr)
notes = []
for s in ("zstd", "zstd-huf", "none"):
    info = json.load(open(f"{out}/info-{s}.json"))
    rows, stored, raw = info["rows"], info["file_bytes"], info["raw_bytes"]
    disk = dd_mbs(s, "4M")
    disk_chunk = dd_mbs(s, f"{chunk_kb}K")
    dec = {t: med(v["verify"]["raw_mb_per_s"] for v in
                  [json.load(open(f"{out}/verify-{s}-t{t}-{r}.json")) for r in range(1, reps + 1)])
           for t in (1, 2)}
    t_disk = stored / 1e6 / disk
    limit = {t: rows / max(t_disk, raw / 1e6 / dec[t]) for t in (1, 2)}
    strict = ceiling = None
    if s != "none":
        zs = {t: med(json.load(open(f"{out}/zstd-{s}-t{t}-{r}.json"))["median_raw_mb_per_s"]
                     for r in range(1, reps + 1)) for t in (1, 2)}
        strict = rows / max(t_disk, raw / 1e6 / zs[2])
        cz = med(json.load(open(f"{out}/zstd-{s}-t2-{r}.json"))["ceiling_median_raw_mb_per_s"]
                 for r in range(1, reps + 1))
        ceiling = rows / max(t_disk, raw / 1e6 / cz)
        notes.append(f"{s}: ceiling of a reader (zstd, CRC, decoded chunks written; 2 threads) {cz:.0f} MB/s raw "
                     f"= {100 * cz / zs[2]:.0f}% of zstd alone: pass limit {ceiling / 1e6:.2f} M rows/s")
        z1 = json.load(open(f"{out}/zstd-{s}-t2-1.json"))
        if "plain" in z1:
            pl = z1["plain"]
            notes.append(f"{s}: the same rows as plain CSR chunks (zstd's output the rows themselves): "
                         f"{pl['stored_bytes'] / 1e6:.0f} MB stored, {pl['raw_bytes'] / 1e6:.0f} MB raw; zstd alone "
                         f"on 2 threads {rows / (pl['raw_bytes'] / 1e6 / pl['median_raw_mb_per_s']) / 1e6:.2f} M rows/s, "
                         f"with the CRC {rows / (pl['raw_bytes'] / 1e6 / pl['crc_median_raw_mb_per_s']) / 1e6:.2f} M")
        notes.append(f"{s}: zstd alone {zs[1]:.0f} MB/s raw on 1 thread, {zs[2]:.0f} on 2: strict pass limit "
                     f"{strict / 1e6:.2f} M rows/s with 2 threads "
                     f"({'disk' if t_disk > raw / 1e6 / zs[2] else 'decompression'}-bound)")
    notes.append(f"{s}: {stored / 1e6:.0f} MB stored, {raw / 1e6:.0f} MB raw, {info['chunks']} chunks; "
                 f"disk O_DIRECT {disk:.0f} MB/s (4M requests), {disk_chunk:.0f} MB/s ({chunk_kb}K requests); "
                 f"verify {dec[1]:.0f} MB/s raw on 1 thread, {dec[2]:.0f} on 2; pass limit "
                 f"{limit[1] / 1e6:.2f} M rows/s with 1 decompressing thread "
                 f"({'disk' if t_disk > raw / 1e6 / dec[1] else 'decompression'}-bound), "
                 f"{limit[2] / 1e6:.2f} M with 2 ({'disk' if t_disk > raw / 1e6 / dec[2] else 'decompression'}-bound)")
    def line(budget_label, label, name, pct, budget=None):
        rates = {b: med(j["rows_per_s"] for j in load(b, name)) for b in bins}
        js = load(bins[-1], name)
        r = rates[bins[-1]]
        t = f"{s:8} {budget_label:>10} {label:9}"
        if two:
            t += f" {rates['base']:12,.0f} {r:12,.0f} {r / rates['base']:7.2f}x"
        else:
            t += f" {r:12,.0f}"
        t += (f" {100 * r / limit[1]:6.0f}% {100 * r / limit[2]:6.0f}%" if pct else f" {'-':>7} {'-':>7}")
        t += (f" {100 * r / strict:5.0f}%" if pct and strict else f" {'-':>6}")
        t += (f" {100 * r / ceiling:5.0f}%" if pct and ceiling else f" {'-':>6}")
        # Each run against the limit with the disk speed measured just before it (paired runs).
        dds = [f"{out}/{bins[-1]}-{name}-{k}.dd" for k in range(1, reps + 1)]
        if pct and all(os.path.exists(f) for f in dds):
            dec2 = zs[2] if strict else dec[2]
            ratios = [j["rows_per_s"] / (rows / max(stored / 1e6 / dd_file(f), raw / 1e6 / dec2))
                      for j, f in zip(js, dds)]
            paired_disks.extend(dd_file(f) for f in dds)
            t += f" {100 * med(ratios):5.0f}%"
        else:
            t += f" {'-':>6}"
        t += f" {med(j['bytes_read'] / j['seconds'] for j in js) / 1e6:11.0f}"
        t += f" {med(j['disk_read_bytes'] / max(1, j['bytes_read']) for j in js):9.2f}"
        budget = js[0]["memory_bytes"]
        rss = []
        for b in bins:
            m = max(j["peak_rss_bytes"] for j in load(b, name))
            rss.append(f"{m / 2**20:.0f}{'' if m <= budget else ' OVER'}")
        t += f" {' / '.join(rss):>22}"
        print(t)
    paired_disks = []
    for d in (2, 4, 8):
        for o in ("ca", "br", "rr", "ra"):
            budget = load(bins[-1], f"{s}-S{d}-{o}")[0]["memory_bytes"]
            line(f"S/{d} {budget >> 20}M", o, f"{s}-S{d}-{o}", o in ("ca", "br"))
        if s == "none":
            for o in ("rr", "ra"):
                js = [json.load(open(f"{out}/new-{s}-S{d}-{o}_long-{r}.json")) for r in range(1, reps + 1)]
                rss = max(j["peak_rss_bytes"] for j in js)
                print(f"{s:8} {'S/%d' % d:>10} {o + ' long':9} {'' if not two else ' ' * 13}"
                      f"{med(j['rows_per_s'] for j in js):12,.0f}   ({js[0]['rows']} rows, "
                      f"{med(j['row_index_reads'] for j in js):.0f} row indexes read, peak RSS "
                      f"{rss / 2**20:.0f} MiB{'' if rss <= js[0]['memory_bytes'] else ' OVER'})")
    if paired_disks:
        notes.append(f"{s}: disk O_DIRECT just before each ca, br run (%pair): {min(paired_disks):.0f}-"
                     f"{max(paired_disks):.0f} MB/s, median {med(paired_disks):.0f}; the rounds' own: "
                     + ", ".join(f"{v:.0f}" for v in dd_all(s, "4M")))
    line("S/2", "ca pf0", f"{s}-S2-ca_prefetch0", True)
    for b in bins:
        q1, q3 = load(b, f"{s}-S2-ca"), load(b, f"{s}-S2-ca_p3")
        t1, t3 = med(j["seconds"] for j in q1), med(j["seconds"] for j in q3)
        later = (med(j["later_rows_per_s"] for j in q3) if all(j.get("later_rows_per_s") for j in q3)
                 else 2 * q1[0]['rows'] / (t3 - t1))
        notes.append(f"{s} S/2 ca, 3 passes, {b}: {t3:.2f} s against {t1:.2f} s for 1 pass; passes 2-3 "
                     f"{later / 1e6:.2f} M rows/s; cache hits {q3[0]['cache_hits']} "
                     f"of {q3[0]['chunk_visits']} chunk visits")
    line(f"fits", "ca p1", f"{s}-fits-ca_p1", True)
    p1, pn = load(bins[-1], f"{s}-fits-ca_p1"), load(bins[-1], f"{s}-fits-ca_pN")
    npass = round(pn[0]["passes"])
    for b in bins:
        q1, qn = load(b, f"{s}-fits-ca_p1"), load(b, f"{s}-fits-ca_pN")
        t1, tn = med(j["seconds"] for j in q1), med(j["seconds"] for j in qn)
        # Within each run (agld scan's later_rows_per_s) when the binary reports it; else
        # from the two runs' medians, which one slow first pass can swamp.
        if all(j.get("later_rows_per_s") for j in qn):
            steady = med(j["later_rows_per_s"] for j in qn)
        else:
            steady = (qn[0]["rows"] - q1[0]["rows"]) / (tn - t1) if tn > t1 else float("inf")
        d1, dn = med(j["disk_read_bytes"] for j in q1), med(j["disk_read_bytes"] for j in qn)
        notes.append(f"{s} fits ({q1[0]['memory_bytes'] >> 20} MiB, whole_store_cached={qn[0]['whole_store_cached']}), {b}: "
                     f"pass 1 {t1:.2f} s, {npass} passes {tn:.2f} s; passes 2-{npass}: {steady / 1e6:.1f} M rows/s; "
                     f"disk read {d1 / 1e6:.0f} MB in 1 pass, {dn / 1e6:.0f} MB in {npass}")
print()
print("%lim 1t / 2t: of the pass limit, the slower of stored bytes / O_DIRECT speed and raw bytes /")
print("decompression speed on 1 or 2 threads (rr, ra: not a pass); %zstd: the same with zstd alone on")
print("2 threads; %ceil: the same with the ceiling of a reader (zstd, CRC, decoded bytes written);")
print("%pair: the median over rounds of each run of the binary under test against that")
print("limit (zstd alone) with the disk speed measured just before it; disk/read: /proc/self/io read_bytes")
print("over bytes_read; rr, ra: a fraction of a pass; long: more rows, the binary under test only;")
print("ca pf0: --prefetch 0; peak RSS: the largest of a binary's runs, OVER when above the budget.")
for n in notes:
    print("- " + n)
PYEOF
