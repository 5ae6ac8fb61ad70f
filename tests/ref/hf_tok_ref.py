"""hf_tok_ref.py: small tokenizer.json fixtures and their golden ids for tests/tokenizer/test_hf_tokenizer.c.

Run by hand (the C tests do not need Python):
  python3 tests/ref/hf_tok_ref.py        (needs `tokenizers` from PyPI)

Trains two tiny byte-level BPE tokenizers (256 byte tokens + merges learned
from the golden corpus's own text, ~600 tokens) with Hugging Face `tokenizers`,
saves them with tokenizers' own writer, and writes the ids `tokenizers` gives
for every valid-UTF-8 string of tests/ref/bpe_golden.json (the C side encodes
the same bytes):

  tests/data/hf_tok_a/  SmolLM2-style: Sequence[Digits(individual_digits),
      ByteLevel(use_regex)], merges as [LEFT, RIGHT] pairs (the newer format),
      added tokens <|im_start|> <|im_end|> (special) and <tool> (not special),
      tokenizer_config.json with bos_token as an object, eos_token a string,
      a ChatML chat_template, no BOS added.
  tests/data/hf_tok_b/  Llama 3-style: Sequence[Split(Llama 3's regex,
      Isolated), ByteLevel(use_regex=False)], model.ignore_merges = true,
      merges rewritten as "LEFT RIGHT" strings (the older format), a
      TemplateProcessing post-processor that adds <|begin_of_text|>, a
      Llama 3 chat_template; eos from config.json's eos_token_id.

Writes tests/ref/hf_tok_golden.json: {"a": [{"hex", "ids"}...], "b": [...]}, ids without
the post-processor's BOS (the C encoder leaves BOS to its caller)."""
import json
import os

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors
from tokenizers import trainers

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
          r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
          "{{ '<|im_start|>assistant\\n' }}{% endif %}")
LLAMA3_TPL = ("{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role']"
              " + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
              "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
              "{% endif %}")


def corpus():
    with open(os.path.join(HERE, "bpe_golden.json")) as f:
        rows = json.load(f)
    out = []
    for r in rows:
        b = bytes.fromhex(r["hex"])
        try:
            out.append(b.decode("utf-8"))
        except UnicodeDecodeError:
            pass
    return out


def train(pre, specials, vocab_size):
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre
    tk.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(corpus(), tr)
    return tk


def save(tk, name, config, legacy_merges=False, ignore_merges=False, extra=None):
    d = os.path.join(DATA, name)
    os.makedirs(d, exist_ok=True)
    js = json.loads(tk.to_str())
    if legacy_merges:
        js["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in js["model"]["merges"]]
    js["model"]["ignore_merges"] = ignore_merges
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(js, f, ensure_ascii=False, separators=(",", ":"))
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=1)
    for fname, obj in (extra or {}).items():
        with open(os.path.join(d, fname), "w") as f:
            json.dump(obj, f, indent=1)
    return Tokenizer.from_file(os.path.join(d, "tokenizer.json"))  # what the C side reads


def golden(tk):
    return [{"hex": s.encode("utf-8").hex(), "ids": tk.encode(s, add_special_tokens=False).ids} for s in corpus()]


def main():
    a = train(pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                       pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]),
              ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], 600)
    a.add_tokens([AddedToken("<tool>", special=False, normalized=False)])
    a = save(a, "hf_tok_a", {"bos_token": {"content": "<|im_start|>", "special": True},
                             "eos_token": "<|im_end|>", "chat_template": CHATML})
    b = train(pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
         "<|eot_id|>"], 600)
    b.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", 0)])
    b = save(b, "hf_tok_b", {"bos_token": "<|begin_of_text|>", "chat_template": LLAMA3_TPL},
             legacy_merges=True, ignore_merges=True, extra={"config.json": {"eos_token_id": 4}})
    out = {"a": golden(a), "b": golden(b)}
    with open(os.path.join(HERE, "hf_tok_golden.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
    print("a: %d strings, %d ids; b: %d strings, %d ids" % (
        len(out["a"]), sum(len(r["ids"]) for r in out["a"]),
        len(out["b"]), sum(len(r["ids"]) for r in out["b"])))


if __name__ == "__main__":
    main()
