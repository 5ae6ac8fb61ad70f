#!/usr/bin/env bash
# README command 1: install what the build needs, build rlpt, and run the
# quickstart job on 4 MPI ranks (controller, reward, rollout, train): an SFT warm
# start, the post-SFT eval, GRPO steps with evals, and the summary line
# (post-SFT vs post-RL greedy pass@1). The run writes metrics.jsonl and
# checkpoints/ in $RLPT_BUILD/quickstart.
# Works as root (env.sh sets Open MPI's run-as-root variables) and as a normal
# user (bootstrap uses sudo only when packages are missing).
# Usage: jobscripts/quickstart.sh        (RLPT_BUILD=DIR picks the build folder)
set -euo pipefail
source "$(dirname "$0")/env.sh"
"$RLPT_ROOT/jobscripts/bootstrap-debian.sh"
rlpt_configure_build
run_dir="$RLPT_BUILD/quickstart"
mkdir -p "$run_dir"
cd "$run_dir"
echo "quickstart: mpirun -np 4 rlpt run inputs/quickstart.ini (in $run_dir)"
mpirun -np 4 --oversubscribe "$RLPT_BUILD/rlpt" run "$RLPT_ROOT/inputs/quickstart.ini"
