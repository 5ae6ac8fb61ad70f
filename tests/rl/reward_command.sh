#!/bin/sh
# rl/reward_command.sh RLPT DECK: [reward] command (rl/reward_command.h) through `rlpt
# reward-score`. A Python worker that re-implements the exact verifier must give the
# built-in verifier's rewards line for line (and its parts come back as command_parts);
# workers that crash, hang or answer garbage must give reward 0 with every request
# counted in reward_errors and a message naming the failure, within the timeout; a
# command that does not exist is refused (exit 2).
set -u
rlpt="$1"; deck="$2"
fail() { echo "REWARD_COMMAND_FAILED: $*"; exit 1; }
/usr/bin/python3 -c '
import json
for i in range(12):
    a, b = i, 7 - i
    resp = str(a + b) if i % 3 else " %d " % (a + b + 1)
    print(json.dumps({"prompt": "%d+%d=" % (a, b), "answer": str(a + b), "response": resp}))
' > reward_cmd_in.jsonl
cat > reward_cmd_worker.py <<'PYEOF'
import json, sys
for line in sys.stdin:
    q = json.loads(line)
    ok = q["response"].strip() == q["answer"].strip()
    print(json.dumps({"id": q["id"], "reward": 1.0 if ok else 0.0, "parts": {"chars": len(q["response"])}}), flush=True)
PYEOF
printf 'read line\nexit 3\n' > reward_cmd_crash.sh
printf 'read line\nsleep 30\n' > reward_cmd_hang.sh
printf 'while read line; do echo "hello, not json"; done\n' > reward_cmd_garbage.sh
over="data.train_path=reward_cmd_in.jsonl"
workers="reward.command_workers=2 reward.command_timeout_s=0.5"
"$rlpt" reward-score "$deck" --input reward_cmd_in.jsonl --output rc_builtin.jsonl $over || fail "built-in"
"$rlpt" reward-score "$deck" --input reward_cmd_in.jsonl --output rc_worker.jsonl $over $workers \
  "reward.command=/usr/bin/python3 reward_cmd_worker.py" > rc_worker.log 2>&1 || { cat rc_worker.log; fail "worker"; }
cat rc_worker.log
grep -q "reward_errors 0" rc_worker.log || fail "the Python worker had errors"
rewards() { grep -o '"line":[0-9]*,"reward":[0-9.]*' "$1"; }
[ "$(rewards rc_builtin.jsonl)" = "$(rewards rc_worker.jsonl)" ] || fail "worker rewards differ from the verifier's"
[ "$(grep -c '"reward":1' rc_builtin.jsonl)" = 8 ] || fail "expected 8 right responses of 12"
grep -q '"command_parts":{"chars":1}' rc_worker.jsonl || fail "the worker's parts are missing"
for kind in crash hang garbage; do
  start=$(date +%s)
  "$rlpt" reward-score "$deck" --input reward_cmd_in.jsonl --output rc_$kind.jsonl $over $workers \
    "reward.command=sh reward_cmd_$kind.sh" > rc_$kind.log 2>&1 || { cat rc_$kind.log; fail "$kind: exit $?"; }
  took=$(( $(date +%s) - start ))
  head -3 rc_$kind.log
  grep -q "reward_errors 12" rc_$kind.log || fail "$kind: not every request counted"
  [ "$(grep -c '"reward":0' rc_$kind.jsonl)" = 12 ] || fail "$kind: a failed request scored"
  [ "$took" -le 10 ] || fail "$kind: took $took s"
done
grep -q "exited or closed its stdout" rc_crash.log || fail "crash not named"
grep -q "no answer within \[reward\] command_timeout_s = 0.5 s" rc_hang.log || fail "hang not named"
grep -q "answered garbage.*'hello, not json'" rc_garbage.log || fail "garbage not named"
"$rlpt" reward-score "$deck" --input reward_cmd_in.jsonl --output rc_none.jsonl $over \
  "reward.command=no-such-reward-program" > rc_none.log 2>&1
[ $? = 2 ] && grep -q "\[reward\] command: 'no-such-reward-program' is not an executable" rc_none.log || {
  cat rc_none.log; fail "a missing command is not refused"; }
[ ! -e rc_none.jsonl ] || fail "output written on a bad command"
echo "reward_command: worker = verifier on 12 responses; crash, hang, garbage counted; missing command refused"
