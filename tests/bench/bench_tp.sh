#!/bin/sh
# bench/bench_tp.sh: one SFT training step of the SmolLM2-135M shape (scratch init: dim 576,
# 30 layers, 9 heads / 3 kv heads, ffn_dim 1536, vocabulary 49152, tied embeddings) with
# tensor parallelism ([ranks] train_tp = TP on TP ranks of one thread) against one train rank
# of TP threads. SmolLM2's heads do not divide by 2: TP = 3 by default (BENCH_TP). Prints
# figures, asserts nothing (label bench).
#   bench/bench_tp.sh RLPT DECK        (DECK: tests/decks/tp_tiny.ini)
# Figures: each run's t_train of the step and its packed tokens T, the time ratio
# t(TP 1, TP threads) / t(TP ranks) (1 = TP as fast as threads), and per TP rank the payload
# its all-reduces carried (RLPT_TP_TRAFFIC=1: model/tp.h tp_traffic, counted where the code
# calls them) against Megatron's per-layer formula, forward 2 and backward 2 all-reduces of
# b s h values per micro-batch: 4 L T h fp32 values per step (the vocabulary-parallel
# embedding and lm_head add one each, 2 T h, and the logprob a few values per token); a ring
# all-reduce sends 2 (TP - 1) / TP of the payload from each rank.
set -u
rlpt=$1 deck=$2
tp=${BENCH_TP:-3}
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_bench_tp
SHAPE="model.dim=576 model.layers=30 model.heads=9 model.kv_heads=3 model.ffn_dim=1536
  model.vocab_size=49152 model.tie_embeddings=true model.max_seq=64 ranks.cores_per_node=${BENCH_TP_CORES:-$((4 * tp))}"
run() {  # run NAME NP [overrides...]
  name=$1 np=$2
  shift 2
  # shellcheck disable=SC2086
  RLPT_TP_TRAFFIC=1 $RLPT_MPIEXEC "$np" $RLPT_MPI_FLAGS "$rlpt" run "$deck" \
    $SHAPE sft.steps=1 sft.batch_size=64 sft.eval_prompts=1 run.steps=0 eval.prompts=1 \
    log.metrics_path="$dir/$name.jsonl" checkpoint.dir="$dir/$name" "$@" > "$name.log" 2>&1 ||
    { echo "$name: rlpt run failed"; tail -5 "$name.log"; }
}
run one 4 ranks.threads_per_rank="$tp"
run tp $((3 + tp)) ranks.train="$tp" ranks.train_tp="$tp"
grep -h "^model:" one.log | head -1
python3 - "$tp" one.jsonl tp.jsonl tp.log <<'PY'
import json, re, sys
tp = int(sys.argv[1])
L, h = 30, 576
def step(path):
    try:
        lines = open(path).readlines()
    except OSError:
        return None
    for line in lines:
        d = json.loads(line)
        if d.get("phase") == "sft" and d.get("step") == 1:
            return d
    return None
a, b = step(sys.argv[2]), step(sys.argv[3])
if not a or not b:
    print("bench_tp: a run has no SFT step line"); sys.exit(0)
T = round(a["train_tok_per_s"] * a["t_train"])
print(f"one SFT step, T = {T} packed tokens (64 sequences)")
print(f"  TP 1, 1 rank x {tp} threads : t_train {a['t_train']:.3f} s")
print(f"  TP {tp}, {tp} ranks x 1 thread: t_train {b['t_train']:.3f} s")
print(f"  time ratio t(TP 1) / t(TP {tp}) = {a['t_train'] / b['t_train']:.3f}")
mega = 4 * L * T * h * 4
extra = 2 * T * h * 4
ring = 2 * (tp - 1) / tp
print(f"per TP rank per step (fp32): Megatron 4 L T h = {mega:.4g} bytes payload "
      f"(+ embedding/lm_head 2 T h = {extra:.4g}); ring sends x{ring:.3f}")
pat = re.compile(r"tp traffic: dp (\d+) tp (\d+) of (\d+): model (\d+) bytes in (\d+) all-reduces, "
                 r"weight gathers (\d+) bytes in (\d+)")
for line in open(sys.argv[4]):
    m = pat.search(line)
    if not m:
        continue
    r, got, calls, gb = int(m.group(2)), float(m.group(4)), int(m.group(5)), float(m.group(6))
    print(f"  tp rank {r}: model all-reduces {got:.4g} bytes payload in {calls} calls = "
          f"{got / mega:.4f} x Megatron ({got / (mega + extra):.4f} x with embedding/lm_head); "
          f"ring-sent ~{got * ring:.4g} bytes; weight gathers {gb:.4g} bytes (sync, not per step)")
PY
