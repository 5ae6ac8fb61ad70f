"""bpe_drop_ref.py: what Hugging Face `tokenizers` does with a byte SmolLM2's
vocabulary has no token for, for tests/tokenizer/test_hf_tokenizer.c (tokenizer_bpe_drop_unknown).

Run by hand (the C tests do not need Python):
  PYTHONPATH=/dir/with/gguf+tokenizers python3 tests/ref/bpe_drop_ref.py [SmolLM2.gguf]

SmolLM2's tokenizer.json is a BPE model without unk_token, and its vocabulary
lacks 21 byte tokens (0x04 0x06 0x13 0x14 0x16 0x1d 0xc0 0xc1 0xf1 0xf2
0xf5..0xff). `tokenizers` leaves such a byte out of its pre-token and merges
the rest of the pre-token as usual. Its input is a str, so only text that is
valid UTF-8 has an answer: these are the strings of tests/ref/bpe_golden.json
that rlpt refuses by default ("err_at") and that are valid UTF-8, plus a few
more built around the missing control bytes and the 0xf1 / 0xf2 lead bytes.

Writes tests/ref/bpe_golden_drop.json: [{"hex": ..., "ids": [...]}, ...]."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bpe_ref import DEFAULT_GGUF, build  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    tk = build(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_GGUF)
    with open(os.path.join(HERE, "bpe_golden.json")) as f:
        texts = []
        for r in json.load(f):
            if "err_at" not in r:
                continue
            try:
                texts.append(bytes.fromhex(r["hex"]).decode("utf-8"))
            except UnicodeDecodeError:
                pass
    texts += ["a\x04b", "\x04", "x \x04 y", "!!\x04!!", "hello\x06world\x13!", "\x14\x16\x1d",
              "<|im_start|>\x04<|im_end|>", "12\x1d34", "plane 15: \U00050000 and \U00090001.",
              "tab\t\x04\tend", "  \x06  "]
    out = [{"hex": t.encode("utf-8").hex(), "ids": tk.encode(t, add_special_tokens=False).ids}
           for t in texts]
    with open(os.path.join(HERE, "bpe_golden_drop.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
    print("%d strings, %d ids" % (len(out), sum(len(r["ids"]) for r in out)))


if __name__ == "__main__":
    main()
