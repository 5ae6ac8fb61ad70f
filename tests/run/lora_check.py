#!/usr/bin/python3
"""lora_check.py: what a LoRA run (tests/run/test_lora.sh) must show.

  lora_check.py INIT.h5 CKPT.h5 METRICS.jsonl SFT_STEPS
  lora_check.py merged CKPT.h5 MERGED.h5 ALPHA   (`rlpt convert` of CKPT.h5: no adapters
      left, each adapted W equal to W + ALPHA / r B A of the checkpoint within 1e-6 x max |W|,
      every other tensor bit-equal)
  (SFT_STEPS 0: a GRPO-only run from a trained base, INIT.h5 its checkpoint; the RL steps
  must then see rewards and non-zero gradients, in a quarter of them at least, so the
  adapters the rollout uses moved in RL)

- the frozen base: every tensor of the checkpoint that is not an adapter equals the
  freshly initialised model's (rlpt init, same deck and seed) bit for bit, and its AdamW
  moments are zero; every adapter's lora_B moved off zero;
- SFT with LoRA learns: the mean SFT loss of the last 5 steps is below 0.9 x the first
  step's;
- the rollout generates with the adapted model: every RL step's logprob_diff_max (rollout
  logprobs against the trainer's recomputation) is at most 1e-5.
"""
import json
import sys

import h5py
import numpy as np


def check_merged(ckpt, merged, alpha):
    bad = []
    with h5py.File(ckpt, "r") as c, h5py.File(merged, "r") as m:
        names = list(m["model"].keys())
        if any(".lora_" in n for n in names):
            bad.append("the merged model still holds adapters")
        worst = 0.0
        for n in names:
            w = c["model"][n][()].astype(np.float64)
            proj = n[: -len(".weight")]
            a_name = f"base_model.model.{proj}.lora_A.weight"
            if a_name in c["model"]:
                a = c["model"][a_name][()].astype(np.float64)
                b = c["model"][f"base_model.model.{proj}.lora_B.weight"][()].astype(np.float64)
                w = w + alpha / a.shape[0] * (b @ a)
                err = np.abs(m["model"][n][()] - w).max() / np.abs(w).max()
                worst = max(worst, err)
                if err > 1e-6:
                    bad.append(f"{n}: merged differs by {err:.3g} x max |W|")
            elif not np.array_equal(m["model"][n][()], c["model"][n][()]):
                bad.append(f"{n} changed in the merge")
    print(f"lora check: merged model, {len(names)} tensors, worst |W - (W0 + s B A)| {worst:.3g}")
    for b_ in bad:
        print("LORA_CHECK_FAILED:", b_)
    if not bad:
        print("lora check: ok")
    return 1 if bad else 0


def main():
    if sys.argv[1] == "merged":
        return check_merged(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    init, ckpt, metrics, sft = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    bad = []
    with h5py.File(init, "r") as a, h5py.File(ckpt, "r") as b:
        names = list(b["model"].keys())
        adapters = [n for n in names if ".lora_" in n]
        if not adapters:
            bad.append("the checkpoint holds no adapters")
        for n in names:
            w = b["model"][n][()]
            mom = np.abs(b["optim/m"][n][()]).max()
            if ".lora_" in n:
                if ".lora_B" in n and np.abs(w).max() == 0:
                    bad.append(f"adapter {n} did not train (B still zero)")
            elif not np.array_equal(w, a["model"][n][()]) or mom != 0:
                w0 = a["model"][n][()]
                bad.append(f"base tensor {n} changed (max diff {np.abs(w - w0).max()}, |m| {mom})")
    print(f"lora check: {len(names) - len(adapters)} base tensors, {len(adapters)} adapters")
    rows = [json.loads(line) for line in open(metrics)]
    loss = [r["pg_loss"] for r in rows if r.get("phase") == "sft" and r["step"] >= 1]
    rl = [r for r in rows if r.get("phase") == "rl" and r.get("reward_mean") is not None]
    if sft == 0:
        rewarded = sum(1 for r in rl if r["reward_mean"] > 0 and r["grad_norm"] > 0)
        print(f"lora check: {rewarded} of {len(rl)} RL steps with reward and gradient")
        if rewarded < max(1, len(rl) // 4):
            bad.append(f"only {rewarded} of {len(rl)} RL steps had rewards and gradients")
    elif len(loss) != sft:
        bad.append(f"{len(loss)} SFT steps logged, {sft} expected")
    else:
        last = sum(loss[-5:]) / 5
        print(f"lora check: SFT loss {loss[0]:.4f} at step 1, {last:.4f} over the last 5")
        if last > 0.9 * loss[0]:
            bad.append(f"SFT loss did not fall: {loss[0]:.4f} -> {last:.4f}")
    diffs = [r["logprob_diff_max"] for r in rows if r.get("phase") == "rl"
             and r.get("logprob_diff_max") is not None]
    if not diffs:
        bad.append("no RL step logged logprob_diff_max")
    else:
        print(f"lora check: {len(diffs)} RL steps, logprob_diff_max at most {max(diffs):.3g}")
        if max(diffs) > 1e-5:
            bad.append(f"logprob_diff_max {max(diffs):.3g} > 1e-5")
    for b_ in bad:
        print("LORA_CHECK_FAILED:", b_)
    if not bad:
        print("lora check: ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
