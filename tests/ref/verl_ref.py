#!/usr/bin/python3
"""verl_ref.py: golden values for tests/rl/test_verl_names.c, written to golden_verl.h5.

veRL's own formulas (verl/trainer/ppo/core_algos.py at commit b178a3cd, Jan 2026),
transcribed on padded (bs, response_length) matrices as veRL holds them:
  kl_penalty_forward "low_var_kl" (also veRL's "k3"):
      kl = clamp(ref - logprob, -20, 20); kld = exp(kl) - kl - 1; clamp(kld, -10, 10)
  agg_loss "seq-mean-token-sum-norm" (loss_scale_factor None):
      seq_losses = sum(loss_mat * loss_mask, -1); loss = sum(seq_losses) / loss_mask.shape[-1]
  compute_policy_loss_vanilla: clipped ratio with dual clip (clip_ratio_c), as algo_ref.py.
The batch: 8 sequences padded to W = 16 = rlpt's [rollout] max_new_tokens; a few tokens
with lp_ref far from lp so that both clamps of low_var_kl are hit. Everything in float64
with torch autograd; inputs rounded to fp32 first, as the C side sees them.
Also: the estimator alone on a grid of x = lp - lp_ref (value and d/d lp).
Run by hand: /usr/bin/python3 tests/ref/verl_ref.py
"""
import os
import h5py
import numpy as np
import torch

D = torch.float64
N_SEQ, W = 8, 16
CL, CH, DUAL, KL_COEF, ENT_COEF = 0.2, 0.28, 3.0, 0.05, 0.01
GRID = [-30.0, -20.5, -20.0, -5.0, -3.0, -2.62, -2.6, -1.0, -1e-3, 0.0, 0.4, 3.0,
        10.9, 11.0, 11.1, 19.9, 25.0]


def f32(x):
    return x.float().double()


def low_var_kl(logprob, ref_logprob):          # veRL kl_penalty_forward, "low_var_kl"
    kl = ref_logprob - logprob
    kl = torch.clamp(kl, min=-20, max=20)
    ratio = torch.exp(kl)
    kld = (ratio - kl - 1).contiguous()
    return torch.clamp(kld, min=-10, max=10)


def agg_sum_norm(loss_mat, loss_mask):         # veRL agg_loss, "seq-mean-token-sum-norm"
    seq_losses = torch.sum(loss_mat * loss_mask, dim=-1)
    return torch.sum(seq_losses) / loss_mask.shape[-1]


def pg_vanilla(lp, lp_old, adv):               # veRL compute_policy_loss_vanilla, per token
    ratio = torch.exp(torch.clamp(lp - lp_old, -20.0, 20.0))
    l1 = -adv * ratio
    l2 = -adv * torch.clamp(ratio, 1 - CL, 1 + CH)
    lc = torch.maximum(l1, l2)
    l3 = torch.min(-adv * DUAL, lc)
    return torch.where(adv < 0, l3, lc)


def make_batch(gen):
    lens = torch.randint(4, W + 1, (N_SEQ,), generator=gen)
    mask = torch.zeros(N_SEQ, W, dtype=D)
    for i, L in enumerate(lens.tolist()):
        mask[i, :L] = 1.0
    mask[3, :] = 0.0                           # a response with no valid tokens
    mask[5, 2] = 0.0                           # a hole inside a response
    lp_old = f32(-torch.rand(N_SEQ, W, generator=gen, dtype=D) * 3.0)
    lp = f32(lp_old + 0.3 * torch.randn(N_SEQ, W, generator=gen, dtype=D))
    lp_ref = f32(lp + 0.2 * torch.randn(N_SEQ, W, generator=gen, dtype=D))
    lp_ref[0, 1] = f32(lp[0, 1] + torch.tensor(4.0, dtype=D))    # k3 = e^4 - 5 > 10: clamped
    lp_ref[1, 2] = f32(lp[1, 2] + torch.tensor(25.0, dtype=D))   # ref - lp > 20: both clamps
    lp_ref[2, 0] = f32(lp[2, 0] - torch.tensor(12.0, dtype=D))   # k3 = e^-12 + 11 > 10
    adv = f32(torch.randn(N_SEQ, 1, generator=gen, dtype=D).expand(N_SEQ, W).contiguous())
    ent = f32(torch.rand(N_SEQ, W, generator=gen, dtype=D) * 2.0)
    return mask, lp_old, lp, lp_ref, adv, ent


def main():
    gen = torch.Generator().manual_seed(19)
    mask, lp_old, lp, lp_ref, adv, ent = make_batch(gen)
    lp_t = lp.clone().requires_grad_(True)
    ent_t = ent.clone().requires_grad_(True)
    pg = agg_sum_norm(pg_vanilla(lp_t, lp_old, adv), mask)
    kl = agg_sum_norm(low_var_kl(lp_t, lp_ref), mask)
    loss = pg + KL_COEF * kl - ENT_COEF * agg_sum_norm(ent_t, mask)   # dp_actor.py's sum
    loss.backward()

    x = torch.tensor(GRID, dtype=D, requires_grad=True)   # x = lp - lp_ref, ref = 0
    k = low_var_kl(x, torch.zeros_like(x))
    k.sum().backward()

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden_verl.h5")
    with h5py.File(path, "w") as f:
        for name, v in (("width", W), ("clip_low", CL), ("clip_high", CH), ("dual_clip", DUAL),
                        ("kl_coef", KL_COEF), ("entropy_coef", ENT_COEF), ("loss", loss.item()),
                        ("pg_loss", pg.item()), ("kl_loss", kl.item())):
            f.attrs[name] = v
        for name, v in (("mask", mask), ("lp_old", lp_old), ("lp", lp), ("lp_ref", lp_ref),
                        ("adv", adv), ("entropy", ent), ("dlp", lp_t.grad), ("dent", ent_t.grad),
                        ("grid_x", x), ("grid_kl", k), ("grid_dkl", x.grad)):
            f[name] = v.detach().numpy()
    print("wrote", path, "loss", loss.item(), "pg", pg.item(), "kl", kl.item(),
          "valid tokens", int(mask.sum().item()))


if __name__ == "__main__":
    main()
