#!/bin/sh
# inputs/make_pref_arith.sh: the shipped preference set, written deterministically (no
# randomness outside this file: a Park-Miller generator with a fixed seed).
#   sh inputs/make_pref_arith.sh OUT.jsonl [ROWS] [DIGITS_MAX] [SEED]
# Each row is an addition problem in the built-in arith task's prompt format ("A+B=",
# src/tasks/tasks.c) with chosen = the sum and rejected = a wrong sum: off by 1 to 9 (half
# the rows) or the sum with an extra digit appended (the other half: wrong and longer).
# Operands have 1 to DIGITS_MAX digits (default 1: the tiny decks' task). Defaults: 400
# rows, seed 1.
set -eu
out=${1:?usage: make_pref_arith.sh OUT.jsonl [ROWS] [DIGITS_MAX] [SEED]}
rows=${2:-400} digits=${3:-1} seed=${4:-1}
awk -v rows="$rows" -v digits="$digits" -v seed="$seed" '
function next_u() { x = (x * 16807) % 2147483647; return x }   # Park-Miller, exact in doubles
function operand(   d, lo, hi) {
  d = 1 + next_u() % digits
  lo = d == 1 ? 0 : 10 ^ (d - 1); hi = 10 ^ d - 1
  return lo + next_u() % (hi - lo + 1)
}
BEGIN {
  x = seed % 2147483646 + 1
  for (i = 0; i < rows; i++) {
    a = operand(); b = operand(); s = a + b
    if (i % 2 == 0) {
      off = 1 + next_u() % 9
      r = (s - off >= 0 && next_u() % 2) ? s - off : s + off
    } else {
      r = s * 10 + next_u() % 10
    }
    printf "{\"prompt\": \"%d+%d=\", \"chosen\": \"%d\", \"rejected\": \"%d\"}\n", a, b, s, r
  }
}' > "$out"
