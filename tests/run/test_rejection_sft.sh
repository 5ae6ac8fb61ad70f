#!/bin/sh
# run/test_rejection_sft.sh: rejection-sampling fine-tuning ([sft] source = rejection) raises
# greedy pass@1 over the model it starts from, and keeping the verifier's rejects does not
# (tests/run/tests.cmake).
#   run/test_rejection_sft.sh RLPT DECK
# $RLPT_MPIEXEC ("mpiexec -n") and $RLPT_MPI_FLAGS come from CTest. Steps, on 4 ranks:
#   1. the initial model: 60 dataset SFT steps and one RL step at lr 0 (its checkpoint)
#   2. its greedy pass@1 on 200 held-out prompts (rlpt eval)
#   3. rejection SFT from it: 3 rounds of 256 prompts x 8 samples, 60 steps; keep = correct
#   4. the same with keep = wrong
# Pass: correct >= initial + MARGIN, wrong <= initial, and every round's line has
# sft_kept <= sft_generated = 2048 (measured: initial 0.185, correct 0.305, wrong 0.110).
set -u
rlpt=$1 deck=$2
MARGIN=0.06
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_rft
fail() { echo "REJECTION_TEST_FAILED: $*"; for f in *.log; do echo "== $f"; tail -15 "$f"; done; exit 1; }
run() {  # run LOG [overrides...]
  log=$1
  shift
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" eval.prompts=200 "$@" > "$log" 2>&1
}
# post_sft FILE: eval_pass@1 of the post-SFT eval line
post_sft() { grep '"phase":"sft"' "$1" | grep '"eval_pass@1"' | sed 's/.*"eval_pass@1":\([0-9.e-]*\).*/\1/'; }

run init.log sft.steps=60 run.steps=1 optim.lr=0 log.metrics_path=init.jsonl checkpoint.dir=ck || fail "initial run exited $?"
"$rlpt" eval "$deck" --model ck/step_00000001.h5 eval.prompts=200 --json > eval.log 2>&1 || fail "rlpt eval exited $?"
init=$(grep '"eval_pass@1"' eval.log | sed 's/.*"eval_pass@1":\([0-9.e-]*\).*/\1/')
rft="model.init=ckpt:ck/step_00000001.h5 sft.source=rejection sft.steps=60 sft.rejection_rounds=3 \
  sft.rejection_prompts=256 sft.rejection_samples=8 sft.lr=1e-3 sft.warmup_steps=0 run.steps=0"
# shellcheck disable=SC2086
run correct.log $rft sft.rejection_keep=correct log.metrics_path=correct.jsonl checkpoint.dir=ckc || fail "keep = correct exited $?"
# shellcheck disable=SC2086
run wrong.log $rft sft.rejection_keep=wrong log.metrics_path=wrong.jsonl checkpoint.dir=ckw || fail "keep = wrong exited $?"
grep "rejection round" correct.log wrong.log
good=$(post_sft correct.jsonl) bad=$(post_sft wrong.jsonl)
echo "greedy pass@1: initial $init, rejection SFT keep=correct $good, keep=wrong $bad (margin $MARGIN)"
rounds=$(grep -c '"sft_generated":2048,"sft_kept":[0-9]' correct.jsonl)
[ "$rounds" = 3 ] || fail "expected 3 round lines with sft_generated 2048, found $rounds"
grep -o '"sft_generated":[0-9]*,"sft_kept":[0-9]*' correct.jsonl wrong.jsonl |
  awk -F'[:,]' '$5 > $3 { print "kept " $5 " > generated " $3; exit 1 }' || fail "kept more than generated"
awk -v i="$init" -v g="$good" -v m="$MARGIN" 'BEGIN { exit !(g >= i + m) }' || fail "keep=correct $good < $init + $MARGIN"
awk -v i="$init" -v b="$bad" 'BEGIN { exit !(b <= i) }' || fail "keep=wrong $bad > initial $init"
echo "rejection SFT: ok"
