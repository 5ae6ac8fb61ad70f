#!/bin/sh
# run/test_lora.sh: a LoRA run of `rlpt run` (tests/run/tests.cmake), checked by
# run/lora_check.py (the frozen base, SFT learning, the rollout's logprobs).
#   run/test_lora.sh RLPT DECK
# 1. 40 SFT steps then 4 GRPO steps with [model] lora_rank = 4 on all seven projections from
#    the scratch base: its last checkpoint against `rlpt init` of the same deck; `rlpt
#    convert` of it: the merged model against numpy's W + (alpha / r) B A.
# 2. 30 full SFT steps (a checkpoint), then 12 GRPO steps with LoRA from that base
#    ([model] init = ckpt:, adapters from the seed): the RL steps see rewards, the base stays.
# ~4 s on 4 ranks.
set -u
rlpt=$1 deck=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_lora
/usr/bin/python3 -c 'import h5py' 2>/dev/null || { echo 'h5py not available: skipped'; exit 77; }
lora="model.lora_rank=4 model.lora_targets=all sft.lr=1e-2"
# shellcheck disable=SC2086
"$rlpt" init "$deck" --out init.h5 $lora > init.log 2>&1 || { echo "LORA_CHECK_FAILED: rlpt init"; cat init.log; exit 1; }
# shellcheck disable=SC2086
$RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" sft.steps=40 run.steps=4 $lora \
  checkpoint.dir="$dir/ck" log.metrics_path="$dir/m.jsonl" > run.log 2>&1 ||
  { echo "LORA_CHECK_FAILED: rlpt run exited $?"; tail -20 run.log; exit 1; }
/usr/bin/python3 "$here/lora_check.py" init.h5 ck/step_00000004.h5 m.jsonl 40 || exit 1
# rlpt convert of a LoRA checkpoint writes the merged model, W + (alpha / r) B A
"$rlpt" convert ck/step_00000004.h5 merged.h5 > convert.log 2>&1 ||
  { echo "LORA_CHECK_FAILED: convert exited $?"; cat convert.log; exit 1; }
/usr/bin/python3 "$here/lora_check.py" merged ck/step_00000004.h5 merged.h5 16 || exit 1
# shellcheck disable=SC2086
$RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" sft.steps=30 run.steps=0 sft.checkpoint_every=15 \
  checkpoint.dir="$dir/base" log.metrics_path="$dir/base.jsonl" > base.log 2>&1 ||
  { echo "LORA_CHECK_FAILED: rlpt run (base) exited $?"; tail -20 base.log; exit 1; }
# shellcheck disable=SC2086
$RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" model.init=ckpt:"$dir/base/step_00000000.h5" \
  sft.steps=0 run.steps=12 $lora checkpoint.dir="$dir/ck2" log.metrics_path="$dir/m2.jsonl" \
  > run2.log 2>&1 || { echo "LORA_CHECK_FAILED: rlpt run (GRPO) exited $?"; tail -20 run2.log; exit 1; }
/usr/bin/python3 "$here/lora_check.py" base/step_00000000.h5 ck2/step_00000012.h5 m2.jsonl 0 || exit 1
echo "lora test: ok"
