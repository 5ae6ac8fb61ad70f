#!/bin/sh
# cli/hf_generate.sh: the round trip GGUF -> `rlpt convert` -> Hugging Face directory
# -> `[model] init = hf:DIR` on SmolLM2-135M-Instruct: greedy generation on a
# chat prompt (the model's ChatML template, from the GGUF's metadata and from the
# written tokenizer_config.json) gives the same prompt ids, the same 16 response
# tokens and the same logprobs (fp32 export: bit-identical weights) for gguf:PATH
# and hf:DIR. Exits 77 (CTest: skipped) without the model file.
#   $1 rlpt binary; RLPT_SOURCE_DIR = repo root
#   model: $RLPT_SMOLLM2_GGUF, else $RLPT_CACHE (default ~/.cache/rlpt)/SmolLM2-135M-Instruct.Q4_1.gguf
RLPT="$1"
G="${RLPT_SMOLLM2_GGUF:-${RLPT_CACHE:-$HOME/.cache/rlpt}/SmolLM2-135M-Instruct.Q4_1.gguf}"
if [ ! -f "$G" ]; then
  echo "SmolLM2 GGUF not found at $G (run jobscripts/fetch-smollm2.sh): skipped"
  exit 77
fi
DIR="$(mktemp -d "${TMPDIR:-/tmp}/hf_generate.XXXXXX")" || exit 1
trap 'rm -rf "$DIR"' EXIT
"$RLPT" convert "$G" "$DIR/hf" || exit 1
for m in "gguf:$G" "hf:$DIR/hf"; do
  "$RLPT" generate --model "$m" --chat --prompt "What is the capital of France?" --temperature 0 \
    --max-new-tokens 16 --json >> "$DIR/out.jsonl" || exit 1
done
cat "$DIR/out.jsonl"
[ "$(wc -l < "$DIR/out.jsonl")" -eq 2 ] || exit 1
a="$(sed -n 1p "$DIR/out.jsonl")"
b="$(sed -n 2p "$DIR/out.jsonl")"
[ "$a" = "$b" ] || { echo "FAIL: gguf: and hf: differ"; exit 1; }
echo "hf_generate: gguf: and hf: give the same greedy tokens and logprobs"
