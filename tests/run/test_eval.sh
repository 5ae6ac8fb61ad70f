#!/bin/sh
# run/test_eval.sh RLPT DECK: `rlpt eval` reproduces a run's own final eval line
# (tests/run/tests.cmake). A short run (60 SFT + 2 GRPO steps of DECK, 4 ranks)
# writes its checkpoint; then `rlpt eval` on it, single process on the checkpoint
# directory (--output) and on 3 ranks splitting the prompts on the checkpoint file
# (--json), must give the run's final eval line's step, phase, greedy pass@1
# (equal doubles over the same prompt count: the same number right), sampled
# pass@1 (acc) and pass@k exactly. The match only means something for a model
# that is sometimes right and sometimes wrong, so 0 < pass@1 < 1 is required too.
# Env: RLPT_MPIEXEC ("mpiexec -n"), RLPT_MPI_FLAGS.
set -u
rlpt="$1"
deck="$2"
fail() {
  echo "EVAL_TEST_FAILED: $*"
  exit 1
}
over="sft.steps=60 run.steps=2"
rm -rf eval_ck eval_run.jsonl eval_1.jsonl eval_3.jsonl
$RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" $over log.metrics_path=eval_run.jsonl \
  checkpoint.dir=eval_ck > eval_run.log 2>&1 || { cat eval_run.log; fail "rlpt run failed"; }
grep -E '^(eval|summary)' eval_run.log
# fields FILE: the compared fields of its last eval line
fields() {
  grep '"eval_pass@1"' "$1" | tail -1 | grep -o '"\(step\|phase\|acc\|eval_pass@1\|eval_pass@k\)":[^,}]*' | tr '\n' ' '
}
"$rlpt" eval "$deck" $over --model eval_ck --output eval_1.jsonl || fail "rlpt eval (1 rank) failed"
$RLPT_MPIEXEC 3 $RLPT_MPI_FLAGS "$rlpt" eval "$deck" --model eval_ck/step_00000002.h5 --json \
  > eval_3.jsonl || fail "rlpt eval (3 ranks) failed"
want=$(fields eval_run.jsonl)
got1=$(fields eval_1.jsonl)
got3=$(fields eval_3.jsonl)
echo "run's final eval: $want"
echo "rlpt eval, 1 rank: $got1"
echo "rlpt eval, 3 ranks: $got3"
[ -n "$want" ] || fail "no eval line in the run's metrics"
[ "$got1" = "$want" ] || fail "rlpt eval (1 rank) differs from the run's eval line"
[ "$got3" = "$want" ] || fail "rlpt eval (3 ranks) differs from the run's eval line"
p=$(echo "$want" | grep -o '"eval_pass@1":[^ ]*' | cut -d: -f2)
awk -v p="$p" 'BEGIN { exit !(p > 0 && p < 1) }' || fail "greedy pass@1 $p: all wrong or all right, the match proves nothing"
echo "EVAL_TEST_OK"
