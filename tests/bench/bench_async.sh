#!/bin/sh
# bench/bench_async.sh: RL steps/s of [run] mode = separate_async against sync in the same
# layout (1 controller, 1 reward, 1 rollout, 1 train rank; threads_per_rank = 1), on the
# quickstart (inputs/quickstart.ini, shortened) and on tests/decks/async_balanced.ini
# (generation about as long as training). Prints figures, asserts nothing (label bench).
#   bench/bench_async.sh RLPT QUICKSTART_DECK BALANCED_DECK
# Per deck: the sync run's mean phase times, generation side t_gen + t_reward and train side
# t_ref + t_train, the overlap bound (gen + train) / max(gen, train) from them, the steps/s
# of both runs over steps 2 .. steps - 1 (the first warms up; separate_async's last step
# generates nothing), their ratio, and the async run's idle fractions; then the same for
# separate_async with in-flight updates ([async] in_flight = recompute at decode step 2: the
# rollout rank takes each update inside the next batch's generation), and the free-running
# schedule ([async] deterministic = false) without and with in-flight updates.
set -u
rlpt=$1 quick=$2 balanced=$3
steps=${BENCH_ASYNC_STEPS:-12}
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_bench_async
run() {  # run NAME DECK [overrides...]
  name=$1 deck=$2
  shift 2
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" sft.steps=20 run.steps="$steps" eval.every=0 \
    eval.prompts=8 eval.samples=1 eval.k=1 log.metrics_path="$dir/$name.jsonl" log.samples_path= \
    log.samples_every=0 algo.old_logprobs=rollout "$@" > "$name.log" 2>&1 || { echo "$name: rlpt run failed"; tail -5 "$name.log"; }
}
summary() {  # summary DECK_LABEL ASYNC_RUN_NAME
  python3 - "$1" "$dir/sync.jsonl" "$dir/$2.jsonl" <<'PY'
import json, sys
def rl(path):
    out = []
    for line in open(path):
        d = json.loads(line)
        if d.get("phase") == "rl" and "eval_pass@1" not in d:
            out.append(d)
    return out[1:-1]
def mean(rows, k):
    v = [r[k] for r in rows if r.get(k) is not None]
    return sum(v) / len(v) if v else 0.0
s, a = rl(sys.argv[2]), rl(sys.argv[3])
gen = mean(s, "t_gen") + mean(s, "t_reward")
train = mean(s, "t_ref") + mean(s, "t_train")
bound = (gen + train) / max(gen, train)
sps_s, sps_a = 1 / mean(s, "time_s"), 1 / mean(a, "time_s")
mixed = mean(a, "version_mixed_frac")
print(f"{sys.argv[1]}: sync gen {gen:.3f} s, train {train:.3f} s, sync {mean(s, 't_sync'):.3f} s -> "
      f"overlap bound {bound:.2f}x; steps/s sync {sps_s:.2f}, separate_async {sps_a:.2f}: "
      f"{sps_a / sps_s:.2f}x ({100 * sps_a / sps_s / bound:.0f}% of the bound); async idle: train "
      f"{mean(a, 'idle_train'):.2f}, rollout {mean(a, 'idle_rollout'):.2f}; samples spanning "
      f"versions {mixed:.2f}")
PY
}
for deck in quick balanced; do
  if [ $deck = quick ]; then path=$quick; else path=$balanced; fi
  run sync "$path"
  run async "$path" run.mode=separate_async async.max_lag=1
  summary "$deck ($(basename "$path"))" async
  run async_in_flight "$path" run.mode=separate_async async.max_lag=1 async.in_flight=recompute \
    async.in_flight_step=2
  summary "$deck ($(basename "$path")), in_flight = recompute" async_in_flight
  run async_free "$path" run.mode=separate_async async.max_lag=1 async.deterministic=false
  summary "$deck ($(basename "$path")), free-running" async_free
  run async_free_in_flight "$path" run.mode=separate_async async.max_lag=1 async.deterministic=false \
    async.in_flight=recompute
  summary "$deck ($(basename "$path")), free-running, in_flight = recompute" async_free_in_flight
done
