#!/bin/sh
# run/smollm2_run.sh: one GRPO step of inputs/smollm2_arith.ini on the real
# SmolLM2-135M-Instruct GGUF with tiny settings (2 colocated ranks, 2 prompts x 2
# samples, 4 new tokens). Exits 77 (CTest: skipped) without the model file.
#   $1 rlpt binary, $2 mpiexec, the rest: mpiexec flags; RLPT_SOURCE_DIR = repo root
#   model: $RLPT_SMOLLM2_GGUF, else $RLPT_CACHE (default ~/.cache/rlpt)/SmolLM2-135M-Instruct.Q4_1.gguf
RLPT="$1"
MPIEXEC="$2"
shift 2
G="${RLPT_SMOLLM2_GGUF:-${RLPT_CACHE:-$HOME/.cache/rlpt}/SmolLM2-135M-Instruct.Q4_1.gguf}"
if [ ! -f "$G" ]; then
  echo "SmolLM2 GGUF not found at $G (run jobscripts/fetch-smollm2.sh): skipped"
  exit 77
fi
DIR="$(mktemp -d "${TMPDIR:-/tmp}/smollm2_run.XXXXXX")" || exit 1
trap 'rm -rf "$DIR"' EXIT
cd "$DIR" || exit 1
"$MPIEXEC" "$@" -np 2 "$RLPT" run "$RLPT_SOURCE_DIR/inputs/smollm2_arith.ini" \
  "model.init=gguf:$G" run.steps=1 sft.steps=0 sft.eval_prompts=1 algo.prompts_per_step=2 \
  algo.group_size=2 rollout.max_new_tokens=4 eval.prompts=1 eval.samples=1 eval.k=1 \
  ranks.micro_batch_seqs=2 || exit 1
# the step's metrics line in the metrics file
grep '"step": *1' metrics.jsonl || grep '"step":1' metrics.jsonl
