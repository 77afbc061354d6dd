#!/usr/bin/env bash
# Installs exactly the Debian packages agld needs. Idempotent: it asks apt only for what is missing.
#   scripts/setup.sh          build + test dependencies
#   scripts/setup.sh --bench  also the tools the benchmarks compare against (xgboost, hyperfine)
#   scripts/setup.sh --fuzz   also clang and libFuzzer's runtime (fuzz/run.sh, scripts/sanitize.sh);
#                             g++'s sanitizer runtimes (libasan, libubsan, libtsan) come with g++
set -euo pipefail
pkgs=(cmake g++ make pkg-config
      libboost-iostreams-dev libeigen3-dev libtbb-dev libzstd-dev
      libgtest-dev libcli11-dev nlohmann-json3-dev libfmt-dev
      zstd xz-utils bzip2 gzip)
if [[ "${1:-}" == "--bench" ]]; then
  pkgs+=(xgboost python3-xgboost hyperfine linux-perf time gnuplot-nox)
fi
if [[ "${1:-}" == "--fuzz" ]]; then
  # clang-14 and its runtimes (libclang-rt-14-dev: libFuzzer, clang's ASan/UBSan); llvm-14 for
  # llvm-symbolizer, which names the source lines of a sanitizer's stack traces.
  pkgs+=(clang-14 libclang-rt-14-dev llvm-14)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
