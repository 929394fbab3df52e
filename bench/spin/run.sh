#!/bin/bash
# phasecheck's SPIN baseline (docs/performance.md, scripts/bench-scale.sh): the double buffer of
# corpus/guide/double_buffer.phase modelled by hand in Promela (pipeline.pml, next to this file).
# SPIN baseline for the double-buffer protocol (corpus equivalent: one producer thread, NC consumer
# threads, K trips, 2 stages, parity waits). Exhaustive safety check: deadlock + assertion.
# usage: run.sh NC K      (needs: apt-get install spin gcc)
set -e
here=$(cd "$(dirname "$0")" && pwd)
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cp "$here/pipeline.pml" "$d"; cd "$d"
sed -i "s/^byte fullpend\[2\];/byte fullpend[2] = 1;/; s/^byte emptypend\[2\];/byte emptypend[2] = NC;/" pipeline.pml
spin -DNC=$1 -DK=$2 -a pipeline.pml >/dev/null
gcc -O2 -DSAFETY -DMEMLIM=16000 -DNC=$1 -DK=$2 -o pan pan.c 2>/dev/null
/usr/bin/time -f "wall=%e s maxrss=%M KB" ./pan -m100000 2>&1 | grep -E "errors|states, stored|transitions|wall=|out of memory|error:"
