#!/usr/bin/env bash
# README command 2: install what the build and tests need, configure (warnings are
# errors), build, fetch the SmolLM2 test model when the network allows (the tests
# labelled `model` skip without it), and run every CTest test except benchmarks.
# Ends with CTest's summary.
set -euo pipefail
source "$(dirname "$0")/env.sh"
# python3-h5py: the checkpoint test that reads our files with h5py; prometheus: promtool for
# the alert rules; python3-yaml, python3-pip: the monitoring checks; chromium: the rlpt report
# test renders the HTML headless; bubblewrap: the sandbox tests (also in the build's list);
# python3-torch: the PyTorch references in tests/ref (st_ref_check fails without it).
"$RLPT_ROOT/jobscripts/bootstrap-debian.sh" python3-h5py prometheus python3-yaml python3-pip chromium bubblewrap python3-torch
# TensorBoard's own event reader, a Prometheus text parser and safetensors for the reference
# tests, pip --target into the cache with --no-deps: their dependencies are listed by hand so
# that pip never shadows Debian's numpy, which h5py and torch are built against (a pip numpy
# made `import h5py` fail and its test skip). The tests skip only when these cannot be imported.
CACHE="${RLPT_CACHE:-$HOME/.cache/rlpt}"
PYTOOLS="$CACHE/pytools"
if /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
     --no-deps --target "$PYTOOLS" tensorboard tensorboard-data-server absl-py markdown werkzeug \
     markupsafe protobuf grpcio packaging prometheus_client safetensors >/dev/null 2>&1; then
  export PYTHONPATH="$PYTOOLS${PYTHONPATH:+:$PYTHONPATH}"
else
  echo "test: could not install tensorboard / prometheus_client / safetensors (no network?): their tests will skip"
fi
rlpt_configure_build -DRLPT_WERROR=ON
if gguf="$("$RLPT_ROOT/jobscripts/fetch-smollm2.sh" 2>/dev/null)"; then
  export RLPT_SMOLLM2_GGUF="$gguf"
  echo "test: SmolLM2 model at $gguf"
else
  echo "test: could not fetch SmolLM2 (no network?): tests labelled 'model' will skip"
fi
cd "$RLPT_BUILD"
ctest --output-on-failure -LE bench -j "$(nproc)" --timeout 900
