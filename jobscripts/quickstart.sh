#!/usr/bin/env bash
# README command 1: install what the build needs, build rlpt, and run the
# quickstart deck's plan on 4 MPI ranks (controller, reward, rollout, train).
# Works as root (env.sh sets Open MPI's run-as-root variables) and as a normal
# user (bootstrap uses sudo only when packages are missing).
# Usage: jobscripts/quickstart.sh        (RLPT_BUILD=DIR picks the build folder)
set -euo pipefail
source "$(dirname "$0")/env.sh"
"$RLPT_ROOT/jobscripts/bootstrap-debian.sh"
rlpt_configure_build
cd "$RLPT_ROOT"
echo "quickstart: the training loop (rlpt run) is not built yet; what runs here is"
echo "quickstart: 'rlpt plan', which splits 4 ranks into their roles and communicators"
echo "quickstart: and prints the rank map, memory per rank and FLOPs per step."
mpirun -np 4 --oversubscribe "$RLPT_BUILD/rlpt" plan inputs/quickstart.ini
