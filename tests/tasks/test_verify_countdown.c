/* tasks/test_verify_countdown.c: the countdown verifier on well-formed, wrong, malformed,
 * adversarial and overlong inputs (each returns a score; a hang is caught by the
 * CTest timeout), plus the rational helpers and the arith/format verifiers. */
#include <stdlib.h>
#include <string.h>

#include "tasks/verify.h"
#include "testutil.h"

struct cd_case {
  const char *expr;
  enum cd_status want;
};

static const long NUMS[] = {3, 7, 25, 50};
#define TARGET 46L

static const struct cd_case cases[] = {
  {.expr = "25+3*7", .want = CD_OK},
  {.expr = "3*7+25", .want = CD_OK},
  {.expr = " 25 + 3 * 7 ", .want = CD_OK},
  {.expr = "(3*7)+25", .want = CD_OK},
  {.expr = "((3*7))+(25)", .want = CD_OK},
  {.expr = "25+7*3", .want = CD_OK},
  {.expr = "50-7+3", .want = CD_OK},          /* 46 */
  {.expr = "50-(7-3)", .want = CD_OK},        /* 46 */
  {.expr = "50/25*3*7+3+1", .want = CD_BAD_NUMBER},  /* 1 is not given */
  {.expr = "25+3*7=46", .want = CD_OK},
  {.expr = "25+3*7 = 46", .want = CD_OK},
  {.expr = "25+3*7=47", .want = CD_WRONG_VALUE},
  {.expr = "25+3*7=", .want = CD_SYNTAX},
  {.expr = "25+3*7=46=46", .want = CD_SYNTAX},
  {.expr = "(50*3-7-25)/3", .want = CD_BAD_NUMBER},  /* 3 used twice */
  {.expr = "50+3-7", .want = CD_OK},                 /* 46 */
  {.expr = "25+3+7", .want = CD_WRONG_VALUE},        /* 35 */
  {.expr = "25*3*7", .want = CD_WRONG_VALUE},
  {.expr = "50", .want = CD_WRONG_VALUE},
  {.expr = "3*7+25+0", .want = CD_BAD_NUMBER},
  {.expr = "25+25-3-1", .want = CD_BAD_NUMBER},      /* 25 twice */
  {.expr = "46", .want = CD_BAD_NUMBER},
  {.expr = "", .want = CD_EMPTY},
  {.expr = "   ", .want = CD_EMPTY},
  {.expr = "\n\t", .want = CD_EMPTY},
  {.expr = "25+", .want = CD_SYNTAX},
  {.expr = "+25", .want = CD_SYNTAX},
  {.expr = "-3+50-1", .want = CD_SYNTAX},
  {.expr = "25++3*7", .want = CD_SYNTAX},
  {.expr = "(25+3*7", .want = CD_SYNTAX},
  {.expr = "25+3*7)", .want = CD_SYNTAX},
  {.expr = "()", .want = CD_SYNTAX},
  {.expr = "25 3 7", .want = CD_SYNTAX},
  {.expr = "25+3x7", .want = CD_SYNTAX},
  {.expr = "25+3\xc3\x97" "7", .want = CD_SYNTAX},     /* U+00D7 multiplication sign */
  {.expr = "\xef\xbb\xbf" "25+3*7", .want = CD_SYNTAX},  /* BOM */
  {.expr = "25+3*7\xff", .want = CD_SYNTAX},
  {.expr = "25.0+3*7", .want = CD_SYNTAX},
  {.expr = "25+3*7 because", .want = CD_SYNTAX},
  {.expr = "The answer: 25+3*7", .want = CD_SYNTAX},
  {.expr = "3/(7-7)", .want = CD_BAD_NUMBER},        /* 7 twice is caught before the division */
  {.expr = "50/(7-3-3)", .want = CD_BAD_NUMBER},
  {.expr = "(50-25)/(7-7)", .want = CD_BAD_NUMBER},
  {.expr = "00025+3*7", .want = CD_OK},              /* leading zeros read as the same number */
  {.expr = "9999999999999+3", .want = CD_OVERFLOW},  /* 13-digit literal */
  {.expr = "25/3*3+7*3", .want = CD_BAD_NUMBER},     /* = 46 exactly, but 3 used three times */
  {.expr = "25/3*3+7+3*7-7", .want = CD_BAD_NUMBER},
};

static void test_table(void) {
  int n = (int)(sizeof cases / sizeof cases[0]);
  for (int i = 0; i < n; i++) {
    enum cd_status got = countdown_check(cases[i].expr, strlen(cases[i].expr), NUMS, 4, TARGET, NULL);
    enum cd_status want = cases[i].want;
    CHECK_MSG(got == want, "case %d \"%s\": got %s, want %s", i, cases[i].expr, cd_status_str(got),
              cd_status_str(want));
    double score = verify_countdown(cases[i].expr, strlen(cases[i].expr), NUMS, 4, TARGET);
    CHECK(score == (want == CD_OK ? 1.0 : 0.0));
  }
  CHECK(n >= 40);
}

/* Division, fractions and division by zero with numbers that allow them. */
static void test_division(void) {
  const long nums[] = {6, 4, 3, 0, 8};
  struct rational v;
  CHECK(countdown_check("6/4*8", 5, nums, 5, 12, &v) == CD_OK && v.num == 12 && v.den == 1);
  CHECK(countdown_check("6/4", 3, nums, 5, 2, &v) == CD_WRONG_VALUE && v.num == 3 && v.den == 2);
  CHECK(countdown_check("8/0", 3, nums, 5, 1, &v) == CD_DIV_ZERO);
  CHECK(countdown_check("8/(4-4)", 7, nums, 5, 1, &v) == CD_BAD_NUMBER);
  CHECK(countdown_check("8/(6-3*(4-3)-3)", 15, nums, 5, 1, &v) == CD_BAD_NUMBER);
  const long z[] = {5, 5, 2};
  CHECK(countdown_check("2/(5-5)", 7, z, 3, 1, &v) == CD_DIV_ZERO);
  CHECK(verify_countdown("2/(5-5)", 7, z, 3, 1) == 0.0);
  CHECK(countdown_check("(5+5)/2", 7, z, 3, 5, &v) == CD_OK);
  CHECK(countdown_check("5-5-2", 5, z, 3, -2, &v) == CD_OK);  /* negative targets evaluate too */
  CHECK(countdown_check("5-5-2=-2", 8, z, 3, -2, &v) == CD_OK);
}

static void test_overflow(void) {
  /* 999999^k overflows 2^62 at k = 4: the verifier must say overflow, not wrap. */
  const long big[] = {999999, 999999, 999999, 999999, 1};
  struct rational v;
  const char *e3 = "999999*999999*999999";
  CHECK(countdown_check(e3, strlen(e3), big, 5, 1, &v) == CD_WRONG_VALUE);
  const char *e4 = "999999*999999*999999*999999";
  CHECK(countdown_check(e4, strlen(e4), big, 5, 1, &v) == CD_OVERFLOW);
  const char *e5 = "1/999999/999999/999999/999999";  /* denominator 1e24 */
  CHECK(countdown_check(e5, strlen(e5), big, 5, 1, &v) == CD_OVERFLOW);
  struct rational a, b, r;
  CHECK(rat_make(6, -4, &a) == 0 && a.num == -3 && a.den == 2);
  CHECK(rat_make(1, 0, &a) != 0);
  CHECK(rat_make((rat_wide)1 << 62, 1, &a) == 0);
  CHECK(rat_make(((rat_wide)1 << 62) + 1, 1, &a) != 0);
  CHECK(rat_make(1, 3, &a) == 0 && rat_make(1, 6, &b) == 0 && rat_add(a, b, &r) == 0 && r.num == 1 && r.den == 2);
  CHECK(rat_sub(a, a, &r) == 0 && r.num == 0 && r.den == 1);
  CHECK(rat_div(a, r, &r) != 0);
}

static void test_adversarial(void) {
  const size_t mega = 1000000;
  char *s = malloc(mega + 1);
  CHECK(s != NULL);
  if (!s) return;
  /* a 10^6-character expression: rejected by the length limit */
  for (size_t i = 0; i < mega; i++) s[i] = (i % 2) ? '+' : '3';
  s[mega - 1] = '3';
  CHECK(countdown_check(s, mega, NUMS, 4, TARGET, NULL) == CD_TOO_LONG);
  CHECK(verify_countdown(s, mega, NUMS, 4, TARGET) == 0.0);
  /* 10^5 nested parentheses (same length limit) and, inside the limit, too deep */
  const size_t depth = 100000;
  memset(s, '(', depth);
  s[depth] = '3';
  memset(s + depth + 1, ')', depth);
  CHECK(verify_countdown(s, 2 * depth + 1, NUMS, 4, 3) == 0.0);
  CHECK(countdown_check(s + depth - 100, 201, NUMS, 4, 3, NULL) == CD_TOO_DEEP);
  CHECK(countdown_check(s + depth - 60, 121, NUMS, 4, 3, NULL) == CD_OK);  /* depth 60 is fine */
  /* unbalanced opens only */
  CHECK(countdown_check(s, 500, NUMS, 4, 3, NULL) == CD_TOO_DEEP);
  /* random bytes: any status, no crash */
  unsigned x = 12345;
  for (int t = 0; t < 2000; t++) {
    size_t n = (size_t)(t % 60);
    for (size_t i = 0; i < n; i++) {
      x = x * 1103515245u + 12345u;
      s[i] = "0123456789+-*/() =\x80\xff"[(x >> 16) % 20];
    }
    double r = verify_countdown(s, n, NUMS, 4, TARGET);
    CHECK(r == 0.0 || r == 1.0);
  }
  /* NUL in the middle, NULL inputs */
  CHECK(verify_countdown("25+3\0*7", 7, NUMS, 4, TARGET) == 0.0);
  CHECK(verify_countdown(NULL, 5, NUMS, 4, TARGET) == 0.0);
  free(s);
}

static void test_arith_format(void) {
  CHECK(verify_arith("46", 2, "46") == 1.0);
  CHECK(verify_arith("  +46 ", 6, "46") == 1.0);
  CHECK(verify_arith("046", 3, "46") == 1.0);
  CHECK(verify_arith("-12", 3, "-12") == 1.0);
  CHECK(verify_arith("-0", 2, "0") == 1.0);
  CHECK(verify_arith("12", 2, "-12") == 0.0);
  CHECK(verify_arith("47", 2, "46") == 0.0);
  CHECK(verify_arith("46.0", 4, "46") == 0.0);
  CHECK(verify_arith("46 ", 3, "46") == 1.0);
  CHECK(verify_arith("4 6", 3, "46") == 0.0);
  CHECK(verify_arith("", 0, "46") == 0.0);
  CHECK(verify_arith("+", 1, "0") == 0.0);
  CHECK(verify_arith("--5", 3, "5") == 0.0);
  CHECK(verify_arith("46abc", 5, "46") == 0.0);
  CHECK(verify_arith("999999999999999999999999999999", 30, "999999999999999999999999999999") == 1.0);
  CHECK(verify_arith(NULL, 0, "1") == 0.0);
  size_t off = 0, n = 0;
  const char *r1 = "think <answer>42</answer>";
  CHECK(verify_format(r1, strlen(r1), "<answer>", "</answer>", &off, &n) == 1.0);
  CHECK(n == 2 && memcmp(r1 + off, "42", 2) == 0);
  const char *r2 = "<answer>1</answer><answer>2</answer>";
  CHECK(verify_format(r2, strlen(r2), "<answer>", "</answer>", &off, &n) == 0.0);
  const char *r3 = "</answer>42<answer>";
  CHECK(verify_format(r3, strlen(r3), "<answer>", "</answer>", &off, &n) == 0.0);
  const char *r4 = "<answer>42";
  CHECK(verify_format(r4, strlen(r4), "<answer>", "</answer>", &off, &n) == 0.0);
  const char *r5 = "<answer></answer>";
  CHECK(verify_format(r5, strlen(r5), "<answer>", "</answer>", &off, &n) == 1.0 && n == 0);
  CHECK(verify_format(r1, strlen(r1), "", "</answer>", &off, &n) == 0.0);
}

int main(void) {
  test_table();
  test_division();
  test_overflow();
  test_adversarial();
  test_arith_format();
  return TEST_RESULT("test_verify_countdown");
}
