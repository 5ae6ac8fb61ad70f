#!/bin/sh
# run/test_async_first_step.sh: separate_async's first RL step against sync's, on the same
# deck: both train batch 1 at weight version 0 (separate_async's begin generates it with the
# weights sync's step 1 uses), so the two JSONL files must agree on every field to the bit
# but the wall times and the fields only separate_async has (buffer_groups, idle_*,
# version_mixed_frac, stale_kept). That
# checks the train rank's reward statistics of a batch (run/async_stats.c) against the reward
# rank's (run/sync_step.c), and the async path's lag-0 update against the sync one.
#   run/test_async_first_step.sh RLPT DECK [section.key=value ...]
set -u
rlpt=$1 deck=$2
shift 2
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_async1
for mode in sync separate_async; do
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" run.mode=$mode run.steps=1 \
    log.metrics_path="$dir/$mode.jsonl" "$@" > $mode.log 2>&1 || { echo "ASYNC1_FAILED: $mode run"; tail -5 $mode.log; exit 1; }
done
/usr/bin/python3 - "$dir/sync.jsonl" "$dir/separate_async.jsonl" <<'PY'
import json, sys
def skip(k):
    return (k.startswith("t_") or k.startswith("idle_") or k.endswith("_per_s")
            or k.startswith("rss_") or k in ("time_s", "sync_gbps", "mfu", "buffer_groups", "version_mixed_frac", "stale_kept"))
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
bad = 0 if len(a) == len(b) else 1
for i, (x, y) in enumerate(zip(a, b)):
    for k in x:
        if not skip(k) and x[k] != y.get(k, "(missing)"):
            print("line %d (%s step %s): %s: %r vs %r" % (i + 1, x.get("phase"), x.get("step"), k, x[k], y.get(k)))
            bad += 1
rl = [y for y in b if y.get("phase") == "rl" and "eval_pass@1" not in y]
if len(rl) != 1 or rl[0].get("buffer_groups") != 0:
    print("separate_async: want one RL line with an empty buffer after the last step")
    bad += 1
print("%d lines compared, %d differences" % (len(a), bad))
print("ASYNC1_FAILED" if bad else "ASYNC1_OK")
PY
