# Sourced by the job scripts: Open MPI settings for a workstation or CI box.
#  - Open MPI refuses to run as root unless both variables below are set.
#  - yield_when_idle: a rank waiting in MPI yields its core instead of spinning
#    (4 ranks on 2 cores otherwise run at half speed).
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_rmaps_base_oversubscribe=1
RLPT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RLPT_BUILD="${RLPT_BUILD:-$RLPT_ROOT/build}"
rlpt_configure_build() {  # usage: rlpt_configure_build [extra cmake args]
  cmake -S "$RLPT_ROOT" -B "$RLPT_BUILD" -DCMAKE_BUILD_TYPE=Release "$@"
  cmake --build "$RLPT_BUILD" -j "$(nproc)"
}
