#!/usr/bin/env bash
# humaneval-canonical.sh [WORKERS]: all 164 HumanEval canonical solutions through the code
# task's sandbox (`rlpt reward-score`, tests/decks/code_score.ini): every one must score 1.0.
# Prints reward-score's summary (mean reward, sandbox executions per second). Needs a built
# rlpt ($RLPT_BUILD, default build/) and the network once (jobscripts/fetch-humaneval.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RLPT="${RLPT_BUILD:-$ROOT/build}/rlpt"
HE="$("$ROOT/jobscripts/fetch-humaneval.sh")"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
/usr/bin/python3 - "$HE" "$TMP/in.jsonl" <<'PYEOF'
import json, sys
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as out:
    for line in f:
        r = json.loads(line)
        out.write(json.dumps(dict(r, response=r["canonical_solution"])) + "\n")
PYEOF
"$RLPT" reward-score "$ROOT/tests/decks/code_score.ini" --input "$TMP/in.jsonl" --output "$TMP/out.jsonl" \
  data.train_path="$HE" sandbox.workers="${1:-2}"
bad=$(grep -vc '"reward":1,' "$TMP/out.jsonl" || true)
echo "humaneval-canonical: $(wc -l < "$TMP/out.jsonl") problems, $bad not scored 1.0"
[ "$bad" = 0 ]
