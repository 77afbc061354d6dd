# bench/common.sh: sourced by every shell script in bench/ and bench/experiments/, never run.
# The scripts take no arguments: every setting is an environment variable, documented with its
# default at the top of each script. The ones they share are set here:
#
#   AGLD        the agld binary under test         default: $BUILD/agld
#   BUILD       the build directory holding the bench tools (sparse_oracle, linear_oracle,
#               zstd_bench, parse_bench)           default: the directory of $AGLD if AGLD is
#                                                  set, else $ROOT/build
#   DATA_DIR    where generated data, stores and runs go (each script uses a directory of its
#               own under it; several GB for the larger ones)
#                                                  default: $AGLD_BENCH_DIR if set (the old
#                                                  name), else $ROOT/build/bench-data
#   ORACLE_DIR  the exact linear oracles (passes_table.sh makes them, dynamics_bench.sh reads
#               them)                              default: $DATA_DIR/oracle
#
# ROOT is the repository. Build first: `bash scripts/build.sh --bench` builds agld and the bench
# tools into build/ and installs what the scripts compare against or call (hyperfine, xgboost,
# gnuplot, GNU time). Helpers: die MESSAGE; no_args "$@"; need_agld; need_tool NAME (prints
# $BUILD/NAME); need_cmd COMMAND...

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

abs_path() {  # PATH -> an absolute path (the file need not exist)
  case $1 in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$PWD/$1" ;;
  esac
}

if [[ -n ${AGLD:-} ]]; then
  AGLD=$(abs_path "$AGLD")
  BUILD=$(abs_path "${BUILD:-$(dirname "$AGLD")}")
else
  BUILD=$(abs_path "${BUILD:-$ROOT/build}")
  AGLD=$BUILD/agld
fi
DATA_DIR=$(abs_path "${DATA_DIR:-${AGLD_BENCH_DIR:-$ROOT/build/bench-data}}")
ORACLE_DIR=$(abs_path "${ORACLE_DIR:-$DATA_DIR/oracle}")
export AGLD BUILD DATA_DIR ORACLE_DIR

die() {
  echo "$(basename "$0"): $*" >&2
  exit 1
}

no_args() {  # the scripts' settings are environment variables, not arguments
  (($# == 0)) || die "takes no arguments (got: $*); its settings are environment variables, listed at the top of $0"
}

need_agld() {
  [[ -x $AGLD ]] || die "no agld at $AGLD: build it (bash scripts/build.sh --bench) or set AGLD=path/to/agld"
}

need_tool() {  # NAME -> $BUILD/NAME, which must be an executable
  [[ -x $BUILD/$1 ]] || die "no $1 at $BUILD/$1: bash scripts/build.sh builds it beside agld (or set BUILD=dir)"
  printf '%s\n' "$BUILD/$1"
}

need_cmd() {  # COMMAND...: each must be installed
  local c
  for c in "$@"; do
    command -v "$c" > /dev/null || die "$c not found: bash scripts/setup.sh --bench installs it"
  done
}
