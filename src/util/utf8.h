/* util/utf8.h: strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF),
 * the one validator behind JSONL rows (io/jsonl.h) and the byte-level BPE
 * tokenizer's pre-tokenizer (tokenizer/bpe.c), and the repair of decoded text for JSON
 * output (rlpt generate --json, the samples log). */
#ifndef RLPT_UTF8_H
#define RLPT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the valid character that starts s[0..n), n >= 1; 0 when s does
 * not start one (a bad lead byte, a bad continuation, or cut short by n). */
size_t utf8_char_len(const uint8_t *s, size_t n);
/* 1 when s[0..len) is valid UTF-8; else 0 and *bad_at = offset of the first byte
 * that does not start a valid character. */
int utf8_valid(const char *s, size_t len, size_t *bad_at);
/* s[0..len) into out as valid UTF-8: each byte that does not start a valid character
 * becomes U+FFFD (EF BF BD; a character cut short at the end is one such byte per byte, as
 * Python's errors="replace" does per maximal bad prefix, close enough for display), the
 * rest is copied. out has room for UTF8_SANITIZED_MAX(len) bytes and is NUL-terminated;
 * returns the bytes written (without the NUL). */
#define UTF8_SANITIZED_MAX(len) (3 * (len) + 1)
size_t utf8_sanitize(const char *s, size_t len, char *out);

#endif
