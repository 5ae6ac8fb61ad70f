#!/bin/sh
# test_gpu_grpo.sh: a short GRPO run with [run] device = cuda against the same run
# with device = cpu (same deck, same seeds), compared by tests/test_gpu_grpo.c on the
# two metrics JSONL files (per-step reward, entropy, kl, grad norm within its stated
# tolerances). Trainer, rollout engine and reward ranks all use the deck's device.
#   test_gpu_grpo.sh RLPT CHECKER NP DECK SFT_STEPS RL_STEPS [section.key=value ...]
# Exits 77 (CTest: skipped) where `rlpt version` reports no visible GPU. The launcher
# comes from $RLPT_MPIEXEC (e.g. "mpiexec -n" plus flags; NP is appended). The runs
# write into a fresh directory under $TMPDIR; RLPT_GPU_GRPO_KEEP=1 keeps it.
# RLPT_GPU_GRPO_DTYPE=bf16 runs the cuda side with [model] dtype = bf16 (the cpu side
# stays fp32, the only dtype it has) and the checker applies its bf16 tolerances.
set -u
rlpt=$1 checker=$2 np=$3 deck=$4 sft=$5 rl=$6
dtype=${RLPT_GPU_GRPO_DTYPE:-fp32}
shift 6
if ! "$rlpt" version | grep -q 'gpus: *[1-9]'; then
  echo "test_gpu_grpo: no visible CUDA device (rlpt version): skipped"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/rlpt_gpu_grpo.XXXXXX") || exit 1
[ "${RLPT_GPU_GRPO_KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
for dev in cpu cuda; do
  t0=$(date +%s)
  dt=""
  [ "$dev" = cuda ] && [ "$dtype" != fp32 ] && dt="model.dtype=$dtype"
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC "$np" $RLPT_MPI_FLAGS "$rlpt" run "$deck" sft.steps="$sft" run.steps="$rl" \
    run.device=$dev $dt log.metrics_path="$dir/$dev.jsonl" "$@" > "$dev.log" 2>&1
  rc=$?
  echo "run.device=$dev $dt: exit $rc in $(($(date +%s) - t0)) s"
  grep -E "^(step|eval|sft|summary|rlpt)" "$dev.log"
  if [ $rc -ne 0 ]; then
    echo "GPU_GRPO_RUN_FAILED: rlpt run (device $dev) exited $rc"
    tail -20 "$dev.log"
    exit 1
  fi
done
"$checker" "$dir/cpu.jsonl" "$dir/cuda.jsonl" "$sft" "$rl" "$dtype"
