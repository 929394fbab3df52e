#!/usr/bin/env bash
# The scale table of docs/performance.md: each protocol at its real block size, one
# `phasecheck verify` run per row (release build, default options), with its verdict, states,
# wall time and peak resident memory. With `spin` and `gcc` installed (apt-get install spin
# gcc), the SPIN comparison at 7 consumers is added: SPIN_BASELINE is the SPIN model runner
# (`run.sh NC K`), by default bench/spin/run.sh (the double buffer written by hand in Promela);
# SPIN_BASELINE= (empty) skips it.
#
#   scripts/bench-scale.sh            # the table
#   scripts/bench-scale.sh corpus     # also every corpus file at its declared size
set -uo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release --bin phasecheck
bin="${CARGO_TARGET_DIR:-target}/release/phasecheck"
echo "machine: $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
printf '%-58s %-9s %10s %9s %9s\n' "row" "verdict" "states" "time" "max RSS"

row() {
  local name="$1"; shift
  local out
  out=$( { /usr/bin/time -f "__TIME__ %e %M" "$bin" verify "$@" --format json > /tmp/bench-scale.json; } 2>&1 )
  local t m verdict states
  t=$(echo "$out" | awk '/__TIME__/{print $2}')
  m=$(echo "$out" | awk '/__TIME__/{printf "%.0f MB", $3/1024}')
  verdict=$(grep -o '"verdict": *"[a-z]*"' /tmp/bench-scale.json | head -1 | sed 's/.*"\([a-z]*\)"$/\1/')
  states=$(grep -o '"states": *[0-9]*' /tmp/bench-scale.json | head -1 | grep -o '[0-9]*$')
  printf '%-58s %-9s %10s %8ss %9s\n' "$name" "$verdict" "$states" "$t" "$m"
}

row "double buffer 1+128, 2 stages, K=8" corpus/guide/double_buffer.phase
row "double buffer 1+128, 4 stages, K=8" corpus/guide/double_buffer.phase --param STAGES=4
row "  parity flipped (race)" checker/tests/data/double_buffer_parity_flip.phase
row "  init empty NC-1 (over-arrival)" checker/tests/data/double_buffer_count_short.phase
row "CUTLASS TMA pipeline 128+256, 4 stages, 8 k-tiles" corpus/cutlass/pipeline_tma_async.phase
row "FA3 ping-pong 128+2x128 (named barriers), 384 threads" corpus/production/fa3_pingpong.phase --param PW=128
row "double buffer 1+7 (SPIN comparison), K=8" checker/tests/data/double_buffer.phase --param NC=7 --param K=8

SPIN_BASELINE=${SPIN_BASELINE-bench/spin/run.sh}
if [ -n "$SPIN_BASELINE" ] && command -v spin >/dev/null; then
  echo "SPIN, NC=7, K=8:"
  bash "$SPIN_BASELINE" 7 8
fi

if [ "${1:-}" = corpus ]; then
  echo
  echo "every corpus file at its declared parameters (--max-time 60s each):"
  for f in $(find corpus -name '*.phase' | sort); do
    row "$f" "$f" --max-time 60s
  done
fi
