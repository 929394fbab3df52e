#!/usr/bin/env bash
# The agreement matrix on real kernels (issue 27 point 4): a few bugs injected into the PTX of
# the CUTLASS Pingpong GEMM (instrument/apps/pingpong_gemm.cu) and of FlashInfer's sm90 prefill
# (ptx/tests/fixtures/real/flashinfer_prefill_sm90.cu), the checker's verdict on each bugged
# PTX against what `phasecheck fuzz --app` shows when the same PTX runs, instrumented, inside
# the application on the GPU. docs/gpu.md ("Agreement on real kernels") records the table.
#
#   scripts/real_matrix.sh prepare DIR   # here: the bugged copies of DIR/pp.ptx and DIR/fi.ptx
#   scripts/real_matrix.sh device DIR    # on the GPU machine: captures, fuzz --app of each copy
#                                        # (PARTS="capture pp fi" by default, any subset)
#   scripts/real_matrix.sh verify DIR    # here: phasecheck verify of each copy at the captures
#   scripts/real_matrix.sh verify-fixture DIR  # here: the Pingpong bugs in the committed fixture
#
# DIR holds phasecheck, libcapture_inject.so, the apps (pingpong_gemm from
# instrument/apps/build.sh, flashinfer_launch from flashinfer_prefill_sm90.cu -DLAUNCH) and
# their PTX as pp.ptx and fi.ptx (`.version` set to 9.0 for the device's driver, docs/gpu.md).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:?prepare, device or verify}; D=$(cd "${2:?DIR}" && pwd)
PP_BUGS="count bytes release exit order-wrong order-none"
FI_BUGS="fi-vbytes fi-allbytes fi-unrolled"
PP_KERNEL=device_kernel
FI_KERNEL=PrefillWithKVCacheKernel
short() { cut -c1-600 | sed -E 's/_ZN7cutlass13device_kernel[A-Za-z0-9_]*/cutlass::device_kernel<Pingpong>/g; s/_ZN10flashinfer24PrefillWithKVCacheKernel[A-Za-z0-9_]*/flashinfer::PrefillWithKVCacheKernel<...>/g'; }
findings() { grep -E '^[a-z-]+\(PC[0-9]+\)|^  × |: protocol .*: ' "$1" | grep -v '^phasecheck verify:' | cut -c1-200 | head -12; }
el() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
case $cmd in
prepare)
  for b in $PP_BUGS; do python3 "$here/instrument/apps/inject_bugs.py" "$b" "$D/pp.ptx" "$D/pp_$b.ptx" || exit 1; done
  for b in $FI_BUGS; do python3 "$here/instrument/apps/inject_bugs.py" "$b" "$D/fi.ptx" "$D/fi_$b.ptx" || exit 1; done ;;
device)
  cd "$D"; OUT=${OUT:-$D}
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export PHASECHECK_INJECT=$D/libcapture_inject.so
  PARTS=${PARTS:-capture pp fi}
  W="--wait-bound-ms 100"
  if [[ " $PARTS " == *" capture "* ]]; then
  for k in 320 1024; do
    timeout 60 ./phasecheck capture -o "$OUT/pp$k.capture.json" -- ./pingpong_gemm 512 512 $k 1 16 >/dev/null 2>&1; echo "capture pp K=$k rc=$?"
  done
  timeout 60 ./phasecheck capture -o "$OUT/fi.capture.json" -- ./flashinfer_launch 1 2>&1 | tail -1; echo "capture fi rc=${PIPESTATUS[0]}"
  fi
  P="./phasecheck fuzz --app $W --watchdog 15"
  if [[ " $PARTS " == *" pp "* ]]; then
  for k in 320 1024; do
    for b in none $PP_BUGS; do
      f=pp_$b.ptx; [ $b = none ] && f=pp.ptx
      echo "== pingpong K=$k bug=$b"; t0=$(date +%s.%N)
      timeout 60 $P --kernel $PP_KERNEL --repeat 50 $f -- ./pingpong_gemm 512 512 $k 1 16 2>&1 | short
      echo "rc=${PIPESTATUS[0]} $(el $t0) s"
    done
  done
  fi
  if [[ " $PARTS " == *" fi "* ]]; then
  echo "== flashinfer app alone"; timeout 60 ./flashinfer_launch 3; echo "rc=$?"
  # --repeat 1: only the application's own launch (swapped); --repeat 20: 19 more of ours.
  for b in $FI_BUGS; do for r in 1 20; do
    echo "== flashinfer bug=$b repeat=$r"; t0=$(date +%s.%N)
    timeout 90 $P --kernel $FI_KERNEL --repeat $r fi_$b.ptx -- ./flashinfer_launch 1 2>&1 | short
    echo "rc=${PIPESTATUS[0]} $(el $t0) s"
  done; done
  echo "== flashinfer clean, 2 x 1000 launches (timing)"; t0=$(date +%s.%N)
  timeout 120 $P --kernel $FI_KERNEL --repeat 1000 fi.ptx -- ./flashinfer_launch 2 2>&1 | short
  echo "rc=${PIPESTATUS[0]}"; t=$(el $t0); echo "timing: $t s"
  S=${FI_SECONDS:-90}
  R=$(awk -v t="$t" -v s="$S" 'BEGIN{r=s/(t/2000); if (r>1000000) r=1000000; printf "%d", r/10}')
  echo "== flashinfer clean, 10 x $R launches"; t0=$(date +%s.%N)
  timeout $((S + 60)) ./phasecheck fuzz --app $W --watchdog 60 --kernel $FI_KERNEL --repeat "$R" fi.ptx -- ./flashinfer_launch 10 2>&1 | short
  echo "rc=${PIPESTATUS[0]} $(el $t0) s"
  fi
  echo done ;;
verify)
  # The application's own PTX at its own launch (did not get past the extraction in 200 s for
  # Pingpong on 2026-11-27, docs/gpu.md); FlashInfer at its capture.
  cd "$D"; PC=${PHASECHECK:-$here/target/release/phasecheck}
  for b in none $PP_BUGS; do
    f=pp_$b.ptx; [ $b = none ] && f=pp.ptx
    echo "== verify pingpong K=320 bug=$b"; t0=$(date +%s.%N)
    timeout 600 "$PC" verify "$f" --launch "pp320.capture.json#1" --max-time 90s ${VERIFY_ARGS:-} >"$f.verify.txt" 2>&1
    echo "rc=$? $(el $t0) s"; findings "$f.verify.txt"
  done
  for b in none $FI_BUGS; do
    f=fi_$b.ptx; [ $b = none ] && f=fi.ptx
    echo "== verify flashinfer bug=$b"; t0=$(date +%s.%N)
    timeout 600 "$PC" verify "$f" --launch "fi.capture.json#1" --assume 5572=1 --assume 5586=1 --max-time 90s ${VERIFY_ARGS:-} >"$f.verify.txt" 2>&1
    echo "rc=$? $(el $t0) s"; findings "$f.verify.txt"
  done ;;
verify-fixture)
  # The same injections into the committed Pingpong fixture, at its captured launch (what the
  # table's Pingpong checker column shows). Writes DIR/fixture_*.ptx.
  cd "$D"; PC=${PHASECHECK:-$here/target/release/phasecheck}; R=$here/ptx/tests/fixtures/real
  cp "$R/cutlass_pingpong.ptx" fixture_none.ptx
  for b in none $PP_BUGS; do
    [ $b = none ] || python3 "$here/instrument/apps/inject_bugs.py" "$b" fixture_none.ptx "fixture_$b.ptx" >/dev/null || exit 1
    echo "== verify fixture pingpong bug=$b"; t0=$(date +%s.%N)
    timeout 600 "$PC" verify "fixture_$b.ptx" --launch "$R/cutlass.capture.json#0" --max-time 120s ${VERIFY_ARGS:-} >"fixture_$b.verify.txt" 2>&1
    echo "rc=$? $(el $t0) s"; findings "fixture_$b.verify.txt"
  done ;;
*) echo "prepare, device, verify or verify-fixture" >&2; exit 2 ;;
esac
