#!/bin/sh
# run/test_tp_run.sh: tensor-parallel training ([ranks] train_tp = 2) against the same deck on
# one train rank (tests/run/tests.cmake):
#   run/test_tp_run.sh MODE RLPT CMP DECK
# $RLPT_MPIEXEC ("mpiexec -n" + NP is appended) and $RLPT_MPI_FLAGS come from CTest.
# Modes (CMP = test_tp_cmp: metrics and every checkpoint tensor within 1e-5 relative):
#   sft      4 SFT steps, a checkpoint after step 3 ([sft] checkpoint_every = 3), no RL:
#            TP 2 (5 ranks) against 1 train rank (4 ranks)
#   grpo     3 SFT + 3 GRPO steps, the final checkpoint: TP 2 against 1 train rank; then
#            2 SFT steps from that checkpoint ([model] init = ckpt:, scattered to the shards):
#            the metrics of TP 2 against 1 train rank
#   dp2      the same with train_dp = 2 x train_tp = 2 (7 ranks)
#   restart  TP 2 stops after RL step 2 and resumes on 1 train rank; 1 train rank stops
#            after step 2 and resumes on TP 2: both equal the straight one-rank run
#   restart_sft  TP 2 checkpoints SFT step 4 of 5 (an SFT-only run), resumes on TP 2 with
#            the moments read into the trainer in place, finishes SFT and 3 GRPO steps: equal
#            to the straight one-rank run
#   rollout  rollout_tp = 2 (one engine on 2 ranks, 5 ranks) against one rollout rank, with
#            the trainer's old logprobs and with the rollout's ([algo] old_logprobs = rollout:
#            the rollout ranks measure logprob_diff_max, collectively)
#   rollout_train  train_tp = 2 and rollout_tp = 2 (6 ranks) against one rank of each
set -u
mode=$1 rlpt=$2 cmp=$3 deck=$4
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_tp
fail() { echo "TP_TEST_FAILED: $*"; for f in *.log; do echo "== $f"; tail -15 "$f"; done; exit 1; }
TP2="ranks.train=2 ranks.train_tp=2"
# run NP NAME [args...]: the deck on NP ranks, metrics NAME.jsonl, checkpoints NAME/
run() {
  np=$1 name=$2
  shift 2
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC "$np" $RLPT_MPI_FLAGS "$rlpt" run "$deck" log.metrics_path="$name.jsonl" \
    checkpoint.dir="$name" "$@" >> "$name.log" 2>&1 || fail "$name: rlpt run exited $?"
}
# halved A B: each rollout rank of B (rollout_tp = 2) received about half of A's sync_mb
# (its shard; the replicated norms whole), then the field is dropped from both for CMP
halved() {
  python3 - "$1" "$2" <<'PY' || fail "sync_mb of rollout_tp = 2 is not half of one rank's"
import json, sys
col = lambda f: [json.loads(l).get("sync_mb") for l in open(f)]
pairs = [(x, y) for x, y in zip(col(sys.argv[1]), col(sys.argv[2])) if x]
print("sync_mb one rank / TP 2 shard:", pairs[:1])
sys.exit(0 if pairs and all(0.49 < y / x < 0.51 for x, y in pairs) else 1)
PY
  sed -i 's/"sync_mb":[^,}]*,\{0,1\}//' "$1" "$2"
}
case $mode in
  sft)
    S="sft.steps=4 sft.checkpoint_every=3 run.steps=0"
    # shellcheck disable=SC2086
    run 4 one $S
    # shellcheck disable=SC2086
    run 5 tp $S $TP2
    "$cmp" one.jsonl tp.jsonl one/step_00000000.h5 tp/step_00000000.h5 || fail "TP 2 differs" ;;
  grpo|dp2)
    run 4 one
    if [ "$mode" = grpo ]; then
      # shellcheck disable=SC2086
      run 5 tp $TP2
    else
      run 7 tp ranks.train=4 ranks.train_dp=2 ranks.train_tp=2
    fi
    grep -q '"phase":"rl"' tp.jsonl || fail "no RL step logged"
    "$cmp" one.jsonl tp.jsonl one/step_00000003.h5 tp/step_00000003.h5 || fail "TP 2 differs"
    [ "$mode" = grpo ] || { echo "TP_TEST_OK $mode"; exit 0; }
    I="model.init=ckpt:one/step_00000003.h5 sft.steps=2 run.steps=0"
    # shellcheck disable=SC2086
    run 4 one_init $I
    # shellcheck disable=SC2086
    run 5 tp_init $I $TP2
    "$cmp" one_init.jsonl tp_init.jsonl || fail "TP 2 from [model] init = ckpt: differs" ;;
  restart)
    run 4 one
    # shellcheck disable=SC2086
    run 5 a run.stop_after=2 $TP2
    run 4 a --restart latest
    grep -q 'restart: phase rl, step 2' a.log || fail "TP 2 -> 1: no restart after step 2"
    "$cmp" one.jsonl a.jsonl one/step_00000003.h5 a/step_00000003.h5 || fail "TP 2 -> 1 differs"
    run 4 b run.stop_after=2
    # shellcheck disable=SC2086
    run 5 b --restart latest $TP2
    grep -q 'restart: phase rl, step 2' b.log || fail "1 -> TP 2: no restart after step 2"
    "$cmp" one.jsonl b.jsonl one/step_00000003.h5 b/step_00000003.h5 || fail "1 -> TP 2 differs" ;;
  restart_sft)
    S="sft.steps=5 sft.checkpoint_every=2"
    # shellcheck disable=SC2086
    run 4 one $S
    # shellcheck disable=SC2086
    run 5 a $S run.steps=0 $TP2
    # shellcheck disable=SC2086
    run 5 a $S --restart latest $TP2
    grep -q 'restart: phase sft, step 4 of 5 done' a.log || fail "TP 2: no restart after SFT step 4"
    "$cmp" one.jsonl a.jsonl one/step_00000003.h5 a/step_00000003.h5 || fail "TP 2 mid-SFT restart differs" ;;
  rollout)
    run 4 one
    run 5 tp ranks.rollout=2 ranks.rollout_tp=2
    grep -q '"phase":"rl"' tp.jsonl || fail "no RL step logged"
    halved one.jsonl tp.jsonl
    "$cmp" one.jsonl tp.jsonl one/step_00000003.h5 tp/step_00000003.h5 || fail "rollout TP 2 differs"
    run 4 one_rl algo.old_logprobs=rollout
    run 5 tp_rl algo.old_logprobs=rollout ranks.rollout=2 ranks.rollout_tp=2
    grep -q '"logprob_diff_max":[0-9]' tp_rl.jsonl || fail "no logprob_diff_max measured"
    halved one_rl.jsonl tp_rl.jsonl
    "$cmp" one_rl.jsonl tp_rl.jsonl || fail "rollout TP 2 with old_logprobs = rollout differs" ;;
  rollout_train)
    run 4 one
    # shellcheck disable=SC2086
    run 6 tp ranks.rollout=2 ranks.rollout_tp=2 $TP2
    halved one.jsonl tp.jsonl
    "$cmp" one.jsonl tp.jsonl one/step_00000003.h5 tp/step_00000003.h5 || fail "train TP 2 x rollout TP 2 differs" ;;
  *) fail "unknown mode $mode" ;;
esac
echo "TP_TEST_OK $mode"
