#!/usr/bin/env bash
# The whole GPU suite, on a machine with an H100/H200 and CUDA (no Rust needed there if
# PHASECHECK points at a built binary). Prints a summary at the end; logs go to $LOGS.
#
#   scripts/gpu-check.sh                       # builds with cargo, runs everything
#   PHASECHECK=path/to/phasecheck ROOT=. LOGS=out scripts/gpu-check.sh
#
# Parts (each can be skipped with SKIP_<PART>=1):
#   BENCH    generated double buffer vs bench/gpu/baseline.cuh, one run, as a ratio
#   PROBES   gpu-harness/probes/*.phase and probes/raw/*.cu (nvcc): the open questions of docs/gpu.md
#   CONFIRM  `confirm` on every corpus/hazards/*/fail.phase
#   FUZZ     `fuzz --seconds $FUZZ_SECONDS` on every corpus file with `expect ok` (JOBS at once)
#   MUTATE   `mutate --gpu` on $MUTATE_FILES (small guide files by default): the agreement of
#            checker and GPU over their mutants, $MUTATE_SECONDS of fuzzing and of replay each
#   TESTS    the gated GPU tests (PHASECHECK_GPU_TESTS=1), the NVRTC compile of every lowered
#            file and the machine-code check of the proxy-window kernel: with cargo, or
#            prebuilt test executables in $TEST_BINS
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT"
LOGS=${LOGS:-$ROOT/target/gpu-check}
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
JOBS=${JOBS:-4}
BASELINE=${BASELINE:-bench/gpu/baseline.cuh}
mkdir -p "$LOGS"
if [ -z "${PHASECHECK:-}" ]; then
  cargo build --release -q || exit 2
  PHASECHECK=$ROOT/target/release/phasecheck
  [ -x "$PHASECHECK" ] || PHASECHECK=${CARGO_TARGET_DIR:-target}/release/phasecheck
fi
B=$PHASECHECK
summary=()
note() { summary+=("$1"); echo "$1"; }

echo "== $(date -u) on $(nvidia-smi -L 2>/dev/null | head -1)"

if [ "${SKIP_BENCH:-0}" != 1 ]; then
  for spec in "0 1" "200 3" "200 1"; do
    set -- $spec
    log=$LOGS/bench_delay${1}_every${2}.json
    timeout 300 "$B" fuzz gpu-harness/tests/fixtures/double_buffer.phase --param K=2000 --blocks 1056 \
      --seconds 3 --delay-ns "$1" --delay-every "$2" --seed 11 --quiet --format json \
      --baseline "$BASELINE" --baseline-iters 2000 > "$log"
    ratio=$(python3 -c "import json,sys; d=json.load(open('$log')); b=d['baseline']; print('%.3e vs %.3e phases/s, ratio %.2f, hangs %d, stale %d' % (d['phases_per_second'], b['phases_per_second'], b['ratio'], len(d['hangs']), len(d['stale_reads'])))" 2>&1)
    note "BENCH delay<=${1}ns every ${2}: $ratio"
  done
fi

if [ "${SKIP_PROBES:-0}" != 1 ]; then
  for f in gpu-harness/probes/*.phase; do
    n=$(basename "$f" .phase)
    timeout 120 "$B" fuzz "$f" --seconds 1 --blocks 264 --seed 5 --quiet --format json > "$LOGS/probe_$n.json" 2> "$LOGS/probe_$n.err"
    rc=$?
    res=$(python3 -c "import json; d=json.load(open('$LOGS/probe_$n.json')); w=d.get('proxy_window') or {}; print('hangs at lines %s; stale reads %d; trials %d%s' % ([h['line'] for h in d['hangs']], len(d['stale_reads']), d['trials'], '; proxy-window rounds: stale reads %d, trials %d' % (len(w['stale_reads']), w['trials']) if w else ''))" 2>/dev/null || echo "no result: $(head -c 200 "$LOGS/probe_$n.err")")
    note "PROBE $n (exit $rc): $res"
  done
  # Raw CUDA probes (questions the .phase language cannot pose at the needed scale).
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  for f in gpu-harness/probes/raw/*.cu; do
    n=$(basename "$f" .cu)
    if [ -x "$NVCC" ] && "$NVCC" -gencode arch=compute_90a,code=sm_90a -O2 -o "$LOGS/$n" "$f" 2> "$LOGS/probe_$n.err"; then
      timeout 300 "$LOGS/$n" 1.0 > "$LOGS/probe_$n.txt" 2>> "$LOGS/probe_$n.err"
      note "PROBE raw $n (exit $?): $LOGS/probe_$n.txt"
      sed 's/^/    /' "$LOGS/probe_$n.txt"
    else
      note "PROBE raw $n: not built (nvcc: $NVCC; $(head -c 200 "$LOGS/probe_$n.err" 2>/dev/null))"
    fi
  done
fi

if [ "${SKIP_CONFIRM:-0}" != 1 ]; then
  for f in corpus/hazards/*/fail.phase; do
    n=$(basename "$(dirname "$f")")
    timeout 300 "$B" confirm "$f" --format json > "$LOGS/confirm_$n.json" 2> "$LOGS/confirm_$n.err"
    rc=$?
    res=$(python3 - "$LOGS/confirm_$n.json" <<'PY' 2>/dev/null || echo "no result (exit $rc): $(head -c 300 "$LOGS/confirm_$n.err" | tr '\n' ' ')"
import json, sys
d = json.load(open(sys.argv[1]))
def why(f):
    w = [x["class"] for x in f.get("why_not_shown", [])]
    a = f.get("aimed_fuzz")
    aimed = "" if not a else "; aimed fuzz %s in %d trials" % ("shown" if a["shown"] else ("stuck" if a.get("stuck") else "nothing"), a["trials"])
    return (" [%s%s]" % (", ".join(w), aimed)) if (w or a) else ""
parts = ["%s/%s %s (%.2fs)%s" % (f["class"], f["rule"], f["outcome"], f["seconds"], why(f)) for f in d["findings"]]
if d.get("fuzz"):
    z = d["fuzz"]; parts.append("no error finding; fuzz: %d hangs, %d stale" % (len(z["hangs"]), len(z["stale_reads"])))
print("checker %.1fs; " % d.get("check_seconds", 0) + "; ".join(parts))
PY
)
    note "CONFIRM $n (exit $rc): $res"
  done
  # Control of missing-proxy-fence's replay: its fenced twin in the same proxy-window kernel.
  f=corpus/hazards/missing-proxy-fence/pass.phase
  timeout 120 "$B" fuzz "$f" --proxy-window --delay-ns 0 --seconds 5 --quiet --format json \
    > "$LOGS/confirm_control.json" 2> "$LOGS/confirm_control.err"
  rc=$?
  res=$(python3 -c "import json; d=json.load(open('$LOGS/confirm_control.json')); print('%d trials, %d hang rows, %d stale rows' % (d['trials'], len(d['hangs']), len(d['stale_reads'])))" 2>/dev/null || echo "no result: $(head -c 200 "$LOGS/confirm_control.err" | tr '\n' ' ')")
  note "CONFIRM control: fuzz $f --proxy-window --delay-ns 0 (exit $rc): $res"
fi

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  # One job per `expect ok` line, with that line's parameters.
  python3 - > "$LOGS/fuzz_jobs.txt" <<'PY'
import pathlib, re
for f in sorted(pathlib.Path("corpus").rglob("*.phase")):
    for i, line in enumerate(f.read_text().splitlines()):
        m = re.match(r"\s*expect\s+ok\b(?:\s+with\s+(.*))?", line.split("#")[0])
        if m:
            params = " ".join("--param %s" % p.replace(" ", "") for p in (m.group(1) or "").split(",") if p.strip())
            print("%s|%d|%s" % (f, i + 1, params))
PY
  # A line whose size cannot run on hardware (a named-barrier count that is not whole warps:
  # the checker counts threads, the GPU warps; `lower` refuses it) keeps its other parameters
  # but takes the file's declared block-size parameters (those named on its `block` line), and
  # the summary says so.
  # Several fuzz processes share the GPU by time slicing, and a context that is switched out
  # keeps the SM clock running: a bounded wait must outlast a time slice or a slow schedule
  # reads as a hang, hence WAIT_CYCLES (about 0.1 s) when JOBS > 1.
  run_one() {
    IFS='|' read -r f line params <<< "$1"
    n=$(echo "$f" | tr '/' '_')_$line
    if [ -n "$params" ] && ! "$B" lower "$f" $params -o /dev/null 2> "$LOGS/fuzz_$n.lower" \
        && grep -q "not a multiple of 32" "$LOGS/fuzz_$n.lower"; then
      sizes=$(grep -E '^[[:space:]]*block[[:space:]]' "$f" | head -1 | sed 's/#.*//' | grep -oE '[A-Za-z_][A-Za-z0-9_]*' | grep -v '^block$' | tr '\n' ' ')
      kept=""
      for p in $params; do
        [ "$p" = "--param" ] && continue
        name=${p%%=*}
        case " $sizes " in *" $name "*) ;; *) kept="$kept --param $p" ;; esac
      done
      echo "block sizes ($sizes) declared; kept:$kept" > "$LOGS/fuzz_$n.fallback"
      params=$kept
    fi
    timeout $((FUZZ_SECONDS + 120)) "$B" fuzz "$f" $params --seconds "$FUZZ_SECONDS" \
      --wait-cycles "$WAIT_CYCLES" --quiet --format json > "$LOGS/fuzz_$n.json" 2> "$LOGS/fuzz_$n.err"
    echo "$? $f" > "$LOGS/fuzz_$n.rc"
  }
  if [ "$JOBS" -gt 1 ]; then WAIT_CYCLES=${WAIT_CYCLES:-200000000}; else WAIT_CYCLES=${WAIT_CYCLES:-4000000}; fi
  export -f run_one; export B LOGS FUZZ_SECONDS WAIT_CYCLES
  tr '\n' '\0' < "$LOGS/fuzz_jobs.txt" | xargs -0 -P "$JOBS" -I{} bash -c 'run_one "$1"' _ {}
  while IFS='|' read -r f line params; do
    n=$(echo "$f" | tr '/' '_')_$line
    rc=$(cut -d' ' -f1 "$LOGS/fuzz_$n.rc" 2>/dev/null || echo "?")
    res=$(python3 -c "import json; d=json.load(open('$LOGS/fuzz_$n.json')); w=d.get('proxy_window') or {}; print('%d trials, %d hang rows, %d stale rows, %.2e phases/s%s' % (d['trials'], len(d['hangs']), len(d['stale_reads']), d['phases_per_second'], '; proxy-window rounds: %d trials, %d hang rows, %d stale rows' % (w['trials'], len(w['hangs']), len(w['stale_reads'])) if w else ''))" 2>/dev/null || echo "no result: $(head -c 200 "$LOGS/fuzz_$n.err" | tr '\n' ' ')")
    [ -f "$LOGS/fuzz_$n.fallback" ] && params="$params -> $(cat "$LOGS/fuzz_$n.fallback") (not whole warps)"
    note "FUZZ $f:$line $params (exit $rc): $res"
  done < "$LOGS/fuzz_jobs.txt"
fi

if [ "${SKIP_MUTATE:-0}" != 1 ]; then
  MUTATE_FILES=${MUTATE_FILES:-corpus/guide/double_buffer.phase corpus/guide/tma_transaction_barrier.phase corpus/guide/transaction_barrier.phase corpus/guide/split_arrive_wait.phase corpus/guide/early_exit_drop.phase corpus/guide/explicit_phase_tracking.phase corpus/guide/init_bootstrap.phase}
  MUTATE_SECONDS=${MUTATE_SECONDS:-2}
  for f in $MUTATE_FILES; do
    n=$(basename "$f" .phase)
    timeout 1800 "$B" mutate --gpu "$f" --gpu-seconds "$MUTATE_SECONDS" --confirm-seconds "$MUTATE_SECONDS" \
      --format json > "$LOGS/mutate_$n.json" 2> "$LOGS/mutate_$n.err"
    rc=$?
    res=$(python3 - "$LOGS/mutate_$n.json" <<'PY' 2>/dev/null || echo "no result: $(head -c 300 "$LOGS/mutate_$n.err" | tr '\n' ' ')"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["summary"]["counts"]
g = d["gpu"] or {}
if g.get("skipped"):
    print("%d mutants, score %.2f; GPU skipped: %s" % (c["mutants"], c["score"] or 0, g["reason"]))
else:
    m = g["matrix"]
    row = lambda r: "%d/%d/%d" % (m[r]["gpu_hazard"], m[r]["gpu_nothing_seen"], m[r]["gpu_not_run"])
    print("%d mutants, score %.2f; checker hazard -> GPU hazard/nothing/not run %s; checker ok -> %s; other -> %s; disagreements %s"
          % (c["mutants"], c["score"] or 0, row("checker_hazard"), row("checker_ok"), row("checker_other"), g["disagreements"]))
PY
)
    note "MUTATE $f (exit $rc): $res"
  done
fi

if [ "${SKIP_TESTS:-0}" != 1 ] && command -v cargo >/dev/null; then
  PHASECHECK_GPU_TESTS=1 cargo test -q --test cli_gpu > "$LOGS/tests.log" 2>&1
  note "TESTS cli_gpu with PHASECHECK_GPU_TESTS=1: exit $? ($(grep 'test result' "$LOGS/tests.log" | tail -1))"
  PHASECHECK_GPU_TESTS=1 cargo test -q --test cli_mutate gpu_ > "$LOGS/tests_mutate.log" 2>&1
  note "TESTS cli_mutate (gpu_*) with PHASECHECK_GPU_TESTS=1: exit $? ($(grep 'test result' "$LOGS/tests_mutate.log" | tail -1))"
  cargo test -q -p gpu-harness --test nvrtc_compile > "$LOGS/tests_nvrtc.log" 2>&1
  note "TESTS nvrtc_compile: exit $? ($(grep 'test result' "$LOGS/tests_nvrtc.log" | tail -1))"
  cargo test -q -p gpu-harness --test proxy_window_sass > "$LOGS/tests_sass.log" 2>&1
  note "TESTS proxy_window_sass: exit $? ($(grep 'test result' "$LOGS/tests_sass.log" | tail -1))"
elif [ "${SKIP_TESTS:-0}" != 1 ] && [ -n "${TEST_BINS:-}" ]; then
  # No cargo here: test executables built elsewhere by `cargo test --release --no-run` (a
  # machine without Rust, like the device machine). They carry the paths of the build: the
  # repository at the same path as there, and the phasecheck binary at the path cargo gave it.
  for t in "$TEST_BINS"/*; do
    n=$(basename "$t")
    INSTA_WORKSPACE_ROOT=$ROOT PHASECHECK_GPU_TESTS=1 timeout 600 "$t" --test-threads 1 > "$LOGS/tests_$n.log" 2>&1
    note "TESTS $n with PHASECHECK_GPU_TESTS=1 (prebuilt): exit $? ($(grep 'test result' "$LOGS/tests_$n.log" | tail -1))"
  done
fi

echo
echo "==== summary ($(date -u))"
printf '%s\n' "${summary[@]}"
