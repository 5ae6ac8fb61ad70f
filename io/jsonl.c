/* io/jsonl.c: the JSON Lines reader (rules in jsonl.h). */
#include "io/jsonl.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

int jsonl_open(struct jsonl_reader *r, const char *path, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  r->path = path;
  r->f = fopen(path, "rb");
  if (!r->f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return 2;
  }
  return 0;
}

void jsonl_set_max_line(struct jsonl_reader *r, size_t max, const char *limit) {
  r->max_line = max;
  r->limit = limit;
}

/* The next line into r->buf (NUL-terminated, newline kept): its length, 0 at the end of
 * the file, -1 on a read error (errno), -2 when it exceeds r->max_line (nothing more is
 * read: a device never ends). Like getline, but bounded. */
static long read_line(struct jsonl_reader *r) {
  size_t n = 0;
  int c;
  errno = 0;
  while ((c = getc_unlocked(r->f)) != EOF) {
    if (r->max_line && n >= r->max_line) return -2;
    if (n + 2 > r->cap) {
      size_t cap = r->cap ? 2 * r->cap : 4096;
      if (r->max_line && cap > r->max_line + 2) cap = r->max_line + 2;
      char *b = realloc(r->buf, cap);
      if (!b) {
        errno = ENOMEM;
        return -1;
      }
      r->buf = b;
      r->cap = cap;
    }
    r->buf[n++] = (char)c;
    if (c == '\n') break;
  }
  if (c == EOF && ferror(r->f)) return -1;
  if (r->buf) r->buf[n] = '\0';
  return (long)n;
}

void jsonl_close(struct jsonl_reader *r) {
  if (r->f) fclose(r->f);
  free(r->buf);
  memset(r, 0, sizeof *r);
}

static int is_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
  return 1;
}

/* Parse one line (NUL-terminated, n bytes) into an object, or describe what is wrong. */
static int parse_line(const struct jsonl_reader *r, char *s, size_t n, cJSON **out, char *msg, size_t msglen) {
  size_t bad = 0;
  const char *nul = memchr(s, '\0', n);
  if (nul) {
    snprintf(msg, msglen, "%s:%ld: NUL byte at column %zu", r->path, r->line, (size_t)(nul - s) + 1);
    return JSONL_BAD;
  }
  if (!utf8_valid(s, n, &bad)) {
    snprintf(msg, msglen, "%s:%ld: invalid UTF-8 (byte 0x%02x at column %zu)", r->path, r->line,
             (unsigned)(unsigned char)s[bad], bad + 1);
    return JSONL_BAD;
  }
  const char *end = NULL;
  cJSON *v = cJSON_ParseWithOpts(s, &end, 1);
  if (!v) {
    size_t col = end && end >= s && end <= s + n ? (size_t)(end - s) + 1 : 1;
    snprintf(msg, msglen, "%s:%ld: invalid JSON at column %zu near \"%.24s\"", r->path, r->line, col,
             s + col - 1);
    return JSONL_BAD;
  }
  if (!cJSON_IsObject(v)) {
    snprintf(msg, msglen, "%s:%ld: expected a JSON object, got %s", r->path, r->line, jsonl_type_name(v));
    cJSON_Delete(v);
    return JSONL_BAD;
  }
  *out = v;
  return JSONL_ROW;
}

int jsonl_next(struct jsonl_reader *r, cJSON **out, long *line, char *msg, size_t msglen) {
  *out = NULL;
  for (;;) {
    long got = read_line(r);
    if (got == -2) {
      snprintf(msg, msglen, "%s:%ld: a line longer than %zu bytes (%s): not a JSON Lines file? "
               "(raise the limit if the rows are really this long)", r->path, r->line + 1,
               r->max_line, r->limit ? r->limit : "the limit");
      return JSONL_IOERR;
    }
    if (got < 0) {
      snprintf(msg, msglen, "%s:%ld: read error: %s", r->path, r->line + 1, strerror(errno));
      return JSONL_IOERR;
    }
    if (got == 0) return JSONL_EOF;
    r->line++;
    *line = r->line;
    char *s = r->buf;
    size_t n = (size_t)got;
    if (r->line == 1 && n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) { s += 3; n -= 3; }
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
    if (is_blank(s, n)) continue;
    return parse_line(r, s, n, out, msg, msglen);
  }
}

const char *jsonl_type_name(const cJSON *v) {
  if (!v) return "missing";
  if (cJSON_IsString(v)) return "a string";
  if (cJSON_IsNumber(v)) return "a number";
  if (cJSON_IsBool(v)) return "a boolean";
  if (cJSON_IsNull(v)) return "null";
  if (cJSON_IsArray(v)) return "an array";
  if (cJSON_IsObject(v)) return "an object";
  return "invalid";
}

int jsonl_get_text(const cJSON *row, const char *key, const char *path, long line, const char **out,
                   char *numbuf, size_t numlen, char *msg, size_t msglen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
  if (!v) {
    snprintf(msg, msglen, "%s:%ld: key '%s' is missing", path, line, key);
    return 2;
  }
  if (cJSON_IsString(v)) {
    *out = v->valuestring;
    return 0;
  }
  if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && numbuf && numlen > 0) {
    double d = v->valuedouble;
    if (d == floor(d) && fabs(d) < 9.007199254740992e15) {
      snprintf(numbuf, numlen, "%.0f", d);
    } else {
      /* the shortest form that reads back the same */
      for (int p = 1; p <= 17; p++) {
        snprintf(numbuf, numlen, "%.*g", p, d);
        if (strtod(numbuf, NULL) == d) break;
      }
    }
    *out = numbuf;
    return 0;
  }
  snprintf(msg, msglen, "%s:%ld: key '%s' is %s, expected a string or number", path, line, key,
           jsonl_type_name(v));
  return 2;
}

int jsonl_bad_line(enum jsonl_policy pol, struct jsonl_bad *b, const char *msg, char *err, size_t errlen) {
  if (pol == JSONL_ERROR) {
    snprintf(err, errlen, "%s", msg);
    return 2;
  }
  if (b->n_bad++ == 0) snprintf(b->first, sizeof b->first, "%s", msg);
  return 0;
}

void jsonl_bad_report(const struct jsonl_bad *b, long n_lines, const char *path, FILE *f) {
  if (b->n_bad == 0 || !f) return;
  fprintf(f, "rlpt: skipped %ld of %ld lines of %s (first: %s)\n", b->n_bad, n_lines, path, b->first);
}
