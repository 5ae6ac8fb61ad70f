/* io/test_jsonl.c: the JSONL reader: CRLF, blank lines, BOM, a line over 1 MB, a last
 * line without newline, broken JSON and non-objects reported at the right line,
 * non-UTF-8 bytes, field access (missing keys, wrong types, numbers as text) and
 * the error / skip policy with its load summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/jsonl.h"
#include "testutil.h"
#include "util/utf8.h"

static char g_dir[] = "/tmp/rlpt_test_jsonl_XXXXXX";

/* Write bytes to DIR/name; returns the path (static buffer per call slot). */
static const char *write_file(const char *name, const char *bytes, size_t n) {
  static char paths[8][512];
  static int slot = 0;
  char *p = paths[slot++ % 8];
  snprintf(p, 512, "%s/%s", g_dir, name);
  FILE *f = fopen(p, "wb");
  CHECK(f != NULL);
  if (f) {
    fwrite(bytes, 1, n, f);
    fclose(f);
  }
  return p;
}

/* Read every line; record per line: kind (JSONL_ROW/BAD) and, for rows, the int value of "a". */
struct seen { int n; long line[16]; int kind[16]; int a[16]; char msg[16][JSONL_MSG_MAX]; };

static int read_all(const char *path, struct seen *s) {
  struct jsonl_reader r;
  char err[JSONL_MSG_MAX];
  memset(s, 0, sizeof *s);
  if (jsonl_open(&r, path, err, sizeof err)) return -1;
  for (;;) {
    cJSON *obj = NULL;
    long line = 0;
    char msg[JSONL_MSG_MAX] = "";
    int k = jsonl_next(&r, &obj, &line, msg, sizeof msg);
    if (k == JSONL_EOF || k == JSONL_IOERR || s->n == 16) break;
    s->line[s->n] = line;
    s->kind[s->n] = k;
    const cJSON *a = obj ? cJSON_GetObjectItem(obj, "a") : NULL;
    s->a[s->n] = a ? a->valueint : -1;
    snprintf(s->msg[s->n], JSONL_MSG_MAX, "%s", msg);
    s->n++;
    cJSON_Delete(obj);
  }
  jsonl_close(&r);
  return 0;
}

static void test_endings(void) {
  const char text[] = "\xEF\xBB\xBF{\"a\": 1}\r\n\r\n   \t\n{\"a\": 2}\r\n\n{\"a\": 3}";  /* no final newline */
  struct seen s;
  CHECK(read_all(write_file("crlf.jsonl", text, sizeof text - 1), &s) == 0);
  CHECK(s.n == 3);
  CHECK(s.kind[0] == JSONL_ROW && s.a[0] == 1 && s.line[0] == 1);
  CHECK(s.kind[1] == JSONL_ROW && s.a[1] == 2 && s.line[1] == 4);
  CHECK(s.kind[2] == JSONL_ROW && s.a[2] == 3 && s.line[2] == 6);
  /* a BOM at the start of a later line (files concatenated with cat) is tolerated too */
  const char mid[] = "{\"a\": 1}\n\xEF\xBB\xBF{\"a\": 2}\n";
  CHECK(read_all(write_file("bom_mid.jsonl", mid, sizeof mid - 1), &s) == 0);
  CHECK(s.n == 2 && s.kind[0] == JSONL_ROW && s.kind[1] == JSONL_ROW && s.a[1] == 2 && s.line[1] == 2);
}

static void test_huge_line(void) {
  size_t n = (size_t)3 << 19;  /* 1.5 MB string value */
  char *buf = malloc(n + 64);
  CHECK(buf != NULL);
  if (!buf) return;
  size_t off = (size_t)sprintf(buf, "{\"a\": 7}\n{\"a\": 8, \"s\": \"");
  memset(buf + off, 'x', n);
  off += n;
  off += (size_t)sprintf(buf + off, "\"}\n{\"a\": 9}\n");
  const char *path = write_file("huge.jsonl", buf, off);
  struct jsonl_reader r;
  char err[JSONL_MSG_MAX];
  CHECK(jsonl_open(&r, path, err, sizeof err) == 0);
  cJSON *obj = NULL;
  long line = 0;
  CHECK(jsonl_next(&r, &obj, &line, err, sizeof err) == JSONL_ROW && line == 1);
  cJSON_Delete(obj);
  CHECK(jsonl_next(&r, &obj, &line, err, sizeof err) == JSONL_ROW && line == 2);
  const cJSON *s = cJSON_GetObjectItem(obj, "s");
  CHECK(cJSON_IsString(s) && strlen(s->valuestring) == n);
  cJSON_Delete(obj);
  CHECK(jsonl_next(&r, &obj, &line, err, sizeof err) == JSONL_ROW && line == 3);
  CHECK(cJSON_GetObjectItem(obj, "a")->valueint == 9);
  cJSON_Delete(obj);
  CHECK(jsonl_next(&r, &obj, &line, err, sizeof err) == JSONL_EOF);
  jsonl_close(&r);
  free(buf);
}

static void test_broken(void) {
  const char text[] = "{\"a\": 1}\n\n{\"a\": 2,}\n{\"a\": 3}\n[1, 2]\n{\"a\": 4} x\n\"str\"\n{\"a\": 5}\n";
  const char *path = write_file("broken.jsonl", text, sizeof text - 1);
  struct seen s;
  char want[600];
  CHECK(read_all(path, &s) == 0);
  CHECK(s.n == 7);
  const long lines[7] = {1, 3, 4, 5, 6, 7, 8};
  const int kinds[7] = {JSONL_ROW, JSONL_BAD, JSONL_ROW, JSONL_BAD, JSONL_BAD, JSONL_BAD, JSONL_ROW};
  for (int i = 0; i < 7 && i < s.n; i++) {
    CHECK_MSG(s.line[i] == lines[i] && s.kind[i] == kinds[i], "entry %d: line %ld kind %d", i, s.line[i], s.kind[i]);
    if (kinds[i] == JSONL_BAD) {
      snprintf(want, sizeof want, "%s:%ld: ", path, lines[i]);
      CHECK_MSG(!strncmp(s.msg[i], want, strlen(want)), "message '%s' does not start with '%s'", s.msg[i], want);
    }
  }
  CHECK_MSG(strstr(s.msg[1], "invalid JSON at column ") != NULL, "%s", s.msg[1]);  /* cJSON places it near the end */  /* the '}' after the comma */
  CHECK(strstr(s.msg[3], "expected a JSON object, got an array") != NULL);
  CHECK(strstr(s.msg[4], "invalid JSON") != NULL);             /* trailing junk */
  CHECK(strstr(s.msg[5], "got a string") != NULL);
  CHECK(s.a[6] == 5);
}

static void test_utf8(void) {
  size_t bad = 0;
  CHECK(utf8_valid("caf\xC3\xA9 \xF0\x9F\x98\x80", 10, &bad) == 1);
  CHECK(utf8_valid("ab\xFF", 3, &bad) == 0 && bad == 2);
  CHECK(utf8_valid("\xC0\x80", 2, &bad) == 0 && bad == 0);          /* overlong NUL */
  CHECK(utf8_valid("x\xED\xA0\x80", 4, &bad) == 0 && bad == 1);     /* surrogate */
  CHECK(utf8_valid("x\xE2\x82", 3, &bad) == 0 && bad == 1);         /* truncated */
  CHECK(utf8_valid("\xF4\x90\x80\x80", 4, &bad) == 0);              /* > U+10FFFF */
  const char text[] = "{\"a\": \"caf\xC3\xA9\"}\n{\"a\": \"\xFF\"}\n";
  const char *path = write_file("utf8.jsonl", text, sizeof text - 1);
  struct seen s;
  CHECK(read_all(path, &s) == 0);
  CHECK(s.n == 2 && s.kind[0] == JSONL_ROW && s.kind[1] == JSONL_BAD);
  CHECK(strstr(s.msg[1], ":2: invalid UTF-8 (byte 0xff at column 8)") != NULL);
  const char nul[] = "{\"a\": 1}\n{\"a\":\0 1}\n";
  CHECK(read_all(write_file("nul.jsonl", nul, sizeof nul - 1), &s) == 0);
  CHECK(s.n == 2 && s.kind[1] == JSONL_BAD && strstr(s.msg[1], ":2: NUL byte at column 6") != NULL);
}

static void test_fields(void) {
  cJSON *o = cJSON_Parse("{\"s\": \"hi\", \"i\": 42, \"f\": 0.1, \"neg\": -3, \"arr\": [1], \"obj\": {}, "
                         "\"b\": true, \"z\": null, \"big\": 1e300}");
  const char *out = NULL;
  char nb[64], msg[JSONL_MSG_MAX];
  CHECK(jsonl_get_text(o, "s", "F", 3, &out, nb, sizeof nb, msg, sizeof msg) == 0 && !strcmp(out, "hi"));
  CHECK(jsonl_get_text(o, "i", "F", 3, &out, nb, sizeof nb, msg, sizeof msg) == 0 && !strcmp(out, "42"));
  CHECK(jsonl_get_text(o, "f", "F", 3, &out, nb, sizeof nb, msg, sizeof msg) == 0 && !strcmp(out, "0.1"));
  CHECK(jsonl_get_text(o, "neg", "F", 3, &out, nb, sizeof nb, msg, sizeof msg) == 0 && !strcmp(out, "-3"));
  CHECK(jsonl_get_text(o, "big", "F", 3, &out, nb, sizeof nb, msg, sizeof msg) == 0 && !strcmp(out, "1e+300"));
  CHECK(jsonl_get_text(o, "missing", "F", 3, &out, nb, sizeof nb, msg, sizeof msg) == 2);
  CHECK(!strcmp(msg, "F:3: key 'missing' is missing"));
  CHECK(jsonl_get_text(o, "arr", "F", 3, &out, nb, sizeof nb, msg, sizeof msg) == 2);
  CHECK(!strcmp(msg, "F:3: key 'arr' is an array, expected a string or number"));
  CHECK(jsonl_get_text(o, "obj", "F", 3, &out, nb, sizeof nb, msg, sizeof msg) == 2 && strstr(msg, "an object"));
  CHECK(jsonl_get_text(o, "b", "F", 3, &out, nb, sizeof nb, msg, sizeof msg) == 2 && strstr(msg, "a boolean"));
  CHECK(jsonl_get_text(o, "z", "F", 3, &out, nb, sizeof nb, msg, sizeof msg) == 2 && strstr(msg, "is null"));
  CHECK(jsonl_get_text(o, "S", "F", 3, &out, nb, sizeof nb, msg, sizeof msg) == 2);  /* keys are case-sensitive */
  cJSON_Delete(o);
}

static void test_policy(void) {
  struct jsonl_bad b = {0};
  char err[JSONL_MSG_MAX] = "";
  CHECK(jsonl_bad_line(JSONL_ERROR, &b, "F:2: bad", err, sizeof err) == 2 && !strcmp(err, "F:2: bad"));
  CHECK(b.n_bad == 0);
  CHECK(jsonl_bad_line(JSONL_SKIP, &b, "F:5: first", err, sizeof err) == 0);
  CHECK(jsonl_bad_line(JSONL_SKIP, &b, "F:9: second", err, sizeof err) == 0);
  CHECK(jsonl_bad_line(JSONL_SKIP, &b, "F:11: third", err, sizeof err) == 0);
  CHECK(b.n_bad == 3 && !strcmp(b.first, "F:5: first"));
  FILE *f = tmpfile();
  CHECK(f != NULL);
  if (!f) return;
  jsonl_bad_report(&b, 1000, "F", f);
  struct jsonl_bad none = {0};
  jsonl_bad_report(&none, 10, "G", f);  /* prints nothing */
  char line[1024] = "";
  rewind(f);
  CHECK(fgets(line, sizeof line, f) != NULL);
  CHECK_MSG(!strcmp(line, "rlpt: skipped 3 of 1000 lines of F (first: F:5: first)\n"), "got '%s'", line);
  CHECK(fgets(line, sizeof line, f) == NULL);
  fclose(f);
  struct jsonl_reader r;
  CHECK(jsonl_open(&r, "/nonexistent/x.jsonl", err, sizeof err) == 2);
  CHECK(strstr(err, "/nonexistent/x.jsonl: cannot open: ") == err);
}

/* A line limit: a line of exactly max bytes (newline included) is read, a longer one stops
 * the reader with FILE:LINE and the limit's name, and /dev/zero (no newline, no end) is
 * refused after max bytes instead of filling the memory. */
static void test_max_line(void) {
  char text[256];
  int n = snprintf(text, sizeof text, "{\"a\": 1}\n{\"a\": 2, \"pad\": \"%s\"}\n{\"a\": 3}\n",
                   "0123456789012345678901234567890123456789");
  const char *path = write_file("max.jsonl", text, (size_t)n);
  size_t second = strlen("{\"a\": 2, \"pad\": \"\"}\n") + 40;
  for (int k = 0; k < 2; k++) {
    struct jsonl_reader r;
    char err[JSONL_MSG_MAX], msg[JSONL_MSG_MAX] = "";
    cJSON *o = NULL;
    long line = 0;
    CHECK(jsonl_open(&r, path, err, sizeof err) == 0);
    jsonl_set_max_line(&r, second - (size_t)k, "[data] max_row_bytes");
    CHECK(jsonl_next(&r, &o, &line, msg, sizeof msg) == JSONL_ROW && line == 1);
    cJSON_Delete(o);
    int got = jsonl_next(&r, &o, &line, msg, sizeof msg);
    if (k == 0) {
      CHECK_MSG(got == JSONL_ROW && line == 2, "a line of exactly the limit: %d %s", got, msg);
      cJSON_Delete(o);
      CHECK(jsonl_next(&r, &o, &line, msg, sizeof msg) == JSONL_ROW && line == 3);
      cJSON_Delete(o);
    } else {
      CHECK_MSG(got == JSONL_IOERR && strstr(msg, "max.jsonl:2: a line longer than") &&
                strstr(msg, "([data] max_row_bytes)"), "%d %s", got, msg);
    }
    jsonl_close(&r);
  }
  struct jsonl_reader z;
  char err[JSONL_MSG_MAX], msg[JSONL_MSG_MAX] = "";
  cJSON *o = NULL;
  long line = 0;
  CHECK(jsonl_open(&z, "/dev/zero", err, sizeof err) == 0);
  jsonl_set_max_line(&z, 1 << 16, "[data] max_row_bytes");
  CHECK(jsonl_next(&z, &o, &line, msg, sizeof msg) == JSONL_IOERR);
  CHECK_MSG(strstr(msg, "/dev/zero:1: a line longer than 65536 bytes"), "%s", msg);
  CHECK(z.cap <= (1 << 16) + 2);
  jsonl_close(&z);
}

/* Repairing text for JSON: valid characters kept, each stray or cut byte one U+FFFD. */
static void test_sanitize(void) {
  static const struct { const char *in, *want; } c[] = {
    {"plain", "plain"},
    {"caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"},
    {"cut \xe2\x82", "cut \xef\xbf\xbd\xef\xbf\xbd"},
    {"\xff!", "\xef\xbf\xbd!"},
    {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},  /* overlong '/' */
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char out[64], *p = out;
    size_t n = utf8_sanitize(c[i].in, strlen(c[i].in), out), bad;
    CHECK_MSG(!strcmp(p, c[i].want) && n == strlen(c[i].want), "case %zu", i);
    CHECK(utf8_valid(out, n, &bad));
  }
}

int main(void) {
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_endings();
  test_huge_line();
  test_broken();
  test_utf8();
  test_fields();
  test_policy();
  test_max_line();
  test_sanitize();
  const char *names[] = {"crlf.jsonl", "bom_mid.jsonl", "huge.jsonl", "broken.jsonl", "utf8.jsonl", "nul.jsonl",
                         "max.jsonl"};
  char p[600];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", g_dir, names[i]);
    unlink(p);
  }
  rmdir(g_dir);
  return TEST_RESULT("test_jsonl");
}
