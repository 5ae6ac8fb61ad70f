/* tokenizer/test_tokenizer.c: the built-in character tokenizer: ids, round trips, the
 * special tokens, unknown bytes, short buffers and responses with padding ids. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tokenizer/tokenizer.h"

static void test_layout(const struct tokenizer *t) {
  CHECK(t->kind == TOK_CHAR);
  CHECK(strcmp(tokenizer_kind_name(t->kind), "char") == 0);
  CHECK(t->vocab_size == 98);
  CHECK(t->bos_id == 95 && t->eos_id == 96 && t->pad_id == 97);
  CHECK(strcmp(tokenizer_token_str(t, 0), " ") == 0);
  CHECK(strcmp(tokenizer_token_str(t, 94), "~") == 0);
  CHECK(strcmp(tokenizer_token_str(t, '0' - 32), "0") == 0);
  CHECK(strcmp(tokenizer_token_str(t, 95), "<bos>") == 0);
  CHECK(strcmp(tokenizer_token_str(t, 96), "<eos>") == 0);
  CHECK(strcmp(tokenizer_token_str(t, 97), "<pad>") == 0);
  CHECK(strcmp(tokenizer_token_str(t, 98), "<invalid>") == 0);
  CHECK(strcmp(tokenizer_token_str(t, -1), "<invalid>") == 0);
  CHECK(tokenizer_is_special(t, 96) && !tokenizer_is_special(t, 3));
  /* every non-special id's string is one printable byte, all distinct */
  for (int id = 0; id < 95; id++) {
    const char *s = tokenizer_token_str(t, id);
    CHECK(strlen(s) == 1 && (unsigned char)s[0] == id + 32);
  }
}

static void test_roundtrip(const struct tokenizer *t) {
  char all[96];
  for (int i = 0; i < 95; i++) all[i] = (char)(32 + i);
  all[95] = '\0';
  int ids[128];
  size_t n = 0, bad = 0, len = 0;
  CHECK(tokenizer_encode(t, all, 95, ids, 128, &n, &bad) == TOK_OK);
  CHECK(n == 95);
  for (int i = 0; i < 95; i++) CHECK(ids[i] == i);
  char out[128];
  CHECK(tokenizer_decode(t, ids, n, out, sizeof out, &len) == TOK_OK);
  CHECK(len == 95 && strcmp(out, all) == 0);

  const char *p = "12+34=";
  CHECK(tokenizer_encode(t, p, strlen(p), ids, 128, &n, &bad) == TOK_OK);
  CHECK(n == 6 && ids[0] == 17 && ids[2] == 11 && ids[5] == 29);
  /* specials are skipped in decode */
  int with_specials[] = {95, 17, 18, 96, 97, 97};
  CHECK(tokenizer_decode(t, with_specials, 6, out, sizeof out, &len) == TOK_OK);
  CHECK(len == 2 && strcmp(out, "12") == 0);
  /* empty */
  CHECK(tokenizer_encode(t, "", 0, ids, 0, &n, &bad) == TOK_OK && n == 0);
  CHECK(tokenizer_decode(t, ids, 0, out, 1, &len) == TOK_OK && len == 0 && out[0] == '\0');
}

static void test_errors(const struct tokenizer *t) {
  int ids[16];
  size_t n = 0, bad = 99, len = 0;
  CHECK(tokenizer_encode(t, "ab\ncd", 5, ids, 16, &n, &bad) == TOK_ERR_UNKNOWN);
  CHECK(bad == 2);
  CHECK(tokenizer_encode(t, "x\xc3\xa9", 3, ids, 16, &n, &bad) == TOK_ERR_UNKNOWN && bad == 1);
  CHECK(tokenizer_encode(t, "a\0b", 3, ids, 16, &n, &bad) == TOK_ERR_UNKNOWN && bad == 1);
  CHECK(tokenizer_encode(t, "a\x7f", 2, ids, 16, &n, &bad) == TOK_ERR_UNKNOWN && bad == 1);
  CHECK(tokenizer_encode(t, "abcdef", 6, ids, 3, &n, &bad) == TOK_ERR_SPACE && n == 6);
  int badids[] = {1, 2, 98};
  char out[8];
  CHECK(tokenizer_decode(t, badids, 3, out, sizeof out, &len) == TOK_ERR_UNKNOWN && len == 2);
  int neg[] = {-5};
  CHECK(tokenizer_decode(t, neg, 1, out, sizeof out, &len) == TOK_ERR_UNKNOWN && len == 0);
  int many[] = {33, 34, 35, 36, 37};
  CHECK(tokenizer_decode(t, many, 5, out, 4, &len) == TOK_ERR_SPACE);
  CHECK(len == 3 && strcmp(out, "ABC") == 0);
  CHECK(tokenizer_decode(t, many, 5, out, 0, &len) == TOK_ERR_SPACE);
}

/* A response holding padding rows of a larger model vocabulary (ids 98..) decodes without
 * them; a negative id is still an error; an all-valid response decodes as usual. */
static void test_generated(const struct tokenizer *t) {
  int ids[] = { '1' - 32, 98, '2' - 32, 120, 96 };
  char *text = NULL;
  size_t len = 0;
  CHECK(tokenizer_decode_alloc(t, ids, 5, &text, &len) == TOK_ERR_UNKNOWN && len == 1);
  CHECK(tokenizer_decode_generated(t, ids, 5, &text, &len) == TOK_OK);
  CHECK(text && len == 2 && strcmp(text, "12") == 0);
  free(text);
  CHECK(tokenizer_decode_generated(t, ids, 1, &text, &len) == TOK_OK && strcmp(text, "1") == 0);
  free(text);
  int neg[] = { '1' - 32, -3 };
  CHECK(tokenizer_decode_generated(t, neg, 2, &text, &len) == TOK_ERR_UNKNOWN && text == NULL);
}

int main(void) {
  struct tokenizer t;
  tokenizer_init_char(&t);
  test_layout(&t);
  test_roundtrip(&t);
  test_errors(&t);
  test_generated(&t);
  tokenizer_free(&t);
  return TEST_RESULT("test_tokenizer");
}
