#!/usr/bin/env bash
# check.sh: run test_gpu_ops and test_gpu_model with the CUDA kernels executed on
# the CPU (emu.h), for machines without a GPU. It checks indexing, bounds, barrier
# use and numerics against the CPU backend; it cannot check speed, races that no
# fiber order exposes, or the real cuBLASLt/CUB (replaced by reference versions).
# Needs a CUDA-configured build for librlpt.a and the CUDA headers:
#   cmake -S . -B build-cuda -DRLPT_CUDA=ON && cmake --build build-cuda --target rlpt_lib
# Usage: kernels/emu/check.sh [build-dir]   (default build-cuda). About 2 minutes.
set -euo pipefail
EMU="$(cd "$(dirname "$0")" && pwd)"
R="$(cd "$EMU/../.." && pwd)"
B="$(cd "${1:-$R/build-cuda}" && pwd)"
W="$B/emu"
mkdir -p "$W"
cd "$W"
CUDA_INC="${CUDA_HOME:-/usr/local/cuda}/include"
INC="-I$R/kernels -I$R/src -I$R/mpi -I$R/io -I$R/tests -I$B -I$CUDA_INC -I$EMU"
CXX="g++ -std=c++17 -O1 -g -w -DRLPT_HAVE_CUDA=1 $INC"
CC="mpicc -std=c11 -O1 -g -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DRLPT_HAVE_CUDA=1 $INC"
objs=()
for cu in "$R"/kernels/*.cu; do
  f=$(basename "$cu" .cu)
  # kernel<<<grid, block[, smem]>>>(args) -> EMU_LAUNCH(kernel, grid, block[, smem])(args)
  { echo '#include "emu.h"'
    sed -E -e 's|#include <cuda_bf16.h>||' -e 's|#include <cub/[^>]*>|#include "emu_cub.h"|' \
      -e 's|extern __shared__ float smem\[\];|float *smem = emu_smem;|' \
      -e 's/([A-Za-z_0-9]+(<[A-Za-z_0-9 ]+>)?)<<<(.*)>>>\(/EMU_LAUNCH(\1, \3)(/' "$cu"; } \
      > "$f.emu.cpp"
  $CXX -c "$f.emu.cpp" -o "$f.o"
  objs+=("$f.o")
done
$CXX -c "$EMU/emu_rt.cpp" -o emu_rt.o
for c in "$R"/kernels/*.c; do
  $CC -c "$c" -o "$(basename "$c" .c).o"
  objs+=("$(basename "$c" .c).o")
done
LIBS="$B/librlpt.a $(pkg-config --libs inih libcjson libpcre2-8) -lhdf5 -lopenblas -lm -lpthread -lstdc++"
HDF5_LIB="$(dirname "$(find /usr/lib -name 'libhdf5.so' -path '*openmpi*' | head -1)")"
rc=0
for t in test_gpu_ops test_gpu_model; do
  $CC -c "$R/tests/$t.c" -o "$t.o"
  mpicc -o "emu_$t" "$t.o" "${objs[@]}" emu_rt.o -L"$HDF5_LIB" $LIBS
  # EMU_NO_ALGO=1: the naive cuBLASLt offers no algorithm, so every GEMM takes the fallback
  for order in 0 2 nofb; do
    echo "== $t (emulated kernels, $order)"
    if [ $order = nofb ]; then env EMU_NO_ALGO=1 "./emu_$t" > "emu_$t.$order.log" 2>&1 || rc=1
    else EMU_ORDER=$order "./emu_$t" > "emu_$t.$order.log" 2>&1 || rc=1; fi
    tail -3 "emu_$t.$order.log"
  done
done
[ $rc = 0 ] && echo "emulated GPU tests: all passed" || echo "emulated GPU tests: FAILED"
exit $rc
