#!/usr/bin/python3
"""model_ref.py: independent PyTorch (float64) reference for the rlpt transformer.

Written from the Hugging Face Llama / Qwen2 definitions (LlamaRMSNorm,
LlamaRotaryEmbedding + rotate_half, repeat_kv, eager causal attention, LlamaMLP),
not from the C code. Each sequence is run on its own (no packing), so the C
packed path is checked against plain per-sequence attention.

Writes tests/ref/golden_<name>.h5 with
  /meta attrs model_config (JSON), format_version
  /model/<hf-name>   float32 weights, [out, in] ([n] for vectors)
  /tokens, /cu_seqlens (int32), /w, /u (float64), /c (scalar)
  /logprob, /entropy, /value (float64), /grad/<hf-name> (float32)
for loss = sum_t w_t logprob_t + c sum_t entropy_t (+ sum_t u_t value_t with a value head).
logprob_t = log p(tokens[t+1] | tokens[..t]) within the sequence, 0 at its last token;
entropy_t is the next-token entropy at every position (last one included).

Run: /usr/bin/python3 tests/ref/model_ref.py   (from the repository root)
"""
import json
import os

import h5py
import numpy as np
import torch

torch.set_default_dtype(torch.float64)

CONFIGS = {
    # (A) multi-head attention, tied embeddings, no bias, no value head
    "mha_tied": dict(vocab_size=50, dim=32, layers=2, heads=4, kv_heads=4, ffn_dim=48,
                     max_seq=64, rope_theta=10000.0, norm_eps=1e-5, init_std=0.02,
                     tie_embeddings=True, qkv_bias=False, value_head=False),
    # (B) grouped-query attention (6 heads over 2 kv heads), q/k/v bias, untied lm_head, value head
    "gqa_bias_value": dict(vocab_size=50, dim=36, layers=2, heads=6, kv_heads=2, ffn_dim=40,
                           max_seq=64, rope_theta=1000000.0, norm_eps=1e-6, init_std=0.02,
                           tie_embeddings=False, qkv_bias=True, value_head=True),
}
SEQ_LENS = [7, 12, 5]


def param_shapes(cfg):
    """HF names and [out, in] shapes, in the rlpt table order."""
    d, f, hd = cfg["dim"], cfg["ffn_dim"], cfg["dim"] // cfg["heads"]
    kvd = hd * cfg["kv_heads"]
    out = [("model.embed_tokens.weight", (cfg["vocab_size"], d))]
    for l in range(cfg["layers"]):
        p = f"model.layers.{l}."
        out.append((p + "input_layernorm.weight", (d,)))
        for name, rows in (("q", d), ("k", kvd), ("v", kvd)):
            out.append((p + f"self_attn.{name}_proj.weight", (rows, d)))
            if cfg["qkv_bias"]:
                out.append((p + f"self_attn.{name}_proj.bias", (rows,)))
        out += [(p + "self_attn.o_proj.weight", (d, d)),
                (p + "post_attention_layernorm.weight", (d,)),
                (p + "mlp.gate_proj.weight", (f, d)),
                (p + "mlp.up_proj.weight", (f, d)),
                (p + "mlp.down_proj.weight", (d, f))]
    out.append(("model.norm.weight", (d,)))
    if not cfg["tie_embeddings"]:
        out.append(("lm_head.weight", (cfg["vocab_size"], d)))
    if cfg["value_head"]:
        out.append(("score.weight", (1, d)))
    return out


def random_params(cfg, gen):
    """Weights large enough that attention and the softmax are far from uniform,
    rounded to float32 (what the C model holds), then held in float64."""
    params = {}
    for name, shape in param_shapes(cfg):
        if name.endswith("norm.weight") or "layernorm" in name:
            t = 1.0 + 0.2 * torch.randn(shape, generator=gen)
        elif name.endswith(".bias"):
            t = 0.2 * torch.randn(shape, generator=gen)
        elif "embed_tokens" in name:
            t = 1.0 * torch.randn(shape, generator=gen)
        else:
            t = torch.randn(shape, generator=gen) / np.sqrt(shape[1]) * 1.5
        params[name] = t.float().double().requires_grad_(True)
    return params


def rms_norm(x, w, eps):
    # LlamaRMSNorm: hidden * rsqrt(mean(hidden^2) + eps), then weight *
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(n, hd, theta):
    # LlamaRotaryEmbedding: inv_freq = 1 / theta^(arange(0, d, 2) / d), emb = cat(freqs, freqs)
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2).double() / hd))
    freqs = torch.outer(torch.arange(n).double(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def repeat_kv(x, n_rep):
    # [kvh, L, hd] -> [kvh * n_rep, L, hd], head h uses kv head h // n_rep
    kvh, L, hd = x.shape
    return x[:, None].expand(kvh, n_rep, L, hd).reshape(kvh * n_rep, L, hd)


def linear(x, p, name):
    y = x @ p[name + ".weight"].T
    if name + ".bias" in p:
        y = y + p[name + ".bias"]
    return y


def attention(x, p, pre, cfg):
    L = x.shape[0]
    H, KVH = cfg["heads"], cfg["kv_heads"]
    hd = cfg["dim"] // H
    q = linear(x, p, pre + "q_proj").view(L, H, hd).transpose(0, 1)
    k = linear(x, p, pre + "k_proj").view(L, KVH, hd).transpose(0, 1)
    v = linear(x, p, pre + "v_proj").view(L, KVH, hd).transpose(0, 1)
    cos, sin = rope_cos_sin(L, hd, cfg["rope_theta"])
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    k, v = repeat_kv(k, H // KVH), repeat_kv(v, H // KVH)
    scores = q @ k.transpose(1, 2) / np.sqrt(hd)
    mask = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(mask, float("-inf"))
    att = torch.softmax(scores, dim=-1) @ v
    return linear(att.transpose(0, 1).reshape(L, H * hd), p, pre + "o_proj")


def forward_seq(tokens, p, cfg):
    """One sequence: returns logprob [L], entropy [L], value [L] (or None)."""
    eps = cfg["norm_eps"]
    h = p["model.embed_tokens.weight"][tokens]
    for l in range(cfg["layers"]):
        pre = f"model.layers.{l}."
        h = h + attention(rms_norm(h, p[pre + "input_layernorm.weight"], eps), p,
                          pre + "self_attn.", cfg)
        x = rms_norm(h, p[pre + "post_attention_layernorm.weight"], eps)
        mlp = torch.nn.functional.silu(linear(x, p, pre + "mlp.gate_proj")) * \
            linear(x, p, pre + "mlp.up_proj")
        h = h + linear(mlp, p, pre + "mlp.down_proj")
    h = rms_norm(h, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if cfg["tie_embeddings"] else p["lm_head.weight"]
    logp = torch.log_softmax(h @ head.T, dim=-1)
    entropy = -(logp.exp() * logp).sum(-1)
    logprob = torch.zeros(len(tokens))
    logprob[:-1] = logp[:-1].gather(1, tokens[1:, None])[:, 0]
    value = (h @ p["score.weight"].T)[:, 0] if cfg["value_head"] else None
    return logprob, entropy, value


def make_golden(name, cfg, seed, outdir):
    gen = torch.Generator().manual_seed(seed)
    p = random_params(cfg, gen)
    cu = np.concatenate([[0], np.cumsum(SEQ_LENS)]).astype(np.int32)
    tokens = torch.randint(0, cfg["vocab_size"], (int(cu[-1]),), generator=gen)
    w = torch.randn(int(cu[-1]), generator=gen)
    u = torch.randn(int(cu[-1]), generator=gen)
    c = 0.37
    lps, ents, vals = [], [], []
    for s in range(len(SEQ_LENS)):
        lp, ent, val = forward_seq(tokens[cu[s]:cu[s + 1]], p, cfg)
        lps.append(lp)
        ents.append(ent)
        if val is not None:
            vals.append(val)
    logprob, entropy = torch.cat(lps), torch.cat(ents)
    loss = (w * logprob).sum() + c * entropy.sum()
    value = torch.cat(vals) if vals else None
    if value is not None:
        loss = loss + (u * value).sum()
    loss.backward()
    path = os.path.join(outdir, f"golden_{name}.h5")
    with h5py.File(path, "w") as f:
        meta = f.create_group("meta")
        meta.attrs["model_config"] = json.dumps(cfg)
        meta.attrs["format_version"] = np.int32(1)
        for pname, _ in param_shapes(cfg):
            f[f"model/{pname}"] = p[pname].detach().numpy().astype(np.float32)
            f[f"grad/{pname}"] = p[pname].grad.numpy().astype(np.float32)
        f["tokens"] = tokens.numpy().astype(np.int32)
        f["cu_seqlens"] = cu
        f["w"] = w.numpy()
        f["u"] = u.numpy()
        f["c"] = np.float64(c)
        f["logprob"] = logprob.detach().numpy()
        f["entropy"] = entropy.detach().numpy()
        if value is not None:
            f["value"] = value.detach().numpy()
    print(f"wrote {path}: loss {loss.item():.6f}, {os.path.getsize(path)} bytes")


def main():
    outdir = os.path.join(os.path.dirname(os.path.abspath(__file__)))
    for i, (name, cfg) in enumerate(CONFIGS.items()):
        make_golden(name, cfg, 1234 + i, outdir)


if __name__ == "__main__":
    main()
