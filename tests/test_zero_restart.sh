#!/bin/sh
# test_zero_restart.sh: a checkpoint written with [optim] zero = A resumed with zero = B
# (tests/cmake/zero.cmake). The checkpoint holds the full AdamW m and v whatever the layout
# (src/role_ckpt.c gathers the ZeRO-1 shards, src/restart.c takes this rank's slice).
#   test_zero_restart.sh A B RLPT CMP DECK [section.key=value ...]
# $RLPT_MPIEXEC ("mpiexec -n" + NP is appended) and $RLPT_MPI_FLAGS come from CTest.
# 2 ranks colocated, train_dp = 2: the straight run with zero = A; a run with zero = A
# stopped after RL step 3; its restart with zero = B. Steps up to 3 must equal the straight
# run's bit for bit; the rest every field within rtol 1e-4 + atol 1e-6 (test_restart.sh's
# layout tolerance: the two modes differ only in the order of the fp64 sum of squares of
# the gradient norm).
set -u
za=$1 zb=$2 rlpt=$3 cmp=$4 deck=$5
shift 5
dir=$(mktemp -d "${TMPDIR:-/tmp}/rlpt_zero.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
fail() { echo "RESTART_TEST_FAILED: $*"; for f in *.log; do echo "== $f"; tail -15 "$f"; done; exit 1; }
# run LOG [args...]: rlpt run of the deck on 2 colocated ranks, output to LOG; returns its status
run() {
  log=$1
  shift
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 2 $RLPT_MPI_FLAGS "$rlpt" run "$deck" ranks.layout=colocated ranks.controller=auto \
    ranks.reward=auto ranks.rollout=auto ranks.train=auto ranks.train_dp=2 "$@" > "$log" 2>&1
}
run full.log log.metrics_path=full.jsonl checkpoint.dir=ckA optim.zero="$za" "$@" ||
  fail "straight run (zero = $za) exited $?"
run half1.log log.metrics_path=part.jsonl checkpoint.dir=ckB run.stop_after=3 optim.zero="$za" "$@" ||
  fail "first half (zero = $za) exited $?"
grep -q "stop_after after RL step 3: checkpoint ckB/step_00000003.h5 written" half1.log || fail "no stop message"
run half2.log log.metrics_path=part.jsonl checkpoint.dir=ckB --restart latest optim.zero="$zb" "$@" ||
  fail "restart with zero = $zb exited $?"
grep "^restart:" half2.log
grep -q "continuing with RL step 4 of" half2.log || fail "restart did not say what it restored"
"$cmp" full.jsonl part.jsonl 1e-4 1e-6 4
