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
  {"The answer is \\boxed{42}.", "42", 1},
  {"\\boxed{42}", "42.0", 1},
  {"\\boxed{ 42 }", "42", 1},
  {"first \\boxed{41} then \\boxed{42}", "42", 1},
  {"first \\boxed{42} then \\boxed{41}", "42", 0},
  {"\\boxed{\\frac{3}{4}}", "0.75", 1},
  {"\\boxed{\\dfrac{3}{4}}", "3/4", 1},
  {"\\boxed{-\\frac{1}{2}}", "-0.5", 1},
  {"\\boxed{\\frac{-1}{2}}", "-1/2", 1},
  {"\\boxed{\\frac{6}{8}}", "\\frac{3}{4}", 1},
  {"\\boxed{\\boxed{7}}", "7", 1},
  {"\\boxed{1,234}", "1234", 1},
  {"\\boxed{1{,}234}", "1234", 1},
  {"\\boxed{1,23}", "123", 0},
  {"\\boxed{$12$}", "12", 1},
  {"\\boxed{\\$18}", "18", 1},                /* escaped dollar sign */
  {"costs \\$1,250.00 in total", "1250", 1},
  {"\\boxed{50\\%}", "50", 1},
  {"\\boxed{50%}", "50", 1},
  {"\\boxed{+5}", "5", 1},
  {"\\boxed{5.}", "5", 1},
  {"\\boxed{3.50}", "3.5", 1},
  {"\\boxed{.5}", "1/2", 1},
  {"\\boxed{1 000}", "1000", 1},
  {"\\boxed{\xe2\x88\x92" "3}", "-3", 1},  /* U+2212 minus */
  {"\\boxed{x=3}", "3", 0},
  {"\\boxed{3}", "4", 0},
  {"\\boxed{}", "0", 0},
  {"\\boxed{42", "42", 0},                    /* unbalanced final \boxed: malformed */
  {"\\boxed{1} and \\boxed{2", "1", 0},
  {"\\boxed 42", "42", 0},
  {"\\boxed{\\frac{1}{0}}", "0", 0},
  {"\\boxed{1/0}", "0", 0},
  {"\\boxed{\\pi}", "\\pi", 1},               /* non-numeric reference: text match */
  {"\\boxed{ \\pi }", "\\pi", 1},
  {"\\boxed{2\\pi}", "\\pi", 0},
  /* #### */
  {"so 3+4 = 7\n#### 7", "7", 1},
  {"#### 1,000,000", "1000000", 1},
  {"#### 7\nand then 8", "7", 1},
  {"#### -12", "-12", 1},
  {"#### twelve", "12", 0},
  {"####", "0", 0},
  /* last number */
  {"3 apples and 4 pears make 7 fruits.", "7", 1},
  {"it is 7.", "7", 1},
  {"x = -3", "-3", 1},
  {"5-3", "3", 1},                            /* subtraction, not -3 */
  {"the ratio is 3/4", "0.75", 1},
  {"pi is about 3.14159", "3.14159", 1},
  {"1,234 is it", "1234", 1},
  {"1,2,3", "3", 1},
  {"no numbers here", "0", 0},
  {"", "0", 0},
  {"   ", "0", 0},
  /* numbers that do not fit */
  {"\\boxed{123456789012345678901}", "123456789012345678901", 1},  /* too big: compared as text */
  {"\\boxed{123456789012345678902}", "123456789012345678901", 0},
  {"\\boxed{0123456789012345678901}", "123456789012345678901", 0},
  {"\\boxed{0.0000000000000000000001}", "0", 0},
  {"\\boxed{99999999999999999}", "99999999999999999", 1},
  {"\\boxed{3.0000000000000000000000000}", "3", 1},
  /* junk */
  {"\xff\xfe\\boxed{4}\x80", "4", 1},
  {"\xf0\x9f\x98\x80 \\boxed{\xf0\x9f\x98\x80}", "4", 0},
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
