#!/usr/bin/python3
"""pref_ref.py: golden values for tests/train/test_pref_step.c, written to golden_pref.h5.

The preference losses through the whole transformer, in float64 with torch autograd, from
the published formulas (not from the C code):
  dpo (Rafailov et al. 2023, eq. 7):  -log sigmoid(beta ((logp_w - ref_w) - (logp_l - ref_l)))
  ipo (Azar et al. 2023, eq. 17, with the per-token averaged log-ratios as TRL's IPO):
        (h - 1/(2 beta))^2,  h = (logp_w - ref_w)/|y_w| - (logp_l - ref_l)/|y_l|
  bt  (Bradley-Terry reward model, Ouyang et al. 2022 eq. 1):  -log sigmoid(r_w - r_l),
        r = the value head at the sequence's last token
each the mean over 3 pairs. logp(y) = the sum of the response tokens' logprobs (the EOS
included): position t predicts token t + 1, a response token when t + 1 >= the prompt's
length. The model is tests/ref/model_ref.py's forward (CFG below); the reference model is the policy plus 0.05 N(0, 1) noise per
weight (rounded to fp32 like the policy).

Writes /model/<name> (policy), /ref/<name> (reference), /tokens, /cu_seqlens, /mask,
attribute beta and for each loss K in dpo, ipo, bt: /K/loss, /K/chosen, /K/rejected (mean rewards:
beta (logp - ref), or r for bt), /K/dtok (d loss / d logprob per token, for bt d loss /
d value) and /K/grad/<name>.

Run by hand: /usr/bin/python3 tests/ref/pref_ref.py
"""
import json
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_ref import forward_seq, param_shapes, random_params  # noqa: E402

torch.set_default_dtype(torch.float64)
BETA = 0.1
# small (the file holds five copies of the weights): GQA, q/k/v bias, untied lm_head, value head
CFG = dict(vocab_size=50, dim=16, layers=2, heads=4, kv_heads=2, ffn_dim=24, max_seq=64,
           rope_theta=10000.0, norm_eps=1e-5, init_std=0.02, tie_embeddings=False, qkv_bias=True,
           value_head=True)
# (prompt length, chosen response length, rejected response length), EOS included
PAIRS = [(4, 3, 5), (6, 2, 2), (3, 6, 4)]


def make_batch(gen):
    seqs, prompt_len = [], []
    for np_, nw, nl in PAIRS:
        prompt = torch.randint(0, CFG["vocab_size"], (np_,), generator=gen)
        for n in (nw, nl):
            seqs.append(torch.cat([prompt, torch.randint(0, CFG["vocab_size"], (n,), generator=gen)]))
            prompt_len.append(np_)
    cu = np.concatenate([[0], np.cumsum([len(s) for s in seqs])]).astype(np.int32)
    mask = torch.zeros(int(cu[-1]))
    for s, np_ in enumerate(prompt_len):
        for t in range(len(seqs[s]) - 1):
            if t + 1 >= np_:
                mask[cu[s] + t] = 1.0
    return seqs, cu, mask


def forward(seqs, p):
    lps, vals = [], []
    for s in seqs:
        lp, _, val = forward_seq(s, p, CFG)
        lps.append(lp)
        vals.append(val)
    return torch.cat(lps), vals


def losses(lp, lp_ref, vals, cu, mask):
    n = len(cu) - 1
    logp = torch.stack([(lp[cu[s]:cu[s + 1]] * mask[cu[s]:cu[s + 1]]).sum() for s in range(n)])
    ref = torch.stack([(lp_ref[cu[s]:cu[s + 1]] * mask[cu[s]:cu[s + 1]]).sum() for s in range(n)])
    ntok = torch.stack([mask[cu[s]:cu[s + 1]].sum() for s in range(n)])
    dw, dl = (logp - ref)[0::2], (logp - ref)[1::2]
    r = torch.stack([v[-1] for v in vals])
    out = {
        "dpo": (-torch.nn.functional.logsigmoid(BETA * (dw - dl)).mean(), BETA * dw, BETA * dl),
        "ipo": (((dw / ntok[0::2] - dl / ntok[1::2] - 1.0 / (2 * BETA)) ** 2).mean(), BETA * dw, BETA * dl),
        "bt": (-torch.nn.functional.logsigmoid(r[0::2] - r[1::2]).mean(), r[0::2], r[1::2]),
    }
    return out


def main():
    gen = torch.Generator().manual_seed(4321)
    p = random_params(CFG, gen)
    ref = {k: (v.detach() + 0.05 * torch.randn(v.shape, generator=gen)).float().double() for k, v in p.items()}
    seqs, cu, mask = make_batch(gen)
    with torch.no_grad():
        lp_ref, _ = forward(seqs, ref)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden_pref.h5")
    with h5py.File(path, "w") as f:
        meta = f.create_group("meta")
        meta.attrs["model_config"] = json.dumps(CFG)
        meta.attrs["format_version"] = np.int32(1)
        for name, _ in param_shapes(CFG):
            f[f"model/{name}"] = p[name].detach().numpy().astype(np.float32)
            f[f"ref/{name}"] = ref[name].numpy().astype(np.float32)
        f["tokens"] = torch.cat(seqs).numpy().astype(np.int32)
        f["cu_seqlens"] = cu
        f["mask"] = mask.numpy()
        f.attrs["beta"] = np.float64(BETA)
        for kind in ("dpo", "ipo", "bt"):
            for v in p.values():
                v.grad = None
            lp, vals = forward(seqs, p)
            lp.retain_grad()
            for v in vals:
                v.retain_grad()
            loss, chosen, rejected = losses(lp, lp_ref, vals, cu, mask)[kind]
            loss.backward()
            dtok = torch.cat([v.grad for v in vals]) if kind == "bt" else lp.grad
            f[f"{kind}/loss"] = np.float64(loss.item())
            f[f"{kind}/chosen"] = np.float64(chosen.mean().item())
            f[f"{kind}/rejected"] = np.float64(rejected.mean().item())
            f[f"{kind}/dtok"] = dtok.numpy()
            for name, _ in param_shapes(CFG):
                g = p[name].grad if p[name].grad is not None else torch.zeros(p[name].shape)  # not in the loss
                f[f"{kind}/grad/{name}"] = g.numpy().astype(np.float32)
            print(f"{kind}: loss {loss.item():.9f}")
    print(f"wrote {path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
