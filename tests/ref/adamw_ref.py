#!/usr/bin/python3
"""adamw_ref.py: golden values for tests/train/test_optim.c, written to golden_adamw.h5.

torch.optim.AdamW (fp32, weight decay on) runs 3 steps on a 37-element parameter
with fixed gradients; torch.nn.utils.clip_grad_norm_ clips one gradient above and
one below the threshold. Run by hand: /usr/bin/python3 tests/ref/adamw_ref.py
"""
import os
import h5py
import numpy as np
import torch

N, STEPS = 37, 3
LR, B1, B2, EPS, WD = 1e-2, 0.9, 0.999, 1e-8, 0.1
CLIP = 1.0

def main():
    torch.manual_seed(0)
    p = torch.randn(N, dtype=torch.float32)
    grads = torch.randn(STEPS, N, dtype=torch.float32) * 0.5
    param = torch.nn.Parameter(p.clone())
    opt = torch.optim.AdamW([param], lr=LR, betas=(B1, B2), eps=EPS, weight_decay=WD)
    after = []
    for s in range(STEPS):
        param.grad = grads[s].clone()
        opt.step()
        after.append(param.detach().clone())
    st = opt.state[param]

    # Clipping: one gradient with norm > CLIP (scaled) and one below (unchanged).
    g_big = torch.randn(N, dtype=torch.float32) * 2.0
    g_small = g_big * (0.5 / g_big.norm())
    out = {}
    for name, g in (("big", g_big), ("small", g_small)):
        q = torch.nn.Parameter(torch.zeros(N))
        q.grad = g.clone()
        norm = torch.nn.utils.clip_grad_norm_([q], CLIP)
        out[name] = (g.numpy(), q.grad.numpy(), float(norm))

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden_adamw.h5")
    with h5py.File(path, "w") as f:
        for k, v in (("lr", LR), ("beta1", B1), ("beta2", B2), ("eps", EPS), ("weight_decay", WD),
                     ("clip", CLIP)):
            f.attrs[k] = v
        f["p0"] = p.numpy()
        f["grads"] = grads.numpy()
        f["p_after"] = torch.stack(after).numpy()
        f["m"] = st["exp_avg"].numpy()
        f["v"] = st["exp_avg_sq"].numpy()
        for name, (g, gc, norm) in out.items():
            f[f"clip_{name}_in"] = g
            f[f"clip_{name}_out"] = gc
            f[f"clip_{name}_in"].attrs["norm"] = norm
    print("wrote", path)

if __name__ == "__main__":
    main()
