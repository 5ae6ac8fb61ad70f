#!/usr/bin/python3
"""algo_ref.py: golden values for tests/rl/test_algo_golden.c, written to golden_algo.h5.

A packed batch of 12 sequences in 3 groups of G = 4 (prompt tokens masked out, one
response with no valid tokens, one group with all-equal rewards). In float64 with
torch autograd, written the way veRL writes them (torch.maximum / clamp / where):
  grpo: GRPO advantages (unbiased std, eps 1e-6), PPO clip 0.2/0.28 with dual clip 3,
        k3 KL in the loss (coef 0.05), entropy bonus 0.01, token-mean;
        d loss / d lp and d loss / d entropy per token.
  gspo: sequence ratio in the token stop-gradient form, clip 3e-4/4e-4,
        seq-mean-token-mean; d loss / d lp.
  dpo / ipo: pairs (0,1), (2,3), ...; beta 0.1; d loss / d lp per token.
Inputs are rounded to fp32 first so that the C side sees exactly the same numbers.
Run by hand: /usr/bin/python3 tests/ref/algo_ref.py
"""
import os
import h5py
import numpy as np
import torch

D = torch.float64
G, NG = 4, 3
CL, CH, DUAL, KL_COEF, ENT_COEF, EPS = 0.2, 0.28, 3.0, 0.05, 0.01, 1e-6
GS_CL, GS_CH = 3e-4, 4e-4
BETA = 0.1


def f32(x):
    return x.float().double()


def make_batch(gen):
    n_seq = G * NG
    lens = torch.randint(3, 11, (n_seq,), generator=gen)
    prompt = torch.randint(1, 3, (n_seq,), generator=gen)
    off = [0]
    for L in lens.tolist():
        off.append(off[-1] + L)
    n_tok = off[-1]
    mask = torch.zeros(n_tok, dtype=D)
    for i in range(n_seq):
        mask[off[i] + prompt[i]:off[i + 1]] = 1.0
    mask[off[5]:off[6]] = 0.0                      # a response with no valid tokens
    mask[off[7] + prompt[7] + 1] = 0.0             # a hole inside a response
    group = torch.arange(n_seq) // G
    rewards = torch.cat([torch.full((G,), 0.7, dtype=D),          # all equal
                         torch.tensor([1.0, 0.0, 0.0, 1.0], dtype=D),
                         f32(torch.rand(G, generator=gen, dtype=D))])
    return off, mask, group, rewards


def seq_index(off, n_tok):
    idx = torch.zeros(n_tok, dtype=torch.long)
    for i in range(len(off) - 1):
        idx[off[i]:off[i + 1]] = i
    return idx


def grpo_adv(rewards, group):
    adv = torch.zeros_like(rewards)
    for g in range(NG):
        r = rewards[group == g]
        if r.max() == r.min():
            continue
        adv[group == g] = (r - r.mean()) / (r.std(unbiased=True) + EPS)
    return adv


def grpo_loss(lp, lp_old, lp_ref, ent, adv_tok, mask):
    ratio = torch.exp(torch.clamp(lp - lp_old, -20.0, 20.0))
    l1 = -adv_tok * ratio
    l2 = -adv_tok * torch.clamp(ratio, 1 - CL, 1 + CH)
    lc = torch.maximum(l1, l2)
    l3 = torch.min(-adv_tok * DUAL, lc)
    pg = torch.where(adv_tok < 0, l3, lc)
    x = lp - lp_ref
    k3 = torch.exp(-x) + x - 1.0
    per_tok = pg + KL_COEF * k3 - ENT_COEF * ent
    n_tok = max(mask.sum().item(), 1.0)
    low = ((adv_tok < 0) & (ratio < 1 - CL) & (mask > 0)).sum().item()
    high = ((adv_tok > 0) & (ratio > 1 + CH) & (mask > 0)).sum().item()
    return (per_tok * mask).sum() / n_tok, (pg * mask).sum() / n_tok, low, high


def gspo_loss(lp, lp_old, adv_tok, mask, idx, n_seq):
    L = torch.zeros(n_seq, dtype=D).index_add_(0, idx, mask)
    neg_kl = torch.zeros(n_seq, dtype=D).index_add_(0, idx, (lp - lp_old) * mask) / torch.clamp(L, min=1.0)
    log_s = lp - lp.detach() + neg_kl.detach()[idx]
    log_s = torch.clamp(log_s, max=10.0)
    s = torch.exp(log_s)
    l1 = -adv_tok * s
    l2 = -adv_tok * torch.clamp(s, 1 - GS_CL, 1 + GS_CH)
    pg = torch.maximum(l1, l2)
    seq = torch.zeros(n_seq, dtype=D).index_add_(0, idx, pg * mask) / torch.clamp(L, min=1.0)
    valid = (L > 0).to(D)
    return (seq * valid).sum() / max(valid.sum().item(), 1.0)


def dpo_losses(lp, lp_ref, mask, idx, n_seq):
    logp = torch.zeros(n_seq, dtype=D).index_add_(0, idx, lp * mask)
    ref = torch.zeros(n_seq, dtype=D).index_add_(0, idx, lp_ref * mask)
    L = torch.zeros(n_seq, dtype=D).index_add_(0, idx, mask)
    dw, dl = (logp - ref)[0::2], (logp - ref)[1::2]
    z = BETA * (dw - dl)
    dpo = -torch.nn.functional.logsigmoid(z).mean()
    h = dw / torch.clamp(L[0::2], min=1.0) - dl / torch.clamp(L[1::2], min=1.0)
    ipo = ((h - 1.0 / (2 * BETA)) ** 2).mean()
    return dpo, ipo, z


def main():
    gen = torch.Generator().manual_seed(7)
    off, mask, group, rewards = make_batch(gen)
    n_seq, n_tok = len(off) - 1, off[-1]
    idx = seq_index(off, n_tok)
    lp_old = f32(-torch.rand(n_tok, generator=gen, dtype=D) * 3.0)
    lp = f32(lp_old + 0.3 * torch.randn(n_tok, generator=gen, dtype=D))
    lp_ref = f32(lp_old + 0.2 * torch.randn(n_tok, generator=gen, dtype=D))
    ent = f32(torch.rand(n_tok, generator=gen, dtype=D) * 2.0)
    gspo_lp = f32(lp_old + 6e-4 * torch.randn(n_tok, generator=gen, dtype=D))

    adv = grpo_adv(rewards, group)
    adv_tok = f32(adv[idx])   # the C side broadcasts fp32 advantages

    lp_t = lp.clone().requires_grad_(True)
    ent_t = ent.clone().requires_grad_(True)
    loss, pg, low, high = grpo_loss(lp_t, lp_old, lp_ref, ent_t, adv_tok, mask)
    loss.backward()

    gs_t = gspo_lp.clone().requires_grad_(True)
    gloss = gspo_loss(gs_t, lp_old, adv_tok, mask, idx, n_seq)
    gloss.backward()

    d_t = lp.clone().requires_grad_(True)
    dpo, _, z = dpo_losses(d_t, lp_ref, mask, idx, n_seq)
    dpo.backward()
    i_t = lp.clone().requires_grad_(True)
    _, ipo, _ = dpo_losses(i_t, lp_ref, mask, idx, n_seq)
    ipo.backward()

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden_algo.h5")
    with h5py.File(path, "w") as f:
        for k, v in (("group_size", G), ("n_group", NG), ("clip_low", CL), ("clip_high", CH),
                     ("dual_clip", DUAL), ("kl_coef", KL_COEF), ("entropy_coef", ENT_COEF),
                     ("adv_eps", EPS), ("gspo_clip_low", GS_CL), ("gspo_clip_high", GS_CH),
                     ("beta", BETA)):
            f.attrs[k] = v
        f["off"] = np.array(off, dtype=np.int32)
        f["group"] = group.numpy().astype(np.int32)
        for k, v in (("mask", mask), ("rewards", rewards), ("lp", lp), ("lp_old", lp_old),
                     ("lp_ref", lp_ref), ("entropy", ent), ("gspo_lp", gspo_lp), ("adv", adv),
                     ("grpo_dlp", lp_t.grad), ("grpo_dent", ent_t.grad),
                     ("gspo_dlp", gs_t.grad), ("dpo_dlp", d_t.grad), ("ipo_dlp", i_t.grad)):
            f[k] = v.detach().numpy()
        for k, v in (("grpo_loss", loss.item()), ("grpo_pg_loss", pg.item()),
                     ("grpo_clip_low", low), ("grpo_clip_high", high), ("gspo_loss", gloss.item()),
                     ("dpo_loss", dpo.item()), ("ipo_loss", ipo.item()),
                     ("dpo_acc", float((z > 0).to(D).mean().item()))):
            f.attrs[k] = v
    print("wrote", path, "n_tok", n_tok, "clip low/high", low, high, "loss", loss.item(),
          "gspo", gloss.item(), "dpo", dpo.item(), "ipo", ipo.item())


if __name__ == "__main__":
    main()
