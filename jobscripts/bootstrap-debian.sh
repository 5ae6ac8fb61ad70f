#!/usr/bin/env bash
# Installs the Debian packages rlpt's build and tests need; does nothing when
# they are all present. Prints what it installs. Usage: jobscripts/bootstrap-debian.sh
set -euo pipefail
PKGS=(build-essential cmake pkg-config
      openmpi-bin libopenmpi-dev          # MPI (Open MPI, UCX transport)
      libhdf5-openmpi-dev hdf5-tools      # parallel HDF5 (MPI-IO) for checkpoints
      libopenblas-dev                     # CPU GEMM
      libinih-dev libcjson-dev libpcre2-dev   # decks, JSON, BPE pre-tokenizer regex
      protobuf-c-compiler libprotobuf-c-dev   # TensorBoard event files
      bubblewrap)                         # the sandbox of model-written code (src/sandbox/)
PKGS+=("$@")

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "bootstrap: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "bootstrap: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
