"""smollm2_ref.py: PyTorch reference for tests/model/test_smollm2.c.

Run by hand with Debian's python (torch 1.13) and `gguf`, `tokenizers`,
`jinja2` from PyPI on the path (installed with --no-deps so Debian's numpy stays):
  PYTHONPATH=/dir/with/gguf+tokenizers+jinja2 /usr/bin/python3 tests/ref/smollm2_ref.py [GGUF]

Independent of the C code on every step that matters:
  * weights dequantized by the `gguf` package (gguf.quants.dequantize), not by
    io/gguf_dequant.c;
  * q/k used exactly as stored in the GGUF, with llama.cpp's interleaved RoPE
    (pairs 2i, 2i+1) instead of undoing the converter's row permutation and
    using Hugging Face's rotate_half as the C side does, so the permutation
    logic is checked, not repeated;
  * prompts rendered by jinja2 from the GGUF's own tokenizer.chat_template and
    tokenized by Hugging Face `tokenizers` (tests/ref/bpe_ref.py's builder);
  * float64 throughout.
For 3 chat prompts it writes tests/ref/smollm2_golden.json: the prompt ids; at
the last prompt position the top-64 logits, the logits of 192 fixed token ids
and the log-sum-exp; and the greedy completion (up to 32 tokens, stopping at
<|im_end|>) with, per step, the chosen token's log-probability and the margin
between the best and second-best logit."""
import json
import os
import sys

import jinja2
import numpy as np
import torch

import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe_ref  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPTS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You are a concise math tutor."},
     {"role": "user", "content": "What is 12 times 7? Explain briefly."}],
    [{"role": "user", "content": "Hi!"},
     {"role": "assistant", "content": "Hello! How can I help you today?"},
     {"role": "user", "content": "Tell me a short story about a cat who learns to fly."}],
]
N_GEN = 32
EOS = 2


def load(path):
    r = gguf.GGUFReader(path)
    f = {k: v.contents() for k, v in r.fields.items()
         if not k.startswith("tokenizer.ggml.") or k.endswith("_id")}
    w = {}
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type)
        w[t.name] = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))
    return f, w


def rms(x, g, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * g


def rope_interleaved(x, theta):
    """x [T, H, D]: llama.cpp NORM rope, pairs (2i, 2i+1) rotated by pos * theta^(-2i/D)."""
    T, H, D = x.shape
    inv = theta ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def forward(f, w, ids):
    """Logits [1, vocab] of the last position of one sequence."""
    H, KV = f["llama.attention.head_count"], f["llama.attention.head_count_kv"]
    C, L = f["llama.embedding_length"], f["llama.block_count"]
    eps, theta = f["llama.attention.layer_norm_rms_epsilon"], f["llama.rope.freq_base"]
    D, T = C // H, len(ids)
    x = w["token_embd.weight"][torch.tensor(ids)]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(L):
        p = "blk.%d." % l
        h = rms(x, w[p + "attn_norm.weight"], eps)
        q = rope_interleaved((h @ w[p + "attn_q.weight"].T).view(T, H, D), theta)
        k = rope_interleaved((h @ w[p + "attn_k.weight"].T).view(T, KV, D), theta)
        v = (h @ w[p + "attn_v.weight"].T).view(T, KV, D)
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        att = torch.einsum("thd,shd->hts", q, k) / D ** 0.5 + mask
        o = torch.einsum("hts,shd->thd", att.softmax(-1), v).reshape(T, C)
        x = x + o @ w[p + "attn_output.weight"].T
        h = rms(x, w[p + "ffn_norm.weight"], eps)
        g = h @ w[p + "ffn_gate.weight"].T
        x = x + (torch.nn.functional.silu(g) * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
    x = rms(x[-1:], w["output_norm.weight"], eps)
    head = w["output.weight"] if "output.weight" in w else w["token_embd.weight"]
    return x @ head.T


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else bpe_ref.DEFAULT_GGUF
    f, w = load(path)
    tk = bpe_ref.build(path)
    template = jinja2.Environment().from_string(f["tokenizer.chat_template"])
    rng = np.random.default_rng(7)
    fixed = sorted(rng.choice(int(f["llama.vocab_size"]), 192, replace=False).tolist())
    out = {"fixed_ids": fixed, "prompts": []}
    for msgs in PROMPTS:
        text = template.render(messages=msgs, add_generation_prompt=True)
        ids = tk.encode(text, add_special_tokens=False).ids
        seq, steps = list(ids), []
        last = None
        for _ in range(N_GEN):
            z = forward(f, w, seq)[-1]
            if last is None:
                last = z
            top2 = torch.topk(z, 2)
            tok = int(top2.indices[0])
            lp = float(z[tok] - torch.logsumexp(z, 0))
            steps.append({"id": tok, "logprob": lp, "margin": float(top2.values[0] - top2.values[1])})
            seq.append(tok)
            if tok == EOS:
                break
        top = torch.topk(last, 64)
        out["prompts"].append({
            "messages": msgs, "text": text, "ids": ids,
            "top_ids": top.indices.tolist(), "top_logits": top.values.tolist(),
            "fixed_logits": last[fixed].tolist(), "lse": float(torch.logsumexp(last, 0)),
            "greedy": steps, "completion": tk.decode([s["id"] for s in steps]),
        })
        print(repr(text[-60:]), "->", repr(out["prompts"][-1]["completion"]),
              "min margin %.4f" % min(s["margin"] for s in steps))
    dst = os.path.join(HERE, "smollm2_golden.json")
    with open(dst, "w") as fp:
        json.dump(out, fp, indent=0)
        fp.write("\n")
    print(dst, os.path.getsize(dst), "bytes")


if __name__ == "__main__":
    torch.set_num_threads(2)
    main()
