#!/bin/sh
# bench/bench_weight_sync.sh: the weight sync from the train grid to the rollout engines, a
# model of SmolLM2-135M's size with heads that split in 2 (dim 576, 30 layers, 8 heads / 4
# kv heads, ffn_dim 1536, vocabulary 49152, tied: 135M parameters), separate layout, one
# thread per rank, for train TP x rollout TP = 1 x 1, 2 x 1, 1 x 2 and 2 x 2: each rollout
# rank's bytes (sync_mb) and the sync's GB/s (sync_gbps: bytes over the time after the
# polite wait for the peers) over RL steps 2-3, beside a raw MPI_Bcast of the same bytes to
# as many receivers (bench_bcast). Prints figures, asserts nothing (label bench).
#   bench/bench_weight_sync.sh RLPT BENCH_BCAST DECK        (DECK: tests/decks/tp_tiny.ini)
set -u
rlpt=$1 bcast=$2 deck=$3
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_bench_wsync
SHAPE="model.dim=576 model.layers=30 model.heads=8 model.kv_heads=4 model.ffn_dim=1536
  model.vocab_size=49152 model.tie_embeddings=true model.max_seq=16"
run() {  # run NAME NP [overrides...]
  name=$1 np=$2
  shift 2
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC "$np" $RLPT_MPI_FLAGS "$rlpt" run "$deck" $SHAPE sft.steps=0 run.steps=3 \
    algo.prompts_per_step=2 algo.group_size=2 rollout.max_new_tokens=2 eval.prompts=1 eval.every=0 \
    algo.kl_coef=0 log.metrics_path="$dir/$name.jsonl" checkpoint.every=0 checkpoint.dir="$dir/$name" \
    "$@" > "$name.log" 2>&1 || { echo "$name: rlpt run failed"; tail -5 "$name.log"; }
}
run t1r1 4
run t2r1 5 ranks.train=2 ranks.train_tp=2
run t1r2 5 ranks.rollout=2 ranks.rollout_tp=2
run t2r2 6 ranks.train=2 ranks.train_tp=2 ranks.rollout=2 ranks.rollout_tp=2
grep -h "^model:" t1r1.log | head -1
for name in t1r1 t2r1 t1r2 t2r2; do
  python3 - "$dir/$name.jsonl" "$name" > "$name.fig" <<'PY'
import json, sys
rl = [r for r in map(json.loads, open(sys.argv[1])) if r.get("phase") == "rl" and "eval_pass@1" not in r][1:]
mean = lambda k: sum(r[k] for r in rl) / len(rl) if rl else float("nan")
print(f"{sys.argv[2]} {mean('sync_mb') * 1e6:.0f} {mean('t_sync'):.4f} {mean('sync_gbps'):.3f}")
PY
  read -r n bytes t gbps < "$name.fig"
  recv=1
  case $name in *r2) recv=2 ;; esac
  # shellcheck disable=SC2086
  raw=$($RLPT_MPIEXEC $((recv + 1)) $RLPT_MPI_FLAGS "$bcast" "$bytes" 5 | grep "raw MPI_Bcast")
  tr=${n#t}
  echo "train TP ${tr%r*} -> rollout TP ${tr#*r} | rollout rank received $(python3 -c "print(f'{$bytes / 1e6:.1f}')") MB in $t s, $gbps GB/s | $raw"
done
