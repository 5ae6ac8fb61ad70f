/* tasks/verify_countdown.c: the countdown verifier, a recursive-descent parser over
 *   expr   := term   (('+' | '-') term)*
 *   term   := factor (('*' | '/') factor)*
 *   factor := integer | '(' expr ')'
 * evaluated in exact rationals. Recursion depth is bounded by VERIFY_MAX_DEPTH and
 * the input by VERIFY_MAX_EXPR, so time and stack are bounded for any input. */
#include "tasks/verify.h"

struct cd_parser {
  const char *s;
  size_t len, pos;
  int depth;
  enum cd_status err;  /* first error; CD_OK while parsing goes well */
  const long *nums;
  int n_nums;
  unsigned char used[VERIFY_MAX_NUMS];
};

const char *cd_status_str(enum cd_status s) {
  switch (s) {
    case CD_OK: return "ok";
    case CD_EMPTY: return "empty";
    case CD_SYNTAX: return "syntax error";
    case CD_TOO_LONG: return "too long";
    case CD_TOO_DEEP: return "nested too deep";
    case CD_OVERFLOW: return "overflow";
    case CD_DIV_ZERO: return "division by zero";
    case CD_BAD_NUMBER: return "number not given (or used too often)";
    case CD_WRONG_VALUE: return "wrong value";
  }
  return "?";
}

static void skip_ws(struct cd_parser *p) {
  while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t')) p->pos++;
}

static int peek(struct cd_parser *p) {
  skip_ws(p);
  return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static void fail(struct cd_parser *p, enum cd_status e) {
  if (p->err == CD_OK) p->err = e;
}

/* Take one unused copy of the given number v. */
static void use_number(struct cd_parser *p, long v) {
  for (int i = 0; i < p->n_nums; i++) {
    if (!p->used[i] && p->nums[i] == v) {
      p->used[i] = 1;
      return;
    }
  }
  fail(p, CD_BAD_NUMBER);
}

static struct rational parse_expr(struct cd_parser *p);

static struct rational parse_integer(struct cd_parser *p) {
  struct rational r = {.num = 0, .den = 1};
  long v = 0;
  int digits = 0;
  while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
    if (++digits > 12) { fail(p, CD_OVERFLOW); return r; }  /* no given number is this long */
    v = v * 10 + (p->s[p->pos++] - '0');
  }
  if (digits == 0) { fail(p, CD_SYNTAX); return r; }
  use_number(p, v);
  r.num = v;
  return r;
}

static struct rational parse_factor(struct cd_parser *p) {
  struct rational zero = {.num = 0, .den = 1};
  int c = peek(p);
  if (c == '(') {
    if (++p->depth > VERIFY_MAX_DEPTH) { fail(p, CD_TOO_DEEP); return zero; }
    p->pos++;
    struct rational r = parse_expr(p);
    if (p->err != CD_OK) return zero;
    if (peek(p) != ')') { fail(p, CD_SYNTAX); return zero; }
    p->pos++;
    p->depth--;
    return r;
  }
  if (c >= '0' && c <= '9') return parse_integer(p);
  fail(p, CD_SYNTAX);
  return zero;
}

static struct rational parse_term(struct cd_parser *p) {
  struct rational acc = parse_factor(p);
  while (p->err == CD_OK) {
    int c = peek(p);
    if (c != '*' && c != '/') break;
    p->pos++;
    struct rational rhs = parse_factor(p);
    if (p->err != CD_OK) break;
    if (c == '/' && rhs.num == 0) { fail(p, CD_DIV_ZERO); break; }
    if ((c == '*' ? rat_mul(acc, rhs, &acc) : rat_div(acc, rhs, &acc)) != 0) fail(p, CD_OVERFLOW);
  }
  return acc;
}

static struct rational parse_expr(struct cd_parser *p) {
  struct rational acc = parse_term(p);
  while (p->err == CD_OK) {
    int c = peek(p);
    if (c != '+' && c != '-') break;
    p->pos++;
    struct rational rhs = parse_term(p);
    if (p->err != CD_OK) break;
    if ((c == '+' ? rat_add(acc, rhs, &acc) : rat_sub(acc, rhs, &acc)) != 0) fail(p, CD_OVERFLOW);
  }
  return acc;
}

/* After the expression: nothing, or "= N" with N the target. */
static enum cd_status check_tail(struct cd_parser *p, long target) {
  int c = peek(p);
  if (c == -1) return CD_OK;
  if (c != '=') return CD_SYNTAX;
  p->pos++;
  skip_ws(p);
  long v = 0;
  int digits = 0, neg = 0;
  if (p->pos < p->len && p->s[p->pos] == '-') { neg = 1; p->pos++; }
  while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
    if (++digits > 15) return CD_OVERFLOW;
    v = v * 10 + (p->s[p->pos++] - '0');
  }
  if (digits == 0 || peek(p) != -1) return CD_SYNTAX;
  return (neg ? -v : v) == target ? CD_OK : CD_WRONG_VALUE;
}

enum cd_status countdown_check(const char *resp, size_t len, const long *nums, int n_nums, long target,
                               struct rational *value) {
  size_t off, n;
  if (!resp || !nums || n_nums < 0 || n_nums > VERIFY_MAX_NUMS) return CD_SYNTAX;
  verify_trim(resp, len, &off, &n);
  if (n == 0) return CD_EMPTY;
  if (n > VERIFY_MAX_EXPR) return CD_TOO_LONG;
  struct cd_parser p = {.s = resp + off, .len = n, .nums = nums, .n_nums = n_nums};
  struct rational v = parse_expr(&p);
  if (p.err != CD_OK) return p.err;
  enum cd_status tail = check_tail(&p, target);
  if (value) *value = v;
  if (tail != CD_OK && tail != CD_WRONG_VALUE) return tail;
  if (v.den != 1 || v.num != target) return CD_WRONG_VALUE;
  return tail;
}

double verify_countdown(const char *resp, size_t len, const long *nums, int n_nums, long target) {
  return countdown_check(resp, len, nums, n_nums, target, NULL) == CD_OK ? 1.0 : 0.0;
}
