"""run/free_restart_check.py: the samples logs of a free-running separate_async run killed
after its checkpoint of step C and restarted from it (run/test_restart.sh free_kill), against
a straight run of the same deck ([log] samples_groups = 0: every trained sample logged).

  free_restart_check.py STRAIGHT.jsonl FIRST.jsonl RESTART.jsonl C N B

B is the batch the restart said generation resumes at: batches C+1..B-1 were in the
checkpoint's buffer (generated and scored before the checkpoint, trained after it).

The free-running schedule is not reproducible, so responses are not compared with the
straight run's. What must hold:
  - the steps trained are 1..N once each: FIRST's steps <= C, then RESTART's steps C+1..N;
  - each prompt batch is trained at most once, and with the straight run's prompts (batch b's
    prompts are drawn from the seed, whichever rank generates it and when);
  - at least one batch was restored (B > C + 1), and the restored batches that FIRST trained
    before the kill carry the same responses in RESTART: they were taken from the checkpoint,
    not regenerated under newer weights (batches from B on were generated after the
    checkpoint, so the restart regenerates them, under other weights). At least one sample
    is compared.
"""
import json
import sys
from collections import defaultdict


def load(path):
    return [json.loads(line) for line in open(path)]


def by_batch(samples):
    out = defaultdict(list)
    for s in samples:
        out[s["batch"]].append(s)
    return out


def prompts(samples):
    return sorted((s["prompt_id"], s["index"]) for s in samples)


def main():
    straight, first, again = (load(p) for p in sys.argv[1:4])
    c, n, resume = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    bad = [] if resume > c + 1 else [f"generation resumes at batch {resume}: nothing restored past step {c}"]
    kept = [s for s in first if s["step"] <= c] + again
    steps = sorted({s["step"] for s in kept})
    if steps != list(range(1, n + 1)):
        bad.append(f"steps trained {steps}, want 1..{n}")
    if any(s["step"] <= c for s in again):
        bad.append("the restart trained a step at or before the checkpoint's")
    want = by_batch(straight)
    for b, ss in sorted(by_batch(kept).items()):
        if len({s["step"] for s in ss}) != 1:
            bad.append(f"batch {b} trained at steps {sorted({s['step'] for s in ss})}")
        if prompts(ss) != prompts(want.get(b, [])):
            bad.append(f"batch {b}: prompts differ from the straight run's")
    # the restored groups: trained after the checkpoint by both the first run and the restart
    before_kill = {(s["batch"], s["prompt_id"], s["index"]): s["response"] for s in first
                   if s["step"] > c and s["batch"] < resume}
    compared = 0
    for s in again:
        key = (s["batch"], s["prompt_id"], s["index"])
        if key in before_kill:
            compared += 1
            if before_kill[key] != s["response"]:
                bad.append(f"batch {s['batch']} prompt {s['prompt_id']} sample {s['index']}: response "
                           f"{s['response']!r} after the restart, {before_kill[key]!r} before the kill")
    restored = sorted({k[0] for k in before_kill})
    print(f"steps 1..{n} trained once; batches restored from the checkpoint and trained before the kill: "
          f"{restored}; {compared} samples compared")
    if compared == 0:
        bad.append("no restored group was trained by the first run before the kill")
    for b in bad[:20]:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
