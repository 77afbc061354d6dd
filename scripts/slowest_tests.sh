#!/usr/bin/env bash
# Prints the N slowest tests (default 20) of the last ctest run in BUILD, with their cost
# label (tests/CMakeLists.txt) and seconds, and the run's total test time: .ci/run shows it
# after each stage that runs tests.
#   scripts/slowest_tests.sh BUILD [N]
set -euo pipefail
build="${1:?usage: scripts/slowest_tests.sh BUILD [N]}"
n="${2:-20}"
cost="$build/Testing/Temporary/CTestCostData.txt"
[[ -f "$cost" ]] || { echo "slowest: $build has no ctest run (no $cost)"; exit 0; }
# "label<TAB>name" for every test of the build, from ctest's listing by label.
labels=$(for l in unit stat smoke long; do
  ctest --test-dir "$build" -N -L "^$l\$" | sed -nE "s/^ *Test +#[0-9]+: (.*)$/$l\t\1/p"
done)
# CTestCostData.txt: a line a test, NAME RUNS AVERAGE-SECONDS (NAME may hold spaces); the
# failed tests' names follow a line "---".
awk -v n="$n" '
  FNR == NR { split($0, f, "\t"); lab[f[2]] = f[1]; next }
  /^---$/ { done_cost = 1 }
  done_cost { next }
  match($0, / [0-9]+ [0-9.eE+-]+$/) {
    name = substr($0, 1, RSTART - 1); split(substr($0, RSTART + 1), f, " ")
    ++count; secs[count] = f[2] + 0; total += f[2]
    text[count] = sprintf("%8.1f s  %-5s  %s", f[2], (name in lab ? lab[name] : "?"), name)
  }
  END {
    shown = n < count ? n : count
    printf "slowest %d of %d tests (%.0f s of test time in all):\n", shown, count, total
    for (k = 1; k <= shown; ++k) {
      best = 0
      for (i = 1; i <= count; ++i) if (!(i in used) && (best == 0 || secs[i] > secs[best])) best = i
      used[best] = 1
      print text[best]
    }
  }' <(printf '%s\n' "$labels") "$cost"
