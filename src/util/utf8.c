/* util/utf8.c: strict UTF-8 validation and repair (util/utf8.h). */
#include "util/utf8.h"

size_t utf8_char_len(const uint8_t *s, size_t n) {
  uint8_t c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  uint8_t lo = 0x80, hi = 0xbf;  /* the second byte's range: excludes overlongs, surrogates, > U+10FFFF */
  if (c >= 0xc2 && c <= 0xdf) len = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else return 0;
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  return len;
}

int utf8_valid(const char *str, size_t len, size_t *bad_at) {
  const uint8_t *s = (const uint8_t *)str;
  for (size_t i = 0, n; i < len; i += n)
    if (!(n = utf8_char_len(s + i, len - i))) {
      *bad_at = i;
      return 0;
    }
  return 1;
}

size_t utf8_sanitize(const char *str, size_t len, char *out) {
  const uint8_t *s = (const uint8_t *)str;
  size_t o = 0;
  for (size_t i = 0, n; i < len; i += n) {
    n = utf8_char_len(s + i, len - i);
    if (n) {
      for (size_t k = 0; k < n; k++) out[o++] = (char)s[i + k];
    } else {
      if (!n) n = 1;
      out[o++] = (char)0xef;
      out[o++] = (char)0xbf;
      out[o++] = (char)0xbd;
    }
  }
  out[o] = '\0';
  return o;
}
