#!/bin/sh
# bench/bench_simulate.sh: `rlpt plan --simulate` against measured runs. A sync run of
# tests/decks/async_balanced.ini (4 ranks, separate layout) is the calibration; the model's
# steps/s for separate_async (deterministic, max_lag 1) and the free-running schedule are
# printed beside the measured ones (steps 2 .. steps - 1) and their ratio. Then colocate_async
# on one colocated rank of 2 threads: calibrated by sync runs at 2 threads and (--split) at 1,
# against a measured colocate_async run. Prints figures, asserts nothing (label bench).
#   bench/bench_simulate.sh RLPT DECK
set -u
rlpt=$1 deck=$2
steps=${BENCH_SIM_STEPS:-24}
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_bench_sim
run() {  # run NAME [overrides...]
  name=$1
  shift
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" sft.steps=20 run.steps="$steps" eval.every=0 \
    eval.prompts=8 eval.samples=1 eval.k=1 algo.old_logprobs=rollout log.metrics_path="$dir/$name.jsonl" \
    checkpoint.every=0 "$@" > "$name.log" 2>&1 || { echo "$name: rlpt run failed"; tail -5 "$name.log"; }
}
run sync
run det run.mode=separate_async
run free run.mode=separate_async async.deterministic=false
"$rlpt" plan "$deck" --world 4 run.steps="$steps" --simulate "$dir/sync.jsonl" > sim.txt || cat sim.txt
one="ranks.layout=colocated ranks.controller=auto ranks.reward=auto ranks.rollout=auto ranks.train=auto ranks.train_dp=1"
colo() {  # colo NAME THREADS MODE
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 1 $RLPT_MPI_FLAGS "$rlpt" run "$deck" $one ranks.threads_per_rank="$2" run.mode="$3" \
    sft.steps=20 run.steps="$steps" eval.every=0 eval.prompts=8 eval.samples=1 eval.k=1 \
    algo.old_logprobs=rollout log.metrics_path="$dir/$1.jsonl" checkpoint.every=0 > "$1.log" 2>&1 ||
    { echo "$1: rlpt run failed"; tail -5 "$1.log"; }
}
colo colo_sync 2 sync
colo colo_half 1 sync
colo colo 2 colocate_async
# shellcheck disable=SC2086
"$rlpt" plan "$deck" --world 1 $one run.steps="$steps" --simulate "$dir/colo_sync.jsonl" \
  --split "$dir/colo_half.jsonl" > sim_colo.txt || cat sim_colo.txt
grep "colocate_async  " sim_colo.txt >> sim.txt
python3 - "$dir" sim.txt <<'PY'
import json, re, sys
d, sim = sys.argv[1], open(sys.argv[2]).read()
def measured(name):
    rows = [json.loads(l) for l in open(f"{d}/{name}.jsonl")]
    rl = [r for r in rows if r.get("phase") == "rl" and "eval_pass@1" not in r][1:-1]
    return len(rl) / sum(r["time_s"] for r in rl)
def predicted(label):
    m = re.search(re.escape(label) + r"[^\n]*?([0-9.]+) steps/s", sim)
    return float(m.group(1)) if m else float("nan")
print(sim.split("simulate", 1)[1].splitlines()[0] if "simulate" in sim else sim)
for name, label in (("sync", "sync "), ("det", "separate_async (D"), ("free", "free-running"),
                    ("colo", "colocate_async  ")):
    p, m = predicted(label), measured(name)
    print(f"{name}: simulated {p:.3f} steps/s, measured {m:.3f}: simulated / measured {p / m:.2f}")
PY
