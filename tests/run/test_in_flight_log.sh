#!/bin/sh
# run/test_in_flight_log.sh: a short separate_async run with [async] in_flight = continue
# (each update at decode step 2 of the batch being generated) writing every trained sample
# to the samples log: some sample must record both versions in token_versions (its first
# two tokens one version, the rest the next), and its weight_version must be the oldest.
# [log] samples_groups = 0 writes every trained sample: 6 steps x 16 groups x 8, each of the
# batch its step trains.
# Usage: test_in_flight_log.sh RLPT DECK (launcher from $RLPT_MPIEXEC, as run/test_e2e.sh).
rlpt=$1 deck=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
$RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" run.mode=separate_async algo.old_logprobs=rollout \
  async.in_flight=continue async.in_flight_step=2 sft.steps=5 run.steps=6 eval.every=0 \
  log.samples_path=samples.jsonl log.samples_every=1 log.samples_groups=0 log.metrics_path=m.jsonl checkpoint.every=0 \
  > run.log 2>&1 || { tail -20 run.log; echo "IN_FLIGHT_RUN_FAILED"; exit 1; }
python3 - samples.jsonl <<'PY' || exit 1
import json, sys
split = bad = lines = 0
for line in open(sys.argv[1]):
    s = json.loads(line)
    lines += 1
    if s["batch"] != s["step"]:
        bad += 1
        print("step", s["step"], "trained a sample of batch", s["batch"])
    tv = s.get("token_versions")
    if tv is None: continue
    split += 1
    # the first two tokens of the older version, the rest of the next; weight_version the oldest
    if not (len(tv) > 2 and tv[0] == tv[1] == s["weight_version"] and all(v == tv[0] + 1 for v in tv[2:])):
        bad += 1
        print("bad token_versions", tv, "weight_version", s["weight_version"])
print("samples logged:", lines, "(want 768); spanning two versions:", split, "malformed:", bad)
sys.exit(0 if split > 0 and bad == 0 and lines == 6 * 16 * 8 else 1)
PY
echo "in-flight samples log: ok"
