#!/usr/bin/env bash
# Regenerates the seed corpora in fuzz/corpus/ from the tests' cases: LIBSVM texts (those of
# tests/convert/libsvm_test.cpp, good and bad), stores converted from them with each codec
# option, raw chunks of those stores, and a short run directory of heart_scale.
#   fuzz/make_corpus.sh AGLD_BINARY
set -euo pipefail
cd "$(dirname "$0")/.."
agld="$(realpath "$1")"
out=fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The inputs of findings (finding-*, docs/reliability.md) are kept; the rest is remade.
mkdir -p "$out"/{libsvm,convert,store,summary}
find "$out" -type f ! -name 'finding-*' -delete

# --- LIBSVM texts: one options byte (fuzz/libsvm_fuzz.cpp), then the text ---
texts=(
  $'+1 1:0.5 3:1\n-1 2:1e-3 4:2.5E+2\r\n0\t5:-1\t6:+3 # comment\n\n# a comment line\n   \n2.75 qid:7 9:1 7:2 8:3\n1 10:1#c\n-1'
  $'1 0:1 4:2\n'
  $'1 1:1e-50 2:1e-40\n'
  $'1 1:1\n1 0:1\n'
  $'1 3:1 5:2 3:4\n'
  $'1 5:1 3:2 5:4\n'
  $'1 2:nan\n1 2:inf\n1 2:-Infinity\n'
  $'1 2:1e39\n'
  $'1 0.5\n1 :0.5\nabc 1:1\nnan 1:1\n'
  $'1 -3:1\n1 2:0.5abc\n1 2:0.5:3\n1 2:\n1 2:x\n1 2x:1\n'
  $'1 99999999999:1\n1 4294967297:1\n1 123456789012345678901234567890:1\n1abc 2:1\n'
  $'1 1:1\n0.5 1:1\n'
  $'1 1:1\nbad\n1 2:1\n1 0:1\n1 3:1\n'
  $'1 4294967296:0.25 12:1.5e-7 7:-0.000001\n-1 1:3.14159265358979 2:1234567 3:0.12345678\n'
)
i=0
for t in "${texts[@]}"; do
  for opt in '\x00' '\x05' '\x0a'; do  # defaults; 0-based and skip; binary with --features
    printf "$opt" >"$out/libsvm/case$i"
    printf '%s' "$t" >>"$out/libsvm/case$i"
    i=$((i + 1))
  done
done
head -n 30 datasets/heart_scale.svm >"$tmp/heart.svm"
{ printf '\x00'; cat "$tmp/heart.svm"; } >"$out/libsvm/heart_scale30"

# --- convert: two options bytes (fuzz/convert_fuzz.cpp), then the input file ---
i=0
for t in "${texts[0]}" $'1 1:1\n-1 2:1\n1 3:0.5\n' $'0 0:1 3:2\n1 1:1\n'; do
  printf '\x00\x03%s' "$t" >"$out/convert/text$i"; i=$((i + 1))
done
printf '\x04\x02' >"$out/convert/heart_keep_order_skip"; cat "$tmp/heart.svm" >>"$out/convert/heart_keep_order_skip"
printf '\x81\x13' >"$out/convert/heart_split_delta"; cat "$tmp/heart.svm" >>"$out/convert/heart_split_delta"
printf '\x02\x24' >"$out/convert/heart_none_noshuffle"; cat "$tmp/heart.svm" >>"$out/convert/heart_none_noshuffle"
printf '\x40\x01' >"$out/convert/heart_regression"; cat "$tmp/heart.svm" >>"$out/convert/heart_regression"
for z in gzip xz bzip2 zstd; do
  printf '\x00\x04' >"$out/convert/heart_$z"; "$z" -c <"$tmp/heart.svm" >>"$out/convert/heart_$z"
done

# --- stores: a mode byte 0 (whole store, CRCs fixed up) then the file; chunks: mode 1,
#     8 bytes of shape, the raw chunk (fuzz/store_fuzz.cpp) ---
head -n 12 datasets/heart_scale.svm >"$tmp/h12.svm"
conv() {  # NAME OPTIONS...
  local name=$1; shift
  "$agld" convert "$tmp/h12.svm" -o "$tmp/$name.agld" -q --chunk-rows 5 "$@"
  { printf '\x00'; cat "$tmp/$name.agld"; } >"$out/store/$name"
}
conv zstd
conv none --compression none
conv delta --delta
conv unshuffled --no-index-shuffle --huffman-literals
conv regression --task regression --keep-order
printf '1 1:0.5 2:0.25 3:0.5\n-1 1:1 4:1\n1 2:2 3:0.5\n1\n' >"$tmp/sparse.svm"
"$agld" convert "$tmp/sparse.svm" -o "$tmp/sparse.agld" -q --chunk-rows 2
{ printf '\x00'; cat "$tmp/sparse.agld"; } >"$out/store/sparse"
python3 - "$tmp" "$out/store" <<'PY'
# Each chunk of the stores above as a chunk-mode seed: its flags, codec, shape and raw bytes.
import struct, subprocess, sys, glob, os, json
tmp, out = sys.argv[1], sys.argv[2]
for path in sorted(glob.glob(os.path.join(tmp, "*.agld"))):
    f = open(path, "rb").read()
    meta_off, meta_size, index_off, chunks = struct.unpack_from("<QQQQ", f, len(f) - 64)
    text = f[meta_off:meta_off + meta_size].split(b"\0")[0]
    meta = json.loads(text)
    d = meta["features"]
    shift = 0
    while (d - 1) >> shift > 255: shift += 1
    binary = meta["label_kind"] == "binary"
    for k in range(chunks):
        off, first, stored, raw, rows, nnz, crc, codec, flags = struct.unpack_from("<QQIIIIIBB", f, index_off + 40 * k)
        body = f[off:off + stored]
        if codec == 1:
            body = subprocess.run(["zstd", "-d", "-c"], input=body, capture_output=True, check=True).stdout
        if rows > 512 or nnz > 1023: continue
        shape = bytes([flags, codec, (rows - 1) & 255, (rows - 1) >> 8, nnz & 255, nnz >> 8,
                       (d - 1) >> shift, shift | (8 if binary else 0)])
        name = os.path.basename(path)[:-5]
        open(os.path.join(out, f"chunk_{name}_{k}"), "wb").write(b"\x01" + shape + body)
PY

# --- summary: a short run of heart_scale (2 chains), its files as "@@@ NAME" sections ---
"$agld" convert datasets/heart_scale.svm -o "$tmp/heart.agld" -q
"$agld" sample --train "$tmp/heart.agld" --model logistic --method tmu-ca --chains 2 --iterations 400 \
  --burn-in 100 --thin 20 --seed 1 -q --out "$tmp/run" >/dev/null
pack() {  # OUTPUT FILE...
  local o=$1; shift
  local sep=""
  : >"$o"
  for f in "$@"; do printf '%s@@@ %s\n' "$sep" "$f" >>"$o"; cat "$tmp/run/$f" >>"$o"; sep=$'\n'; done
}
pack "$out/summary/run" config.json draws_1.csv draws_2.csv diagnostics.npy posterior.npy
pack "$out/summary/no_posterior" config.json draws_1.csv draws_2.csv diagnostics.npy
pack "$out/summary/config_only" config.json
for d in "$out"/*; do echo "$d: $(ls "$d" | wc -l) files, $(du -sk "$d" | cut -f1) KiB"; done
