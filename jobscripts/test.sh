#!/usr/bin/env bash
# README command 2: install what the build needs, configure (warnings are errors),
# build and run every CTest test except benchmarks. Ends with CTest's summary.
set -euo pipefail
source "$(dirname "$0")/env.sh"
"$RLPT_ROOT/jobscripts/bootstrap-debian.sh"
rlpt_configure_build -DRLPT_WERROR=ON
cd "$RLPT_BUILD"
ctest --output-on-failure -LE bench -j "$(nproc)" --timeout 900
