#!/bin/sh
# run/test_e2e.sh: one end-to-end run of `rlpt run` under mpirun, then the metrics
# checker (run/test_e2e.c) on its JSONL.
#   run/test_e2e.sh RLPT CHECKER NP DECK SFT_STEPS RL_STEPS MIN_RISE MIN_GAIN [section.key=value ...]
# The launcher comes from $RLPT_MPIEXEC (e.g. "mpiexec -n" plus flags; NP is appended).
# The run writes into a fresh directory under the current one.
set -u
rlpt=$1 checker=$2 np=$3 deck=$4 sft=$5 rl=$6 rise=$7 gain=$8
shift 8
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_e2e
# shellcheck disable=SC2086
$RLPT_MPIEXEC "$np" $RLPT_MPI_FLAGS "$rlpt" run "$deck" sft.steps="$sft" run.steps="$rl" \
  log.metrics_path="$dir/metrics.jsonl" "$@" > run.log 2>&1
rc=$?
grep -E "^(step|eval|sft|summary|rlpt)" run.log
if [ $rc -ne 0 ]; then
  echo "E2E_RUN_FAILED: rlpt run exited $rc"
  tail -20 run.log
  exit 1
fi
"$checker" "$dir/metrics.jsonl" "$sft" "$rl" "$rise" "$gain"
