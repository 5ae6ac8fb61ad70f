"""ckpt_h5py_check.py: an rlpt checkpoint is plain HDF5 that h5py reads.

Usage: /usr/bin/python3 tests/ref/ckpt_h5py_check.py CKPT.h5

Checks, from the file alone: /meta attributes (format_version, step, model_config
JSON, deck), every tensor of /model, /optim/m, /optim/v, /ref and /critic under
its Hugging Face name with the shape the model config implies (built here
independently of the C code), float32, and every dataset's crc32 attribute equal
to zlib.crc32 of its bytes. Exit 0 on success, 1 with the first problem."""
import json
import sys
import zlib

import h5py
import numpy as np


def expected_shapes(mc):
    """HF name -> shape, as model/params.c lays the model out."""
    d, hd = mc["dim"], mc["dim"] // mc["heads"]
    kvd = hd * mc["kv_heads"]
    s = {"model.embed_tokens.weight": (mc["vocab_size"], d), "model.norm.weight": (d,)}
    for l in range(mc["layers"]):
        p = f"model.layers.{l}."
        s[p + "input_layernorm.weight"] = (d,)
        s[p + "post_attention_layernorm.weight"] = (d,)
        s[p + "self_attn.q_proj.weight"] = (d, d)
        s[p + "self_attn.k_proj.weight"] = (kvd, d)
        s[p + "self_attn.v_proj.weight"] = (kvd, d)
        s[p + "self_attn.o_proj.weight"] = (d, d)
        if mc["qkv_bias"]:
            s[p + "self_attn.q_proj.bias"] = (d,)
            s[p + "self_attn.k_proj.bias"] = (kvd,)
            s[p + "self_attn.v_proj.bias"] = (kvd,)
        s[p + "mlp.gate_proj.weight"] = (mc["ffn_dim"], d)
        s[p + "mlp.up_proj.weight"] = (mc["ffn_dim"], d)
        s[p + "mlp.down_proj.weight"] = (d, mc["ffn_dim"])
    if not mc["tie_embeddings"]:
        s["lm_head.weight"] = (mc["vocab_size"], d)
    if mc["value_head"]:
        s["score.weight"] = (1, d)
    return s


def check_crc(ds):
    got = zlib.crc32(np.ascontiguousarray(ds[()]).tobytes())
    want = int(ds.attrs["crc32"])
    if got != want:
        raise SystemExit(f"{ds.name}: crc32 {got:#010x} != stored {want:#010x}")


def check_group(f, group, mc):
    shapes = expected_shapes(mc)
    names = set(f[group].keys())
    if names != set(shapes):
        raise SystemExit(f"/{group}: names differ: {sorted(names ^ set(shapes))[:5]}")
    for name, shape in shapes.items():
        ds = f[group][name]
        if ds.shape != shape or ds.dtype != np.float32:
            raise SystemExit(f"/{group}/{name}: {ds.shape} {ds.dtype}, want {shape} float32")
        check_crc(ds)
    return len(shapes)


def main(path):
    with h5py.File(path, "r") as f:
        meta = f["meta"].attrs
        assert int(meta["format_version"]) == 1, meta["format_version"]
        mc = json.loads(meta["model_config"])
        deck = meta["deck"]
        deck = deck.decode() if isinstance(deck, bytes) else deck
        assert "[model]" in deck, "deck text lacks [model]"
        n = 0
        for group in ("model", "optim/m", "optim/v", "ref"):
            if group.split("/")[0] in f:
                n += check_group(f, group, mc)
        if "critic" in f:
            n += check_group(f, "critic", json.loads(f["critic"].attrs["model_config"]))
        for name in ("rng", "data", "controller", "buffer"):
            if name in f:
                check_crc(f[name])
        t, lr = int(f["optim"].attrs["t"]), float(f["optim"].attrs["lr"])
        print(f"ckpt_h5py_check: {path}: step {int(meta['step'])}, {n} tensors with HF names, "
              f"shapes and zlib crc32 as expected; optim t={t} lr={lr:g}; "
              f"data={list(f['data'][()])} controller={dict(zip(f['controller'].attrs['names'].decode().split(','), f['controller'][()]))}")


if __name__ == "__main__":
    main(sys.argv[1])
