#!/bin/sh
# run/test_gpu_pref.sh: short DPO and reward-model runs with [run] device = cuda against the
# same runs with device = cpu, compared by test_pref_run --compare (pref_loss, rewards,
# margins, grad_norm within RTOL relative; pair accuracies equal).
#   run/test_gpu_pref.sh RLPT CHECKER NP DECK PREF_JSONL STEPS RTOL [section.key=value ...]
# Exits 77 (CTest: skipped) where `rlpt version` reports no visible GPU. The launcher comes
# from $RLPT_MPIEXEC ("mpiexec -n" plus flags; NP is appended).
set -u
rlpt=$1 checker=$2 np=$3 deck=$4 pref=$5 steps=$6 rtol=$7
shift 7
if ! "$rlpt" version | grep -q 'gpus: *[1-9]'; then
  echo "test_gpu_pref: no visible CUDA device (rlpt version): skipped"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/rlpt_gpu_pref.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
rc=0
for algo in dpo rm; do
  extra=""
  [ $algo = rm ] && extra="model.value_head=true"
  for dev in cpu cuda; do
    # shellcheck disable=SC2086
    $RLPT_MPIEXEC "$np" $RLPT_MPI_FLAGS "$rlpt" run "$deck" data.pref_path="$pref" algo.name=$algo $extra \
      run.steps="$steps" run.device=$dev log.metrics_path="$dir/$algo.$dev.jsonl" \
      checkpoint.dir="$dir/ck.$algo.$dev" "$@" > "$dir/$algo.$dev.log" 2>&1 ||
      { echo "GPU_PREF_FAILED: $algo on $dev exited $?"; tail -20 "$dir/$algo.$dev.log"; exit 1; }
  done
  echo "== $algo: cuda vs cpu"
  "$checker" --compare "$dir/$algo.cpu.jsonl" "$dir/$algo.cuda.jsonl" "$rtol" || rc=1
done
exit $rc
