#!/usr/bin/env bash
# `mutate --gpu` over the whole corpus, on a machine with an H100/H200 and CUDA, and the
# agreement of checker and GPU summed over every file (docs/gpu.md, "mutate --gpu").
#
#   PHASECHECK=path/to/phasecheck LOGS=out scripts/gpu-mutate-corpus.sh [FILE...]
#
# Every mutant the checker calls ok or inconclusive is fuzzed (a GPU hazard there is a checker
# bug); of the mutants it flags, HAZARDS per file are fuzzed and their findings replayed
# (`--gpu-hazards`). JOBS files run at once: their fuzzing kernels share the GPU by time
# slicing, so the bounded waits get WAIT_CYCLES (about 0.1 s) and a hang seen in a mutant the
# checker calls ok is run again alone (RECHECK) before it counts.
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT"
LOGS=${LOGS:-$ROOT/target/gpu-mutate}
JOBS=${JOBS:-4}
HAZARDS=${HAZARDS:-2}
SECONDS_EACH=${SECONDS_EACH:-1}
WAIT_CYCLES=${WAIT_CYCLES:-200000000}
B=${PHASECHECK:-$ROOT/target/release/phasecheck}
mkdir -p "$LOGS"
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(find corpus -name '*.phase' | sort); fi
echo "== $(date -u) on $(nvidia-smi -L 2>/dev/null | head -1); ${#files[@]} files, $JOBS at once"
run_one() {
  f=$1
  n=$(echo "$f" | tr '/' '_')
  timeout 900 "$B" mutate --gpu "$f" --gpu-hazards "$HAZARDS" --gpu-seconds "$SECONDS_EACH" \
    --confirm-seconds "$SECONDS_EACH" --aim-seconds "$SECONDS_EACH" --wait-cycles "$WAIT_CYCLES" \
    --format json > "$LOGS/$n.json" 2> "$LOGS/$n.err"
  echo "$?" > "$LOGS/$n.rc"
}
export -f run_one; export B LOGS HAZARDS SECONDS_EACH WAIT_CYCLES
printf '%s\0' "${files[@]}" | xargs -0 -P "$JOBS" -I{} bash -c 'run_one "$1"' _ {}
python3 "$ROOT/scripts/mutate-summary.py" "$LOGS" | tee "$LOGS/summary.txt"
# RECHECK: each disagreement again, alone on the GPU, with the default wait budget (the hidden
# `--gpu-child N` runs one mutant's GPU part, as `mutate --gpu` does in its child processes).
for d in $(sed -n 's/^disagreements (GPU hazard, checker ok): //p' "$LOGS/summary.txt" | tr -d ','); do
  [ "$d" = none ] && continue
  f=${d%#*}; id=${d##*#}
  out=$(timeout 300 "$B" mutate "$f" --gpu-child "$id" --gpu-seconds $((SECONDS_EACH * 3)) \
    --confirm-seconds 0 --aim-seconds 0 2>&1 | python3 -c "import json,sys; o=json.load(sys.stdin); print('hazard' if o.get('hazard') else 'nothing seen', o.get('notes'), (o.get('fuzz') or {}).get('hangs'))" 2>&1)
  echo "RECHECK $d alone: $out" | tee -a "$LOGS/summary.txt"
done
