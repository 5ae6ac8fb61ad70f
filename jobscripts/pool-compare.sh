#!/usr/bin/env bash
# pool-compare.sh: what RL adds when demonstrations are scarce.
# The quickstart's SFT warm start sees only POOL fixed examples ([sft] pool); then
#   (a) RL:        the quickstart's GRPO phase (fresh prompts, only the verifier)
#   (b) SFT, pool: the same SFT phase continued on the same POOL examples for the
#                  wall time (a)'s RL steps took (extra steps = RL seconds / mean
#                  SFT step seconds, both measured in run (a))
#   (c) SFT, fresh: the same extra steps on fresh examples ([sft] pool = 0 for the
#                  whole run): the unlimited-labelled-data reference
# and prints one table: held-out greedy pass@1 after SFT, after (a), (b), (c),
# and the times. Everything else is inputs/quickstart.ini as it is, changed only
# by command-line overrides. The LR schedule is constant after warm-up, so
# [sft] steps = SFT_STEPS + extra repeats the first SFT_STEPS steps exactly.
# Times are wall seconds of the training steps (evals excluded); on a shared
# machine they are noisy, so (b)'s extra seconds are printed beside (a)'s.
# Measured on the shared 2-core VM (held-out greedy pass@1, 200 prompts, so +-0.035):
#   POOL SFT_STEPS  post-SFT  (a) RL 150 steps  (b) SFT on pool  (c) SFT fresh
#   300  275        0.175     0.240             0.225 (+356)     0.990 (+356)  post-SFT below the band
#   300  400        0.220     0.285             0.215 (+339)     0.975 (+339)
#   500  275        0.290     0.430             0.505 (+257)     0.800 (+257)
# With 300 examples SFT has stopped generalising and RL still gains; with 500 more
# SFT on the pool still wins; unlimited fresh examples win by far in every case.
# Usage: jobscripts/pool-compare.sh [POOL [SFT_STEPS]]   (defaults 300, 275)
#        RLPT_BUILD=DIR picks the build folder holding rlpt; runs in DIR/pool-compare-POOL-SFT_STEPS.
set -euo pipefail
source "$(dirname "$0")/env.sh"
pool="${1:-300}"
sft_steps="${2:-275}"
rlpt="$RLPT_BUILD/rlpt"
deck="$RLPT_ROOT/inputs/quickstart.ini"
[ -x "$rlpt" ] || { echo "pool-compare: $rlpt not found (build first, or set RLPT_BUILD)" >&2; exit 2; }
work="$RLPT_BUILD/pool-compare-$pool-$sft_steps"
mkdir -p "$work"
cd "$work"

# run NAME OVERRIDES...: one quickstart run, metrics in NAME.jsonl, console in NAME.log
run() {
  local name="$1"
  shift
  rm -rf "$name.jsonl" "ckpt_$name"
  echo "pool-compare: ($name) rlpt run quickstart.ini $*"
  mpirun -np 4 --oversubscribe "$rlpt" run "$deck" log.samples_path= log.samples_every=0 log.metrics_path="$name.jsonl" \
    checkpoint.dir="ckpt_$name" "$@" > "$name.log" 2>&1 || { tail -20 "$name.log" >&2; exit 1; }
  grep -E '^(sft:|summary:|eval \()' "$name.log" | sed "s/^/  ($name) /"
}
# eval_pass1 FILE PHASE: greedy pass@1 of the last eval line of that phase
eval_pass1() {
  grep '"eval_pass@1"' "$1" | grep "\"phase\":\"$2\"" | tail -1 | grep -o '"eval_pass@1":[^,}]*' | cut -d: -f2
}
# step_seconds FILE PHASE [FIRST_STEP]: "count sum" of the step times (eval lines excluded)
step_seconds() {
  grep -v '"eval_pass@1"' "$1" | grep "\"phase\":\"$2\"" |
    awk -v first="${3:-1}" '{ match($0, /"step":[0-9]+/); s = substr($0, RSTART + 7, RLENGTH - 7) + 0;
      match($0, /"time_s":[0-9.eE+-]+/); t = substr($0, RSTART + 9, RLENGTH - 9) + 0;
      if (s >= first) { n++; sum += t } } END { printf "%d %.1f\n", n, sum }'
}

common=(sft.pool="$pool" sft.steps="$sft_steps")
run a "${common[@]}"
read -r n_sft t_sft < <(step_seconds a.jsonl sft)
read -r n_rl t_rl < <(step_seconds a.jsonl rl)
extra=$(awk -v r="$t_rl" -v s="$t_sft" -v n="$n_sft" 'BEGIN { printf "%d", r / (s / n) + 0.5 }')
echo "pool-compare: (a) SFT $n_sft steps in $t_sft s, RL $n_rl steps in $t_rl s -> $extra extra SFT steps"
run b sft.pool="$pool" sft.steps=$((sft_steps + extra)) run.steps=0
run c sft.pool=0 sft.steps=$((sft_steps + extra)) run.steps=0
read -r n_b t_b < <(step_seconds b.jsonl sft $((sft_steps + 1)))
read -r n_c t_c < <(step_seconds c.jsonl sft $((sft_steps + 1)))
post_sft=$(eval_pass1 a.jsonl sft)
printf '\n%-6s %-9s | %-26s | %-26s | %-26s\n' pool post-SFT "after RL (a)" "after extra SFT, pool (b)" \
  "after extra SFT, fresh (c)"
printf '%-6s %-9s | %-26s | %-26s | %-26s\n' "$pool" "$post_sft" \
  "$(eval_pass1 a.jsonl rl) ($n_rl steps, $t_rl s)" "$(eval_pass1 b.jsonl sft) ($n_b steps, $t_b s)" \
  "$(eval_pass1 c.jsonl sft) ($n_c steps, $t_c s)"
echo "greedy pass@1 on the quickstart's 200 held-out prompts; SFT phase: $n_sft steps in $t_sft s" \
  "(post-SFT band [sft] target_band = 0.2, 0.6); runs in $work"
