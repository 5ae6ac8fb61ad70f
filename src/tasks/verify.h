/* tasks/verify.h: rule-based verifiers (RLVR). Pure functions on strings: bounded time
 * (linear in the input) and memory (none allocated), never crash on any bytes,
 * and return a score, 1.0 for right and 0.0 for anything else. The response is
 * given as (pointer, length) and need not be NUL-terminated; an embedded NUL is
 * just a byte that makes the answer malformed.
 *
 *   arith      exact integer: trimmed response = [+|-]digits, equal in value to the
 *              answer (leading zeros ignored, -0 = 0); nothing else may be present.
 *   countdown  an arithmetic expression (+ - * / and parentheses over non-negative
 *              integer literals, spaces allowed, optionally followed by "= target")
 *              that uses each given number at most as many times as given and
 *              equals the target exactly (exact rationals, 64-bit with 128-bit
 *              intermediates; overflow, division by zero, nesting deeper than
 *              VERIFY_MAX_DEPTH or text longer than VERIFY_MAX_EXPR score 0).
 *   math       final answer = the inside of the last \boxed{...} (nested braces;
 *              if that last \boxed is unbalanced the answer is malformed), else the
 *              text after the last "####" up to the end of its line, else the last
 *              number in the text. Compared with the reference as exact rationals
 *              (see verify_parse_number); a reference that does not parse (not a
 *              number, or more than 18 significant digits) is compared as text
 *              after the same clean-up (spaces, '$', LaTeX spacing removed).
 *   format     exactly one open tag and exactly one close tag, in that order. */
#ifndef RLPT_VERIFY_H
#define RLPT_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#define VERIFY_MAX_EXPR 1024   /* countdown: longest expression, characters */
#define VERIFY_MAX_DEPTH 64    /* countdown: deepest parenthesis nesting */
#define VERIFY_MAX_NUMS 16     /* countdown: most given numbers */

/* Exact rational num/den, den > 0, reduced. Intermediates use 128 bits. */
struct rational { int64_t num, den; };
__extension__ typedef __int128 rat_wide;

/* 0 on success, nonzero on overflow (or division by zero for rat_div). */
int rat_make(rat_wide num, rat_wide den, struct rational *out);
int rat_add(struct rational a, struct rational b, struct rational *out);
int rat_sub(struct rational a, struct rational b, struct rational *out);
int rat_mul(struct rational a, struct rational b, struct rational *out);
int rat_div(struct rational a, struct rational b, struct rational *out);
int rat_eq(struct rational a, struct rational b);

/* ---- arith / format (tasks/verify.c) ---- */
double verify_arith(const char *resp, size_t len, const char *answer);
/* 1.0 when exactly one open..close block; inner_off and inner_len give its inside
 * (may be NULL). Empty tags give 0. */
double verify_format(const char *resp, size_t len, const char *open, const char *close,
                     size_t *inner_off, size_t *inner_len);
/* Span of text without leading/trailing ASCII whitespace. */
void verify_trim(const char *s, size_t len, size_t *off, size_t *n);

/* ---- the answer a response gives, for votes (tasks/verify.c; rl/self_consistency.h) ----
 * Canonical text of the final answer, so that answers the verifier holds equal have equal
 * text: arith: the exact integer (leading zeros, '+', -0 dropped); math: the final answer
 * (verify_math_extract) as the reduced rational "num/den" when it parses, else its trimmed
 * text prefixed with '"'; exact: the trimmed response. Returns the length, 0 when the
 * response gives no answer (or it does not fit cap). */
enum verify_kind { VERIFY_ARITH, VERIFY_MATH, VERIFY_EXACT };
size_t verify_answer_canon(enum verify_kind kind, const char *resp, size_t len, char *out, size_t cap);

/* ---- countdown (tasks/verify_countdown.c) ---- */
enum cd_status {
  CD_OK = 0, CD_EMPTY, CD_SYNTAX, CD_TOO_LONG, CD_TOO_DEEP, CD_OVERFLOW, CD_DIV_ZERO,
  CD_BAD_NUMBER, /* a literal that is not among the given numbers (or used too often) */
  CD_WRONG_VALUE /* well-formed, but not equal to the target (or the "= N" part is wrong) */
};
const char *cd_status_str(enum cd_status s);
/* Parse and evaluate; *value is set when the expression evaluates (status CD_OK or CD_WRONG_VALUE). */
enum cd_status countdown_check(const char *resp, size_t len, const long *nums, int n_nums, long target,
                               struct rational *value);
double verify_countdown(const char *resp, size_t len, const long *nums, int n_nums, long target);

/* ---- math (tasks/verify_math.c) ---- */
/* Parse an answer as an exact rational. Accepted: integers, decimals (".5", "3.50",
 * trailing zeros), commas as thousands separators (groups of exactly 3 digits),
 * spaces anywhere (removed), a leading '+' or '-', fractions a/b and
 * \frac{a}{b} / \dfrac / \tfrac (a and b decimals, optionally signed), '$'
 * delimiters, an escaped dollar sign \$ and LaTeX spacing (\, \! \; \ ), a trailing '.' and a trailing "%"
 * or "\%" (stripped: 50% equals 50, not 0.5). Returns 0 on success, nonzero for
 * anything else (including more than 18 significant digits). */
int verify_parse_number(const char *s, size_t len, struct rational *out);
/* Span of the final answer per the rules above; 0 when found, nonzero when none. */
int verify_math_extract(const char *resp, size_t len, size_t *off, size_t *n);
double verify_math(const char *resp, size_t len, const char *reference);

#endif
