/* tokenizer/tokenizer.c: the tokenizer dispatch and the built-in character tokenizer
 * (printable ASCII + BOS/EOS/PAD; layout in tokenizer/tokenizer.h). */
#include "tokenizer/tokenizer.h"

#include <stdlib.h>
#include <string.h>

#define CHAR_FIRST 32
#define CHAR_LAST 126

/* One NUL-terminated string per printable byte, so token_str needs no buffer. */
static const char char_strs[CHAR_LAST - CHAR_FIRST + 1][2] = {
  " ", "!", "\"", "#", "$", "%", "&", "'", "(", ")", "*", "+", ",", "-", ".", "/",
  "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", ":", ";", "<", "=", ">", "?",
  "@", "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O",
  "P", "Q", "R", "S", "T", "U", "V", "W", "X", "Y", "Z", "[", "\\", "]", "^", "_",
  "`", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o",
  "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z", "{", "|", "}", "~",
};

static int char_encode(const struct tokenizer *t, const char *text, size_t len, int *ids, size_t cap,
                       size_t *n_ids, size_t *err_at) {
  (void)t;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if (c < CHAR_FIRST || c > CHAR_LAST) {
      if (err_at) *err_at = i;
      *n_ids = i;
      return TOK_ERR_UNKNOWN;
    }
  }
  if (len > cap) {
    *n_ids = len;
    return TOK_ERR_SPACE;
  }
  for (size_t i = 0; i < len; i++) ids[i] = (unsigned char)text[i] - CHAR_FIRST;
  *n_ids = len;
  return TOK_OK;
}

static int char_decode(const struct tokenizer *t, const int *ids, size_t n, char *out, size_t out_cap,
                       size_t *len_out) {
  size_t w = 0;
  *len_out = 0;
  if (out_cap == 0) return TOK_ERR_SPACE;
  for (size_t i = 0; i < n; i++) {
    int id = ids[i];
    if (id < 0 || id >= t->vocab_size) {
      out[w] = '\0';
      *len_out = i;
      return TOK_ERR_UNKNOWN;
    }
    if (id > CHAR_LAST - CHAR_FIRST) continue;  /* BOS, EOS, PAD */
    if (w + 1 >= out_cap) {
      out[w] = '\0';
      *len_out = w;
      return TOK_ERR_SPACE;
    }
    out[w++] = (char)(id + CHAR_FIRST);
  }
  out[w] = '\0';
  *len_out = w;
  return TOK_OK;
}

static const char *char_token_str(const struct tokenizer *t, int id) {
  if (id >= 0 && id <= CHAR_LAST - CHAR_FIRST) return char_strs[id];
  if (id == t->bos_id) return "<bos>";
  if (id == t->eos_id) return "<eos>";
  if (id == t->pad_id) return "<pad>";
  return "<invalid>";
}

static const struct tokenizer_ops char_ops = {.encode = char_encode, .decode = char_decode,
                                              .token_str = char_token_str};

void tokenizer_init_char(struct tokenizer *t) {
  memset(t, 0, sizeof *t);
  t->kind = TOK_CHAR;
  t->vocab_size = TOK_CHAR_VOCAB;
  t->bos_id = TOK_CHAR_BOS;
  t->eos_id = TOK_CHAR_EOS;
  t->pad_id = TOK_CHAR_PAD;
  t->ops = &char_ops;
}

void tokenizer_free(struct tokenizer *t) {
  if (t->ops && t->ops->release) t->ops->release(t);
  t->impl = NULL;
}

const char *tokenizer_kind_name(enum tok_kind kind) {
  switch (kind) {
    case TOK_CHAR: return "char";
    case TOK_BPE: return "bpe";
  }
  return "unknown";
}

int tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, int *ids, size_t cap,
                     size_t *n_ids, size_t *err_at) {
  return t->ops->encode(t, text, len, ids, cap, n_ids, err_at);
}

int tokenizer_encode_prompt(const struct tokenizer *t, const char *text, size_t len, int *ids,
                            size_t cap, size_t *n_ids, size_t *err_at) {
  size_t b = t->bos_id >= 0;
  if (cap < b) return TOK_ERR_SPACE;
  if (b) ids[0] = t->bos_id;
  int rc = tokenizer_encode(t, text, len, ids + b, cap - b, n_ids, err_at);
  if (rc) return rc;
  if (b && *n_ids > 0 && ids[1] == t->bos_id) memmove(ids, ids + 1, sizeof(int) * *n_ids);
  else *n_ids += b;
  return TOK_OK;
}

int tokenizer_decode(const struct tokenizer *t, const int *ids, size_t n, char *out, size_t out_cap,
                     size_t *len_out) {
  return t->ops->decode(t, ids, n, out, out_cap, len_out);
}

int tokenizer_decode_alloc(const struct tokenizer *t, const int *ids, size_t n, char **text, size_t *len) {
  *text = NULL;
  for (size_t cap = 8 * n + 16;; cap *= 2) {
    char *buf = malloc(cap + 1);
    if (!buf) return TOK_ERR_NOMEM;
    int rc = tokenizer_decode(t, ids, n, buf, cap, len);
    if (rc == TOK_OK) {
      buf[*len] = '\0';
      *text = buf;
      return TOK_OK;
    }
    free(buf);
    if (rc != TOK_ERR_SPACE) return rc;
  }
}

int tokenizer_decode_generated(const struct tokenizer *t, const int *ids, size_t n, char **text,
                               size_t *len) {
  size_t k = 0;
  while (k < n && ids[k] < t->vocab_size) k++;
  if (k == n) return tokenizer_decode_alloc(t, ids, n, text, len);
  int *kept = malloc(sizeof(int) * n);
  if (!kept) return TOK_ERR_NOMEM;
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (ids[i] < t->vocab_size) kept[m++] = ids[i];
  int rc = tokenizer_decode_alloc(t, kept, m, text, len);
  free(kept);
  return rc;
}

const char *tokenizer_token_str(const struct tokenizer *t, int id) { return t->ops->token_str(t, id); }

int tokenizer_is_special(const struct tokenizer *t, int id) {
  if (t->ops->is_special) return t->ops->is_special(t, id);
  return id == t->bos_id || id == t->eos_id || id == t->pad_id;
}
