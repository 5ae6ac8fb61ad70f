/* tokenizer_bpe.h: byte-level BPE (SmolLM2, StarCoder, GPT-2, Llama 3, Qwen2)
 * loaded from a GGUF file's tokenizer.ggml.* metadata, behind struct tokenizer.
 *
 * Encode: control / user-defined tokens are matched whole in the text first
 * (leftmost, longest); the rest is split into maximal valid-UTF-8 runs and runs
 * of invalid bytes; valid runs are pre-tokenized by the model's regex (PCRE2,
 * Unicode properties), invalid runs are one piece each; every piece is mapped
 * through the GPT-2 byte-to-unicode table and merged by merge rank. Any byte
 * string whose bytes all have a byte token encodes, and decode gives the bytes
 * back exactly (control tokens are skipped by decode, as tokenizer.h says). A
 * byte with no token (SmolLM2's vocabulary lacks 21, e.g. 0xff, 0xc0, 0x04)
 * makes encode return TOK_ERR_UNKNOWN with its offset, never a silent drop
 * (Hugging Face drops it). */
#ifndef RLPT_TOKENIZER_BPE_H
#define RLPT_TOKENIZER_BPE_H

#include <stddef.h>

#include "tokenizer.h"

struct gguf_file;

/* From an opened GGUF file. Returns 0, or -1 with "PATH: what" in err. */
int tokenizer_bpe_from_gguf(struct tokenizer *t, const struct gguf_file *f, char *err,
                            size_t errlen);
/* Opens path, loads the tokenizer, closes the file. */
int tokenizer_bpe_load(struct tokenizer *t, const char *gguf_path, char *err, size_t errlen);

/* Id of the token whose vocabulary text is exactly s (e.g. "<|im_end|>"); -1 if none. */
int tokenizer_bpe_find(const struct tokenizer *t, const char *s);
/* Token of a single byte, or -1 when the vocabulary has none. */
int tokenizer_bpe_byte_id(const struct tokenizer *t, unsigned char byte);
/* Name of the pre-tokenizer in use ("smollm", "gpt2"). */
const char *tokenizer_bpe_pre(const struct tokenizer *t);

#endif
