/* tokenizer/tokenizer.h: text <-> token ids. One struct for every kind of tokenizer; the
 * kind's functions sit behind `ops`, so a byte-level BPE (tokenizer/bpe.c) slots
 * in beside the built-in character tokenizer without touching callers.
 *
 * Built-in character tokenizer (TOK_CHAR), vocab 98:
 *   ids 0..94  = printable ASCII bytes 32..126 (id = byte - 32; ' ' is 0, '~' is 94)
 *   id  95     = BOS, 96 = EOS, 97 = PAD
 * Any other byte (newline, tab, control, >= 128) is not encodable: encode returns
 * TOK_ERR_UNKNOWN and the byte offset, for the caller to report (no silent mapping). */
#ifndef RLPT_TOKENIZER_H
#define RLPT_TOKENIZER_H

#include <stddef.h>

enum tok_kind { TOK_CHAR = 0, TOK_BPE = 1 };

#define TOK_CHAR_BOS 95
#define TOK_CHAR_EOS 96
#define TOK_CHAR_PAD 97
#define TOK_CHAR_VOCAB 98

/* Return codes of encode/decode. */
#define TOK_OK 0
#define TOK_ERR_UNKNOWN 1   /* encode: a byte/sequence with no token; decode: id out of range */
#define TOK_ERR_SPACE 2     /* the output buffer is too small */
#define TOK_ERR_NOMEM 3     /* tokenizer_decode_alloc: out of memory */

struct tokenizer;

struct tokenizer_ops {
  /* text[0..len) -> ids; writes at most cap ids. On success *n_ids = count.
   * On TOK_ERR_UNKNOWN *err_at = byte offset of the culprit; on TOK_ERR_SPACE
   * *n_ids = the ids needed when known (else 0). */
  int (*encode)(const struct tokenizer *t, const char *text, size_t len, int *ids, size_t cap,
                size_t *n_ids, size_t *err_at);
  /* ids -> text (NUL-terminated, out_cap includes the NUL). Special tokens are
   * skipped. On TOK_ERR_UNKNOWN *len_out = index of the bad id. */
  int (*decode)(const struct tokenizer *t, const int *ids, size_t n, char *out, size_t out_cap,
                size_t *len_out);
  /* Printable form of one token ("a", "<eos>"); "<invalid>" for out-of-range ids. */
  const char *(*token_str)(const struct tokenizer *t, int id);
  void (*release)(struct tokenizer *t);  /* frees impl; NULL when nothing to free */
  /* 1 for ids decode skips (control tokens); NULL: BOS, EOS and PAD. */
  int (*is_special)(const struct tokenizer *t, int id);
};

struct tokenizer {
  enum tok_kind kind;
  int vocab_size;
  int bos_id, eos_id, pad_id;
  const struct tokenizer_ops *ops;
  void *impl;  /* kind-specific state (NULL for TOK_CHAR) */
};

/* The built-in character tokenizer (cannot fail). */
void tokenizer_init_char(struct tokenizer *t);
void tokenizer_free(struct tokenizer *t);
const char *tokenizer_kind_name(enum tok_kind kind);

int tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, int *ids, size_t cap,
                     size_t *n_ids, size_t *err_at);
/* A prompt's ids: BOS (when the tokenizer has one, bos_id >= 0) then text's tokens,
 * with one BOS when the text already starts with it (a chat template that writes
 * BOS itself, as Llama 3's "{{ bos_token }}"). cap counts the BOS slot; *n_ids
 * includes it. Returns as tokenizer_encode. */
int tokenizer_encode_prompt(const struct tokenizer *t, const char *text, size_t len, int *ids,
                            size_t cap, size_t *n_ids, size_t *err_at);
int tokenizer_decode(const struct tokenizer *t, const int *ids, size_t n, char *out, size_t out_cap,
                     size_t *len_out);
/* ids decoded into a new NUL-terminated string (*text; free() it), *len its bytes. A
 * byte-level BPE token can hold many bytes, so the buffer grows until the text fits.
 * Returns as tokenizer_decode (TOK_ERR_UNKNOWN: *len = the bad token's index) or
 * TOK_ERR_NOMEM; *text is NULL on any error. */
int tokenizer_decode_alloc(const struct tokenizer *t, const int *ids, size_t n, char **text, size_t *len);
/* A generated response as text: as tokenizer_decode_alloc, except that ids at or past
 * the tokenizer's vocab_size decode to nothing, as Hugging Face's tokenizers do with ids
 * they do not know. A model's vocabulary is often padded past its tokenizer's (a
 * multiple of 64 or 128 rows; Qwen2 151936 for 151665 tokens) and a sampler can draw a
 * padding row, most of all from an untrained model. Negative ids still fail. */
int tokenizer_decode_generated(const struct tokenizer *t, const int *ids, size_t n, char **text,
                               size_t *len);
const char *tokenizer_token_str(const struct tokenizer *t, int id);
int tokenizer_is_special(const struct tokenizer *t, int id);

#endif
