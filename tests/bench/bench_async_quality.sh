#!/bin/sh
# bench/bench_async_quality.sh: what each schedule does to learning on the full quickstart
# (inputs/quickstart.ini: 275 SFT + 150 GRPO steps, 4 ranks): post-SFT and post-RL greedy
# pass@1 on its 256 held-out prompts and the wall time, for sync, separate_async (the
# deterministic schedule, max_lag 1), separate_async free-running, and colocate_async (2
# colocated ranks of one thread each; sync in that layout beside it). The async runs use
# [algo] old_logprobs = rollout (the PPO ratio against the behaviour policy). Prints figures,
# asserts nothing (label bench; about 8 minutes on 2 cores).
#   bench/bench_async_quality.sh RLPT QUICKSTART_DECK
set -u
rlpt=$1 deck=$2
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_bench_quality
colo="ranks.layout=colocated ranks.controller=auto ranks.reward=auto ranks.rollout=auto ranks.train=auto ranks.train_dp=2"
run() {  # run NAME NP [overrides...]
  name=$1 np=$2
  shift 2
  t0=$(date +%s)
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC "$np" $RLPT_MPI_FLAGS "$rlpt" run "$deck" log.metrics_path="$dir/$name.jsonl" \
    log.samples_path= log.samples_every=0 checkpoint.every=0 "$@" > "$name.log" 2>&1 ||
    { echo "$name: rlpt run failed"; tail -5 "$name.log"; return; }
  echo "$name: $(grep '^summary:' "$name.log" | sed 's/^summary: //'); $(( $(date +%s) - t0 )) s"
}
run sync 4
run separate_async 4 run.mode=separate_async algo.old_logprobs=rollout
run separate_async_free 4 run.mode=separate_async async.deterministic=false algo.old_logprobs=rollout
# shellcheck disable=SC2086
run sync_colocated 2 $colo
# shellcheck disable=SC2086
run colocate_async 2 $colo run.mode=colocate_async algo.old_logprobs=rollout
