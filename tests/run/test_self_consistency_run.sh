#!/bin/sh
# run/test_self_consistency_run.sh: label-free rows trained with self-consistency
# pseudo-labels ([reward] self_consistency; tests/run/tests.cmake).
#   run/test_self_consistency_run.sh RLPT DECK
# $RLPT_MPIEXEC ("mpiexec -n") and $RLPT_MPI_FLAGS come from CTest. The data: 100 rows
# "a+b=" (a, b = 0..9) without an answer to train on, the same rows with answers to
# evaluate on (TTRL: the unlabeled test set is the training set).
#   0. a model that sometimes answers: 60 SFT steps of the deck's arith task (its checkpoint)
#   1. without self_consistency the label-free rows are refused: exit 2 naming FILE:1
#   2. with it, 3 GRPO steps from that model: every RL line has reward_parts.correct (the
#      majority agreement) > 0 although no row has an answer, and the eval line scores
#      against the true answers
# Only the mechanics: on this tiny model pseudo-labels do not raise accuracy (README).
set -u
rlpt=$1 deck=$2
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_sc
fail() { echo "SC_TEST_FAILED: $*"; for f in *.log; do echo "== $f"; tail -15 "$f"; done; exit 1; }
for a in 0 1 2 3 4 5 6 7 8 9; do
  for b in 0 1 2 3 4 5 6 7 8 9; do
    echo "{\"prompt\": \"$a+$b=\"}" >> train.jsonl
    echo "{\"prompt\": \"$a+$b=\", \"answer\": \"$((a + b))\"}" >> eval.jsonl
  done
done
# shellcheck disable=SC2086
$RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" sft.steps=60 run.steps=1 optim.lr=0 \
  log.metrics_path=init.jsonl checkpoint.dir=ck0 > init.log 2>&1 || fail "initial run exited $?"
data="model.init=ckpt:ck0/step_00000001.h5 task.name=jsonl data.train_path=train.jsonl data.eval_path=eval.jsonl data.verifier=arith \
  sft.steps=0 run.steps=3 eval.prompts=100 checkpoint.dir=ck"
# shellcheck disable=SC2086
$RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" $data log.metrics_path=refused.jsonl > refused.log 2>&1
rc=$?
[ $rc -eq 2 ] || fail "label-free rows without self_consistency: exit $rc, expected 2"
grep -q "train.jsonl:1: .*answer" refused.log || fail "no message naming train.jsonl:1"
# shellcheck disable=SC2086
$RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" $data reward.self_consistency=true \
  log.metrics_path=sc.jsonl > sc.log 2>&1 || fail "self_consistency run exited $?"
lines=$(grep '"phase":"rl"' sc.jsonl | grep -vc '"eval_pass@1"')
signal=$(grep '"phase":"rl"' sc.jsonl | grep -v '"eval_pass@1"' | grep -c '"reward_parts.correct":0\.[0-9]*[1-9]')
[ "$lines" = 3 ] && [ "$signal" = 3 ] || fail "RL lines $lines, with reward_parts.correct > 0: $signal"
grep -q '"phase":"rl".*"eval_pass@1":[0-9]' sc.jsonl || fail "no eval line against the true answers"
nolabel=$(grep '"phase":"rl"' sc.jsonl | grep -v '"eval_pass@1"' | grep -c '"sc_label_acc":null')
[ "$nolabel" = 3 ] || fail "sc_label_acc should be null without references ($nolabel of 3 lines)"
grep "^step [0-9]/3 rl\|^eval (rl" sc.log | cut -c1-100
echo "self-consistency run: ok"
