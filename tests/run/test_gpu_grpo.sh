#!/bin/sh
# run/test_gpu_grpo.sh: a short GRPO run with [run] device = cuda against the same run
# with device = cpu (same deck, same seeds), compared by tests/run/test_gpu_grpo.c on the
# two metrics JSONL files (per-step reward, entropy, kl, grad norm within its stated
# tolerances). Trainer, rollout engine and reward ranks all use the deck's device.
#   run/test_gpu_grpo.sh RLPT CHECKER NP DECK SFT_STEPS RL_STEPS [section.key=value ...]
# Exits 77 (CTest: skipped) where `rlpt version` reports no visible GPU. The launcher
# comes from $RLPT_MPIEXEC (e.g. "mpiexec -n" plus flags; NP is appended). The runs
# write into a fresh directory under $TMPDIR; RLPT_GPU_GRPO_KEEP=1 keeps it.
# RLPT_GPU_GRPO_DTYPE=bf16 runs the cuda side with [model] dtype = bf16 (the cpu side
# stays fp32, the only dtype it has) and the checker applies its bf16 tolerances.
# RLPT_GPU_GRPO_WSYNC=CMP (test_restart_cmp) checks the weight broadcast over NCCL: the
# cuda run must report `weight sync: NCCL` (else the layout's weight_comm ranks share a
# GPU here: exit 77), a second cuda run with run.weight_sync=mpi must give the same
# metrics to the bit (CMP A B exact: the same fp32 weights arrive by either path; wall
# times and rates excepted), and the cuda run is checked against the cpu run as above.
set -u
rlpt=$1 checker=$2 np=$3 deck=$4 sft=$5 rl=$6
dtype=${RLPT_GPU_GRPO_DTYPE:-fp32}
wsync=${RLPT_GPU_GRPO_WSYNC:-}
shift 6
if ! "$rlpt" version | grep -q 'gpus: *[1-9]'; then
  echo "test_gpu_grpo: no visible CUDA device (rlpt version): skipped"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/rlpt_gpu_grpo.XXXXXX") || exit 1
[ "${RLPT_GPU_GRPO_KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
runs="cpu cuda"
[ -n "$wsync" ] && runs="cuda cuda_mpi cpu"  # the NCCL run first: it decides whether to skip
for run in $runs; do
  t0=$(date +%s)
  dev=${run%_mpi}
  dt=""
  [ "$dev" = cuda ] && [ "$dtype" != fp32 ] && dt="model.dtype=$dtype"
  [ "$run" = cuda_mpi ] && dt="$dt run.weight_sync=mpi"
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC "$np" $RLPT_MPI_FLAGS "$rlpt" run "$deck" sft.steps="$sft" run.steps="$rl" \
    run.device=$dev $dt log.metrics_path="$dir/$run.jsonl" "$@" > "$run.log" 2>&1
  rc=$?
  echo "run.device=$dev $dt: exit $rc in $(($(date +%s) - t0)) s"
  grep -E "^(step|eval|sft|summary|rlpt|weight sync)" "$run.log"
  if [ $rc -ne 0 ]; then
    echo "GPU_GRPO_RUN_FAILED: rlpt run (device $dev $dt) exited $rc"
    tail -20 "$run.log"
    exit 1
  fi
  if [ -n "$wsync" ] && [ "$run" = cuda ] && ! grep -q "^weight sync: NCCL" cuda.log; then
    echo "test_gpu_grpo: the weight broadcast cannot use NCCL here ($(grep '^weight sync' cuda.log)): skipped"
    exit 77
  fi
done
if [ -n "$wsync" ]; then
  grep -q "^weight sync: MPI" cuda_mpi.log || { echo "GPU_GRPO_RUN_FAILED: run.weight_sync=mpi did not take the MPI path"; exit 1; }
  echo "weight sync NCCL vs MPI (every metric but wall times and rates, exact):"
  "$wsync" "$dir/cuda.jsonl" "$dir/cuda_mpi.jsonl" exact || { echo "GPU_GRPO_RUN_FAILED: NCCL and MPI weight sync differ"; exit 1; }
fi
"$checker" "$dir/cpu.jsonl" "$dir/cuda.jsonl" "$sft" "$rl" "$dtype"
