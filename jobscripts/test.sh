#!/usr/bin/env bash
# README command 2: install what the build and tests need, configure (warnings are
# errors), build, fetch the SmolLM2 test model when the network allows (the tests
# labelled `model` skip without it), and run every CTest test except benchmarks.
# Ends with CTest's summary.
set -euo pipefail
source "$(dirname "$0")/env.sh"
# python3-h5py: the checkpoint test that reads our files with h5py.
"$RLPT_ROOT/jobscripts/bootstrap-debian.sh" python3-h5py
rlpt_configure_build -DRLPT_WERROR=ON
if gguf="$("$RLPT_ROOT/jobscripts/fetch-smollm2.sh" 2>/dev/null)"; then
  export RLPT_SMOLLM2_GGUF="$gguf"
  echo "test: SmolLM2 model at $gguf"
else
  echo "test: could not fetch SmolLM2 (no network?): tests labelled 'model' will skip"
fi
cd "$RLPT_BUILD"
ctest --output-on-failure -LE bench -j "$(nproc)" --timeout 900
