"""bpe_ref.py: golden token ids for tests/tokenizer/test_bpe.c from Hugging Face `tokenizers`.

Run by hand (the C tests do not need Python):
  PYTHONPATH=/dir/with/gguf+tokenizers python3 tests/ref/bpe_ref.py [SmolLM2.gguf]
needs `gguf` and `tokenizers` from PyPI; the GGUF comes from
jobscripts/fetch-smollm2.sh.

The reference tokenizer is built from the SAME vocabulary and merges that the
C tokenizer reads (tokenizer.ggml.tokens / merges / token_type of the GGUF),
with SmolLM2's pre-tokenizer as its tokenizer.json declares it:
Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False)],
and the control tokens added as special tokens (matched whole first).

Invalid UTF-8 cannot enter `tokenizers` (it takes str). The C tokenizer splits
its input into maximal valid-UTF-8 runs and runs of invalid bytes, and BPEs
each invalid run as one piece; the reference does the same split (Python's
strict decoder with surrogateescape marks exactly the invalid bytes), encodes
valid runs with `tokenizers` and invalid runs with the BPE model alone.

SmolLM2's vocabulary has no token for 21 bytes (0x04 ... 0xc0, 0xc1, 0xf5 ... 0xff).
`tokenizers` silently drops them; the C tokenizer refuses the text instead
(TOK_ERR_UNKNOWN at the byte's offset), so for such strings the golden file
holds the offset of the first such byte ("err_at") instead of ids.

Also writes tests/ref/bpe_golden_pre.json: the same vocabulary and encodable
strings through the Llama 3 ("llama-bpe") and Qwen2 pre-tokenizers (HF Split
regex + ByteLevel without its own regex, as their tokenizer.json declare).

Writes tests/ref/bpe_golden.json: [{"hex": text as hex, "ids": [...]} or
{"hex": ..., "err_at": offset}, ...]."""
import json
import os
import random
import sys

import gguf
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_GGUF = os.path.join(os.environ.get("RLPT_CACHE", os.path.expanduser("~/.cache/rlpt")),
                            "SmolLM2-135M-Instruct.Q4_1.gguf")


def bytes_to_unicode():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


# Hugging Face's own spellings (tokenizer.json of Llama 3 / Qwen2); the C side uses llama.cpp's.
PRE_REGEX = {
    "llama-bpe": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}


def build(path, pre="smollm"):
    r = gguf.GGUFReader(path)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    merges = r.fields["tokenizer.ggml.merges"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    assert r.fields["tokenizer.ggml.pre"].contents() == "smollm"
    vocab = {t: i for i, t in enumerate(tokens)}
    assert len(vocab) == len(tokens)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges]))
    if pre == "smollm":
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    else:  # as Llama 3's and Qwen2's tokenizer.json declare it
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(PRE_REGEX[pre]), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tk.decoder = decoders.ByteLevel()
    specials = [t for t, ty in zip(tokens, types) if ty in (3, 4)]
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return tk


def runs(data):
    """[(valid, bytes)] maximal runs of valid UTF-8 and of invalid bytes."""
    out = []
    for ch in data.decode("utf-8", "surrogateescape"):
        bad = 0xDC80 <= ord(ch) <= 0xDCFF
        b = bytes([ord(ch) - 0xDC00]) if bad else ch.encode("utf-8")
        if out and out[-1][0] == (not bad):
            out[-1][1].extend(b)
        else:
            out.append([not bad, bytearray(b)])
    return [(v, bytes(b)) for v, b in out]


def encode(tk, b2u, data):
    ids = []
    for valid, chunk in runs(data):
        if valid:
            ids += tk.encode(chunk.decode("utf-8"), add_special_tokens=False).ids
        else:
            ids += [t.id for t in tk.model.tokenize("".join(b2u[x] for x in chunk))]
    return ids


def corpus():
    s = [
        "Hello, world!", "Hello world", " Hello", "hello  world", "The quick brown fox jumps over the lazy dog.",
        "I'm sure you're right, they'll see we've done what I'd said.", "DON'T SHOUT'S", "it's", "'s'", "''",
        "What is 2+2?", "Answer: 4", "#### 42", "The answer is \\boxed{17}.", "Q: x = 3y - 7; solve for y.",
        "e-mail: someone@example.com", "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
        "C:\\Users\\name\\file.txt", "snake_case_name and camelCaseName", "ALLCAPS lowercase MiXeD",
        "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
        "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }",
        "if __name__ == '__main__':\n    main()", "x=[1,2,3]; y={'a': 1}", "SELECT * FROM t WHERE id >= 10;",
        "    indented four", "\tTab\tseparated\tvalues", "a\n\nb\n\n\nc", "line\r\nwindows\r\n", "   ", "\n",
        "\t", " \n ", "trailing spaces   ", "   leading spaces", "a  b   c    d", "multiple\n\n\n\nnewlines",
        "12345", "3.14159", "1,000,000", "-42", "+7e-10", "0x1F", "v1.2.3", "2024-01-31T12:00:00Z",
        "123abc456", "abc 123 def", " 9", "99 bottles", "٣٤٥ Arabic-Indic", "x² + y² = z²", "½ cup", "Ⅻ o'clock",
        "①②③", "१२३ Devanagari digits", "１２３ fullwidth",
        "😀", "I love 🍕 and 🍣!", "👨‍👩‍👧‍👦 family", "🇫🇷🇩🇪 flags", "👍🏽 ok", "✨ sparkles ✨", "❤️",
        "你好，世界", "こんにちは世界", "안녕하세요", "日本語のテキストです。", "中文和English混合", "漢字",
        "Привет, мир!", "Γειά σου Κόσμε", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
        "Ελληνικά και русский", "café naïve résumé", "Straße", "e\u0301 combining", "ﬁ ligature",
        "\u00a0non-breaking\u00a0space", "em\u2003space", "ideographic\u3000space", "zero\u200bwidth",
        "\u2028line sep", "tab\u000bvertical", "form\u000cfeed", "\u0085nel",
        "\x00", "\x01\x02\x03", "\x7f", "bell\x07", "esc\x1b[0m",
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
        "<|endoftext|>", "<|im_start|><|im_end|>", "<|im_start", "im_start|>", "<|im_end|>x<|im_end|>",
        "<repo_name>rlpt<file_sep>cli/main.c", "text<|endoftext|>more text", " <|im_start|> spaced ",
        "<jupyter_code>print(1)<jupyter_output>1", "<<|im_start|>>", "<|im_start|><|im_start|>",
        "....", "!!!???", "---", "===", "a-b_c.d", "(parentheses) [brackets] {braces}", "\"quoted\" 'single'",
        "~!@#$%^&*()_+`-=", "...and then", "Mr. Smith", "U.S.A.", "end.", ":)", ":-(", "a,b;c:d",
        "x" * 50, "ab" * 40, " " * 33, "=" * 64, "9" * 30, "\n" * 10, "é" * 20, "🙂" * 10,
        "The year 1999 was followed by 2000.", "Call 555-1234 now", "It costs $19.99 (USD).",
        "Temperature: -3.5°C", "50% off", "#1 best", "@user hi", "<html><body>x</body></html>",
        '{"key": "value", "n": 12}', "a\\nb", "tabs\t\tand  spaces", " \t \t", "\r", "\r\r\n",
    ]
    data = [x.encode("utf-8") for x in s]
    data += [
        b"\xff", b"\xfe\xff", b"abc\xffdef", b"\xc3", b"caf\xc3", b"\xc3(", b"\xe4\xb8", b"\xe4\xb8 \xe4\xb8",
        b"\xed\xa0\x80", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80",
        b"\x80\x80\x80", b"a\x80b\x80c", b"hello \xff world", b"  \xff  ", b"123\xff456",
        b"\xf0\x9f\x98", b"\xf0\x9f\x98 text", b"<|im_start|>\xff<|im_end|>", b"\xe4\xbd\xa0\xe5\xa5",
        b"\xc2\xa0\xc2", b"x\xfey\xfdz", b"\xef\xbb\xbfBOM", b"\xff\xfe\x00h\x00i",
        b"\xbf\xbe\xa0", b"ok\xe2\x82", b"\xe2\x82 \xe2\x82\xac", b"\xf0\x9f\x98\x80\x80",
        b"\xc3\xa9\xa9", b"\xf3\xa0\x80", b"\xe1\x80\x80\xe1", b"1\x802\x813", b"\x04 ctrl",
    ]
    rng = random.Random(20261129)
    pool = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789") + [" "] * 8 + ["\n", "\t", "  "]
            + list(".,;:!?'\"()[]{}<>-_=+*/\\|@#$%^&~`") + ["'s", "'ll", "'re", "'t"]
            + list("éüñßçøåæœ") + list("你好世界日本語") + list("😀🍕👍🏽") + ["<|im_start|>", "<|im_end|>"]
            + list("٣²½Ⅻ") + ["\u00a0", "\u3000", "e\u0301"])
    for _ in range(130):
        n = rng.randint(1, 24)
        t = "".join(rng.choice(pool) for _ in range(n)).encode("utf-8")
        if rng.random() < 0.15:
            k = rng.randint(0, len(t))
            t = t[:k] + bytes([rng.choice([0x80, 0xbf, 0xc3, 0xe4, 0xf0, 0xa0, 0x9f, 0xff])]) + t[k:]
        data.append(t)
    return data


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_GGUF
    tk = build(path)
    vocab = tk.get_vocab()
    b2u = bytes_to_unicode()
    out = []
    for data in corpus():
        missing = [i for i, x in enumerate(data) if b2u[x] not in vocab]
        if missing:
            out.append({"hex": data.hex(), "err_at": missing[0]})
            continue
        ids = encode(tk, b2u, data)
        try:  # sanity: the reference decodes valid text back (control tokens dropped)
            text = data.decode("utf-8")
            assert "<|" in text or "<repo" in text or "<jupyter" in text or tk.decode(ids) == text, text
        except UnicodeDecodeError:
            pass
        out.append({"hex": data.hex(), "ids": ids})
    # the same vocabulary through the Llama 3 and Qwen2 pre-tokenizers (encodable strings only)
    pre_out = {}
    for pre in PRE_REGEX:
        tkp = build(path, pre)
        pre_out[pre] = [{"hex": o["hex"], "ids": encode(tkp, b2u, bytes.fromhex(o["hex"]))}
                        for o in out if "ids" in o]
    dst_pre = os.path.join(HERE, "bpe_golden_pre.json")
    with open(dst_pre, "w") as f:
        json.dump(pre_out, f, separators=(",", ":"))
        f.write("\n")
    print(dst_pre, os.path.getsize(dst_pre), "bytes")
    dst = os.path.join(HERE, "bpe_golden.json")
    with open(dst, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(dst, len(out), "strings", sum("err_at" in o for o in out), "refused",
          sum(len(o.get("ids", [])) for o in out), "ids",
          os.path.getsize(dst), "bytes")


if __name__ == "__main__":
    main()
