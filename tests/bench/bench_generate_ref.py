#!/usr/bin/python3
"""bench_generate_ref.py: the generation work of bench_generate.c in PyTorch (float32, CPU).

KV-cached decoding of the same shapes: for batch B, max(B, G) samples, G per prompt;
each prompt of P tokens is prefilled once and its KV copied to its G samples (what
the rollout engine's prefix sharing does), then N decode steps of B sequences in
lockstep (no EOS), sampling at temperature 1 and recording each token's logprob.
Batch 1 runs the G samples of the one prompt one after another. Prints
"batch B: tok/s X cpu Y": generated tokens per wall second and per CPU second of
the process (all threads), prefill included.
Run with OMP_WAIT_POLICY=PASSIVE and the same thread count as the C benchmark.

usage: bench_generate_ref.py --shape tiny|smollm --threads N --new N --prompt P --group G
"""
import argparse
import time

import torch
import torch.nn.functional as F

SHAPES = {
    "tiny": dict(vocab=64, dim=256, layers=4, heads=4, kv_heads=2, ffn=688),
    "smollm": dict(vocab=49152, dim=576, layers=30, heads=9, kv_heads=3, ffn=1536),
}
MAX_SEQ = 256


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
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.q = torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, self.kvh * hd, bias=False)
        self.v = torch.nn.Linear(d, self.kvh * hd, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.gate = torch.nn.Linear(d, s["ffn"], bias=False)
        self.up = torch.nn.Linear(d, s["ffn"], bias=False)
        self.down = torch.nn.Linear(s["ffn"], d, bias=False)

    def forward(self, x, cos, sin, kc, vc, p0):
        """x [B, T, d] at positions p0 .. p0+T-1; kc, vc [B, kvh, MAX_SEQ, hd] caches."""
        B, T, _ = x.shape
        y = self.n1(x)
        q = self.q(y).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k(y).view(B, T, self.kvh, self.hd).transpose(1, 2)
        v = self.v(y).view(B, T, self.kvh, self.hd).transpose(1, 2)
        c, s_ = cos[p0:p0 + T], sin[p0:p0 + T]
        q = q * c + rotate_half(q) * s_
        k = k * c + rotate_half(k) * s_
        kc[:, :, p0:p0 + T] = k
        vc[:, :, p0:p0 + T] = v
        n = p0 + T
        rep = self.h // self.kvh
        qg = q.reshape(B, self.kvh, rep * T, self.hd)  # GQA without copying K/V
        sc = (qg @ kc[:, :, :n].transpose(-1, -2)) / self.hd ** 0.5
        if T > 1:
            mask = torch.ones(T, n, dtype=torch.bool).triu(diagonal=p0 + 1)
            sc = sc.view(B, self.kvh, rep, T, n).masked_fill(mask, float("-inf")).view(B, self.kvh, rep * T, n)
        att = (torch.softmax(sc, dim=-1) @ vc[:, :, :n]).view(B, self.h, T, self.hd)
        x = x + self.o(att.transpose(1, 2).reshape(B, T, -1))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Model(torch.nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = s
        self.embed = torch.nn.Embedding(s["vocab"], s["dim"])
        self.blocks = torch.nn.ModuleList(Block(s) for _ in range(s["layers"]))
        self.norm = RMSNorm(s["dim"])
        hd = s["dim"] // s["heads"]
        inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
        fr = torch.outer(torch.arange(MAX_SEQ).float(), inv)
        emb = torch.cat((fr, fr), dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()

    def caches(self, B):
        s, hd = self.s, self.s["dim"] // self.s["heads"]
        return [(torch.empty(B, s["kv_heads"], MAX_SEQ, hd), torch.empty(B, s["kv_heads"], MAX_SEQ, hd))
                for _ in self.blocks]

    def forward(self, tokens, cache, p0):
        """Logits of the last position of each row; cache filled at p0 .. p0+T-1."""
        x = self.embed(tokens)
        for b, (kc, vc) in zip(self.blocks, cache):
            x = b(x, self.cos, self.sin, kc, vc, p0)
        return self.norm(x[:, -1]) @ self.embed.weight.T  # tied lm_head


def sample(logits, gen):
    logp = torch.log_softmax(logits, dim=-1)
    tok = torch.multinomial(logp.exp(), 1, generator=gen)
    return tok, logp.gather(-1, tok)


def decode(model, cache, logits, P, n_new, gen):
    """n_new tokens for every row of the cache, starting from the prompt's logits."""
    for i in range(n_new):
        tok, _ = sample(logits, gen)
        if i + 1 < n_new:
            logits = model(tok, cache, P + i)


def run_batch(model, B, P, G, n_new, gen):
    s = model.s
    n_req = max(B, G)
    n_prompts = n_req // G
    prompts = torch.randint(0, s["vocab"], (n_prompts, P), generator=gen)
    t0, c0 = time.perf_counter(), time.process_time()
    pc = model.caches(n_prompts)
    logits = model(prompts, pc, 0)  # each prompt prefilled once
    if B == 1:
        cache = model.caches(1)
        for j in range(G):  # the G samples one after another, each from the shared prompt KV
            for (kc, vc), (pk, pv) in zip(cache, pc):
                kc[:, :, :P] = pk[:, :, :P]
                vc[:, :, :P] = pv[:, :, :P]
            decode(model, cache, logits[:1], P, n_new, gen)
    else:
        cache = [(pk.repeat_interleave(G, 0), pv.repeat_interleave(G, 0)) for pk, pv in pc]
        decode(model, cache, logits.repeat_interleave(G, 0), P, n_new, gen)
    n = n_req * n_new
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="tiny", choices=SHAPES)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--group", type=int, default=8)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Model(SHAPES[a.shape])
    for p in model.parameters():
        if p.dim() == 2:
            torch.nn.init.normal_(p, std=0.02)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for B in (1, 16, 64):
            tps, cpu = run_batch(model, B, a.prompt, a.group, a.new, gen)
            print(f"batch {B}: tok/s {tps:.1f} cpu {cpu:.1f} ({a.shape}, {a.threads} threads, torch {torch.__version__})",
                  flush=True)


if __name__ == "__main__":
    main()
