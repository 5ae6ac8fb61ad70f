/* io/hf_tokenizer.h: Hugging Face tokenizer files <-> the byte-level BPE tokenizer
 * (src/tokenizer/bpe.h).
 *
 * Reading a model directory: tokenizer.json gives model.vocab, model.merges
 * ("LEFT RIGHT" strings or, in newer files, [LEFT, RIGHT] arrays),
 * model.ignore_merges, added_tokens (special -> control, matched whole and
 * skipped by decode; not special -> user-defined, matched whole, decoded as
 * text) and the pre-tokenizer:
 *   ByteLevel(use_regex)                                  -> the GPT-2 regex ("gpt2")
 *   Sequence[Digits(individual_digits), ByteLevel(use_regex)] -> "smollm"
 *   Sequence[[Digits,] Split(Regex, Isolated), ByteLevel(no regex)] -> that regex
 *       (named "llama-bpe" / "qwen2" when it is theirs, else "regex").
 * Anything the C tokenizer would not reproduce (byte_fallback, add_prefix_space,
 * lstrip/rstrip added tokens, other normalizers or pre-tokenizers) is refused
 * with a message naming the file; the NFC normalizer (Qwen2) is accepted and,
 * as with GGUF, not applied (text is taken as already NFC). bos/eos/pad come
 * from tokenizer_config.json (bos_token, eos_token, pad_token), else
 * config.json, else generation_config.json (an eos list gives its first id);
 * BOS is added when tokenizer_config.json says add_bos_token = true, or, when it
 * is silent, when the post-processor is a TemplateProcessing that starts with a
 * special token (Llama 3). The chat template is tokenizer_config.json's
 * chat_template (a string, or the "default" of a list) or chat_template.jinja.
 *
 * Writing (rlpt convert GGUF -> directory): tokenizer.json and
 * tokenizer_config.json for a spec, such that reading them back gives the same
 * tokenizer and Hugging Face `tokenizers` / transformers load them. */
#ifndef RLPT_HF_TOKENIZER_H
#define RLPT_HF_TOKENIZER_H

#include <stddef.h>

#include "tokenizer/bpe.h"

struct cJSON;

/* An opened directory: its spec points into the JSON trees held here. */
struct hf_tokenizer {
  struct bpe_spec spec;
  char path[1024];                     /* DIR/tokenizer.json, for messages */
  struct cJSON *json, *config;         /* tokenizer.json, tokenizer_config.json (or NULL) */
  char *jinja;                         /* chat_template.jinja when that is the template */
};

/* 0, or -1 with "FILE: what" in err (a missing or malformed file is named). */
int hf_tokenizer_open(struct hf_tokenizer *h, const char *dir, char *err, size_t errlen);
void hf_tokenizer_close(struct hf_tokenizer *h);

/* The tokenizer of dir (open, build, close). *add_bos (may be NULL) gets the
 * directory's add-BOS verdict. 0, or -1 with a message. */
int hf_tokenizer_load(struct tokenizer *t, const char *dir, int *add_bos, char *err,
                      size_t errlen);

/* Writes dir/tokenizer.json and dir/tokenizer_config.json for s. 0, or -1. */
int hf_tokenizer_save(const char *dir, const struct bpe_spec *s, char *err, size_t errlen);

#endif
