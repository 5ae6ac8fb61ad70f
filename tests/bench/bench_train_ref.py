#!/usr/bin/python3
"""bench_train_ref.py: the training step of bench_train.c in PyTorch (float32, CPU).

Same shapes, same packed batch (sequences as a [batch, seq] tensor: they all have
the same length, so no padding), same step: forward to next-token logprobs and
entropy, backward of -mean(logprob), AdamW. Prints "tok/s N".
Run with OMP_WAIT_POLICY=PASSIVE and the same thread count as the C benchmark.

usage: bench_train_ref.py --shape tiny|smollm --threads N --iters N
"""
import argparse
import time

import torch
import torch.nn.functional as F

SHAPES = {
    "tiny": dict(vocab=64, dim=256, layers=4, heads=4, kv_heads=2, ffn=688, batch=8, seq=128),
    "smollm": dict(vocab=49152, dim=576, layers=30, heads=9, kv_heads=3, ffn=1536, batch=4, seq=256),
}


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Block(torch.nn.Module):
    def __init__(self, s):
        super().__init__()
        d, hd = s["dim"], s["dim"] // s["heads"]
        self.h, self.kvh, self.hd = s["heads"], s["kv_heads"], hd
        self.mask = torch.triu(torch.ones(s["seq"], s["seq"], dtype=torch.bool), diagonal=1)
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.q = torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, self.kvh * hd, bias=False)
        self.v = torch.nn.Linear(d, self.kvh * hd, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.gate = torch.nn.Linear(d, s["ffn"], bias=False)
        self.up = torch.nn.Linear(d, s["ffn"], bias=False)
        self.down = torch.nn.Linear(s["ffn"], d, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        y = self.n1(x)
        q = self.q(y).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k(y).view(B, T, self.kvh, self.hd).transpose(1, 2)
        v = self.v(y).view(B, T, self.kvh, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.h // self.kvh
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        # eager causal attention (torch 1.13 has no scaled_dot_product_attention)
        sc = (q @ k.transpose(-1, -2)) / self.hd ** 0.5
        sc = sc.masked_fill(self.mask[:T, :T], float("-inf"))
        att = torch.softmax(sc, dim=-1) @ v
        x = x + self.o(att.transpose(1, 2).reshape(B, T, -1))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Model(torch.nn.Module):
    def __init__(self, s):
        super().__init__()
        self.embed = torch.nn.Embedding(s["vocab"], s["dim"])
        self.blocks = torch.nn.ModuleList(Block(s) for _ in range(s["layers"]))
        self.norm = RMSNorm(s["dim"])
        hd = s["dim"] // s["heads"]
        inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
        fr = torch.outer(torch.arange(s["seq"]).float(), inv)
        emb = torch.cat((fr, fr), dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()

    def forward(self, tokens):
        x = self.embed(tokens)
        for b in self.blocks:
            x = b(x, self.cos, self.sin)
        logits = self.norm(x) @ self.embed.weight.T  # tied lm_head
        logp = torch.log_softmax(logits[:, :-1], dim=-1)
        lp = logp.gather(-1, tokens[:, 1:, None])[..., 0]
        ent = -(logp.exp() * logp).sum(-1)
        return lp, ent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="tiny", choices=SHAPES)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    s = SHAPES[a.shape]
    model = Model(s)
    for p in model.parameters():
        if p.dim() == 2:
            torch.nn.init.normal_(p, std=0.02)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.0)
    tokens = torch.randint(0, s["vocab"], (s["batch"], s["seq"]))
    for it in range(a.iters + 1):
        if it == 1:
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        lp, ent = model(tokens)
        (-lp.mean()).backward()
        opt.step()
    dt = time.perf_counter() - t0
    ntok = s["batch"] * s["seq"] * a.iters
    print(f"{a.shape}: {s['batch']} x {s['seq']} tokens, {a.threads} threads, "
          f"torch {torch.__version__}: tok/s {ntok / dt:.0f}")


if __name__ == "__main__":
    main()
