#!/bin/sh
# tasks/code_mbpp_score.sh RLPT DECK: MBPP-style rows (generated here) through `rlpt
# reward-score`: [data] code_score = fraction gives the share of the row's asserts that pass
# (1, 2/3, 0 for a fenced right program, one that fails one test, and one that exits 0
# before the tests), code_score = all gives 1 or 0; `rlpt reward-check` scores the rows'
# references ("code") 1 and its wrong answers 0; a row without tests is refused naming its
# line (exit 2).
set -u
rlpt="$1"; deck="$2"
fail() { echo "CODE_MBPP_FAILED: $*"; exit 1; }
/usr/bin/python3 -c '
import json
row = {"text": "Write f(x) returning x + 1.", "code": "def f(x): return x + 1",
       "test_list": ["assert f(0) == 1", "assert f(1) == 2", "assert f(5) == 6"]}
for resp in ["Here:\n```python\ndef f(x):\n    return x + 1\n```\n", "def f(x):\n    return x + 1 if x < 2 else 0\n",
             "import os\nos._exit(0)\n", "def f(x): return x + 1"]:
    print(json.dumps(dict(row, response=resp)))
' > mbpp_in.jsonl
over="data.train_path=mbpp_in.jsonl data.prompt_key=text"
"$rlpt" reward-score "$deck" --input mbpp_in.jsonl --output mbpp_frac.jsonl $over || fail "fraction run"
"$rlpt" reward-score "$deck" --input mbpp_in.jsonl --output mbpp_all.jsonl $over data.code_score=all || fail "all run"
/usr/bin/python3 - <<'PYEOF' || fail "scores"
import json
frac = [json.loads(l)["reward"] for l in open("mbpp_frac.jsonl")]
alls = [json.loads(l)["reward"] for l in open("mbpp_all.jsonl")]
assert [round(x, 4) for x in frac] == [1.0, 0.6667, 0.0, 1.0], frac
assert alls == [1, 0, 0, 1], alls
print("code_mbpp_score: fraction", frac, "all", alls)
PYEOF
"$rlpt" reward-check "$deck" $over --prompts 3 > mbpp_check.log 2>&1 || { cat mbpp_check.log; fail "reward-check"; }
grep -q "reward-check: ok" mbpp_check.log || fail "reward-check does not separate the references"
echo '{"text": "no tests here", "code": "x = 1", "response": "x = 1"}' > mbpp_bad.jsonl
"$rlpt" reward-score "$deck" --input mbpp_bad.jsonl --output mbpp_bad_out.jsonl data.train_path=mbpp_bad.jsonl \
  data.prompt_key=text > mbpp_bad.log 2>&1
rc=$?
cat mbpp_bad.log
[ $rc = 2 ] && grep -q "mbpp_bad.jsonl:1: a code row needs" mbpp_bad.log || fail "a row without tests: exit $rc"
[ ! -e mbpp_bad_out.jsonl ] || fail "output written for a bad input"
