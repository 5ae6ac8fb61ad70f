#!/bin/sh
# bench/bench_colocate_async.sh: RL steps/s of [run] mode = colocate_async against sync on one
# colocated rank of threads_per_rank = 2 (colocate_async: batch k + 1 generated on a second
# thread with one of the threads while batch k trains on the other; sync: each phase on both),
# on the quickstart (shortened) and tests/decks/async_balanced.ini. Prints figures, asserts
# nothing (label bench).
#   bench/bench_colocate_async.sh RLPT QUICKSTART_DECK BALANCED_DECK
# Per deck: sync's mean t_gen and t_train, then both runs' steps/s over steps 2 .. steps - 1
# (the first warms up; colocate_async's last step generates nothing) and their ratio.
set -u
rlpt=$1 quick=$2 balanced=$3
steps=${BENCH_ASYNC_STEPS:-12}
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_bench_colo
run() {  # run NAME DECK MODE
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 1 $RLPT_MPI_FLAGS "$rlpt" run "$2" ranks.layout=colocated ranks.controller=auto \
    ranks.reward=auto ranks.rollout=auto ranks.train=auto ranks.train_dp=1 ranks.threads_per_rank=2 \
    run.mode="$3" sft.steps=20 run.steps="$steps" eval.every=0 eval.prompts=8 eval.samples=1 eval.k=1 \
    algo.old_logprobs=rollout log.metrics_path="$dir/$1.jsonl" checkpoint.every=0 > "$1.log" 2>&1 ||
    { echo "$1: rlpt run failed"; tail -5 "$1.log"; }
}
for deck in "$quick" "$balanced"; do
  run sync "$deck" sync
  run colo "$deck" colocate_async
  python3 - "$(basename "$deck")" "$dir/sync.jsonl" "$dir/colo.jsonl" <<'PY'
import json, sys
def rl(path):
    rows = [json.loads(l) for l in open(path)]
    return [r for r in rows if r.get("phase") == "rl" and "eval_pass@1" not in r][1:-1]
def mean(rows, k):
    v = [r[k] for r in rows if r.get(k) is not None]
    return sum(v) / len(v) if v else 0.0
s, c = rl(sys.argv[2]), rl(sys.argv[3])
sps_s, sps_c = 1 / mean(s, "time_s"), 1 / mean(c, "time_s")
print(f"{sys.argv[1]}: sync t_gen {mean(s, 't_gen'):.3f} s, t_train {mean(s, 't_train'):.3f} s; steps/s "
      f"sync {sps_s:.2f}, colocate_async {sps_c:.2f}: {sps_c / sps_s:.2f}x (colocate_async t_gen "
      f"{mean(c, 't_gen'):.3f} s, t_train {mean(c, 't_train'):.3f} s on one thread each)")
PY
done
