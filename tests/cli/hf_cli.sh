#!/bin/sh
# cli/hf_cli.sh: [model] init = hf:DIR through the commands, on a tiny model. A model
# from `rlpt init` is written as a Hugging Face directory by `rlpt convert`, with
# the tokenizer.json fixture tests/data/hf_tok_a beside it; then
#   rlpt plan and rlpt generate --model hf:DIR take the file's shape and tokenizer,
#   rlpt run (2 colocated ranks: SFT, one GRPO step) starts from it,
#   bad input exits 2 naming the file: no tokenizer.json, malformed
#   tokenizer.json, a tokenizer larger than the model's vocabulary, no config.json.
#   $1 rlpt binary, $2 mpiexec, the rest: mpiexec flags; RLPT_SOURCE_DIR = repo root
RLPT="$1"
MPIEXEC="$2"
shift 2
SRC="${RLPT_SOURCE_DIR:-..}"
DECK="$SRC/tests/decks/e2e_tiny.ini"
DIR="$(mktemp -d "${TMPDIR:-/tmp}/hf_cli.XXXXXX")" || exit 1
trap 'rm -rf "$DIR"' EXIT
cd "$DIR" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
# expect_fail WHAT REGEX command...: exit 2 and REGEX in its messages
expect_fail() {
  what="$1"; re="$2"; shift 2
  "$@" > out.log 2>&1; rc=$?
  cat out.log
  [ $rc -eq 2 ] || fail "$what: exit $rc, want 2"
  grep -q "$re" out.log || fail "$what: no '$re' in the message"
  echo "ok: $what"
}

"$RLPT" init "$DECK" model.vocab_size=608 model.max_seq=64 --out m.h5 || fail "rlpt init"
"$RLPT" convert m.h5 hfd || fail "rlpt convert"
expect_fail "no tokenizer.json" "hfd/tokenizer.json: No such file" \
  "$RLPT" generate --model hf:hfd --prompt "1+2="
cp "$SRC/tests/data/hf_tok_a/tokenizer.json" "$SRC/tests/data/hf_tok_a/tokenizer_config.json" hfd/ || exit 1

"$RLPT" plan "$DECK" --world 4 model.init=hf:hfd > plan.log 2>&1 || { cat plan.log; fail "plan"; }
grep -q "vocab 608" plan.log || fail "plan: not the file's vocab_size"
"$RLPT" generate --model hf:hfd --chat --prompt "1+2=" --max-new-tokens 2 --json > gen.log 2>&1 ||
  { cat gen.log; fail "generate"; }
# ChatML from tokenizer_config.json: <|im_start|> (1) user ... the prompt's ids in the fixture's vocabulary
grep -q '"prompt_tokens":\[1,' gen.log || { cat gen.log; fail "generate: not the chat template's tokens"; }
echo "ok: generate"; cat gen.log
"$MPIEXEC" "$@" -np 2 "$RLPT" run "$DECK" model.init=hf:hfd ranks.layout=colocated ranks.train_dp=1 \
  run.steps=1 sft.steps=2 sft.eval_prompts=4 eval.prompts=4 algo.prompts_per_step=2 \
  algo.group_size=2 > run.log 2>&1 || { cat run.log; fail "rlpt run with init = hf:"; }
grep -q "^step 1/1 rl" run.log || fail "run: no RL step"
echo "ok: run"

printf '{"model": {"vocab": {' > hfd/tokenizer.json
expect_fail "malformed tokenizer.json" "hfd/tokenizer.json: line 1: not valid JSON" \
  "$RLPT" generate --model hf:hfd --prompt "1+2="
"$RLPT" init "$DECK" model.vocab_size=500 --out small.h5 > /dev/null || exit 1
"$RLPT" convert small.h5 small > /dev/null || exit 1
cp "$SRC/tests/data/hf_tok_a/tokenizer.json" "$SRC/tests/data/hf_tok_a/tokenizer_config.json" small/
expect_fail "tokenizer larger than the model" "601 tokens but the model's vocabulary only 500" \
  "$RLPT" generate --model hf:small --prompt "1+2="
rm hfd/config.json
expect_fail "no config.json (generate)" "hfd/config.json: No such file" \
  "$RLPT" generate --model hf:hfd --prompt "1+2="
expect_fail "no config.json (plan)" "hfd/config.json: No such file" \
  "$RLPT" plan "$DECK" --world 4 model.init=hf:hfd
echo "hf_cli: all checks passed"
