#!/bin/bash
# mpirun_local.sh: `rlpt run` on one machine with Open MPI's mpirun (no scheduler).
#   jobscripts/mpirun_local.sh NP DECK [--restart latest|PATH] [section.key=value ...]
# The environment is jobscripts/env.sh's: run-as-root allowed when root
# (OMPI_ALLOW_RUN_AS_ROOT[_CONFIRM]), oversubscription allowed and waiting ranks
# yielding (OMPI_MCA_rmaps_base_oversubscribe, OMPI_MCA_mpi_yield_when_idle), since a
# workstation often has fewer cores than ranks. rlpt is $RLPT, else $RLPT_BUILD/rlpt
# (default build/). mpirun is exec'd, so `kill -USR1` of this script's pid reaches
# mpirun, which forwards it to every rank: checkpoint at the next step boundary, every
# rank and mpirun exit 0. Resume with --restart latest. (Open MPI 4.1's mpirun forwards
# SIGTERM too and the ranks checkpoint the same way, but mpirun itself then exits 1.)
set -euo pipefail
# shellcheck source=jobscripts/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
if [ $# -lt 2 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
  echo "mpirun_local.sh: usage: mpirun_local.sh NP DECK [--restart latest|PATH] [section.key=value ...]" >&2
  exit 2
fi
command -v mpirun > /dev/null || { echo "mpirun_local.sh: mpirun not found (install Open MPI)" >&2; exit 2; }
RLPT="${RLPT:-$RLPT_BUILD/rlpt}"
[ -x "$RLPT" ] || { echo "mpirun_local.sh: $RLPT is not built (set RLPT or RLPT_BUILD)" >&2; exit 2; }
np=$1
shift
exec mpirun -np "$np" "$RLPT" run "$@"
