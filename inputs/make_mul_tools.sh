#!/bin/sh
# inputs/make_mul_tools.sh OUT [ROWS] [SEED]: the multi-turn tool task's JSONL (deterministic).
# Each row is a product of two 2-digit numbers, too hard for the tiny model to compute, and its
# answer a demonstration episode (env/demo.h): the calculator call, the tool's response block
# (masked out of the SFT loss) and the final answer, which the math verifier takes (its last
# number) as the reference:
#   {"prompt": "37*43=", "answer": "<tool_call>{\"name\":\"calculator\",\"arguments\":
#    {\"expression\":\"37*43\"}}</tool_call><tool_response>1591</tool_response>1591"}
set -eu
out=$1 rows=${2:-2000} seed=${3:-1}
awk -v rows="$rows" -v seed="$seed" 'BEGIN {
  x = seed % 2147483646 + 1
  for (i = 0; i < rows; i++) {
    x = (x * 16807) % 2147483647; a = 10 + x % 90   # Park-Miller: the same rows in every awk
    x = (x * 16807) % 2147483647; b = 10 + x % 90
    e = a "*" b; p = a * b
    printf "{\"prompt\": \"%s=\", \"answer\": \"<tool_call>{\\\"name\\\":\\\"calculator\\\",", e
    printf "\\\"arguments\\\":{\\\"expression\\\":\\\"%s\\\"}}</tool_call>", e
    printf "<tool_response>%d</tool_response>%d\"}\n", p, p
  }
}' > "$out"
