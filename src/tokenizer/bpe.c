/* tokenizer/bpe.c: byte-level BPE built from a struct bpe_spec (see tokenizer/bpe.h).
 *
 * Pre-tokenizers, as llama.cpp (llama-vocab.cpp) and Hugging Face define them:
 *   gpt2 / default:               the GPT-2 regex
 *   smollm / starcoder / refact:  every \p{N} character isolated first, then
 *                                 the GPT-2 regex on the pieces between
 *   llama-bpe (Llama 3), qwen2:   their own regexes (below)
 * Checked against Hugging Face `tokenizers` built from the same vocabulary and
 * merges (tests/ref/bpe_ref.py, tests/tokenizer/test_bpe.c). */
#include "tokenizer/bpe.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include "util/utf8.h"

#define GPT2_REGEX "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
/* Llama 3 and Qwen2: case-insensitive contractions, a letter run with one leading
 * non-letter, digits in groups of up to 3 (Llama 3) or 1 (Qwen2), newlines kept apart. */
#define LLAMA3_REGEX "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" \
  "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define QWEN2_REGEX "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" \
  "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* tokenizer.ggml.pre -> the regex (and whether \p{N} characters are isolated first). */
static const struct pre_kind {
  const char *name, *regex;
  int split_digits;
} pre_kinds[] = {
  {"smollm", GPT2_REGEX, 1}, {"starcoder", GPT2_REGEX, 1}, {"refact", GPT2_REGEX, 1},
  {"gpt2", GPT2_REGEX, 0},   {"default", GPT2_REGEX, 0},  {"llama-bpe", LLAMA3_REGEX, 0},
  {"qwen2", QWEN2_REGEX, 0},
};

enum { TT_NORMAL = BPE_TT_NORMAL, TT_CONTROL = BPE_TT_CONTROL, TT_USER = BPE_TT_USER };

struct merge_slot {
  uint64_t key;   /* (left id + 1) << 32 | right id; 0 = empty */
  int rank, id;   /* rank in the merge list, id of the merged token */
};

struct bpe {
  int n;
  char **str;              /* vocabulary text, NUL-terminated (byte-level unicode form) */
  char *str_arena;
  uint8_t *bytes;          /* each token's decoded bytes */
  size_t *bytes_off, *bytes_len;
  uint8_t *type;           /* TT_* (other GGUF types kept as given) */
  int *hash;               /* open addressing over str: token id or -1 */
  size_t hash_mask;
  struct merge_slot *merges;
  size_t merge_mask;
  int byte_id[256];        /* token of each single byte */
  int *special;            /* control + user-defined ids, longest text first */
  int n_special;
  uint8_t special_first[256]; /* 1 when some special token starts with this byte */
  char pre[32];
  int split_digits, ignore_merges;
  int drop_unknown;        /* bytes without a token are left out (tokenizer_bpe_drop_unknown) */
  pcre2_code *re_word, *re_digit;
};

/* ---- GPT-2 byte <-> unicode map ---------------------------------------------------- */

/* Bytes that are printable keep their code point; the other 68 map to 256, 257, ... */
static void byte_unicode_map(int cp_of_byte[256]) {
  int next = 256;
  for (int b = 0; b < 256; b++) {
    int keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    cp_of_byte[b] = keep ? b : next++;
  }
}

static size_t utf8_put(int cp, char *out) {
  if (cp < 0x80) { out[0] = (char)cp; return 1; }
  out[0] = (char)(0xc0 | (cp >> 6));
  out[1] = (char)(0x80 | (cp & 0x3f));
  return 2;  /* the map only uses code points < 0x800 */
}

/* Decodes one code point of a valid UTF-8 string; returns its length. */
static size_t utf8_get(const uint8_t *s, int *cp) {
  if (s[0] < 0x80) { *cp = s[0]; return 1; }
  if (s[0] < 0xe0) { *cp = (s[0] & 0x1f) << 6 | (s[1] & 0x3f); return 2; }
  if (s[0] < 0xf0) { *cp = (s[0] & 0x0f) << 12 | (s[1] & 0x3f) << 6 | (s[2] & 0x3f); return 3; }
  *cp = (s[0] & 0x07) << 18 | (s[1] & 0x3f) << 12 | (s[2] & 0x3f) << 6 | (s[3] & 0x3f);
  return 4;
}

/* ---- vocabulary hash and merges ------------------------------------------------------ */

static uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

static int vocab_find(const struct bpe *b, const char *s, size_t n) {
  for (size_t i = fnv1a(s, n) & b->hash_mask;; i = (i + 1) & b->hash_mask) {
    int id = b->hash[i];
    if (id < 0) return -1;
    if (strlen(b->str[id]) == n && !memcmp(b->str[id], s, n)) return id;
  }
}

static uint64_t merge_key(int a, int c) { return ((uint64_t)(a + 1) << 32) | (uint32_t)c; }

static const struct merge_slot *merge_find(const struct bpe *b, int a, int c) {
  uint64_t k = merge_key(a, c);
  for (size_t i = (k * 0x9e3779b97f4a7c15ull >> 20) & b->merge_mask;; i = (i + 1) & b->merge_mask) {
    if (b->merges[i].key == k) return &b->merges[i];
    if (!b->merges[i].key) return NULL;
  }
}

static size_t pow2_above(size_t n) {
  size_t p = 16;
  while (p < 2 * n) p *= 2;
  return p;
}

/* ---- encoding --------------------------------------------------------------------- */

struct emit {
  int *ids;
  size_t cap, n;
};

static void emit(struct emit *e, int id) {
  if (e->n < e->cap) e->ids[e->n] = id;
  e->n++;
}

/* A candidate merge of the symbols at list positions pos and next[pos]. */
struct cand {
  int rank, pos, left, right;
};

static int cand_less(const struct cand *x, const struct cand *y) {
  return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static void heap_push(struct cand *h, size_t *n, struct cand c) {
  size_t i = (*n)++;
  while (i > 0 && cand_less(&c, &h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = c;
}

static struct cand heap_pop(struct cand *h, size_t *n) {
  struct cand top = h[0], last = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && cand_less(&h[c + 1], &h[c])) c++;
    if (!cand_less(&h[c], &last)) break;
    h[i] = h[c];
    i = c;
  }
  if (*n) h[i] = last;
  return top;
}

/* Pushes the merge of positions p and next[p] when the pair is in the merge list. */
static void push_pair(const struct bpe *b, struct cand *h, size_t *nh, const int *sym,
                      const int *next, int p) {
  if (p < 0 || next[p] < 0) return;
  const struct merge_slot *ms = merge_find(b, sym[p], sym[next[p]]);
  if (ms) heap_push(h, nh, (struct cand){.rank = ms->rank, .pos = p, .left = sym[p], .right = sym[next[p]]});
}

/* tokenizer.json's ignore_merges (Llama 3): a piece that is a token as a whole
 * is that token, whatever the merges would make of it. Its id, -1 when not in
 * the vocabulary, -2 when out of memory. */
static int piece_in_vocab(const struct bpe *b, const uint8_t *s, size_t n) {
  char *u = malloc(2 * n + 1);  /* byte-level text: at most 2 UTF-8 bytes per byte */
  if (!u) return -2;
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    if (b->byte_id[s[i]] < 0) {  /* drop_unknown: a byte without a token */
      free(u);
      return -1;
    }
    const char *c = b->str[b->byte_id[s[i]]];
    size_t k = strlen(c);
    memcpy(u + w, c, k);
    w += k;
  }
  int id = vocab_find(b, u, w);
  free(u);
  return id;
}

/* BPE on one piece: start from byte tokens, merge the lowest-ranked adjacent
 * pair (leftmost on ties) until none is in the merge list. The symbols form a
 * linked list over their first byte's position and the candidate merges a heap
 * ordered by (rank, position); a popped candidate whose symbols have changed
 * since it was pushed is stale and skipped. O(n log n) in the piece length. */
static int bpe_piece(const struct bpe *b, const uint8_t *s, size_t n, struct emit *e) {
  int whole = b->ignore_merges ? piece_in_vocab(b, s, n) : -1;
  if (whole != -1) {
    if (whole >= 0) emit(e, whole);
    return whole >= 0 ? 0 : -1;
  }
  int *ints = malloc(3 * n * sizeof *ints);
  struct cand *h = malloc(3 * n * sizeof *h);  /* n-1 pairs + at most 2 per merge */
  if (!ints || !h) {
    free(ints);
    free(h);
    return -1;
  }
  int *sym = ints, *prev = ints + n, *next = ints + 2 * n;
  size_t nh = 0, m = 0;
  for (size_t i = 0; i < n; i++)  /* bytes without a token only get here with drop_unknown */
    if (b->byte_id[s[i]] >= 0) sym[m++] = b->byte_id[s[i]];
  n = m;
  for (size_t i = 0; i < n; i++) {
    prev[i] = (int)i - 1;
    next[i] = i + 1 < n ? (int)i + 1 : -1;
  }
  for (size_t i = 0; i + 1 < n; i++) push_pair(b, h, &nh, sym, next, (int)i);
  while (nh) {
    struct cand c = heap_pop(h, &nh);
    int r = next[c.pos];
    if (sym[c.pos] != c.left || r < 0 || sym[r] != c.right || prev[r] != c.pos) continue;
    sym[c.pos] = merge_find(b, c.left, c.right)->id;
    sym[r] = -1;  /* removed: no candidate can match it again */
    next[c.pos] = next[r];
    if (next[r] >= 0) prev[next[r]] = c.pos;
    push_pair(b, h, &nh, sym, next, prev[c.pos]);
    push_pair(b, h, &nh, sym, next, c.pos);
  }
  for (int p = n ? 0 : -1; p >= 0; p = next[p]) emit(e, sym[p]);
  free(ints);
  free(h);
  return 0;
}

/* Splits s by re: matches and the gaps between them become pieces, fed to
 * next (another split or BPE). */
typedef int (*piece_fn)(const struct bpe *b, const uint8_t *s, size_t n, pcre2_match_data *md,
                        struct emit *e);

static int split_regex(const struct bpe *b, const pcre2_code *re, const uint8_t *s, size_t n,
                       pcre2_match_data *md, struct emit *e, piece_fn next) {
  size_t pos = 0, done = 0;
  while (pos < n) {
    int rc = pcre2_match(re, s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) return -1;
    /* copy the match out: next() reuses md for the nested split */
    size_t m0 = pcre2_get_ovector_pointer(md)[0], m1 = pcre2_get_ovector_pointer(md)[1];
    if (m0 > done && next(b, s + done, m0 - done, md, e)) return -1;
    if (m1 > m0 && next(b, s + m0, m1 - m0, md, e)) return -1;
    done = m1;
    if (m1 > m0) {
      pos = m1;
    } else {  /* empty match: step one character */
      int cp;
      pos = m0 + utf8_get(s + m0, &cp);
    }
  }
  if (done < n && next(b, s + done, n - done, md, e)) return -1;
  return 0;
}

static int piece_bpe(const struct bpe *b, const uint8_t *s, size_t n, pcre2_match_data *md,
                     struct emit *e) {
  (void)md;
  return bpe_piece(b, s, n, e);
}

static int piece_words(const struct bpe *b, const uint8_t *s, size_t n, pcre2_match_data *md,
                       struct emit *e) {
  return split_regex(b, b->re_word, s, n, md, e, piece_bpe);
}

/* A valid UTF-8 run through the pre-tokenizer. */
static int encode_valid(const struct bpe *b, const uint8_t *s, size_t n, pcre2_match_data *md,
                        struct emit *e) {
  if (b->split_digits) return split_regex(b, b->re_digit, s, n, md, e, piece_words);
  return piece_words(b, s, n, md, e);
}

/* Text without special tokens: valid runs through the regexes, invalid runs as one piece. */
static int encode_plain(const struct bpe *b, const uint8_t *s, size_t n, pcre2_match_data *md,
                        struct emit *e) {
  size_t i = 0;
  while (i < n) {
    size_t j = i, len;
    int valid = utf8_char_len(s + i, n - i) != 0;
    while (j < n && ((len = utf8_char_len(s + j, n - j)) != 0) == valid) j += valid ? len : 1;
    int rc = valid ? encode_valid(b, s + i, j - i, md, e) : bpe_piece(b, s + i, j - i, e);
    if (rc) return -1;
    i = j;
  }
  return 0;
}

/* The longest special token starting at s[0..n), or -1. */
static int special_at(const struct bpe *b, const uint8_t *s, size_t n) {
  if (!b->special_first[s[0]]) return -1;
  for (int k = 0; k < b->n_special; k++) {  /* sorted longest first */
    int id = b->special[k];
    size_t len = b->bytes_len[id];
    if (len && len <= n && !memcmp(s, b->bytes + b->bytes_off[id], len)) return id;
  }
  return -1;
}

static int bpe_encode(const struct tokenizer *t, const char *text, size_t len, int *ids, size_t cap,
                      size_t *n_ids, size_t *err_at) {
  const struct bpe *b = t->impl;
  const uint8_t *s = (const uint8_t *)text;
  struct emit e = {.ids = ids, .cap = cap, .n = 0};
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(b->re_word, NULL);
  if (err_at) *err_at = 0;
  *n_ids = 0;
  if (!md) return TOK_ERR_SPACE;
  size_t start = 0, i = 0;
  int rc = 0;
  while (i < len && !rc) {
    int sp = special_at(b, s + i, len - i);
    if (sp < 0 && b->byte_id[s[i]] < 0 && !b->drop_unknown) {  /* no token can hold this byte */
      pcre2_match_data_free(md);
      if (err_at) *err_at = i;
      return TOK_ERR_UNKNOWN;
    }
    if (sp < 0) {
      i++;
      continue;
    }
    rc = encode_plain(b, s + start, i - start, md, &e);
    emit(&e, sp);
    i += b->bytes_len[sp];
    start = i;
  }
  if (!rc) rc = encode_plain(b, s + start, len - start, md, &e);
  pcre2_match_data_free(md);
  *n_ids = rc ? 0 : e.n;
  if (rc) return TOK_ERR_SPACE;  /* out of memory or a regex resource limit */
  return e.n > cap ? TOK_ERR_SPACE : TOK_OK;
}

/* ---- decoding and the other ops ---------------------------------------------------- */

static int bpe_decode(const struct tokenizer *t, const int *ids, size_t n, char *out, size_t out_cap,
                      size_t *len_out) {
  const struct bpe *b = t->impl;
  size_t w = 0;
  *len_out = 0;
  if (out_cap == 0) return TOK_ERR_SPACE;
  for (size_t i = 0; i < n; i++) {
    int id = ids[i];
    if (id < 0 || id >= b->n) {
      out[w] = '\0';
      *len_out = i;
      return TOK_ERR_UNKNOWN;
    }
    if (b->type[id] == TT_CONTROL) continue;
    size_t len = b->bytes_len[id];
    if (w + len + 1 > out_cap) {
      out[w] = '\0';
      *len_out = w;
      return TOK_ERR_SPACE;
    }
    memcpy(out + w, b->bytes + b->bytes_off[id], len);
    w += len;
  }
  out[w] = '\0';
  *len_out = w;
  return TOK_OK;
}

static const char *bpe_token_str(const struct tokenizer *t, int id) {
  const struct bpe *b = t->impl;
  return id >= 0 && id < b->n ? b->str[id] : "<invalid>";
}

static int bpe_is_special(const struct tokenizer *t, int id) {
  const struct bpe *b = t->impl;
  return id >= 0 && id < b->n && b->type[id] == TT_CONTROL;
}

static void bpe_free(struct bpe *b) {
  if (!b) return;
  free(b->str);
  free(b->str_arena);
  free(b->bytes);
  free(b->bytes_off);
  free(b->bytes_len);
  free(b->type);
  free(b->hash);
  free(b->merges);
  free(b->special);
  pcre2_code_free(b->re_word);
  pcre2_code_free(b->re_digit);
  free(b);
}

static void bpe_release(struct tokenizer *t) { bpe_free(t->impl); }

static const struct tokenizer_ops bpe_ops = {.encode = bpe_encode, .decode = bpe_decode,
                                             .token_str = bpe_token_str, .release = bpe_release,
                                             .is_special = bpe_is_special};

int tokenizer_bpe_find(const struct tokenizer *t, const char *s) {
  if (t->kind != TOK_BPE) return -1;
  return vocab_find(t->impl, s, strlen(s));
}

int tokenizer_bpe_byte_id(const struct tokenizer *t, unsigned char byte) {
  return t->kind == TOK_BPE ? ((const struct bpe *)t->impl)->byte_id[byte] : -1;
}

void tokenizer_bpe_drop_unknown(struct tokenizer *t, int drop) {
  if (t->kind == TOK_BPE) ((struct bpe *)t->impl)->drop_unknown = drop != 0;
}

const char *tokenizer_bpe_pre(const struct tokenizer *t) {
  return t->kind == TOK_BPE ? ((const struct bpe *)t->impl)->pre : "";
}

/* ---- building from a spec ----------------------------------------------------------- */

/* Vocabulary texts (NUL-terminated copies) and the hash over them. */
static int load_vocab(struct bpe *b, const struct bpe_str *tok, const char *path, char *err,
                      size_t errlen) {
  size_t total = 0;
  for (int i = 0; i < b->n; i++) total += tok[i].len + 1;
  b->str = malloc(sizeof *b->str * b->n);
  b->str_arena = malloc(total);
  b->hash_mask = pow2_above((size_t)b->n) - 1;
  b->hash = malloc(sizeof *b->hash * (b->hash_mask + 1));
  if (!b->str || !b->str_arena || !b->hash) {
    snprintf(err, errlen, "%s: out of memory for the vocabulary", path);
    return -1;
  }
  memset(b->hash, 0xff, sizeof *b->hash * (b->hash_mask + 1));
  char *p = b->str_arena;
  for (int i = 0; i < b->n; i++) {
    if (memchr(tok[i].p, '\0', tok[i].len)) {
      snprintf(err, errlen, "%s: token %d contains a NUL byte", path, i);
      return -1;
    }
    memcpy(p, tok[i].p, tok[i].len);
    p[tok[i].len] = '\0';
    b->str[i] = p;
    p += tok[i].len + 1;
    if (vocab_find(b, b->str[i], tok[i].len) >= 0) continue;  /* duplicates: first id wins */
    size_t h = fnv1a(b->str[i], tok[i].len) & b->hash_mask;
    while (b->hash[h] >= 0) h = (h + 1) & b->hash_mask;
    b->hash[h] = i;
  }
  return 0;
}

static int load_bytes(struct bpe *b, const char *path, char *err, size_t errlen) {
  int cp_of_byte[256], byte_of_cp[324];
  byte_unicode_map(cp_of_byte);
  memset(byte_of_cp, 0xff, sizeof byte_of_cp);
  for (int i = 0; i < 256; i++) byte_of_cp[cp_of_byte[i]] = i;
  size_t total = 0;
  for (int i = 0; i < b->n; i++) total += strlen(b->str[i]);
  b->bytes = malloc(total ? total : 1);
  b->bytes_off = malloc(sizeof(size_t) * b->n);
  b->bytes_len = malloc(sizeof(size_t) * b->n);
  if (!b->bytes || !b->bytes_off || !b->bytes_len) {
    snprintf(err, errlen, "%s: out of memory for the vocabulary", path);
    return -1;
  }
  size_t w = 0;
  for (int i = 0; i < b->n; i++) {
    const uint8_t *s = (const uint8_t *)b->str[i];
    size_t n = strlen(b->str[i]);
    b->bytes_off[i] = w;
    int literal = b->type[i] == TT_CONTROL || b->type[i] == TT_USER;
    for (size_t k = 0; k < n;) {
      size_t len = utf8_char_len(s + k, n - k);
      int cp = -1;
      if (len) utf8_get(s + k, &cp);
      if (literal) {
        b->bytes[w++] = s[k++];
        continue;
      }
      if (!len || cp >= 324 || byte_of_cp[cp] < 0) {
        snprintf(err, errlen, "%s: token %d ('%s') is not byte-level BPE text", path, i, b->str[i]);
        return -1;
      }
      b->bytes[w++] = (uint8_t)byte_of_cp[cp];
      k += len;
    }
    b->bytes_len[i] = w - b->bytes_off[i];
  }
  /* Vocabularies may lack bytes their training text never had (SmolLM2 has no
   * token for 0xff, 0xc0, some control bytes): encode reports those. */
  int have = 0;
  for (int c = 0; c < 256; c++) {
    char u[3] = {0};
    size_t n = utf8_put(cp_of_byte[c], u);
    b->byte_id[c] = vocab_find(b, u, n);
    have += b->byte_id[c] >= 0;
  }
  if (have < 128) {
    snprintf(err, errlen, "%s: only %d of the 256 byte tokens are in the vocabulary: not "
             "byte-level BPE", path, have);
    return -1;
  }
  return 0;
}

/* Merges as (left, right) pairs in rank order. */
static int load_merges(struct bpe *b, const struct bpe_str *mg, size_t n, const char *path,
                       char *err, size_t errlen) {
  b->merge_mask = pow2_above(n) - 1;
  b->merges = calloc(b->merge_mask + 1, sizeof *b->merges);
  if (!b->merges) {
    snprintf(err, errlen, "%s: out of memory for %zu merges", path, n);
    return -1;
  }
  char buf[512];
  for (size_t r = 0; r < n; r++) {
    const struct bpe_str *l = &mg[2 * r], *rt = &mg[2 * r + 1];
    if (!l->len || !rt->len || l->len + rt->len >= sizeof buf) {
      snprintf(err, errlen, "%s: merge %zu has an empty or over-long side", path, r);
      return -1;
    }
    memcpy(buf, l->p, l->len);
    memcpy(buf + l->len, rt->p, rt->len);
    int a = vocab_find(b, l->p, l->len), c = vocab_find(b, rt->p, rt->len);
    int ab = vocab_find(b, buf, l->len + rt->len);
    if (a < 0 || c < 0 || ab < 0) {
      snprintf(err, errlen, "%s: merge %zu ('%.*s %.*s') uses or makes a token not in the "
               "vocabulary", path, r, (int)l->len, l->p, (int)rt->len, rt->p);
      return -1;
    }
    if (merge_find(b, a, c)) continue;  /* a repeated merge keeps its first (lowest) rank */
    uint64_t k = merge_key(a, c);
    size_t i = (k * 0x9e3779b97f4a7c15ull >> 20) & b->merge_mask;
    while (b->merges[i].key) i = (i + 1) & b->merge_mask;
    b->merges[i] = (struct merge_slot){.key = k, .rank = (int)r, .id = ab};
  }
  return 0;
}

/* Special (control / user-defined) tokens sorted longest first for leftmost-longest matching. */
static int load_specials(struct bpe *b, const char *path, char *err, size_t errlen) {
  b->special = malloc(sizeof(int) * b->n);
  if (!b->special) {
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  for (int i = 0; i < b->n; i++)
    if ((b->type[i] == TT_CONTROL || b->type[i] == TT_USER) && b->bytes_len[i]) {
      b->special[b->n_special++] = i;
      b->special_first[b->bytes[b->bytes_off[i]]] = 1;
    }
  /* insertion sort by length, descending (a few dozen entries) */
  for (int i = 1; i < b->n_special; i++) {
    int id = b->special[i], j = i;
    while (j > 0 && b->bytes_len[b->special[j - 1]] < b->bytes_len[id]) {
      b->special[j] = b->special[j - 1];
      j--;
    }
    b->special[j] = id;
  }
  return 0;
}

static pcre2_code *compile(const char *pattern, const char *path, char *err, size_t errlen) {
  int ec;
  PCRE2_SIZE eo;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                 &ec, &eo, NULL);
  if (!re) {
    char msg[256];
    pcre2_get_error_message(ec, (PCRE2_UCHAR *)msg, sizeof msg);
    snprintf(err, errlen, "%s: pre-tokenizer regex does not compile at %zu: %s", path, (size_t)eo,
             msg);
    return NULL;
  }
  pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);  /* optional speed-up; the interpreter works too */
  return re;
}

/* The spec's pre-tokenizer: a llama.cpp name, or (tokenizer.json) a regex of its own. */
static int load_pre(struct bpe *b, const struct bpe_spec *s, char *err, size_t errlen) {
  snprintf(b->pre, sizeof b->pre, "%s", s->pre);
  const char *regex = s->regex;
  b->split_digits = s->split_digits;
  for (size_t i = 0; !regex && i < sizeof pre_kinds / sizeof pre_kinds[0]; i++)
    if (!strcmp(s->pre, pre_kinds[i].name)) {
      regex = pre_kinds[i].regex;
      b->split_digits = pre_kinds[i].split_digits;
    }
  if (!regex) {
    snprintf(err, errlen, "%s: pre-tokenizer '%s' is not supported (smollm, starcoder, refact, "
             "gpt2, default, llama-bpe, qwen2)", s->path, s->pre);
    return -1;
  }
  b->re_word = compile(regex, s->path, err, errlen);
  if (!b->re_word) return -1;
  if (b->split_digits && !(b->re_digit = compile("\\p{N}", s->path, err, errlen))) return -1;
  return 0;
}

static int check_id(const struct bpe_spec *s, const char *what, int id, char *err, size_t errlen) {
  if (id >= -1 && id < s->n) return 0;
  snprintf(err, errlen, "%s: %s id %d is outside the vocabulary (%d)", s->path, what, id, s->n);
  return -1;
}

static int build_all(struct bpe *b, const struct bpe_spec *s, char *err, size_t errlen) {
  if (s->n < 256 || s->n > (1 << 30)) {
    snprintf(err, errlen, "%s: %d tokens is not a byte-level vocabulary", s->path, s->n);
    return -1;
  }
  b->n = s->n;
  b->ignore_merges = s->ignore_merges;
  b->type = malloc((size_t)s->n);
  if (!b->type) return -1;
  if (s->type) memcpy(b->type, s->type, (size_t)s->n);
  else memset(b->type, TT_NORMAL, (size_t)s->n);
  return load_vocab(b, s->tok, s->path, err, errlen) || load_bytes(b, s->path, err, errlen) ||
                 load_merges(b, s->merges, s->n_merges, s->path, err, errlen) ||
                 load_specials(b, s->path, err, errlen) || load_pre(b, s, err, errlen) ||
                 check_id(s, "bos", s->bos_id, err, errlen) ||
                 check_id(s, "eos", s->eos_id, err, errlen) ||
                 check_id(s, "pad", s->pad_id, err, errlen)
             ? -1
             : 0;
}

int tokenizer_bpe_build(struct tokenizer *t, const struct bpe_spec *s, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  struct bpe *b = calloc(1, sizeof *b);
  snprintf(err, errlen, "%s: out of memory loading the tokenizer", s->path);
  if (!b || build_all(b, s, err, errlen)) {
    bpe_free(b);
    return -1;
  }
  t->kind = TOK_BPE;
  t->vocab_size = b->n;
  t->bos_id = s->bos_id;
  t->eos_id = s->eos_id;
  t->pad_id = s->pad_id;
  t->ops = &bpe_ops;
  t->impl = b;
  return 0;
}

void tokenizer_bpe_spec_free(struct bpe_spec *s) {
  free(s->tok);
  free(s->type);
  free(s->merges);
  s->tok = s->merges = NULL;
  s->type = NULL;
}
