/* io/test_gguf_fuzz.c: broken GGUF files must give an error message, never a crash
 * or a read outside the file (this test also runs under ASan).
 *
 * Starting from a valid tiny llama file (tests/gguf_testutil.h): every
 * truncation point; lying string / array lengths; huge key, tensor and array
 * counts; bad dims, dtypes, offsets and alignment; bad magic / versions; and
 * seeded random byte corruptions. Each broken file is parsed from an exact-size
 * heap copy, so ASan sees any read past its end; when a corrupted file still
 * parses, the model loader, the metadata getters and the BPE tokenizer loader
 * (plus one encode/decode) run on it too; the same for a byte-level BPE
 * vocabulary file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_testutil.h"
#include "io/gguf.h"
#include "model/params.h"
#include "testutil.h"
#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"

/* Parse (and when it parses, load) buf[0..n); 0 when it opened. err gets the message. */
static int try_open(const uint8_t *buf, size_t n, char *err, size_t errlen) {
  uint8_t *copy = malloc(n ? n : 1);
  memcpy(copy, buf, n);
  struct gguf_file f;
  err[0] = '\0';
  int rc = gguf_open_mem(&f, copy, n, "fuzz.gguf", err, errlen);
  if (rc == 0) {
    struct model_config mc;
    struct param_table t;
    float *p = NULL;
    char lerr[512];
    if (gguf_model_load(&f, &mc, &t, &p, lerr, sizeof lerr) == 0) {
      param_table_free(&t);
      free(p);
    }
    struct gguf_str *s = NULL;
    int32_t *ia = NULL;
    uint64_t cnt;
    if (!gguf_get_str_array(&f, "tokenizer.ggml.tokens", &s, &cnt, lerr, sizeof lerr)) free(s);
    if (!gguf_get_int_array(&f, "tokenizer.ggml.token_type", &ia, &cnt, lerr, sizeof lerr)) free(ia);
    struct tokenizer tok;
    if (tokenizer_bpe_from_gguf(&tok, &f, lerr, sizeof lerr) == 0) {
      static const char text[] = "the 12 <|im_start|>x\xe4\xb8\xff the";
      int ids[64];
      char out[128];
      size_t n = 0, len;
      if (tokenizer_encode(&tok, text, sizeof text - 1, ids, 64, &n, NULL) == TOK_OK)
        tokenizer_decode(&tok, ids, n, out, sizeof out, &len);
      tokenizer_free(&tok);
    }
    gguf_close(&f);
  }
  free(copy);
  return rc;
}

/* Expect failure with a message naming the file and containing `what`. */
static void expect_fail(const uint8_t *buf, size_t n, const char *what, const char *label) {
  char err[512];
  int rc = try_open(buf, n, err, sizeof err);
  CHECK_MSG(rc == -1, "%s: opened", label);
  CHECK_MSG(strstr(err, "fuzz.gguf: ") == err && strstr(err, what), "%s: message '%s' lacks '%s'",
            label, err, what);
}

/* Offset of the first occurrence of a string record (u64 length + bytes) for s. */
static size_t find_str(const struct gb *g, const char *s) {
  size_t n = strlen(s);
  for (size_t i = 24; i + 8 + n <= g->n; i++) {
    uint64_t len;
    memcpy(&len, g->b + i, 8);
    if (len == n && !memcmp(g->b + i + 8, s, n)) return i;
  }
  return 0;
}

static void put_u64(uint8_t *b, size_t at, uint64_t v) { memcpy(b + at, &v, 8); }
static void put_u32(uint8_t *b, size_t at, uint32_t v) { memcpy(b + at, &v, 4); }

static void check_truncations(const struct gb *g) {
  char err[512];
  int opened = 0;
  for (size_t cut = 0; cut < g->n; cut++) opened += try_open(g->b, cut, err, sizeof err) == 0;
  CHECK_MSG(opened == 0, "%d truncated files opened", opened);
  CHECK(try_open(g->b, g->n, err, sizeof err) == 0);
  expect_fail(g->b, g->n - 1, "past the end", "cut by one byte");
  expect_fail(g->b, 400, "the file", "cut in the metadata");
}

static void check_lies(const struct gb *g) {
  uint8_t *b = malloc(g->n);
  size_t key = find_str(g, "llama.block_count"), tok = find_str(g, "tokenizer.ggml.tokens");
  size_t ten = find_str(g, "blk.0.ffn_up.weight"), tok_arr = tok + 8 + strlen("tokenizer.ggml.tokens");
  CHECK(key && tok && ten);
  const uint64_t huge[] = {(uint64_t)g->n, (uint64_t)g->n + 1, 1ull << 40, UINT64_MAX, UINT64_MAX - 7};
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
    memcpy(b, g->b, g->n); put_u64(b, key, huge[i]);
    expect_fail(b, g->n, "past the end", "key length");
    memcpy(b, g->b, g->n); put_u64(b, tok_arr + 8, huge[i]);
    expect_fail(b, g->n, "more than the file can hold", "string array count");
    memcpy(b, g->b, g->n); put_u64(b, tok_arr + 16, huge[i]);
    expect_fail(b, g->n, "past the end", "string element length");
    memcpy(b, g->b, g->n); put_u64(b, 16, huge[i]);
    expect_fail(b, g->n, "metadata keys", "key count");
    memcpy(b, g->b, g->n); put_u64(b, 8, huge[i]);
    expect_fail(b, g->n, "tensors", "tensor count");
  }
  size_t info = ten + 8 + strlen("blk.0.ffn_up.weight"); /* n_dims, ne[0], ne[1], type, offset */
  memcpy(b, g->b, g->n); put_u32(b, info, 0);
  expect_fail(b, g->n, "dimensions", "zero dims");
  memcpy(b, g->b, g->n); put_u32(b, info, 5);
  expect_fail(b, g->n, "dimensions", "five dims");
  memcpy(b, g->b, g->n); put_u64(b, info + 4, 1ull << 62); put_u64(b, info + 12, 1ull << 62);
  expect_fail(b, g->n, "invalid shape", "shape overflow");
  memcpy(b, g->b, g->n); put_u64(b, info + 4, 0);
  expect_fail(b, g->n, "invalid shape", "zero extent");
  memcpy(b, g->b, g->n); put_u64(b, info + 4, 33);
  expect_fail(b, g->n, "not a multiple", "row not a block multiple");
  memcpy(b, g->b, g->n); put_u32(b, info + 20, 99);
  expect_fail(b, g->n, "unknown data type 99", "unknown dtype");
  memcpy(b, g->b, g->n); put_u32(b, info + 20, GGML_Q2_K); put_u64(b, info + 4, 256);
  put_u64(b, info + 12, 4);
  char err[512];
  CHECK(try_open(b, g->n, err, sizeof err) == 0); /* parses: Q2_K has a known layout */
  memcpy(b, g->b, g->n); put_u64(b, info + 24, 1ull << 50);
  expect_fail(b, g->n, "past the end", "offset past the end");
  memcpy(b, g->b, g->n); put_u64(b, info + 24, UINT64_MAX - 31);
  expect_fail(b, g->n, "past the end", "offset wraps");
  memcpy(b, g->b, g->n); put_u64(b, info + 24, 4);
  expect_fail(b, g->n, "alignment", "unaligned offset");
  free(b);
}

static void check_header(const struct gb *g) {
  uint8_t *b = malloc(g->n);
  memcpy(b, g->b, g->n); b[0] = 'X';
  expect_fail(b, g->n, "bad magic", "magic");
  memcpy(b, g->b, g->n); put_u32(b, 4, 1);
  expect_fail(b, g->n, "version 1", "v1");
  memcpy(b, g->b, g->n); put_u32(b, 4, 4);
  expect_fail(b, g->n, "unsupported GGUF version 4", "v4");
  memcpy(b, g->b, g->n); put_u32(b, 4, 3u << 24);
  expect_fail(b, g->n, "big-endian", "big endian");
  memcpy(b, g->b, g->n); put_u32(b, 4, 2);
  char err[512];
  CHECK(try_open(b, g->n, err, sizeof err) == 0); /* v2 has the same layout */
  /* the value type of the first key (general.architecture) */
  size_t arch = find_str(g, "general.architecture") + 8 + strlen("general.architecture");
  memcpy(b, g->b, g->n); put_u32(b, arch, 77);
  expect_fail(b, g->n, "unknown value type 77", "value type");
  size_t tok = find_str(g, "tokenizer.ggml.tokens") + 8 + strlen("tokenizer.ggml.tokens");
  memcpy(b, g->b, g->n); put_u32(b, tok + 4, GGUF_ARRAY);
  expect_fail(b, g->n, "nested array", "nested");
  memcpy(b, g->b, g->n); put_u32(b, tok + 4, 55);
  expect_fail(b, g->n, "unknown type 55", "array type");
  free(b);

  /* alignment must be a power of two */
  struct gb a;
  gb_header(&a, 3);
  gb_kv_u32(&a, "general.alignment", 48);
  expect_fail(a.b, a.n, "power of two", "alignment 48");
  free(a.b);
  /* duplicate keys */
  gb_header(&a, 3);
  gb_kv_u32(&a, "x", 1);
  gb_kv_u32(&a, "x", 2);
  expect_fail(a.b, a.n, "duplicate metadata key 'x'", "duplicate key");
  free(a.b);
  expect_fail((const uint8_t *)"GG", 2, "truncated", "two bytes");
}

/* Seeded random corruptions: 1-4 bytes replaced; no crash is the check. */
static void check_random(const struct gb *g, const char *what) {
  uint8_t *b = malloc(g->n);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  int opened = 0, runs = 3000;
  char err[512];
  for (int r = 0; r < runs; r++) {
    memcpy(b, g->b, g->n);
    int flips = 1 + r % 4;
    for (int k = 0; k < flips; k++) {
      s ^= s << 13; s ^= s >> 7; s ^= s << 17;
      /* most files are in the header/metadata: bias corruptions there */
      size_t at = (size_t)(s >> 20) % (r % 2 ? g->n : 1200 < g->n ? 1200 : g->n);
      b[at] = (uint8_t)(s >> 8);
    }
    if (try_open(b, g->n, err, sizeof err) == 0) opened++;
    else CHECK_MSG(strstr(err, "fuzz.gguf: ") == err, "%s", err);
  }
  printf("%s: %d of %d random corruptions still parse (values changed, layout intact)\n", what,
         opened, runs);
  free(b);
}

int main(void) {
  struct gb g;
  struct tiny_llama *m = calloc(1, sizeof *m);
  tiny_llama(&g, m);
  check_truncations(&g);
  check_lies(&g);
  check_header(&g);
  check_random(&g, "tiny llama");
  free(g.b);
  free(m);
  /* the BPE loader on a complete byte-level vocabulary (tokenizer only) */
  synthetic_gguf(&g, "smollm");
  char err[512];
  int opened = 0;
  for (size_t cut = 0; cut < g.n; cut++) opened += try_open(g.b, cut, err, sizeof err) == 0;
  CHECK_MSG(opened == 0, "%d truncated vocabularies opened", opened);
  check_random(&g, "BPE vocabulary");
  free(g.b);
  return TEST_RESULT("test_gguf_fuzz");
}
