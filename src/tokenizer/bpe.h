/* tokenizer/bpe.h: byte-level BPE (SmolLM2, StarCoder, GPT-2, Llama 3, Qwen2)
 * behind struct tokenizer, built from a struct bpe_spec that a file reader
 * fills: a GGUF file's tokenizer.ggml.* metadata (io/gguf_tokenizer.c) or a
 * Hugging Face tokenizer.json (io/hf_tokenizer.h).
 *
 * Encode: control / user-defined tokens are matched whole in the text first
 * (leftmost, longest); the rest is split into maximal valid-UTF-8 runs and runs
 * of invalid bytes; valid runs are pre-tokenized by the model's regex (PCRE2,
 * Unicode properties), invalid runs are one piece each; every piece is mapped
 * through the GPT-2 byte-to-unicode table and merged by merge rank. Any byte
 * string whose bytes all have a byte token encodes, and decode gives the bytes
 * back exactly (control tokens are skipped by decode, as tokenizer/tokenizer.h says). A
 * byte with no token (SmolLM2's vocabulary lacks 21: 0x04 0x06 0x13 0x14 0x16
 * 0x1d 0xc0 0xc1 0xf1 0xf2 0xf5..0xff) makes encode return TOK_ERR_UNKNOWN with
 * its offset, never a silent drop, unless tokenizer_bpe_drop_unknown is set.
 *
 * Hugging Face `tokenizers` (BPE without unk_token, as SmolLM2's tokenizer.json
 * has) leaves such a byte out of its pre-token and merges the rest of that
 * pre-token as if it were not there ("\x04" gives no ids, "!!\x04!!" the one
 * token "!!!!"); decode then cannot give the text back. Invalid
 * UTF-8 cannot reach `tokenizers` at all (it takes str), so for 0xc0, 0xc1 and
 * 0xf5..0xff it defines nothing. drop_unknown does the same leaving-out for
 * every such byte. */
#ifndef RLPT_TOKENIZER_BPE_H
#define RLPT_TOKENIZER_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

struct gguf_file;

/* Token types, numbered as GGUF's tokenizer.ggml.token_type. Control tokens
 * (tokenizer.json: added, special) are matched whole and skipped by decode;
 * user-defined ones (added, not special) are matched whole and decoded as text. */
enum { BPE_TT_NORMAL = 1, BPE_TT_UNKNOWN = 2, BPE_TT_CONTROL = 3, BPE_TT_USER = 4,
       BPE_TT_UNUSED = 5, BPE_TT_BYTE = 6 };

struct bpe_str {
  const char *p;  /* not NUL-terminated; points into the source (mapping or JSON tree) */
  size_t len;
};

/* A tokenizer's contents as its file gives them. The arrays are malloc'd (freed
 * by tokenizer_bpe_spec_free); the strings point into the source, which must
 * outlive the spec. */
struct bpe_spec {
  const char *path;            /* for messages */
  int n;                       /* vocabulary size; token i has text tok[i] */
  struct bpe_str *tok;
  uint8_t *type;               /* BPE_TT_* per token; NULL: all normal */
  size_t n_merges;
  struct bpe_str *merges;      /* 2 per merge (left, right), in rank order */
  char pre[32];                /* pre-tokenizer: llama.cpp's name (smollm, gpt2, llama-bpe, ...) */
  const char *regex;           /* NULL: pre's regex; else this pattern (tokenizer.json Split) */
  int split_digits;            /* with regex: every \p{N} character isolated first */
  int ignore_merges;           /* a piece that is a token as a whole is that token (Llama 3) */
  int bos_id, eos_id, pad_id;  /* -1: none */
  int add_bos;                 /* prompts start with BOS (GGUF add_bos_token, HF post-processor) */
  struct bpe_str chat_template;  /* Jinja source; .p NULL when the file has none */
};

/* The tokenizer of a spec. Returns 0, or -1 with "PATH: what" in err. */
int tokenizer_bpe_build(struct tokenizer *t, const struct bpe_spec *s, char *err, size_t errlen);
void tokenizer_bpe_spec_free(struct bpe_spec *s);
/* The spec of an opened GGUF file (io/gguf_tokenizer.c); f must outlive it. */
int tokenizer_bpe_spec_gguf(struct bpe_spec *s, const struct gguf_file *f, char *err,
                            size_t errlen);

/* From an opened GGUF file. Returns 0, or -1 with "PATH: what" in err. */
int tokenizer_bpe_from_gguf(struct tokenizer *t, const struct gguf_file *f, char *err,
                            size_t errlen);
/* Opens path, loads the tokenizer, closes the file. */
int tokenizer_bpe_load(struct tokenizer *t, const char *gguf_path, char *err, size_t errlen);

/* Id of the token whose vocabulary text is exactly s (e.g. "<|im_end|>"); -1 if none. */
int tokenizer_bpe_find(const struct tokenizer *t, const char *s);
/* Token of a single byte, or -1 when the vocabulary has none. */
int tokenizer_bpe_byte_id(const struct tokenizer *t, unsigned char byte);
/* drop != 0: bytes the vocabulary has no token for are left out of their piece,
 * as Hugging Face tokenizers does (see above); 0 (the default): refused. */
void tokenizer_bpe_drop_unknown(struct tokenizer *t, int drop);
/* Name of the pre-tokenizer in use ("smollm", "gpt2"). */
const char *tokenizer_bpe_pre(const struct tokenizer *t);

#endif
