/* tasks/test_verify_math.c: answer extraction and exact-rational comparison of the math
 * verifier, including malformed, adversarial and overlong responses (each must
 * return a score; a hang is caught by the CTest timeout). */
#include <stdlib.h>
#include <string.h>

#include "tasks/verify.h"
#include "testutil.h"

struct math_case {
  const char *resp, *ref;
  double want;
};

static const struct math_case cases[] = {
  /* \boxed */
  {.resp = "The answer is \\boxed{42}.", .ref = "42", .want = 1},
  {.resp = "\\boxed{42}", .ref = "42.0", .want = 1},
  {.resp = "\\boxed{ 42 }", .ref = "42", .want = 1},
  {.resp = "first \\boxed{41} then \\boxed{42}", .ref = "42", .want = 1},
  {.resp = "first \\boxed{42} then \\boxed{41}", .ref = "42", .want = 0},
  {.resp = "\\boxed{\\frac{3}{4}}", .ref = "0.75", .want = 1},
  {.resp = "\\boxed{\\dfrac{3}{4}}", .ref = "3/4", .want = 1},
  {.resp = "\\boxed{-\\frac{1}{2}}", .ref = "-0.5", .want = 1},
  {.resp = "\\boxed{\\frac{-1}{2}}", .ref = "-1/2", .want = 1},
  {.resp = "\\boxed{\\frac{6}{8}}", .ref = "\\frac{3}{4}", .want = 1},
  {.resp = "\\boxed{\\boxed{7}}", .ref = "7", .want = 1},
  {.resp = "\\boxed{1,234}", .ref = "1234", .want = 1},
  {.resp = "\\boxed{1{,}234}", .ref = "1234", .want = 1},
  {.resp = "\\boxed{1,23}", .ref = "123", .want = 0},
  {.resp = "\\boxed{$12$}", .ref = "12", .want = 1},
  {.resp = "\\boxed{\\$18}", .ref = "18", .want = 1},                /* escaped dollar sign */
  {.resp = "costs \\$1,250.00 in total", .ref = "1250", .want = 1},
  {.resp = "\\boxed{50\\%}", .ref = "50", .want = 1},
  {.resp = "\\boxed{50%}", .ref = "50", .want = 1},
  {.resp = "\\boxed{+5}", .ref = "5", .want = 1},
  {.resp = "\\boxed{5.}", .ref = "5", .want = 1},
  {.resp = "\\boxed{3.50}", .ref = "3.5", .want = 1},
  {.resp = "\\boxed{.5}", .ref = "1/2", .want = 1},
  {.resp = "\\boxed{1 000}", .ref = "1000", .want = 1},
  {.resp = "\\boxed{\xe2\x88\x92" "3}", .ref = "-3", .want = 1},  /* U+2212 minus */
  {.resp = "\\boxed{x=3}", .ref = "3", .want = 0},
  {.resp = "\\boxed{3}", .ref = "4", .want = 0},
  {.resp = "\\boxed{}", .ref = "0", .want = 0},
  {.resp = "\\boxed{42", .ref = "42", .want = 0},                    /* unbalanced final \boxed: malformed */
  {.resp = "\\boxed{1} and \\boxed{2", .ref = "1", .want = 0},
  {.resp = "\\boxed 42", .ref = "42", .want = 0},
  {.resp = "\\boxed{\\frac{1}{0}}", .ref = "0", .want = 0},
  {.resp = "\\boxed{1/0}", .ref = "0", .want = 0},
  {.resp = "\\boxed{\\pi}", .ref = "\\pi", .want = 1},               /* non-numeric reference: text match */
  {.resp = "\\boxed{ \\pi }", .ref = "\\pi", .want = 1},
  {.resp = "\\boxed{2\\pi}", .ref = "\\pi", .want = 0},
  /* #### */
  {.resp = "so 3+4 = 7\n#### 7", .ref = "7", .want = 1},
  {.resp = "#### 1,000,000", .ref = "1000000", .want = 1},
  {.resp = "#### 7\nand then 8", .ref = "7", .want = 1},
  {.resp = "#### -12", .ref = "-12", .want = 1},
  {.resp = "#### twelve", .ref = "12", .want = 0},
  {.resp = "####", .ref = "0", .want = 0},
  /* last number */
  {.resp = "3 apples and 4 pears make 7 fruits.", .ref = "7", .want = 1},
  {.resp = "it is 7.", .ref = "7", .want = 1},
  {.resp = "x = -3", .ref = "-3", .want = 1},
  {.resp = "5-3", .ref = "3", .want = 1},                            /* subtraction, not -3 */
  {.resp = "the ratio is 3/4", .ref = "0.75", .want = 1},
  {.resp = "pi is about 3.14159", .ref = "3.14159", .want = 1},
  {.resp = "1,234 is it", .ref = "1234", .want = 1},
  {.resp = "1,2,3", .ref = "3", .want = 1},
  {.resp = "no numbers here", .ref = "0", .want = 0},
  {.resp = "", .ref = "0", .want = 0},
  {.resp = "   ", .ref = "0", .want = 0},
  /* numbers that do not fit (the first: too big, compared as text) */
  {.resp = "\\boxed{123456789012345678901}", .ref = "123456789012345678901", .want = 1},
  {.resp = "\\boxed{123456789012345678902}", .ref = "123456789012345678901", .want = 0},
  {.resp = "\\boxed{0123456789012345678901}", .ref = "123456789012345678901", .want = 0},
  {.resp = "\\boxed{0.0000000000000000000001}", .ref = "0", .want = 0},
  {.resp = "\\boxed{99999999999999999}", .ref = "99999999999999999", .want = 1},
  {.resp = "\\boxed{3.0000000000000000000000000}", .ref = "3", .want = 1},
  /* junk */
  {.resp = "\xff\xfe\\boxed{4}\x80", .ref = "4", .want = 1},
  {.resp = "\xf0\x9f\x98\x80 \\boxed{\xf0\x9f\x98\x80}", .ref = "4", .want = 0},
};

static void test_table(void) {
  int n = (int)(sizeof cases / sizeof cases[0]);
  for (int i = 0; i < n; i++) {
    double got = verify_math(cases[i].resp, strlen(cases[i].resp), cases[i].ref);
    CHECK_MSG(got == cases[i].want, "case %d \"%s\" vs \"%s\": got %g", i, cases[i].resp, cases[i].ref, got);
  }
  CHECK(n >= 40);
}

static void test_parse(void) {
  struct rational r;
  CHECK(verify_parse_number("-1,234.50", 9, &r) == 0 && r.num == -2469 && r.den == 2);
  CHECK(verify_parse_number("\\frac{10}{4}", 12, &r) == 0 && r.num == 5 && r.den == 2);
  CHECK(verify_parse_number("0", 1, &r) == 0 && r.num == 0 && r.den == 1);
  CHECK(verify_parse_number("-0.0", 4, &r) == 0 && r.num == 0 && r.den == 1);
  CHECK(verify_parse_number("12,", 3, &r) != 0);
  CHECK(verify_parse_number(",12", 3, &r) != 0);
  CHECK(verify_parse_number("1.2.3", 5, &r) != 0);
  CHECK(verify_parse_number("--1", 3, &r) != 0);
  CHECK(verify_parse_number("1e5", 3, &r) != 0);
  CHECK(verify_parse_number("\\frac{1}{2", 10, &r) != 0);
  CHECK(verify_parse_number("\\frac{1}{2}3", 12, &r) != 0);
  CHECK(verify_parse_number("\\frac{{1}}{2}", 13, &r) != 0);
  CHECK(verify_parse_number(".", 1, &r) != 0);
  CHECK(verify_parse_number("%", 1, &r) != 0);
  CHECK(verify_parse_number("1/2/3", 5, &r) != 0);
  size_t off, n;
  const char *t = "so \\boxed{a{b}c} done";
  CHECK(verify_math_extract(t, strlen(t), &off, &n) == 0 && n == 5 && memcmp(t + off, "a{b}c", 5) == 0);
}

static void test_adversarial(void) {
  const size_t mega = 1000000;
  char *s = malloc(mega + 16);
  CHECK(s != NULL);
  if (!s) return;
  /* 10^6 characters of digits: the last number has too many digits -> 0 */
  memset(s, '7', mega);
  CHECK(verify_math(s, mega, "7") == 0.0);
  /* 10^5 nested braces inside \boxed, unbalanced and balanced */
  const size_t depth = 100000;
  memcpy(s, "\\boxed", 6);
  memset(s + 6, '{', depth);
  s[6 + depth] = '5';
  CHECK(verify_math(s, 7 + depth, "5") == 0.0);
  memset(s + 7 + depth, '}', depth);
  CHECK(verify_math(s, 7 + 2 * depth, "5") == 0.0);  /* inside is "{{...5...}}": not a number */
  /* 10^5 "\boxed{" with no closing brace: linear, malformed */
  for (size_t i = 0; i + 7 <= mega; i += 7) memcpy(s + i, "\\boxed{", 7);
  CHECK(verify_math(s, mega - mega % 7, "0") == 0.0);
  /* 10^6 of "####" */
  memset(s, '#', mega);
  CHECK(verify_math(s, mega, "0") == 0.0);
  /* a long expression and a long text ending in the right answer */
  for (size_t i = 0; i < mega; i++) s[i] = (i % 2) ? '+' : '1';
  CHECK(verify_math(s, mega - 1, "1") == 1.0);  /* last number is the final "1" */
  memset(s, 'a', mega);
  memcpy(s + mega - 12, " \\boxed{12}", 11);
  CHECK(verify_math(s, mega - 1, "12") == 1.0);
  /* random bytes */
  unsigned x = 777;
  for (int t = 0; t < 3000; t++) {
    size_t n = (size_t)(t % 80);
    for (size_t i = 0; i < n; i++) {
      x = x * 1103515245u + 12345u;
      s[i] = "\\boxed{}frac#0123456789.,/-+ $%\x80\xff\n"[(x >> 16) % 33];
    }
    double r = verify_math(s, n, "12");
    CHECK(r == 0.0 || r == 1.0);
  }
  CHECK(verify_math(NULL, 0, "1") == 0.0);
  CHECK(verify_math("1", 1, NULL) == 0.0);
  CHECK(verify_math("\\boxed{4\0}", 10, "4") == 0.0);  /* NUL inside the answer */
  free(s);
}

int main(void) {
  test_table();
  test_parse();
  test_adversarial();
  return TEST_RESULT("test_verify_math");
}
