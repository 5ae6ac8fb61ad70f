/* io/gguf_tokenizer.c: the byte-level BPE tokenizer from a GGUF file's
 * tokenizer.ggml.* metadata (tokenizer/bpe.h): tokens, token types, "LEFT RIGHT"
 * merges, the llama.cpp pre-tokenizer name, bos/eos/pad ids, add_bos_token and
 * the chat template, as a struct bpe_spec that tokenizer_bpe_build turns into
 * a tokenizer (and hf_tokenizer.c can write out as tokenizer.json). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "tokenizer/bpe.h"

static int optional_id(const struct gguf_file *f, const char *key, int *out, char *err,
                       size_t errlen) {
  int64_t v;
  *out = -1;
  if (!gguf_find_kv(f, key)) return 0;
  if (gguf_get_int(f, key, &v, err, errlen)) return -1;
  *out = v >= -1 && v < INT32_MAX ? (int)v : INT32_MAX;  /* out of range: tokenizer_bpe_build says */
  return 0;
}

/* tokens, token types and "LEFT RIGHT" merges into the spec. */
static int spec_arrays(struct bpe_spec *s, const struct gguf_file *f, char *err, size_t errlen) {
  struct gguf_str *tok = NULL, *mg = NULL;
  int32_t *types = NULL;
  uint64_t n_tok = 0, n_mg = 0, n_types = 0;
  int rc = -1;
  if (gguf_get_str_array(f, "tokenizer.ggml.tokens", &tok, &n_tok, err, errlen) ||
      gguf_get_str_array(f, "tokenizer.ggml.merges", &mg, &n_mg, err, errlen))
    goto out;
  if (n_tok < 256 || n_tok > (1u << 30)) {
    snprintf(err, errlen, "%s: %llu tokens is not a byte-level vocabulary", f->path,
             (unsigned long long)n_tok);
    goto out;
  }
  s->n = (int)n_tok;
  s->n_merges = (size_t)n_mg;
  s->tok = malloc(sizeof *s->tok * n_tok);
  s->merges = malloc(sizeof *s->merges * 2 * (n_mg ? n_mg : 1));
  s->type = malloc(n_tok);
  if (!s->tok || !s->merges || !s->type) goto out;
  memset(s->type, BPE_TT_NORMAL, n_tok);
  for (uint64_t i = 0; i < n_tok; i++) s->tok[i] = (struct bpe_str){.p = tok[i].p, .len = (size_t)tok[i].len};
  for (uint64_t r = 0; r < n_mg; r++) {
    const char *sp = memchr(mg[r].p, ' ', mg[r].len);
    if (!sp) {
      snprintf(err, errlen, "%s: merge %llu is not 'LEFT RIGHT'", f->path, (unsigned long long)r);
      goto out;
    }
    s->merges[2 * r] = (struct bpe_str){.p = mg[r].p, .len = (size_t)(sp - mg[r].p)};
    s->merges[2 * r + 1] = (struct bpe_str){.p = sp + 1,
                                           .len = (size_t)(mg[r].len - (uint64_t)(sp - mg[r].p) - 1)};
  }
  if (gguf_find_kv(f, "tokenizer.ggml.token_type")) {
    if (gguf_get_int_array(f, "tokenizer.ggml.token_type", &types, &n_types, err, errlen)) goto out;
    if (n_types != n_tok) {
      snprintf(err, errlen, "%s: %llu token types for %llu tokens", f->path,
               (unsigned long long)n_types, (unsigned long long)n_tok);
      goto out;
    }
    for (uint64_t i = 0; i < n_tok; i++) s->type[i] = (uint8_t)(types[i] & 0xff);
  }
  rc = 0;
out:
  free(tok);
  free(mg);
  free(types);
  return rc;
}

int tokenizer_bpe_spec_gguf(struct bpe_spec *s, const struct gguf_file *f, char *err,
                            size_t errlen) {
  struct gguf_str model, pre = {"default", 7}, tpl = {NULL, 0};
  memset(s, 0, sizeof *s);
  s->path = f->path;
  snprintf(err, errlen, "%s: out of memory reading the tokenizer", f->path);
  if (gguf_get_str(f, "tokenizer.ggml.model", &model, err, errlen)) return -1;
  if (model.len != 4 || memcmp(model.p, "gpt2", 4)) {
    snprintf(err, errlen, "%s: tokenizer.ggml.model '%.*s' is not byte-level BPE ('gpt2')", f->path,
             (int)(model.len < 64 ? model.len : 64), model.p);
    return -1;
  }
  const struct gguf_kv *kv = gguf_find_kv(f, "tokenizer.ggml.add_bos_token");
  s->add_bos = !kv || kv->type != GGUF_BOOL || kv->val[0] != 0;  /* llama.cpp's default: true */
  if (spec_arrays(s, f, err, errlen) ||
      (gguf_find_kv(f, "tokenizer.ggml.pre") &&
       gguf_get_str(f, "tokenizer.ggml.pre", &pre, err, errlen)) ||
      optional_id(f, "tokenizer.ggml.bos_token_id", &s->bos_id, err, errlen) ||
      optional_id(f, "tokenizer.ggml.eos_token_id", &s->eos_id, err, errlen) ||
      optional_id(f, "tokenizer.ggml.padding_token_id", &s->pad_id, err, errlen) ||
      (gguf_find_kv(f, "tokenizer.chat_template") &&
       gguf_get_str(f, "tokenizer.chat_template", &tpl, err, errlen))) {
    tokenizer_bpe_spec_free(s);
    return -1;
  }
  s->chat_template = (struct bpe_str){.p = tpl.p, .len = (size_t)tpl.len};
  snprintf(s->pre, sizeof s->pre, "%.*s", (int)(pre.len < 31 ? pre.len : 31), pre.p);
  return 0;
}

int tokenizer_bpe_from_gguf(struct tokenizer *t, const struct gguf_file *f, char *err,
                            size_t errlen) {
  struct bpe_spec s;
  memset(t, 0, sizeof *t);
  if (tokenizer_bpe_spec_gguf(&s, f, err, errlen)) return -1;
  int rc = tokenizer_bpe_build(t, &s, err, errlen);
  tokenizer_bpe_spec_free(&s);
  return rc;
}

int tokenizer_bpe_load(struct tokenizer *t, const char *gguf_path, char *err, size_t errlen) {
  struct gguf_file f;
  if (gguf_open(&f, gguf_path, err, errlen)) return -1;
  int rc = tokenizer_bpe_from_gguf(t, &f, err, errlen);
  gguf_close(&f);
  return rc;
}
