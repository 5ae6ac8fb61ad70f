/* env/calculator.c: the calculator tool's arithmetic (env/calculator.h).
 * Grammar: expr = term (('+'|'-') term)*; term = unary (('*'|'/') unary)*;
 * unary = ('+'|'-') unary | primary; primary = number | '(' expr ')'. */
#include "env/calculator.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct calc {
  const char *s;
  size_t n, at;
  int depth;
  char *err;
  size_t errlen;
};

static int calc_fail(struct calc *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(c->err, c->errlen, fmt, ap);
  va_end(ap);
  if (k >= 0 && (size_t)k < c->errlen)
    snprintf(c->err + k, c->errlen - (size_t)k, " at offset %zu", c->at);
  return -1;
}

static void skip_space(struct calc *c) {
  while (c->at < c->n && isspace((unsigned char)c->s[c->at])) c->at++;
}

/* The next non-space character, or 0 at the end. */
static char peek(struct calc *c) {
  skip_space(c);
  return c->at < c->n ? c->s[c->at] : 0;
}

static int expr(struct calc *c, double *v);

/* Digits with at most one '.', at least one digit; an optional exponent is not taken
 * (the grammar is what a school calculator reads). */
static int number(struct calc *c, double *v) {
  char buf[64];
  size_t k = 0, digits = 0, dots = 0;
  while (c->at < c->n && (isdigit((unsigned char)c->s[c->at]) || c->s[c->at] == '.')) {
    if (c->s[c->at] == '.') dots++; else digits++;
    if (k + 1 >= sizeof buf) return calc_fail(c, "number longer than %zu characters", sizeof buf - 1);
    buf[k++] = c->s[c->at++];
  }
  if (digits == 0 || dots > 1) return calc_fail(c, "malformed number '%.*s'", (int)k, buf);
  buf[k] = 0;
  *v = strtod(buf, NULL);
  return 0;
}

static int primary(struct calc *c, double *v) {
  char ch = peek(c);
  if (ch == '(') {
    c->at++;
    if (expr(c, v) != 0) return -1;
    if (peek(c) != ')') return calc_fail(c, "expected ')'");
    c->at++;
    return 0;
  }
  if (isdigit((unsigned char)ch) || ch == '.') return number(c, v);
  if (ch == 0) return calc_fail(c, "expected a number or '(' but the expression ended");
  return calc_fail(c, "unexpected character '%c'", ch);
}

static int unary(struct calc *c, double *v) {
  char ch = peek(c);
  if (ch != '-' && ch != '+') return primary(c, v);
  if (++c->depth > CALC_MAX_DEPTH) return calc_fail(c, "nested deeper than %d", CALC_MAX_DEPTH);
  c->at++;
  int rc = unary(c, v);
  c->depth--;
  if (ch == '-') *v = -*v;
  return rc;
}

static int term(struct calc *c, double *v) {
  if (unary(c, v) != 0) return -1;
  for (char op; (op = peek(c)) == '*' || op == '/';) {
    c->at++;
    double r;
    if (unary(c, &r) != 0) return -1;
    if (op == '/' && r == 0) return calc_fail(c, "division by zero");
    *v = op == '*' ? *v * r : *v / r;
  }
  return 0;
}

static int expr(struct calc *c, double *v) {
  if (++c->depth > CALC_MAX_DEPTH) return calc_fail(c, "nested deeper than %d", CALC_MAX_DEPTH);
  if (term(c, v) != 0) return -1;
  for (char op; (op = peek(c)) == '+' || op == '-';) {
    c->at++;
    double r;
    if (term(c, &r) != 0) return -1;
    *v = op == '+' ? *v + r : *v - r;
  }
  c->depth--;
  return 0;
}

int calc_eval(const char *s, size_t len, double *out, char *err, size_t errlen) {
  struct calc c = { .s = s, .n = len, .err = err, .errlen = errlen };
  double v = 0;
  if (peek(&c) == 0) return calc_fail(&c, "empty expression");
  if (expr(&c, &v) != 0) return -1;
  if (peek(&c) != 0) return calc_fail(&c, "unexpected character '%c'", c.s[c.at]);
  if (!isfinite(v)) return calc_fail(&c, "the result is not finite");
  *out = v;
  return 0;
}

void calc_format(double v, char *buf, size_t cap) {
  if (fabs(v) < 1e15 && v == floor(v)) {
    snprintf(buf, cap, "%.0f", v == 0 ? 0.0 : v);  /* -0 prints as 0 */
    return;
  }
  snprintf(buf, cap, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, cap, "%.17g", v);
}
