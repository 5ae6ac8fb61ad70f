/* tokenizer/test_bpe.c: the byte-level BPE tokenizer.
 *
 * `test_bpe` (unit): a synthetic vocabulary (256 byte tokens, a few merges,
 * control tokens) written as GGUF here; hand-computed encodings for the
 * smollm (digits isolated) and gpt2 pre-tokenizers, merge order by rank,
 * special tokens matched whole, and exact decode(encode(s)) == s on 2000
 * seeded random byte strings (invalid UTF-8 included; a byte the vocabulary
 * lacks must be refused at its offset).
 * `test_bpe model` (label model): SmolLM2's vocabulary from the GGUF; ids must
 * equal Hugging Face `tokenizers` on tests/ref/bpe_golden.json (308 strings:
 * English, code, numbers, whitespace runs, emoji, CJK, invalid UTF-8, special
 * tokens; 17 hold a byte SmolLM2 has no token for and must be refused at its
 * offset) and decode must give the text back (control tokens dropped); the
 * same vocabulary through the Llama 3 (llama-bpe) and Qwen2 pre-tokenizers
 * against HF on the 291 encodable strings (tests/ref/bpe_golden_pre.json). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_testutil.h"
#include "io/gguf.h"
#include "testutil.h"
#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"

#define SKIP 77

static int load_synthetic(struct tokenizer *t, const char *pre, struct gb *g) {
  struct gguf_file f;
  char err[512];
  synthetic_gguf(g, pre);
  if (gguf_open_mem(&f, g->b, g->n, "synthetic.gguf", err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  int rc = tokenizer_bpe_from_gguf(t, &f, err, sizeof err);
  if (rc) fprintf(stderr, "%s\n", err);
  gguf_close(&f);
  return rc;
}

/* encode s and compare with want[0..n) */
static void expect_ids(const struct tokenizer *t, const char *s, const int *want, size_t n) {
  int ids[64];
  size_t got = 0;
  int rc = tokenizer_encode(t, s, strlen(s), ids, 64, &got, NULL);
  int same = rc == TOK_OK && got == n && !memcmp(ids, want, n * sizeof *ids);
  CHECK_MSG(same, "'%s' (%s): got %zu ids, first %d", s, tokenizer_bpe_pre(t), got, got ? ids[0] : -1);
}

static void check_synthetic(void) {
  struct tokenizer t;
  struct gb g;
  if (load_synthetic(&t, "smollm", &g)) {
    CHECK(!"synthetic vocabulary loads");
    free(g.b);
    return;
  }
  CHECK(t.kind == TOK_BPE && t.vocab_size == T_N && t.bos_id == T_IMS && t.eos_id == T_IME);
  expect_ids(&t, "the the", (int[]){'t', T_HE, T_GTHE}, 3);  /* "Ġ t" (rank 0) before "h e" */
  expect_ids(&t, "12", (int[]){'1', '2'}, 2);               /* smollm isolates digits */
  expect_ids(&t, " 12", (int[]){' ', '1', '2'}, 3);
  expect_ids(&t, "<|im_start|>the<|im_end|>", (int[]){T_IMS, 't', T_HE, T_IME}, 4);
  expect_ids(&t, "<|im_start|>x", (int[]){T_IMSX}, 1);
  expect_ids(&t, "<|im_start|", (int[]){'<', '|', 'i', 'm', '_', 's', 't', 'a', 'r', 't', '|'}, 11);
  CHECK(tokenizer_is_special(&t, T_IME) && !tokenizer_is_special(&t, 'a'));
  CHECK(tokenizer_bpe_find(&t, "<|im_end|>") == T_IME && tokenizer_bpe_find(&t, "nope") == -1);
  CHECK(!strcmp(tokenizer_token_str(&t, T_GTHE), "\xc4\xa0the"));
  /* decode skips control tokens and gives bytes back */
  char out[64];
  size_t len;
  int ids[] = {T_IMS, 't', T_HE, T_GTHE, 0xff, T_IME};
  CHECK(tokenizer_decode(&t, ids, 6, out, sizeof out, &len) == TOK_OK && len == 8 &&
        !memcmp(out, "the the\xff", 8));
  CHECK(tokenizer_decode(&t, (int[]){'a', T_N}, 2, out, sizeof out, &len) == TOK_ERR_UNKNOWN && len == 1);
  CHECK(tokenizer_decode(&t, ids, 6, out, 4, &len) == TOK_ERR_SPACE);
  int small[2];
  size_t need;
  CHECK(tokenizer_encode(&t, "abcd", 4, small, 2, &need, NULL) == TOK_ERR_SPACE && need == 4);
  tokenizer_free(&t);
  free(g.b);

  if (load_synthetic(&t, "gpt2", &g) == 0) {
    expect_ids(&t, "12", (int[]){T_12}, 1); /* gpt2 keeps digit runs together */
    tokenizer_free(&t);
  }
  free(g.b);
  CHECK(load_synthetic(&t, "falcon", &g) == -1); /* unsupported pre-tokenizer is refused */
  free(g.b);
}

/* Long pieces (a 30000-byte whitespace run, a 30000-byte punctuation run) stay exact
 * (and fast: pair ranks are cached, each merge re-looks-up two pairs). */
static void check_long(const struct tokenizer *t) {
  size_t big = 60000, nbig = 0, lbig = 0;
  char *long_text = malloc(big + 1), *long_out = malloc(big + 1);
  int *long_ids = malloc(sizeof(int) * big);
  memset(long_text, ' ', big / 2);
  memset(long_text + big / 2, '=', big / 2);
  CHECK(tokenizer_encode(t, long_text, big, long_ids, big, &nbig, NULL) == TOK_OK &&
        tokenizer_decode(t, long_ids, nbig, long_out, big + 1, &lbig) == TOK_OK && lbig == big &&
        !memcmp(long_out, long_text, big));
  printf("long input: %zu bytes -> %zu ids (%s)\n", big, nbig, tokenizer_bpe_pre(t));
  free(long_text); free(long_out); free(long_ids);
}

/* 2000 seeded random byte strings (any bytes, valid or not) round-trip exactly. */
static void check_roundtrip_random(const struct tokenizer *t, int runs) {
  uint64_t s = 88172645463325252ull;
  unsigned char text[96];
  char out[512];
  int ids[256], bad = 0, refused = 0;
  static const char *pieces[] = {" ", "  ", "\n", "a", "the", "12", "<|im_start|>", "<|im_end|>",
                                 "\xc3\xa9", "\xe4\xbd\xa0", "\xf0\x9f\x98\x80", "'s", "\xff", "\xe4\xb8"};
  for (int r = 0; r < runs; r++) {
    size_t n = 0;
    while (n < 64) {
      s ^= s << 13; s ^= s >> 7; s ^= s << 17;
      if (s % 3 == 0) {
        const char *p = pieces[(s >> 8) % (sizeof pieces / sizeof pieces[0])];
        if ((p[0] == '<') != 0) continue; /* control tokens are dropped by decode */
        memcpy(text + n, p, strlen(p));
        n += strlen(p);
      } else {
        text[n++] = (unsigned char)(s >> 16);
      }
      if ((s >> 40) % 9 == 0) break;
    }
    size_t nid = 0, len = 0, at = 0;
    int rc = tokenizer_encode(t, (const char *)text, n, ids, 256, &nid, &at);
    if (rc == TOK_ERR_UNKNOWN) {  /* only for a byte the vocabulary lacks, the first one */
      refused++;
      int first = 0;
      while (tokenizer_bpe_byte_id(t, text[first]) >= 0) first++;
      bad += at != (size_t)first;
      continue;
    }
    if (rc != TOK_OK || tokenizer_decode(t, ids, nid, out, sizeof out, &len) != TOK_OK || len != n ||
        memcmp(out, text, n))
      bad++;
  }
  printf("random byte strings: %d, %d refused (byte without a token), %d bad\n", runs, refused, bad);
  CHECK_MSG(bad == 0, "%d of %d random byte strings did not round-trip", bad, runs);
}

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

/* text with control tokens removed (what decode gives back) */
static size_t strip_control(const struct tokenizer *t, const char *s, size_t n, char *out) {
  int ctl[64], nc = 0;
  for (int id = 0; id < t->vocab_size && nc < 64; id++)
    if (tokenizer_is_special(t, id)) ctl[nc++] = id;
  size_t w = 0;
  for (size_t i = 0; i < n;) {
    size_t best = 0;
    for (int k = 0; k < nc; k++) {
      size_t l = strlen(tokenizer_token_str(t, ctl[k]));
      if (l > best && l <= n - i && !memcmp(s + i, tokenizer_token_str(t, ctl[k]), l)) best = l;
    }
    if (best) i += best;
    else out[w++] = s[i++];
  }
  return w;
}

static char *read_file(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (fread(b, 1, (size_t)n, fp) != (size_t)n) n = 0;
  b[n] = 0;
  fclose(fp);
  return b;
}

static void check_golden(const struct tokenizer *t, const cJSON *arr) {
  int n_str = 0, id_bad = 0, rt_bad = 0, total_ids = 0, n_refused = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, arr) {
    const char *hex = cJSON_GetObjectItem(it, "hex")->valuestring;
    const cJSON *want = cJSON_GetObjectItem(it, "ids"), *err_at = cJSON_GetObjectItem(it, "err_at");
    size_t n = strlen(hex) / 2, nw = (size_t)cJSON_GetArraySize(want), nid = 0, len = 0, at = 0;
    char *text = malloc(n + 1), *exp = malloc(n + 1), *out = malloc(4 * n + 16);
    int *ids = malloc(sizeof(int) * (n + 8));
    for (size_t i = 0; i < n; i++) text[i] = (char)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
    int rc = tokenizer_encode(t, text, n, ids, n + 8, &nid, &at);
    n_str++;
    if (err_at) {  /* a byte without a token: refused at its offset */
      n_refused++;
      CHECK_MSG(rc == TOK_ERR_UNKNOWN && at == (size_t)err_at->valueint, "hex %s: rc %d at %zu", hex,
                rc, at);
      free(text); free(exp); free(out); free(ids);
      continue;
    }
    int same = rc == TOK_OK && nid == nw;
    for (size_t i = 0; same && i < nw; i++) same = ids[i] == cJSON_GetArrayItem(want, (int)i)->valueint;
    if (!same) {
      id_bad++;
      fprintf(stderr, "ids differ for hex %s (got %zu ids, want %zu)\n", hex, nid, nw);
    }
    size_t ne = strip_control(t, text, n, exp);
    if (rc != TOK_OK || tokenizer_decode(t, ids, nid, out, 4 * n + 16, &len) != TOK_OK || len != ne ||
        memcmp(out, exp, ne)) {
      rt_bad++;
      fprintf(stderr, "decode(encode(s)) != s for hex %s\n", hex);
    }
    total_ids += (int)nw;
    free(text); free(exp); free(out); free(ids);
  }
  printf("golden (%s): %d strings (%d refused: byte without a token), %d ids; %d id mismatches, "
         "%d round-trip failures\n", tokenizer_bpe_pre(t), n_str, n_refused, total_ids, id_bad, rt_bad);
  CHECK(n_str >= 200 && id_bad == 0 && rt_bad == 0);
}

/* NUL-terminated copies of a GGUF string array (for the writer). */
static char **str_copies(const struct gguf_file *f, const char *key, int *n) {
  struct gguf_str *a;
  uint64_t cnt;
  char err[512];
  if (gguf_get_str_array(f, key, &a, &cnt, err, sizeof err)) return NULL;
  char **out = malloc(sizeof(char *) * cnt);
  for (uint64_t i = 0; i < cnt; i++) {
    out[i] = malloc(a[i].len + 1);
    memcpy(out[i], a[i].p, a[i].len);
    out[i][a[i].len] = 0;
  }
  free(a);
  *n = (int)cnt;
  return out;
}

/* SmolLM2's vocabulary and merges with another pre-tokenizer, written as a new GGUF in memory. */
static int load_with_pre(const struct gguf_file *f, const char *pre, struct tokenizer *t, struct gb *g) {
  int nt = 0, nm = 0, rc = -1;
  uint64_t ntypes;
  int32_t *types = NULL;
  char err[512];
  char **tok = str_copies(f, "tokenizer.ggml.tokens", &nt), **mg = str_copies(f, "tokenizer.ggml.merges", &nm);
  if (tok && mg && !gguf_get_int_array(f, "tokenizer.ggml.token_type", &types, &ntypes, err, sizeof err)) {
    gb_header(g, 3);
    gb_kv_str(g, "tokenizer.ggml.model", "gpt2");
    gb_kv_str(g, "tokenizer.ggml.pre", pre);
    gb_kv_arr_str(g, "tokenizer.ggml.tokens", (const char *const *)tok, nt);
    gb_kv_arr_str(g, "tokenizer.ggml.merges", (const char *const *)mg, nm);
    gb_kv_arr_i32(g, "tokenizer.ggml.token_type", types, (int)ntypes);
    struct gguf_file f2;
    if (!gguf_open_mem(&f2, g->b, g->n, pre, err, sizeof err)) {
      rc = tokenizer_bpe_from_gguf(t, &f2, err, sizeof err);
      gguf_close(&f2);
    }
    if (rc) fprintf(stderr, "%s\n", err);
  }
  for (int i = 0; i < nt; i++) free(tok[i]);
  for (int i = 0; i < nm; i++) free(mg[i]);
  free(tok);
  free(mg);
  free(types);
  return rc;
}

/* Llama 3 / Qwen2 pre-tokenizers on SmolLM2's vocabulary vs HF (tests/ref/bpe_golden_pre.json). */
static void check_other_pre(const char *gguf_path, const char *golden_path) {
  char err[512];
  char *js = read_file(golden_path);
  cJSON *root = js ? cJSON_Parse(js) : NULL;
  struct gguf_file f;
  CHECK_MSG(root != NULL, "cannot read %s", golden_path);
  if (!root || gguf_open(&f, gguf_path, err, sizeof err)) {
    cJSON_Delete(root);
    free(js);
    return;
  }
  static const char *pres[] = {"llama-bpe", "qwen2"};
  for (int k = 0; k < 2; k++) {
    struct tokenizer t = {0};
    struct gb g = {0};
    const cJSON *arr = cJSON_GetObjectItem(root, pres[k]);
    CHECK_MSG(arr && load_with_pre(&f, pres[k], &t, &g) == 0, "%s", pres[k]);
    if (arr && t.ops) {
      check_golden(&t, arr);
      tokenizer_free(&t);
    }
    free(g.b);
  }
  gguf_close(&f);
  cJSON_Delete(root);
  free(js);
}

static const char *smollm2_path(char *buf, size_t cap) {
  const char *p = getenv("RLPT_SMOLLM2_GGUF");
  if (p && *p) return p;
  const char *cache = getenv("RLPT_CACHE"), *home = getenv("HOME");
  if (cache && *cache) snprintf(buf, cap, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", cache);
  else snprintf(buf, cap, "%s/.cache/rlpt/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : ".");
  return buf;
}

static int run_model(void) {
  char pbuf[1024], err[512], golden[1024];
  const char *path = smollm2_path(pbuf, sizeof pbuf);
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    printf("SKIP: %s not found (run jobscripts/fetch-smollm2.sh or set RLPT_SMOLLM2_GGUF)\n", path);
    return SKIP;
  }
  fclose(fp);
  struct tokenizer t;
  if (tokenizer_bpe_load(&t, path, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  CHECK(t.vocab_size == 49152 && t.bos_id == 1 && t.eos_id == 2 && !strcmp(tokenizer_bpe_pre(&t), "smollm"));
  const char *src = getenv("RLPT_SOURCE_DIR");
  snprintf(golden, sizeof golden, "%s/tests/ref/bpe_golden.json", src ? src : "..");
  char *js = read_file(golden);
  cJSON *arr = js ? cJSON_Parse(js) : NULL;
  CHECK_MSG(arr != NULL, "cannot read %s", golden);
  if (arr) check_golden(&t, arr);
  check_roundtrip_random(&t, 2000);
  check_long(&t);
  snprintf(golden, sizeof golden, "%s/tests/ref/bpe_golden_pre.json", src ? src : "..");
  check_other_pre(path, golden);
  cJSON_Delete(arr);
  free(js);
  tokenizer_free(&t);
  return TEST_RESULT("test_bpe (SmolLM2)");
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "model")) return run_model();
  check_synthetic();
  struct tokenizer t;
  struct gb g;
  if (load_synthetic(&t, "smollm", &g) == 0) {
    check_roundtrip_random(&t, 2000);
    check_long(&t);
    tokenizer_free(&t);
  }
  free(g.b);
  return TEST_RESULT("test_bpe");
}
