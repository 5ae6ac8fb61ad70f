/* tasks/verify.c: exact rationals shared by the verifiers, the arith verifier, the
 * format verifier and the canonical answers votes compare (see tasks/verify.h). */
#include "tasks/verify.h"

#include <stdio.h>
#include <string.h>

/* |num| and den stay <= 2^62, so a*d + b*c of two values fits 128 bits with room. */
#define RAT_LIMIT ((rat_wide)1 << 62)

static rat_wide wide_abs(rat_wide x) { return x < 0 ? -x : x; }

static rat_wide wide_gcd(rat_wide a, rat_wide b) {
  a = wide_abs(a);
  b = wide_abs(b);
  while (b) {
    rat_wide t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int rat_make(rat_wide num, rat_wide den, struct rational *out) {
  if (den == 0) return 1;
  if (den < 0) { num = -num; den = -den; }
  rat_wide g = wide_gcd(num, den);
  if (g > 1) { num /= g; den /= g; }
  if (wide_abs(num) > RAT_LIMIT || den > RAT_LIMIT) return 1;
  out->num = (int64_t)num;
  out->den = (int64_t)den;
  return 0;
}

int rat_add(struct rational a, struct rational b, struct rational *out) {
  return rat_make((rat_wide)a.num * b.den + (rat_wide)b.num * a.den, (rat_wide)a.den * b.den, out);
}

int rat_sub(struct rational a, struct rational b, struct rational *out) {
  return rat_make((rat_wide)a.num * b.den - (rat_wide)b.num * a.den, (rat_wide)a.den * b.den, out);
}

int rat_mul(struct rational a, struct rational b, struct rational *out) {
  return rat_make((rat_wide)a.num * b.num, (rat_wide)a.den * b.den, out);
}

int rat_div(struct rational a, struct rational b, struct rational *out) {
  if (b.num == 0) return 1;
  return rat_make((rat_wide)a.num * b.den, (rat_wide)a.den * b.num, out);
}

int rat_eq(struct rational a, struct rational b) { return a.num == b.num && a.den == b.den; }

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

void verify_trim(const char *s, size_t len, size_t *off, size_t *n) {
  size_t a = 0, b = len;
  while (a < b && is_space(s[a])) a++;
  while (b > a && is_space(s[b - 1])) b--;
  *off = a;
  *n = b - a;
}

/* Canonical integer text: optional sign then digits, leading zeros dropped, -0 -> 0.
 * Returns the canonical length, or 0 when s is not [+|-]digits (or does not fit). */
static size_t canon_integer(const char *s, size_t len, char *out, size_t cap) {
  size_t i = 0, w = 0;
  int neg = 0;
  if (i < len && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i == len) return 0;
  for (size_t j = i; j < len; j++)
    if (s[j] < '0' || s[j] > '9') return 0;
  while (i + 1 < len && s[i] == '0') i++;
  if (len - i + 2 > cap) return 0;
  if (neg && !(len - i == 1 && s[i] == '0')) out[w++] = '-';
  memcpy(out + w, s + i, len - i);
  w += len - i;
  out[w] = '\0';
  return w;
}

double verify_arith(const char *resp, size_t len, const char *answer) {
  char got[64], want[64];
  size_t off, n;
  if (!resp || !answer) return 0.0;
  verify_trim(resp, len, &off, &n);
  size_t gl = canon_integer(resp + off, n, got, sizeof got);
  size_t wl = canon_integer(answer, strlen(answer), want, sizeof want);
  return gl && wl && gl == wl && memcmp(got, want, gl) == 0 ? 1.0 : 0.0;
}

static size_t copy_text(const char *prefix, const char *s, size_t n, char *out, size_t cap) {
  size_t p = strlen(prefix);
  if (n == 0 || p + n + 1 > cap) return 0;
  memcpy(out, prefix, p);
  memcpy(out + p, s, n);
  out[p + n] = '\0';
  return p + n;
}

size_t verify_answer_canon(enum verify_kind kind, const char *resp, size_t len, char *out, size_t cap) {
  size_t off = 0, n = 0, t = 0;
  struct rational q;
  if (!resp || cap == 0) return 0;
  if (kind == VERIFY_ARITH || kind == VERIFY_EXACT) {
    verify_trim(resp, len, &off, &n);
    return kind == VERIFY_ARITH ? canon_integer(resp + off, n, out, cap) : copy_text("", resp + off, n, out, cap);
  }
  if (verify_math_extract(resp, len, &off, &n)) return 0;
  verify_trim(resp + off, n, &t, &n);
  if (n && verify_parse_number(resp + off + t, n, &q) == 0) {
    int w = snprintf(out, cap, "%lld/%lld", (long long)q.num, (long long)q.den);
    return w > 0 && (size_t)w < cap ? (size_t)w : 0;
  }
  return copy_text("\"", resp + off + t, n, out, cap);
}

/* Occurrences of pat in s[0..len); *first = offset of the first one. Linear for the
 * short tags this is used with (length of s times length of the tag). */
static size_t count_occ(const char *s, size_t len, const char *pat, size_t plen, size_t *first) {
  size_t c = 0;
  if (plen == 0 || plen > len) return 0;
  for (size_t i = 0; i + plen <= len; i++) {
    if (s[i] == pat[0] && memcmp(s + i, pat, plen) == 0) {
      if (c++ == 0) *first = i;
      i += plen - 1;
    }
  }
  return c;
}

double verify_format(const char *resp, size_t len, const char *open, const char *close,
                     size_t *inner_off, size_t *inner_len) {
  if (!resp || !open || !close) return 0.0;
  size_t ol = strlen(open), cl = strlen(close), oi = 0, ci = 0;
  if (ol == 0 || cl == 0) return 0.0;
  if (count_occ(resp, len, open, ol, &oi) != 1 || count_occ(resp, len, close, cl, &ci) != 1) return 0.0;
  if (ci < oi + ol) return 0.0;
  if (inner_off) *inner_off = oi + ol;
  if (inner_len) *inner_len = ci - (oi + ol);
  return 1.0;
}
