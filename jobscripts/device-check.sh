#!/usr/bin/env bash
# Device check, for a machine with an NVIDIA GPU: configure with the CUDA backend
# (-DRLPT_CUDA=ON, warnings are errors, CMAKE_CUDA_ARCHITECTURES defaults to 90 =
# Hopper), build the target gpu_checks (rlpt and every test program, so whatever a test
# labelled gpu starts is there: tests/CMakeLists.txt), run `ctest -L gpu` (every op
# against the CPU backend, the whole model, a short GRPO run cuda vs cpu, generate /
# score cuda vs cpu, NCCL against MPI) and bench_gpu, and print one summary table:
# stages, tests, then per model shape (SmolLM2-135M and ~1B) the training tokens/s
# and MFU against the chip's bf16 peak, the rollout tokens/s at 64 sequences and at
# batch 1, and batch 1 against the memory-bandwidth bound. Every stage has a time
# limit; the whole script stays within 8 minutes: limits 30 + 90 + 190 + 130 s = 440 s,
# and a stage that ignores SIGTERM is killed 5 s after its limit (460 s at worst).
# Build limit: on this project's 2-core CI VM librlpt took 50 CPU-s from scratch (30 of
# them nvcc for sm_90; sampling.cu alone 13, the longest) and the rest of `all` (the test
# programs, plus a sanitizer library gpu_checks leaves out) 122 CPU-s; on a 16-core
# H100/H200 host that is ~11 s of parallel work behind a ~15-20 s critical path
# (sampling.cu, then the links): ~30 s, 3x under the 90 s limit.
# Usage: jobscripts/device-check.sh [build-dir]
# Environment: CMAKE_CUDA_ARCHITECTURES (e.g. 80 for A100), NCCL_HOME (when NCCL is
# not under the CUDA toolkit), RLPT_JOBS (build parallelism, default nproc).
set -uo pipefail
# shellcheck source=jobscripts/env.sh
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
  timeout --kill-after=5 "$limit" "$@" 2>&1 | tee -a "$LOG"
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
stage configure 30 cmake -S "$RLPT_ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRLPT_WERROR=ON \
  -DRLPT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH" || ok=0
if [ $ok = 1 ]; then
  stage build 90 cmake --build "$BUILD" -j "$JOBS" --target gpu_checks || ok=0
fi
if [ $ok = 1 ]; then
  # -j JOBS (CPU cores): the tests share the GPU; each GRPO run takes 4 CPU ranks, so
  # on 16 cores four of them run at once instead of one after the other
  stage "ctest -L gpu" 190 ctest --test-dir "$BUILD" -L gpu -j "$JOBS" --output-on-failure \
    --timeout 100
  [ -x "$BUILD/tests/bench_gpu" ] && stage bench_gpu 130 "$BUILD/tests/bench_gpu"
fi

echo
echo "==================== device check summary ===================="
printf '%-16s %-14s %6s\n' stage result seconds
for i in "${!names[@]}"; do printf '%-16s %-14s %6s\n' "${names[$i]}" "${states[$i]}" "${secs[$i]}"; done
echo "--------------------------------------------------------------"
grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$LOG" | sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: //' || true
grep -E '^bench ' "$LOG" | grep -v '^bench table' || true
echo "--------------------------------------------------------------"
grep -E '^bench device' "$LOG" || true
grep -E '^bench table' "$LOG" | sed 's/^bench table //' || echo "(no model table: bench_gpu did not finish)"
echo "targets: training MFU >= 35 % at ~1B; batch-1 decode within 2x of the bf16 bound (dec/bound >= 0.5)"
echo "full log: $LOG"
for s in "${states[@]}"; do [ "$s" = ok ] || exit 1; done
exit 0
