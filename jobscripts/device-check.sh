#!/usr/bin/env bash
# Device check, for a machine with an NVIDIA GPU: configure with the CUDA backend
# (-DRLPT_CUDA=ON, warnings are errors, CMAKE_CUDA_ARCHITECTURES defaults to 90 =
# Hopper), build the GPU tests and benchmark, run `ctest -L gpu` and the benchmark,
# and print one summary table. Every stage has a time limit; the whole script
# stays within 8 minutes (limits 60 + 210 + 110 + 60 s, plus 10 s grace each).
# Usage: jobscripts/device-check.sh [build-dir]
# Environment: CMAKE_CUDA_ARCHITECTURES (e.g. 80 for A100), NCCL_HOME (when NCCL is
# not under the CUDA toolkit), RLPT_JOBS (build parallelism, default nproc).
set -uo pipefail
source "$(dirname "$0")/env.sh"
BUILD="${1:-$RLPT_ROOT/build-device}"
ARCH="${CMAKE_CUDA_ARCHITECTURES:-90}"
JOBS="${RLPT_JOBS:-$(nproc)}"
LOG="$BUILD/device-check.log"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p "$BUILD"
: >"$LOG"

names=() states=() secs=()
# stage NAME LIMIT_S CMD...: run CMD under a time limit, output to the log and the screen.
stage() {
  local name="$1" limit="$2" t0 rc
  shift 2
  t0=$(date +%s)
  echo "== $name (limit ${limit} s): $*" | tee -a "$LOG"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  names+=("$name")
  secs+=("$(($(date +%s) - t0))")
  case $rc in
    0) states+=("ok") ;;
    124|137) states+=("TIMEOUT") ;;
    *) states+=("FAILED ($rc)") ;;
  esac
  return "$rc"
}

echo "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1)"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "device-check: no NVIDIA GPU visible (nvidia-smi -L failed): nothing to check" >&2
  exit 1
fi
ok=1
stage configure 60 cmake -S "$RLPT_ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRLPT_WERROR=ON \
  -DRLPT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH" || ok=0
targets=(test_gpu_ops test_gpu_model test_nccl)
[ -f "$RLPT_ROOT/tests/bench/bench_gpu.c" ] && targets+=(bench_gpu)
if [ $ok = 1 ]; then
  stage build 210 cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" || ok=0
fi
if [ $ok = 1 ]; then
  stage "ctest -L gpu" 110 ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 90
  [ -x "$BUILD/tests/bench_gpu" ] && stage bench_gpu 60 "$BUILD/tests/bench_gpu"
fi

echo
echo "==================== device check summary ===================="
printf '%-16s %-14s %6s\n' stage result seconds
for i in "${!names[@]}"; do printf '%-16s %-14s %6s\n' "${names[$i]}" "${states[$i]}" "${secs[$i]}"; done
echo "--------------------------------------------------------------"
grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$LOG" | sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: //' || true
grep -E '^bench ' "$LOG" || true
echo "full log: $LOG"
for s in "${states[@]}"; do [ "$s" = ok ] || exit 1; done
exit 0
