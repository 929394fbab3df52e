#!/usr/bin/env bash
# Benchmark `phasecheck lint corpus` (release build), the CI bar of issue #5 (< 10 s on the
# 2-core machine). Prints the wall time of each run; record the numbers in
# docs/performance.md with this command.
#
#   scripts/bench-lint.sh [RUNS]          # default 3 runs
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-3}"
cargo build --quiet --release --bin phasecheck
bin="${CARGO_TARGET_DIR:-target}/release/phasecheck"
echo "phasecheck lint corpus: $(find corpus -name '*.phase' | wc -l) files, $(nproc) cores"
for i in $(seq "$runs"); do
  start=$(date +%s.%N)
  set +e
  "$bin" lint --format sarif --output /dev/null corpus
  rc=$?
  set -e
  end=$(date +%s.%N)
  printf 'run %d: %.2f s (exit %d)\n' "$i" "$(echo "$end - $start" | bc)" "$rc"
done
