#!/bin/sh
# env/command_run.sh RLPT DECK DATA: [env] command in a run: the e2e tools deck on 4 ranks,
# its demonstrations calling "pycalc" (not a built-in tool) instead of the calculator, 150
# SFT steps and 2 GRPO steps with a Python calculator behind [env] command. Every pycalc
# call with a product of integers must get the product as its tool turn (the built-in
# calculator's content) in the samples log (a tool turn cut at the token budget: a prefix); a worker that exits on each call leaves the run
# complete with every call an error turn (tool_errors == tool_calls); a missing program is refused (exit 2).
set -u
rlpt="$1"; deck="$2"; data="$3"
fail() { echo "ENV_COMMAND_RUN_FAILED: $*"; exit 1; }
sed 's/\\"calculator\\"/\\"pycalc\\"/g' "$data" > env_cmd_data.jsonl
grep -q pycalc env_cmd_data.jsonl || fail "no pycalc call in the demonstrations"
cat > env_cmd_worker.py <<'PYEOF'
import json, re, sys
for line in sys.stdin:
    q = json.loads(line)
    try:  # decimals as the calculator reads them: 05 is 5
        v = eval(re.sub(r"\b0+(\d)", r"\1", q["arguments"]["expression"]), {"__builtins__": {}})
        c = str(int(v)) if v == int(v) else repr(v)
    except Exception as e:
        c = "error: %s" % e
    print(json.dumps({"id": q["id"], "content": c}), flush=True)
PYEOF
printf 'read line\nexit 1\n' > env_cmd_crash.sh
over="data.train_path=env_cmd_data.jsonl sft.steps=150 run.steps=2 eval.prompts=8 sft.eval_prompts=8
  checkpoint.dir=env_cmd_ck env.tools=calculator,command env.command_timeout_s=5"
for kind in worker crash; do
  cmd="/usr/bin/python3 env_cmd_worker.py"
  [ $kind = crash ] && cmd="sh env_cmd_crash.sh"
  rm -f env_cmd_$kind.jsonl env_cmd_samples_$kind.jsonl
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" $over "env.command=$cmd" \
    log.samples_every=1 log.samples_path=env_cmd_samples_$kind.jsonl log.metrics_path=env_cmd_$kind.jsonl > env_cmd_$kind.log 2>&1 ||
    { cat env_cmd_$kind.log; fail "$kind run"; }
  grep -E "^step [0-9]+/2 rl|env\] command" env_cmd_$kind.log | head -3
done
/usr/bin/python3 - <<'PYEOF' || fail "samples"
import json, re
call = re.compile(r'<tool_call>\{"name": ?"pycalc", ?"arguments": ?\{"expression": ?"(\d+)\*(\d+)"\}\}</tool_call>')
def pairs(kind):
    for s in map(json.loads, open("env_cmd_samples_%s.jsonl" % kind)):
        t = s.get("turns", [])
        for a, b in zip(t, t[1:]):
            m = call.fullmatch(a["text"]) if a["role"] == "assistant" and b["role"] == "tool" else None
            if m: yield int(m.group(1)) * int(m.group(2)), b["text"]
ok, bad = list(pairs("worker")), list(pairs("crash"))
# a tool turn may be cut at the end of the token budget: its text is then a prefix
def like(t, full): return len(t) > len("<tool_response>") and full.startswith(t)
assert len(ok) >= 10 and all(like(t, "<tool_response>%d</tool_response>" % v) for v, t in ok), ok[:5]
crashed = "<tool_response>error: [env] command: the worker exited or closed its stdout before answering"
assert bad and all(like(t, crashed) for _, t in bad), bad[:3]
def rl(kind):
    return [l for l in map(json.loads, open("env_cmd_%s.jsonl" % kind)) if l["phase"] == "rl" and l.get("tool_calls")]
good, crash = rl("worker"), rl("crash")
assert len(good) == 2 and all(l["tool_errors"] < l["tool_calls"] / 2 for l in good), good
assert len(crash) == 2 and all(l["tool_errors"] == l["tool_calls"] for l in crash), crash
print("env command_run: %d pycalc calls answered like the calculator; %d crashed calls error turns" % (len(ok), len(bad)))
PYEOF
$RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" $over "env.command=no-such-tool-program" > env_cmd_none.log 2>&1
[ $? = 2 ] && grep -q "\[env\] command: 'no-such-tool-program' is not an executable" env_cmd_none.log ||
  { cat env_cmd_none.log; fail "a missing command is not refused"; }
echo "env command_run: ok"
