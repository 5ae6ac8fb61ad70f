/* tasks/verify_math.c: the math verifier: extract a final answer (\boxed{}, "####", or the
 * last number), parse it and the reference as exact rationals and compare (rules in
 * tasks/verify.h). Everything is a bounded scan; answers longer than MATH_ANSWER_MAX are
 * malformed. */
#include "tasks/verify.h"

#include <string.h>

#define MATH_ANSWER_MAX 256
#define MATH_SIG_DIGITS 18

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static int starts(const char *s, size_t len, size_t i, const char *pat) {
  size_t n = strlen(pat);
  return i + n <= len && memcmp(s + i, pat, n) == 0;
}

/* Copy s without what never changes a value: spaces, '$' and '\$', LaTeX spacing (\, \! \; \ ),
 * "{,}" (LaTeX thousands comma -> ','), U+2212 minus -> '-'. Then drop one trailing '.'
 * and a trailing "%" or "\%". Returns the cleaned length, or -1 when too long. */
static int clean_answer(const char *s, size_t len, char *out) {
  size_t w = 0;
  for (size_t i = 0; i < len;) {
    char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '$') { i++; continue; }
    if (c == '\\' && i + 1 < len &&
        (s[i + 1] == ',' || s[i + 1] == '!' || s[i + 1] == ';' || s[i + 1] == ' ' || s[i + 1] == '$')) {
      i += 2;
      continue;
    }
    if (starts(s, len, i, "{,}")) { c = ','; i += 3; }
    else if (starts(s, len, i, "\xe2\x88\x92")) { c = '-'; i += 3; }
    else i++;
    if (w + 1 >= MATH_ANSWER_MAX) return -1;
    out[w++] = c;
  }
  if (w > 0 && out[w - 1] == '.') w--;
  if (w > 0 && out[w - 1] == '%') w -= (w > 1 && out[w - 2] == '\\') ? 2 : 1;
  out[w] = '\0';
  return (int)w;
}

/* Unsigned decimal: digits with optional thousands commas, optional .digits. */
static int parse_decimal(const char *s, size_t len, struct rational *out) {
  int64_t mant = 0;
  int sig = 0, frac_digits = 0, int_digits = 0, group = -1;
  size_t i = 0;
  for (; i < len && (is_digit(s[i]) || s[i] == ','); i++) {
    if (s[i] == ',') {
      /* the first group has 1-3 digits, every later one exactly 3 */
      if ((group == -1 && (int_digits == 0 || int_digits > 3)) || (group != -1 && group != 3)) return 1;
      group = 0;
      continue;
    }
    if (group != -1) group++;
    int_digits++;
    if (mant == 0 && s[i] == '0') continue;
    if (++sig > MATH_SIG_DIGITS) return 1;
    mant = mant * 10 + (s[i] - '0');
  }
  if (group != -1 && group != 3) return 1;
  if (i < len && s[i] == '.') {
    size_t end = len;
    if (++i == len) return 1;
    for (size_t j = i; j < len; j++)
      if (!is_digit(s[j])) return 1;
    while (end > i && s[end - 1] == '0') end--;  /* trailing zeros carry no value */
    for (; i < end; i++) {
      if ((mant != 0 || s[i] != '0') && ++sig > MATH_SIG_DIGITS) return 1;
      if (++frac_digits > MATH_SIG_DIGITS) return 1;  /* 10^k must fit the 128-bit denominator */
      mant = mant * 10 + (s[i] - '0');
    }
    i = len;
  } else if (int_digits == 0) {
    return 1;
  }
  if (i != len) return 1;
  rat_wide den = 1;
  for (int k = 0; k < frac_digits; k++) den *= 10;
  return rat_make(mant, den, out);
}

static int parse_signed_decimal(const char *s, size_t len, struct rational *out) {
  int neg = 0;
  if (len > 0 && (s[0] == '+' || s[0] == '-')) { neg = s[0] == '-'; s++; len--; }
  if (len == 0 || parse_decimal(s, len, out)) return 1;
  if (neg) out->num = -out->num;
  return 0;
}

/* s at "{...}": the span inside the braces (no nesting inside a number) and the index after. */
static int brace_group(const char *s, size_t len, size_t i, size_t *in_off, size_t *in_len, size_t *after) {
  if (i >= len || s[i] != '{') return 1;
  size_t j = i + 1;
  while (j < len && s[j] != '}' && s[j] != '{') j++;
  if (j >= len || s[j] != '}') return 1;
  *in_off = i + 1;
  *in_len = j - i - 1;
  *after = j + 1;
  return 0;
}

static int parse_frac(const char *s, size_t len, struct rational *out) {
  static const char *const names[] = {"\\frac", "\\dfrac", "\\tfrac"};
  for (int k = 0; k < 3; k++) {
    if (!starts(s, len, 0, names[k])) continue;
    size_t i = strlen(names[k]), ao, al, bo, bl;
    struct rational a, b;
    if (brace_group(s, len, i, &ao, &al, &i) || brace_group(s, len, i, &bo, &bl, &i) || i != len) return 1;
    if (parse_signed_decimal(s + ao, al, &a) || parse_signed_decimal(s + bo, bl, &b)) return 1;
    return rat_div(a, b, out);
  }
  return 1;
}

int verify_parse_number(const char *s, size_t len, struct rational *out) {
  char buf[MATH_ANSWER_MAX];
  if (!s || len >= MATH_ANSWER_MAX * 4) return 1;
  int n = clean_answer(s, len, buf);
  if (n <= 0) return 1;
  const char *p = buf;
  size_t m = (size_t)n;
  int neg = 0;
  if (p[0] == '+' || p[0] == '-') {
    neg = p[0] == '-';
    p++;
    m--;
  }
  struct rational r;
  if (m > 0 && p[0] == '\\') {
    if (parse_frac(p, m, &r)) return 1;
  } else {
    const char *slash = memchr(p, '/', m);
    if (slash) {
      struct rational a, b;
      size_t al = (size_t)(slash - p);
      if (parse_decimal(p, al, &a) || parse_signed_decimal(slash + 1, m - al - 1, &b) || rat_div(a, b, &r))
        return 1;
    } else if (parse_decimal(p, m, &r)) {
      return 1;
    }
  }
  if (neg) r.num = -r.num;
  *out = r;
  return 0;
}

/* Inside of the last \boxed{...}: 0 found, 1 no \boxed, 2 malformed. */
static int extract_boxed(const char *s, size_t len, size_t *off, size_t *n) {
  static const char tag[] = "\\boxed";
  const size_t tl = sizeof tag - 1;
  size_t at = len;
  for (size_t i = len; i >= tl; i--) {
    if (memcmp(s + i - tl, tag, tl) == 0) { at = i - tl; break; }
  }
  if (at == len) return 1;
  size_t i = at + tl;
  while (i < len && s[i] == ' ') i++;
  if (i >= len || s[i] != '{') return 2;
  size_t depth = 0, start = i + 1;
  for (; i < len; i++) {
    if (s[i] == '{') depth++;
    else if (s[i] == '}' && --depth == 0) {
      *off = start;
      *n = i - start;
      return 0;
    }
  }
  return 2;
}

/* After the last "####" up to the end of its line: 0 found (non-empty), 1 not. */
static int extract_hashes(const char *s, size_t len, size_t *off, size_t *n) {
  size_t at = len;
  for (size_t i = len; i >= 4; i--) {
    if (memcmp(s + i - 4, "####", 4) == 0) { at = i; break; }
  }
  if (at == len) return 1;
  size_t end = at;
  while (end < len && s[end] != '\n') end++;
  size_t o, m;
  verify_trim(s + at, end - at, &o, &m);
  if (m == 0) return 1;
  *off = at + o;
  *n = m;
  return 0;
}

/* Length of a number token starting at digit s[i]: digits, ",ddd" groups, ".d+", "/d+". */
static size_t number_token(const char *s, size_t len, size_t i) {
  size_t j = i;
  int dot = 0, slash = 0;
  while (j < len) {
    if (is_digit(s[j])) { j++; continue; }
    if (s[j] == ',' && !dot && j + 3 < len && is_digit(s[j + 1]) && is_digit(s[j + 2]) &&
        is_digit(s[j + 3]) && (j + 4 == len || !is_digit(s[j + 4]))) {
      j += 4;
      continue;
    }
    if (s[j] == '.' && !dot && j + 1 < len && is_digit(s[j + 1])) { dot = 1; j++; continue; }
    if (s[j] == '/' && !slash && j + 1 < len && is_digit(s[j + 1])) { slash = 1; dot = 0; j++; continue; }
    break;
  }
  return j - i;
}

static int extract_last_number(const char *s, size_t len, size_t *off, size_t *n) {
  int found = 0;
  for (size_t i = 0; i < len;) {
    int start_here = is_digit(s[i]) || (s[i] == '.' && i + 1 < len && is_digit(s[i + 1]) && (i == 0 || !is_digit(s[i - 1])));
    if (!start_here) { i++; continue; }
    size_t b = i, t = (s[i] == '.') ? 1 + number_token(s, len, i + 1) : number_token(s, len, i);
    /* a '-' right before is a sign unless it reads as subtraction ("3-5") */
    if (b > 0 && s[b - 1] == '-' && (b < 2 || !(is_digit(s[b - 2]) || is_alpha(s[b - 2]) || s[b - 2] == ')'))) b--;
    *off = b;
    *n = i + t - b;
    found = 1;
    i += t;
  }
  return found ? 0 : 1;
}

int verify_math_extract(const char *resp, size_t len, size_t *off, size_t *n) {
  if (!resp) return 1;
  int b = extract_boxed(resp, len, off, n);
  if (b == 0) return 0;
  if (b == 2) return 1;  /* an unbalanced final \boxed is a malformed answer */
  if (extract_hashes(resp, len, off, n) == 0) return 0;
  return extract_last_number(resp, len, off, n);
}

double verify_math(const char *resp, size_t len, const char *reference) {
  size_t off, n;
  if (!resp || !reference) return 0.0;
  if (verify_math_extract(resp, len, &off, &n) != 0) return 0.0;
  struct rational want, got;
  size_t rl = strlen(reference);
  if (verify_parse_number(reference, rl, &want) == 0)
    return verify_parse_number(resp + off, n, &got) == 0 && rat_eq(got, want) ? 1.0 : 0.0;
  /* not a number: compare the cleaned texts */
  char a[MATH_ANSWER_MAX], b[MATH_ANSWER_MAX];
  if (rl >= MATH_ANSWER_MAX * 4 || n >= MATH_ANSWER_MAX * 4) return 0.0;
  int la = clean_answer(resp + off, n, a), lb = clean_answer(reference, rl, b);
  return la > 0 && la == lb && memcmp(a, b, (size_t)la) == 0 ? 1.0 : 0.0;
}
