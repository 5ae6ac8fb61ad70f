#!/bin/sh
# tasks/code_reward_score.sh RLPT DECK FETCH: the code task through `rlpt reward-score` on
# the first ROWS HumanEval problems (fetched by jobscripts/fetch-humaneval.sh; exit 77 when
# it cannot be). Each problem is scored with five responses: its canonical solution (the
# body, 1.0), the solution as a fenced whole program (1.0), an empty response, a wrong
# body (return None) and an exit(0) before the tests (0 each).
set -u
rlpt="$1"; deck="$2"; fetch="$3"; rows="${ROWS:-8}"
he="$("$fetch" 2>/dev/null)" || { echo "code_reward_score: cannot fetch HumanEval: skipped"; exit 77; }
head -n "$rows" "$he" | /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    for resp in [r["canonical_solution"], "```python\n" + r["prompt"] + r["canonical_solution"] + "```\n", "",
                 "    return None\n", "import os\nos._exit(0)\n"]:
        print(json.dumps(dict(r, response=resp)))
' > code_in.jsonl || exit 1
rm -f code_out.jsonl
"$rlpt" reward-score "$deck" --input code_in.jsonl --output code_out.jsonl data.train_path="$he" || exit 1
/usr/bin/python3 - "$rows" <<'PYEOF' || exit 1
import json, sys
rows = int(sys.argv[1])
out = [json.loads(l) for l in open("code_out.jsonl")]
assert len(out) == 5 * rows, len(out)
want = [1.0, 1.0, 0.0, 0.0, 0.0]
bad = [(o["line"], o["reward"], want[i % 5]) for i, o in enumerate(out) if o["reward"] != want[i % 5]]
assert not bad, "line, reward, wanted: %s" % bad
assert all(o["tests"] == 1 for o in out)
print("code_reward_score: %d HumanEval problems: canonical and fenced 1.0, empty/wrong/exit(0) 0" % rows)
PYEOF
for t in code_out.jsonl.tmp*; do test ! -e "$t" || { echo "$t left behind"; exit 1; }; done
