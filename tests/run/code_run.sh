#!/bin/sh
# run/code_run.sh RLPT DECK: a 1-step GRPO run of the code task on 4 ranks (tests/decks/
# code_run_tiny.ini) on 8 generated MBPP-style rows. The run must complete with every
# response scored through the sandbox: reward_mean 0 (the tiny model writes no working
# code), reward_errors 0 and sandbox_exec_per_s a positive number in its RL line.
set -u
rlpt="$1"; deck="$2"
fail() { echo "CODE_RUN_FAILED: $*"; exit 1; }
/usr/bin/python3 -c '
import json
for i in range(8):
    print(json.dumps({"text": "Write a function f(x) that returns x + %d." % i,
                      "code": "def f(x): return x + %d" % i,
                      "test_list": ["assert f(%d) == %d" % (k, k + i) for k in range(3)]}))
' > code_run_rows.jsonl
rm -rf code_run_metrics.jsonl code_run_ckpt
$RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" data.train_path=code_run_rows.jsonl > code_run.log 2>&1 || {
  cat code_run.log; fail "rlpt run failed"; }
grep -E "^(step|eval|summary)" code_run.log
/usr/bin/python3 - <<'PYEOF' || fail "metrics"
import json
lines = [json.loads(l) for l in open("code_run_metrics.jsonl")]
rl = [l for l in lines if l["phase"] == "rl" and "eval_pass@1" not in l]
assert len(rl) == 1, rl
m = rl[0]
assert m["reward_mean"] == 0 and m["reward_errors"] == 0, m
assert m["sandbox_exec_per_s"] and m["sandbox_exec_per_s"] > 0, m
print("code_run: 1 RL step, reward_mean 0, %.1f sandbox executions/s" % m["sandbox_exec_per_s"])
PYEOF
