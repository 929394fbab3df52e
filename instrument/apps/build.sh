#!/bin/sh
# Build the test application of `phasecheck fuzz --app` and keep its PTX (issue 27):
#   CUTLASS=.../site-packages/cutlass_library/source/include NVCC=nvcc OUT=dir ./build.sh
# Writes $OUT/pingpong_gemm (sm_90a) and $OUT/pingpong_gemm.ptx (the same compilation's PTX,
# which `phasecheck fuzz --app` instruments and swaps in). With NAME=coop2_gemm
# EXTRA=-DCOOPERATIVE_CLUSTER2: the Cooperative kernel on a 2x1 cluster, as $OUT/$NAME{,.ptx}. The CUTLASS headers come from the
# nvidia-cutlass Python package; nothing of them is kept here.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
NVCC=${NVCC:-nvcc}
OUT=${OUT:-.}
: "${CUTLASS:?set CUTLASS to the CUTLASS include folder}"
NAME=${NAME:-pingpong_gemm}
flags="-arch=sm_90a -O3 -std=c++17 -lineinfo --expt-relaxed-constexpr -DNDEBUG ${EXTRA:-} -I$CUTLASS"
"$NVCC" $flags -ptx "$here/pingpong_gemm.cu" -o "$OUT/$NAME.ptx"
"$NVCC" $flags "$here/pingpong_gemm.cu" -o "$OUT/$NAME"
