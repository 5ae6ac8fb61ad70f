/* rl/test_difficulty.c: the difficulty filter (rl/difficulty.h) on hand-computed cases: the
 * running pass rate over the last `window` groups of a prompt, the skip rule at the bounds,
 * the filter off, thresholds inside (0, 1), many prompts in any order, the checkpoint bytes
 * round trip and their refusals, and the FNV-1a key against its published test values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rl/difficulty.h"
#include "testutil.h"

static void test_rate_window(void) {
  struct difficulty d;
  CHECK(difficulty_init(&d, 1, 3, 0.0, 1.0) == 0);
  double rate;
  CHECK(difficulty_rate(&d, 7, &rate) == 0 && isnan(rate));
  CHECK(!difficulty_skip(&d, 7));                       /* never seen: drawn */
  CHECK(difficulty_record(&d, 1, 8, 8) == 0);           /* always solved */
  CHECK(difficulty_record(&d, 2, 0, 8) == 0);           /* never solved */
  CHECK(difficulty_record(&d, 3, 3, 8) == 0);
  CHECK(difficulty_skip(&d, 1) && difficulty_skip(&d, 2) && !difficulty_skip(&d, 3));
  CHECK(difficulty_record(&d, 3, 8, 8) == 0 && difficulty_record(&d, 3, 8, 8) == 0);
  CHECK(difficulty_rate(&d, 3, &rate) == 3);
  CHECK_NEAR(rate, 19.0 / 24.0, 1e-15);                 /* 3 + 8 + 8 of 24 */
  CHECK(!difficulty_skip(&d, 3));
  CHECK(difficulty_record(&d, 3, 8, 8) == 0);           /* the 3/8 group leaves the window */
  CHECK(difficulty_rate(&d, 3, &rate) == 3);
  CHECK_NEAR(rate, 1.0, 1e-15);
  CHECK(difficulty_skip(&d, 3));
  CHECK(difficulty_record(&d, 2, 1, 4) == 0);           /* 0/8 + 1/4 = 1/12 */
  CHECK(difficulty_rate(&d, 2, &rate) == 2);
  CHECK_NEAR(rate, 1.0 / 12.0, 1e-15);
  CHECK(!difficulty_skip(&d, 2));
  d.on = 0;                                              /* off: nothing is skipped */
  CHECK(!difficulty_skip(&d, 1) && !difficulty_skip(&d, 3));
  difficulty_free(&d);
  CHECK(difficulty_init(&d, 1, 0, 0.0, 1.0) == -1);
}

static void test_thresholds(void) {
  struct difficulty d;
  difficulty_init(&d, 1, 2, 0.25, 0.75);
  difficulty_record(&d, 10, 2, 8);                       /* 0.25: at the low bound */
  difficulty_record(&d, 11, 3, 8);                       /* 0.375 */
  difficulty_record(&d, 12, 6, 8);                       /* 0.75: at the high bound */
  difficulty_record(&d, 13, 5, 8);                       /* 0.625 */
  CHECK(difficulty_skip(&d, 10) && !difficulty_skip(&d, 11));
  CHECK(difficulty_skip(&d, 12) && !difficulty_skip(&d, 13));
  difficulty_free(&d);
}

/* Many prompts recorded in a scrambled order: each rate is its own, the keys sorted. */
static void test_many(void) {
  struct difficulty d;
  difficulty_init(&d, 1, 2, 0.0, 1.0);
  for (int i = 0; i < 1000; i++) {
    uint64_t key = (uint64_t)((i * 7919) % 1000) * 0x9E3779B97F4A7C15ull;
    CHECK(difficulty_record(&d, key, (i * 7919) % 1000 % 5, 4) == 0);
  }
  CHECK(d.n == 1000);
  for (long i = 1; i < d.n; i++) CHECK(d.key[i - 1] < d.key[i]);
  double rate;
  CHECK(difficulty_rate(&d, 123 * 0x9E3779B97F4A7C15ull, &rate) == 1);
  CHECK_NEAR(rate, (123 % 5) / 4.0, 1e-15);
  CHECK(!difficulty_skip(&d, 123 * 0x9E3779B97F4A7C15ull));  /* 3/4 */
  CHECK(difficulty_skip(&d, 125 * 0x9E3779B97F4A7C15ull));   /* 0/4 */
  CHECK(difficulty_skip(&d, 124 * 0x9E3779B97F4A7C15ull));   /* 4/4 */
  difficulty_free(&d);
}

static void test_save_load(void) {
  struct difficulty a, b;
  difficulty_init(&a, 1, 3, 0.0, 1.0);
  for (int k = 0; k < 5; k++) difficulty_record(&a, 100 + (uint64_t)(k % 3), k, 8);
  unsigned char *buf;
  size_t len;
  CHECK(difficulty_save(&a, &buf, &len) == 0);
  CHECK(len == 8 * (2 + 3 * (2 + 2 * 3)));
  char err[256];
  difficulty_init(&b, 1, 3, 0.0, 1.0);
  difficulty_record(&b, 5, 1, 1);                        /* replaced by the load */
  CHECK(difficulty_load(&b, buf, len, err, sizeof err) == 0);
  CHECK(b.n == 3 && b.key[0] == 100);
  for (uint64_t key = 100; key < 103; key++) {
    double ra, rb;
    CHECK(difficulty_rate(&a, key, &ra) == difficulty_rate(&b, key, &rb));
    CHECK(ra == rb);
  }
  difficulty_record(&a, 100, 8, 8), difficulty_record(&b, 100, 8, 8);  /* same ring slot */
  double ra, rb;
  difficulty_rate(&a, 100, &ra), difficulty_rate(&b, 100, &rb);
  CHECK(ra == rb);
  struct difficulty w4;
  difficulty_init(&w4, 1, 4, 0.0, 1.0);
  CHECK(difficulty_load(&w4, buf, len, err, sizeof err) == 2);
  CHECK(strstr(err, "difficulty_window = 3, the deck says 4") != NULL);
  CHECK(difficulty_load(&b, buf, len - 8, err, sizeof err) == 2);   /* truncated */
  CHECK(strstr(err, "not one rlpt wrote") != NULL);
  memcpy(buf + 16 + 8 * 8, buf + 16, 8);                             /* key 2 = key 1 */
  CHECK(difficulty_load(&b, buf, len, err, sizeof err) == 2);
  CHECK(strstr(err, "out of order") != NULL);
  free(buf);
  difficulty_free(&a), difficulty_free(&b), difficulty_free(&w4);
}

int main(void) {
  /* FNV-1a 64 test vectors (Fowler, Noll, Vo): "" and "a" */
  CHECK(difficulty_key("") == 0xcbf29ce484222325ull);
  CHECK(difficulty_key("a") == 0xaf63dc4c8601ec8cull);
  CHECK(difficulty_key("3+4=") != difficulty_key("4+3="));
  test_rate_window();
  test_thresholds();
  test_many();
  test_save_load();
  return TEST_RESULT("test_difficulty");
}
