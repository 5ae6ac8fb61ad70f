#!/bin/sh
# cli/test_gpu_cli.sh: `rlpt generate` and `rlpt score` with --device cuda against
# --device cpu on one model file: generate (greedy, then seeded sampling) must give
# the same tokens and logprobs within 1e-4 (absolute + relative); score the same
# logprobs / entropies within 1e-4 (fp32 ops on both devices, ~1e-6 apart; a sampled
# token differs only if a uniform falls within that of a token boundary).
#   cli/test_gpu_cli.sh RLPT MODEL.h5
# Exits 77 (CTest: skipped) where `rlpt version` reports no visible GPU.
set -u
rlpt=$1 model=$2
if ! "$rlpt" version | grep -q 'gpus: *[1-9]'; then
  echo "test_gpu_cli: no visible CUDA device (rlpt version): skipped"
  exit 77
fi
fail=0
# numbers_close A B: the numbers of files A and B pairwise within 1e-4 (1 + |a|)
numbers_close() {
  tr -cs '0-9eE.+-' '\n' < "$1" | grep -E '[0-9]' > "$1.num"
  tr -cs '0-9eE.+-' '\n' < "$2" | grep -E '[0-9]' > "$2.num"
  paste "$1.num" "$2.num" | awk '
    { n++; d = $1 - $2; if (d < 0) d = -d; a = $1 < 0 ? -$1 : $1
      if ($2 == "" || d > 1e-4 * (1 + a)) { bad++; if (bad < 5) print "  differs: " $1 " vs " $2 } }
    END { print "  " n " numbers, " bad + 0 " differ"; exit bad > 0 || n == 0 }'
}
i=0
for args in "--temperature 0 -n 2" "--temperature 1 -n 4 --seed 11"; do
  i=$((i + 1))
  for dev in cpu cuda; do
    # shellcheck disable=SC2086
    if ! "$rlpt" generate --model "$model" --prompt '12+34=' --max-new-tokens 24 $args --json \
         --device $dev > "gpu_cli_gen$i.$dev.jsonl"; then
      echo "FAIL: rlpt generate $args --device $dev"
      fail=1
    fi
  done
  for dev in cpu cuda; do
    grep -o '"tokens":\[[0-9,]*\]' "gpu_cli_gen$i.$dev.jsonl" > "gpu_cli_tok$i.$dev"
    grep -o '"logprobs":\[[^]]*\]' "gpu_cli_gen$i.$dev.jsonl" > "gpu_cli_lp$i.$dev"
  done
  echo "generate $args: tokens"
  if cmp -s "gpu_cli_tok$i.cpu" "gpu_cli_tok$i.cuda"; then echo "  same"; else
    echo "FAIL: generate $args: different tokens"; diff "gpu_cli_tok$i.cpu" "gpu_cli_tok$i.cuda"; fail=1
  fi
  echo "generate $args: logprobs"
  numbers_close "gpu_cli_lp$i.cpu" "gpu_cli_lp$i.cuda" || { echo "FAIL: generate $args: logprobs"; fail=1; }
done
printf '{"tokens": [1, 2, 3, 4, 5, 6, 7, 8]}\n{"tokens": [9, 3]}\n{"tokens": [17, 18, 11, 19, 20, 29, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50]}\n' \
  > gpu_cli_in.jsonl
for dev in cpu cuda; do
  if ! "$rlpt" score --model "$model" --input gpu_cli_in.jsonl --output "gpu_cli_score.$dev.jsonl" \
       --device $dev; then
    echo "FAIL: rlpt score --device $dev"
    fail=1
  fi
done
echo "score: logprobs and entropies"
numbers_close gpu_cli_score.cpu.jsonl gpu_cli_score.cuda.jsonl || { echo "FAIL: score"; fail=1; }
[ $fail = 0 ] && echo "test_gpu_cli: all checks passed"
exit $fail
