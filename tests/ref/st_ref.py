"""st_ref.py: the reference `safetensors` library (and transformers) against rlpt's
safetensors import/export (io/safetensors.h). Run by hand with /usr/bin/python3
(torch 1.13); the PyPI packages go into a --target dir on PYTHONPATH:

  /usr/bin/python3 -m pip install --target /tmp/st_pylib --no-deps safetensors==0.4.3 \
      transformers==4.37.2 huggingface_hub==0.20.3 tokenizers==0.15.2 tqdm regex packaging \
      filelock fsspec==2023.12.2
  export PYTHONPATH=/tmp/st_pylib

  st_ref.py golden OUTDIR        write tests/ref/st_golden: a tiny Qwen2-shaped model
                                 (tied, q/k/v bias) with F16 and BF16 tensors written by
                                 safetensors.torch.save_file, and expected.safetensors (the
                                 same values as F32) that test_safetensors must match exactly
  st_ref.py check DIR MODEL.h5   every tensor of the HF directory DIR (one file or shards)
                                 loads with the reference library and equals MODEL.h5's /model
                                 (F32: exactly; BF16: exactly torch's round-to-nearest-even)
  st_ref.py greedy DIR 1,2,3 N OUT.jsonl
                                 HF greedy continuation (N tokens) of a prompt, as a score line
  st_ref.py hf DIR IN.jsonl OUT.jsonl
                                 AutoModelForCausalLM.from_pretrained(DIR) (fp32) scores the
                                 token lines of IN.jsonl; compares logprobs with `rlpt score`'s
                                 OUT.jsonl and greedy next tokens; prints the max difference

Measured (2026-11-29, transformers 4.37.2, safetensors 0.4.3, torch 1.13):
  check: `rlpt init tests/decks/e2e_tiny.ini model.qkv_bias=true` exported F32 and BF16:
         26 tensors equal (BF16 bit-equal to torch's rounding); SmolLM2-135M-Instruct
         (GGUF Q4_1 -> model.h5 -> BF16 dir): 272 tensors equal.
  hf:    Qwen2ForCausalLM (tiny, tied, q/k/v bias) on its HF-greedy line: max |logprob diff|
         8.2e-07; LlamaForCausalLM (tiny, untied; F32 and BF16 dirs) 6.3e-07 / 7.5e-07;
         SmolLM2-135M (3 F32 shards + index) on a 20-token HF-greedy line: 6.7e-06, and
         every greedy token is also the argmax there.
"""
import json
import os
import sys

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file


def golden(out):
    os.makedirs(out, exist_ok=True)
    g = torch.Generator().manual_seed(1234)
    vocab, dim, ffn, heads, kv = 16, 8, 12, 2, 1
    kvd = dim // heads * kv
    shapes = {
        "model.embed_tokens.weight": [vocab, dim],
        "model.layers.0.input_layernorm.weight": [dim],
        "model.layers.0.self_attn.q_proj.weight": [dim, dim],
        "model.layers.0.self_attn.q_proj.bias": [dim],
        "model.layers.0.self_attn.k_proj.weight": [kvd, dim],
        "model.layers.0.self_attn.k_proj.bias": [kvd],
        "model.layers.0.self_attn.v_proj.weight": [kvd, dim],
        "model.layers.0.self_attn.v_proj.bias": [kvd],
        "model.layers.0.self_attn.o_proj.weight": [dim, dim],
        "model.layers.0.post_attention_layernorm.weight": [dim],
        "model.layers.0.mlp.gate_proj.weight": [ffn, dim],
        "model.layers.0.mlp.up_proj.weight": [ffn, dim],
        "model.layers.0.mlp.down_proj.weight": [dim, ffn],
        "model.norm.weight": [dim],
    }
    stored, expected = {}, {}
    for i, (name, shape) in enumerate(shapes.items()):
        x = torch.randn(shape, generator=g) * 4.0
        # alternate F16 and BF16; include subnormal-range and exact-tie values in F16
        dt = torch.float16 if i % 2 == 0 else torch.bfloat16
        if i == 0:
            x.view(-1)[:4] = torch.tensor([6.1e-5, 3.0e-6, -65504.0, 1.0 + 2.0 ** -11])
        stored[name] = x.to(dt).contiguous()
        expected[name] = stored[name].float().contiguous()
    save_file(stored, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    save_file(expected, os.path.join(out, "expected.safetensors"), metadata={"format": "pt"})
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": dim,
           "intermediate_size": ffn, "num_hidden_layers": 1, "num_attention_heads": heads,
           "num_key_value_heads": kv, "vocab_size": vocab, "max_position_embeddings": 32,
           "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True,
           "hidden_act": "silu", "use_sliding_window": False, "sliding_window": 32,
           "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    print("wrote", out, {k: str(v.dtype) for k, v in stored.items()})


def load_dir(d):
    idx = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) \
        else ["model.safetensors"]
    out = {}
    for fn in files:
        with safe_open(os.path.join(d, fn), framework="pt") as f:
            assert f.metadata().get("format") == "pt", fn
            for k in f.keys():
                assert k not in out, k
                out[k] = f.get_tensor(k)
    return out, files


def check(d, h5path):
    import h5py
    tensors, files = load_dir(d)
    with h5py.File(h5path, "r") as h:
        names = []
        h["model"].visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        assert sorted(names) == sorted(tensors), (sorted(set(names) ^ set(tensors)))
        for n in names:
            ref = torch.from_numpy(np.asarray(h["model"][n], dtype=np.float32))
            t = tensors[n]
            assert list(t.shape) == list(ref.shape), (n, t.shape, ref.shape)
            want = ref if t.dtype == torch.float32 else ref.to(t.dtype)
            assert torch.equal(t, want), n
    print(f"check: {len(names)} tensors in {len(files)} file(s) of {d} equal {h5path} "
          f"({tensors[names[0]].dtype})")


def hf(d, in_path, out_path):
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float32).eval()
    rows_in = [json.loads(l) for l in open(in_path) if l.strip()]
    rows_out = [json.loads(l) for l in open(out_path) if l.strip()]
    worst, agree, total = 0.0, 0, 0
    for a, b in zip(rows_in, rows_out):
        toks = torch.tensor([a["tokens"]])
        with torch.no_grad():
            logits = model(toks).logits[0].double()
        lp = torch.log_softmax(logits, -1)
        ref = lp[:-1].gather(1, toks[0, 1:, None])[:, 0]
        got = torch.tensor(b["logprobs"], dtype=torch.float64)
        worst = max(worst, (ref - got).abs().max().item())
        # on a greedy line (written by `greedy`), each next token is HF's argmax
        agree += int((lp.argmax(-1)[:-1] == toks[0, 1:]).sum())
        total += toks.shape[1] - 1
    print(f"hf: {type(model).__name__} on {len(rows_in)} line(s): max |logprob diff| = {worst:.3g}; "
          f"{agree}/{total} next tokens are HF's argmax")
    assert worst < 1e-4, worst


def greedy(d, prompt, n, out_path):
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float32).eval()
    toks = torch.tensor([[int(t) for t in prompt.split(",")]])
    with torch.no_grad():
        out = model.generate(toks, max_new_tokens=int(n), do_sample=False, min_new_tokens=int(n))
    with open(out_path, "w") as f:
        f.write(json.dumps({"tokens": out[0].tolist()}) + "\n")
    print("greedy:", out[0].tolist())


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "golden" and len(sys.argv) == 3:
        golden(sys.argv[2])
    elif cmd == "check" and len(sys.argv) == 4:
        check(sys.argv[2], sys.argv[3])
    elif cmd == "greedy" and len(sys.argv) == 6:
        greedy(*sys.argv[2:])
    elif cmd == "hf" and len(sys.argv) == 5:
        hf(*sys.argv[2:])
    else:
        sys.exit(__doc__)
