#!/usr/bin/python3
"""lora_ref.py: PyTorch (float64) reference of the transformer with LoRA adapters.

The model of model_ref.py (Hugging Face Llama / Qwen2 definitions) with PEFT's LoRA on
every projection named in lora_targets, written from PEFT's formula (peft/tuners/lora/
layer.py Linear.forward), not from the C code:
    y = base_layer(x) + lora_B(lora_A(dropout(x))) * scaling,  scaling = lora_alpha / r
with dropout 0, A [r, in], B [out, r]. B is random here (PEFT starts it at zero, which would
make every gradient of A zero and the test blind).

Writes tests/ref/golden_lora.h5 in model_ref.py's layout: the model config JSON carries
lora_rank, lora_alpha and lora_targets (the bit mask of model/lora.h: q k v o gate up
down = bits 0..6); /model and /grad hold the adapters under PEFT's names,
base_model.model.<projection>.lora_A.weight / lora_B.weight, and every base tensor.

It also holds /layer: one adapter alone (x, W, A, B, dy in float32; y and the gradients
dx, dW, dA, dB in float64) for L = sum(dy * y).

Run: /usr/bin/python3 tests/ref/lora_ref.py   (from the repository root)
"""
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_ref  # noqa: E402

TARGETS = ["q", "k", "v", "o", "gate", "up", "down"]
CFG = dict(vocab_size=50, dim=32, layers=2, heads=4, kv_heads=2, ffn_dim=48, max_seq=64,
           rope_theta=10000.0, norm_eps=1e-5, init_std=0.02, tie_embeddings=False,
           qkv_bias=True, value_head=False, lora_rank=4, lora_alpha=8.0, lora_targets=127)


def adapter_name(proj, ab):
    return f"base_model.model.{proj}.lora_{ab}.weight"


BASE_SHAPES = model_ref.param_shapes
BASE_LINEAR = model_ref.linear


def lora_shapes(cfg):
    """The adapters in the rlpt table order: per layer, per target, A then B."""
    base = dict(BASE_SHAPES(cfg))
    out = []
    for l in range(cfg["layers"]):
        for i, t in enumerate(TARGETS):
            if not cfg["lora_targets"] >> i & 1:
                continue
            mod = "self_attn" if i <= 3 else "mlp"
            proj = f"model.layers.{l}.{mod}.{t}_proj"
            rows, cols = base[proj + ".weight"]
            out.append((adapter_name(proj, "A"), (cfg["lora_rank"], cols)))
            out.append((adapter_name(proj, "B"), (rows, cfg["lora_rank"])))
    return out


def lora_linear(x, p, name):
    y = BASE_LINEAR(x, p, name)
    a = adapter_name(name, "A")
    if a in p:
        scaling = CFG["lora_alpha"] / CFG["lora_rank"]
        y = y + (x @ p[a].T) @ p[adapter_name(name, "B")].T * scaling
    return y


def adapter_layer(path, gen):
    """One adapter alone (group /layer of the file): y = x W^T + scaling (x A^T) B^T and
    the gradients of L = sum(dy * y) with respect to x, A and B."""
    T, n_in, n_out, r, alpha = 9, 24, 20, 5, 12.0
    t = {k: torch.randn(shape, generator=gen).float().double().requires_grad_(True)
         for k, shape in (("x", (T, n_in)), ("W", (n_out, n_in)), ("A", (r, n_in)),
                          ("B", (n_out, r)))}
    dy = torch.randn(T, n_out, generator=gen).float().double()
    y = t["x"] @ t["W"].T + (t["x"] @ t["A"].T) @ t["B"].T * (alpha / r)
    (dy * y).sum().backward()
    with h5py.File(path, "a") as f:
        g = f.create_group("layer")
        g.attrs["alpha"] = alpha
        for k, v in t.items():
            g[k] = v.detach().numpy().astype(np.float32)
            g["d" + k] = v.grad.numpy()
        g["dy"] = dy.numpy().astype(np.float32)
        g["y"] = y.detach().numpy()


def main():
    model_ref.param_shapes = lambda cfg: BASE_SHAPES(cfg) + lora_shapes(cfg)
    model_ref.linear = lora_linear
    outdir = os.path.dirname(os.path.abspath(__file__))
    model_ref.make_golden("lora", CFG, 4321, outdir)
    adapter_layer(os.path.join(outdir, "golden_lora.h5"), torch.Generator().manual_seed(99))


if __name__ == "__main__":
    main()
