#!/bin/sh
# run/smollm2_learns.sh: a shortened inputs/smollm2_add.ini (GRPO on SmolLM2-135M-Instruct,
# single-digit addition; the deck as it is but for RL_STEPS steps and one eval at the end)
# through run/test_e2e.sh: the metrics checker (run/test_e2e.c) asserts the acc rise, the
# held-out sampled pass@1 gain and, through E2E_MIN_GREEDY_GAIN, the greedy pass@1 gain.
# Exits 77 (CTest: skipped) without the model file.
#   $1 rlpt binary, $2 checker (test_e2e), $3 RL_STEPS, $4 MIN_RISE, $5 MIN_GAIN, the rest:
#   deck overrides; RLPT_SOURCE_DIR = repo root, RLPT_MPIEXEC / RLPT_MPI_FLAGS as test_e2e.sh
#   model: $RLPT_SMOLLM2_GGUF, else $RLPT_CACHE (default ~/.cache/rlpt)/SmolLM2-135M-Instruct.Q4_1.gguf
rlpt=$1 checker=$2 rl=$3 rise=$4 gain=$5
shift 5
G="${RLPT_SMOLLM2_GGUF:-${RLPT_CACHE:-$HOME/.cache/rlpt}/SmolLM2-135M-Instruct.Q4_1.gguf}"
if [ ! -f "$G" ]; then
  echo "SmolLM2 GGUF not found at $G (run jobscripts/fetch-smollm2.sh): skipped"
  exit 77
fi
exec sh "$(dirname "$0")/test_e2e.sh" "$rlpt" "$checker" 2 "$RLPT_SOURCE_DIR/inputs/smollm2_add.ini" \
  0 "$rl" "$rise" "$gain" "model.init=gguf:$G" "eval.every=$rl" "$@"
