#!/bin/sh
# run/command_run.sh RLPT DECK: [reward] command in a run: 2 GRPO steps of the e2e deck on
# 4 ranks scored by a Python worker (exact integer match), then by a worker that exits on
# its first request. Both runs must complete; the first with reward_errors 0 on its RL
# lines and the worker's parts as reward_parts.command.<name> in the samples log, the second
# with every sample of a step counted in reward_errors and rewards 0.
set -u
rlpt="$1"; deck="$2"
fail() { echo "COMMAND_RUN_FAILED: $*"; exit 1; }
cat > command_run_worker.py <<'PYEOF'
import json, sys
for line in sys.stdin:
    q = json.loads(line)
    print(json.dumps({"id": q["id"], "reward": float(q["response"].strip() == q["answer"].strip()),
                      "parts": {"chars": len(q["response"])}}), flush=True)
PYEOF
printf 'read line\nexit 1\n' > command_run_crash.sh
over="sft.steps=20 run.steps=2 eval.prompts=8 sft.eval_prompts=8 reward.command_workers=2 checkpoint.dir=command_run_ck
  log.samples_every=1"
for kind in worker crash; do
  cmd="/usr/bin/python3 command_run_worker.py"
  [ $kind = crash ] && cmd="sh command_run_crash.sh"
  rm -f command_run_$kind.jsonl command_run_samples_$kind.jsonl
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" $over "reward.command=$cmd" \
    log.samples_path=command_run_samples_$kind.jsonl log.metrics_path=command_run_$kind.jsonl > command_run_$kind.log 2>&1 || { cat command_run_$kind.log; fail "$kind run"; }
  grep -E "^step [0-9]+/2 rl|reward\] command" command_run_$kind.log | head -4
done
/usr/bin/python3 - <<'PYEOF' || fail "metrics"
import json
def rl(kind):
    return [l for l in map(json.loads, open("command_run_%s.jsonl" % kind))
            if l["phase"] == "rl" and "eval_pass@1" not in l]
ok, bad = rl("worker"), rl("crash")
assert len(ok) == 2 and all(l["reward_errors"] == 0 for l in ok), ok
assert len(bad) == 2 and all(l["reward_errors"] == 128 and l["reward_mean"] == 0 for l in bad), bad
samples = [json.loads(l) for l in open("command_run_samples_worker.jsonl")]
assert samples and all("command.chars" in s["reward_parts"] for s in samples), samples[:1]
print("command_run: worker reward_errors 0, its parts in the samples; crashing worker 128 errors per step")
PYEOF
