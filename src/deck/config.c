/* deck/config.c: the deck: parse (libinih), type and range checks from the schema table,
 * command-line overrides, cross-key checks, the MPI broadcast and the canonical echo.
 *
 * Every message names where the value came from, `DECK:LINE: [section] key: what is wrong`
 * or `override 'section.key=value': ...`, and may add one hint line. Nothing is clamped.
 *
 * deck/load.c reads the file, adds the [algo] preset and the cross-key checks, and
 * broadcasts the result.
 *
 * libinih hands its reader one line at a time; our reader counts lines (the Debian build
 * cannot pass line numbers to the handler), strips comments (`#` or `;` at the start of a
 * line or after whitespace), checks section headers and rejects lines inih would silently
 * misread (no `=`, leading whitespace taken as a continuation line). The checks that
 * involve several keys live in deck/config_check.c. */
#include "deck/config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DECK_LINE_MAX 4096       /* longest deck line, comments included */

/* ---- schema look-ups --------------------------------------------------------------- */

static int section_known(const char *section) {
  for (int i = 0; i < cfg_schema_len; i++)
    if (!strcmp(cfg_schema[i].section, section)) return 1;
  return 0;
}

int config_find(const char *section, const char *name) {
  for (int i = 0; i < cfg_schema_len; i++)
    if (!strcmp(cfg_schema[i].section, section) && !strcmp(cfg_schema[i].name, name)) return i;
  return -1;
}

/* Edit distance (Levenshtein + adjacent swaps) for did-you-mean; names are short. */
static int edit_distance(const char *a, const char *b) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 63 || lb > 63) return 99;
  int d[64][64];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      int best = d[i - 1][j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1; /* a swapped pair counts once */
      d[i][j] = best;
    }
  return d[la][lb];
}

static int close_enough(const char *typed, const char *cand, int dist) {
  int len = (int)strlen(typed);
  return dist <= (len <= 4 ? 1 : len <= 9 ? 2 : len / 3) || (len >= 3 && strstr(cand, typed) != NULL);
}

/* Closest section name to `typed`, or NULL. */
static const char *suggest_section(const char *typed) {
  const char *best = NULL;
  int bestd = 1 << 30;
  for (int i = 0; i < cfg_schema_len; i++) {
    int d = edit_distance(typed, cfg_schema[i].section);
    if (d < bestd) { bestd = d; best = cfg_schema[i].section; }
  }
  return best && close_enough(typed, best, bestd) ? best : NULL;
}

/* Hint for an unknown section: the closest name (as [name] or name.key), else them all. */
static void suggest_section_hint(const char *typed, const char *key, char *hint, size_t len) {
  const char *sug = suggest_section(typed);
  if (sug && key) snprintf(hint, len, "did you mean %s.%s?", sug, key);
  else if (sug) snprintf(hint, len, "did you mean [%s]?", sug);
  else {
    size_t used = (size_t)snprintf(hint, len, "the sections are:");
    for (int i = 0; i < cfg_schema_len && used < len; i++)
      if (i == 0 || strcmp(cfg_schema[i].section, cfg_schema[i - 1].section))
        used += (size_t)snprintf(hint + used, len - used, " [%s]", cfg_schema[i].section);
  }
}

/* Hint for an unknown key: the sections where the name exists, else the closest key of
 * `section`. Empty when there is nothing useful to say. */
static void suggest_key(const char *section, const char *name, char *hint, size_t len) {
  hint[0] = '\0';
  size_t used = 0;
  for (int i = 0; i < cfg_schema_len; i++)
    if (!strcmp(cfg_schema[i].name, name) && used + 32 < len)
      used += (size_t)snprintf(hint + used, len - used, "%s[%s] %s", used ? " or " : "did you mean ",
                               cfg_schema[i].section, name);
  if (used) {
    snprintf(hint + used, len - used, "?");
    return;
  }
  int best = -1, bestd = 1 << 30;
  for (int i = 0; i < cfg_schema_len; i++) {
    if (strcmp(cfg_schema[i].section, section)) continue;
    int d = edit_distance(name, cfg_schema[i].name);
    if (d < bestd) { bestd = d; best = i; }
  }
  if (best >= 0 && close_enough(name, cfg_schema[best].name, bestd))
    snprintf(hint, len, "did you mean '%s'?", cfg_schema[best].name);
  else
    snprintf(hint, len, "`rlpt deck-help` lists the keys of [%s]", section);
}

static const char *type_name(enum cfg_type t) {
  switch (t) {
  case CFG_INT: return "int";
  case CFG_FLOAT: return "float";
  case CFG_BOOL: return "bool";
  case CFG_STRING: return "string";
  case CFG_ENUM: return "enum";
  case CFG_PATH: return "path";
  case CFG_LIST: return "list";
  }
  return "?";
}

/* ---- value parsers: text -> field, or a message (no location) ------------------------ */

/* A range bound as people write it: 64, 0.5, 1e9, 9.2e18, 1e-5. */
static void fmt_bound(double v, char *buf, size_t len) {
  if (v == floor(v) && fabs(v) < 1e7) {
    snprintf(buf, len, "%.0f", v);
    return;
  }
  char tmp[48], *e;
  snprintf(tmp, sizeof tmp, "%g", v);
  if ((e = strchr(tmp, 'e'))) { /* e+09 -> e9, e-05 -> e-5 */
    char *d = e + 1, *src = e + 1;
    if (*src == '+') src++;
    else if (*src == '-') *d++ = *src++;
    while (*src == '0' && src[1]) src++;
    memmove(d, src, strlen(src) + 1);
  }
  snprintf(buf, len, "%s", tmp);
}

/* "[lo, hi] unit" */
static void fmt_range(const struct cfg_key *k, char *buf, size_t len) {
  char lo[48], hi[48];
  fmt_bound(k->min, lo, sizeof lo);
  fmt_bound(k->max, hi, sizeof hi);
  snprintf(buf, len, "[%s, %s]%s%s", lo, hi, k->unit[0] ? " " : "", k->unit);
}

static int has_range(const struct cfg_key *k) { return k->min <= k->max; }

static int out_of_range(const struct cfg_key *k, double v, const char *text, char *msg, size_t len) {
  if (!has_range(k) || (v >= k->min && v <= k->max)) return 0;
  char r[160];
  fmt_range(k, r, sizeof r);
  snprintf(msg, len, "%s is out of range %s%s", text, r, k->flags & CFG_AUTO ? " (or auto)" : "");
  return 1;
}

static int parse_int(const struct cfg_key *k, const char *s, long *out, char *msg, size_t len) {
  if ((k->flags & CFG_AUTO) && !strcmp(s, "auto")) { *out = -1; return 0; }
  const char *want = k->flags & CFG_AUTO ? "an integer or 'auto'" : "an integer";
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || !*s || isspace((unsigned char)*s)) {
    snprintf(msg, len, "expected %s, got '%s'", want, s);
    return 2;
  }
  if (*end) {
    char *dend;
    double d = strtod(s, &dend);
    if (!*dend && d == floor(d) && fabs(d) < 9e18)
      snprintf(msg, len, "expected %s, got '%s' (write it as %.0f)", want, s, d);
    else if (!*dend)
      snprintf(msg, len, "expected %s, got '%s'", want, s);
    else
      snprintf(msg, len, "trailing junk '%s' after the integer %.*s", end, (int)(end - s), s);
    return 2;
  }
  if (errno == ERANGE) {
    char r[160];
    fmt_range(k, r, sizeof r);
    snprintf(msg, len, "%s overflows a 64-bit integer (range %s)", s, r);
    return 2;
  }
  if (out_of_range(k, (double)v, s, msg, len)) return 2;
  *out = v;
  return 0;
}

/* One float, fully consumed and finite; range-checked against the row. */
static int parse_double(const struct cfg_key *k, const char *s, double *out, char *msg, size_t len) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || !*s || isspace((unsigned char)*s)) {
    snprintf(msg, len, "expected a number, got '%s'", s);
    return 2;
  }
  if (*end) {
    snprintf(msg, len, "trailing junk '%s' after the number %.*s", end, (int)(end - s), s);
    return 2;
  }
  if (!isfinite(v) || (errno == ERANGE && fabs(v) > 1)) {
    snprintf(msg, len, "expected a finite number, got '%s'", s);
    return 2;
  }
  if (out_of_range(k, v, s, msg, len)) return 2;
  *out = v;
  return 0;
}

static int parse_bool(const char *s, int *out, char *msg, size_t len) {
  static const char *yes[] = {"true", "yes", "on", "1"}, *no[] = {"false", "no", "off", "0"};
  for (int i = 0; i < 4; i++) {
    if (!strcasecmp(s, yes[i])) { *out = 1; return 0; }
    if (!strcasecmp(s, no[i])) { *out = 0; return 0; }
  }
  snprintf(msg, len, "expected a bool (true/false, yes/no, on/off, 1/0), got '%s'", s);
  return 2;
}

/* Index of `s` among "a|b|c", or -1. */
static int enum_index(const char *choices, const char *s) {
  size_t n = strlen(s);
  int idx = 0;
  for (const char *p = choices; *p; idx++) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && !strncmp(p, s, n)) return idx;
    if (!bar) break;
    p = bar + 1;
  }
  return -1;
}

/* Name of choice `idx` into buf ("?" when there is no such choice). */
static const char *enum_name(const char *choices, int idx, char *buf, size_t len) {
  const char *p = idx >= 0 ? choices : NULL;
  for (int i = 0; i < idx && p; i++) {
    p = strchr(p, '|');
    if (p) p++;
  }
  if (!p) {
    snprintf(buf, len, "?");
    return buf;
  }
  const char *bar = strchr(p, '|');
  size_t n = bar ? (size_t)(bar - p) : strlen(p);
  if (n >= len) n = len - 1;
  memcpy(buf, p, n);
  buf[n] = '\0';
  return buf;
}

static int parse_enum(const struct cfg_key *k, const char *s, int *out, char *msg, size_t len) {
  int idx = enum_index(k->choices, s);
  if (idx >= 0) { *out = idx; return 0; }
  int n = snprintf(msg, len, "'%s' is not one of %s", s, k->choices);
  char name[64], best[64] = ""; /* did-you-mean among the choices */
  int bestd = 1 << 30;
  for (int i = 0; strcmp(enum_name(k->choices, i, name, sizeof name), "?"); i++) {
    int d = edit_distance(s, name);
    if (d < bestd) { bestd = d; snprintf(best, sizeof best, "%s", name); }
  }
  if (best[0] && close_enough(s, best, bestd) && n > 0 && (size_t)n < len)
    snprintf(msg + n, len - (size_t)n, "\n  did you mean '%s'?", best);
  return 2;
}

static int parse_string(const struct cfg_key *k, const char *s, char *out, char *msg, size_t len) {
  size_t cap = k->size ? k->size : CFG_STR_MAX, n = strlen(s);
  if (n >= cap) {
    snprintf(msg, len, "value is %zu characters long; the limit is %zu", n, cap - 1);
    return 2;
  }
  if (n == 0 && k->type == CFG_STRING && !(k->def && !k->def[0])) { /* empty only where the default is */
    snprintf(msg, len, "expected a non-empty string");
    return 2;
  }
  for (size_t i = 0; i < n; i++)
    if (iscntrl((unsigned char)s[i])) {
      snprintf(msg, len, "control character in the value");
      return 2;
    }
  /* what the deck reader would cut off: surrounding blanks, a comment after a blank */
  if (n && (isspace((unsigned char)s[0]) || isspace((unsigned char)s[n - 1]) || strstr(s, " #") ||
            strstr(s, " ;") || strstr(s, "\t#") || strstr(s, "\t;") || s[0] == '#' || s[0] == ';')) {
    snprintf(msg, len, "'%s' cannot be written in a deck (leading/trailing blanks or a comment)", s);
    return 2;
  }
  memcpy(out, s, n + 1);
  return 0;
}

static int parse_list(const struct cfg_key *k, const char *s, struct cfg_list *out, char *msg, size_t len) {
  struct cfg_list l = {0};
  const char *p = s;
  while (*p == ' ' || *p == '\t') p++;
  if (!*p) { *out = l; return 0; } /* the empty list */
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    char item[128];
    while (n && isspace((unsigned char)*p)) { p++; n--; }
    while (n && isspace((unsigned char)p[n - 1])) n--;
    if (l.n == CFG_LIST_MAX) {
      snprintf(msg, len, "more than %d items in the list", CFG_LIST_MAX);
      return 2;
    }
    if (n == 0 || n >= sizeof item) {
      snprintf(msg, len, "item %d of the list '%s' is %s", l.n + 1, s, n ? "too long" : "empty");
      return 2;
    }
    memcpy(item, p, n);
    item[n] = '\0';
    char sub[256];
    if (parse_double(k, item, &l.v[l.n], sub, sizeof sub)) {
      snprintf(msg, len, "item %d of the list '%s': %s", l.n + 1, s, sub);
      return 2;
    }
    l.n++;
    if (!comma) break;
    p = comma + 1;
  }
  *out = l;
  return 0;
}

/* Parse `text` into the field of row r. Returns 0 or 2 with msg (no location). */
int config_set_value(struct config *cfg, int r, const char *text, char *msg, size_t len) {
  const struct cfg_key *k = &cfg_schema[r];
  char *field = (char *)cfg + k->offset;
  switch (k->type) {
  case CFG_INT: return parse_int(k, text, (long *)(void *)field, msg, len);
  case CFG_FLOAT: return parse_double(k, text, (double *)(void *)field, msg, len);
  case CFG_BOOL: return parse_bool(text, (int *)(void *)field, msg, len);
  case CFG_ENUM: return parse_enum(k, text, (int *)(void *)field, msg, len);
  case CFG_STRING:
  case CFG_PATH: return parse_string(k, text, field, msg, len);
  case CFG_LIST: return parse_list(k, text, (struct cfg_list *)(void *)field, msg, len);
  }
  snprintf(msg, len, "internal: unknown type %d", (int)k->type);
  return 1;
}

/* ---- canonical value text ------------------------------------------------------------- */

/* Shortest %.Ng that reads back to exactly v. */
static void fmt_double(double v, char *buf, size_t len) {
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, len, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  if (strchr(buf, 'e') && v == floor(v) && fabs(v) < 1e15) snprintf(buf, len, "%.1f", v); /* 1e+04 -> 10000.0 */
  char *e = strchr(buf, 'e');
  if (e) { /* 1e-08 -> 1e-8, 1e+20 -> 1e20 */
    char *d = e + 1, *src = e + 1;
    if (*src == '+') src++;
    else if (*src == '-') *d++ = *src++;
    while (*src == '0' && src[1]) src++;
    memmove(d, src, strlen(src) + 1);
  }
  /* keep floats recognisable as floats: 1 -> 1.0 */
  if (!strpbrk(buf, ".en") && strlen(buf) + 3 < len) strcat(buf, ".0");
}

static void value_text(const struct config *cfg, int r, char *buf, size_t len) {
  const struct cfg_key *k = &cfg_schema[r];
  const char *field = (const char *)cfg + k->offset;
  switch (k->type) {
  case CFG_INT: {
    long v = *(const long *)(const void *)field;
    if ((k->flags & CFG_AUTO) && v == -1) snprintf(buf, len, "auto");
    else snprintf(buf, len, "%ld", v);
    return;
  }
  case CFG_FLOAT: fmt_double(*(const double *)(const void *)field, buf, len); return;
  case CFG_BOOL: snprintf(buf, len, "%s", *(const int *)(const void *)field ? "true" : "false"); return;
  case CFG_ENUM: enum_name(k->choices, *(const int *)(const void *)field, buf, len); return;
  case CFG_STRING:
  case CFG_PATH: snprintf(buf, len, "%s", field); return;
  case CFG_LIST: {
    const struct cfg_list *l = (const struct cfg_list *)(const void *)field;
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < l->n && used < len; i++) {
      char item[40];
      fmt_double(l->v[i], item, sizeof item);
      used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", item);
    }
    return;
  }
  }
  snprintf(buf, len, "?");
}

/* ---- defaults ------------------------------------------------------------------------- */

void config_defaults(struct config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  if (cfg_schema_len > CFG_KEYS_MAX) {
    fprintf(stderr, "rlpt: internal: %d schema rows > CFG_KEYS_MAX %d (deck/config.h)\n", cfg_schema_len,
            CFG_KEYS_MAX);
    abort();
  }
  for (int r = 0; r < cfg_schema_len; r++) {
    const struct cfg_key *k = &cfg_schema[r];
    char msg[512];
    if (!k->def) continue; /* CFG_REQUIRED: the deck must set it */
    if (config_set_value(cfg, r, k->def, msg, sizeof msg)) {
      fprintf(stderr, "rlpt: internal: the default of [%s] %s in deck/config_schema.c is invalid: %s\n",
              k->section, k->name, msg);
      abort();
    }
  }
}

/* ---- the deck reader and handler (libinih) ------------------------------------------- */

struct deck_parse {
  struct config *cfg;
  const char *path;
  const char *pos; /* reader cursor into the deck text */
  int line;        /* number of the line last handed to inih */
  int failed;      /* a message is in err; stop */
  char *err;
  size_t errlen;
};

/* "LOC: [section] key: msg" (+ "\n  hint"). loc is "path:line" or "override '...'". */
__attribute__((format(printf, 7, 8)))
static int fail_at(char *err, size_t errlen, const char *loc, const char *section, const char *key,
                   const char *hint, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char what[160] = "";
  if (section && key) snprintf(what, sizeof what, "[%s] %s: ", section, key);
  else if (section) snprintf(what, sizeof what, "[%s]: ", section);
  else if (key) snprintf(what, sizeof what, "%s: ", key);
  snprintf(err, errlen, "%s: %s%s%s%s", loc, what, msg, hint && hint[0] ? "\n  " : "", hint ? hint : "");
  return 2;
}

static void deck_loc(const struct deck_parse *p, char *loc, size_t len) {
  snprintf(loc, len, "%s:%d", p->path, p->line);
}

/* The next deck line into buf (DECK_LINE_MAX bytes) without a UTF-8 byte-order mark, its
 * comment ('#' or ';' at the start or after a blank) and outer blanks. Returns the trimmed
 * text inside buf, or NULL when the line is too long for inih's num bytes (p->failed set). */
static char *next_line(struct deck_parse *p, int num, char *buf) {
  const char *nl = strchr(p->pos, '\n');
  size_t n = nl ? (size_t)(nl - p->pos) : strlen(p->pos);
  const char *src = p->pos;
  p->pos += n + (nl ? 1 : 0);
  p->line++;
  if (p->line == 1 && n >= 3 && !memcmp(src, "\xEF\xBB\xBF", 3)) { /* UTF-8 byte-order mark */
    src += 3;
    n -= 3;
  }
  if (n + 3 > (size_t)num || n + 3 > DECK_LINE_MAX) {
    char loc[CFG_STR_MAX + 32];
    deck_loc(p, loc, sizeof loc);
    p->failed = fail_at(p->err, p->errlen, loc, NULL, NULL, NULL,
                        "line is longer than %d characters", (num < DECK_LINE_MAX ? num : DECK_LINE_MAX) - 3);
    return NULL;
  }
  memcpy(buf, src, n);
  buf[n] = '\0';
  for (size_t i = 0; i < n; i++)
    if ((buf[i] == '#' || buf[i] == ';') && (i == 0 || isspace((unsigned char)buf[i - 1]))) {
      buf[i] = '\0';
      break;
    }
  char *s = buf;
  while (isspace((unsigned char)*s)) s++;
  size_t len = strlen(s);
  while (len && isspace((unsigned char)s[len - 1])) s[--len] = '\0';
  return s;
}

/* A section header s ("[name]") checked and written into str as inih reads it. Returns
 * str, or NULL (p->failed set) for a malformed header or an unknown section. */
static char *section_line(struct deck_parse *p, const char *s, const char *loc, char *str, int num) {
  const char *close = strchr(s, ']');
  if (!close || close[1]) {
    p->failed = fail_at(p->err, p->errlen, loc, NULL, NULL, "a section header is [name] alone on its line",
                        "unparsable line '%s'", s);
    return NULL;
  }
  char between[128];  /* the text between the brackets */
  size_t between_len = (size_t)(close - s - 1);
  if (between_len >= sizeof between) between_len = sizeof between - 1;
  memcpy(between, s + 1, between_len);
  between[between_len] = '\0';
  char *name = between;
  while (isspace((unsigned char)*name)) name++;
  size_t name_len = strlen(name);
  while (name_len && isspace((unsigned char)name[name_len - 1])) name[--name_len] = '\0';
  if (!section_known(name)) {
    char hint[512];
    suggest_section_hint(name, NULL, hint, sizeof hint);
    p->failed = fail_at(p->err, p->errlen, loc, name, NULL, hint, "unknown section");
    return NULL;
  }
  snprintf(str, (size_t)num, "[%s]\n", name);
  return str;
}

/* inih's reader: one checked line per call into str (num bytes), NULL at the end or on an
 * error (p->failed). */
static char *deck_reader(char *str, int num, void *stream) {
  struct deck_parse *p = stream;
  if (p->failed || !*p->pos) return NULL;
  char buf[DECK_LINE_MAX], loc[CFG_STR_MAX + 32];
  char *s = next_line(p, num, buf);
  if (!s) return NULL;
  deck_loc(p, loc, sizeof loc);
  if (s[0] == '[') return section_line(p, s, loc, str, num);
  char *sep = strpbrk(s, "=:");
  if (s[0] && (!sep || *sep == ':')) {
    p->failed = fail_at(p->err, p->errlen, loc, NULL, NULL, "expected `key = value` or `[section]`",
                        "unparsable line '%s'", s);
    return NULL;
  }
  snprintf(str, (size_t)num, "%s\n", s);
  return str;
}

static int deck_handler(void *user, const char *section, const char *name, const char *value) {
  struct deck_parse *p = user;
  if (p->failed) return 0;
  char loc[CFG_STR_MAX + 32], msg[768], hint[256];
  deck_loc(p, loc, sizeof loc);
  if (!section[0]) {
    p->failed = fail_at(p->err, p->errlen, loc, NULL, name, "put it under its [section] header",
                        "key outside of any section");
    return 0;
  }
  int r = config_find(section, name);
  if (r < 0) {
    suggest_key(section, name, hint, sizeof hint);
    p->failed = fail_at(p->err, p->errlen, loc, section, name, hint, "unknown key");
    return 0;
  }
  if (p->cfg->src[r] > 0) {
    p->failed = fail_at(p->err, p->errlen, loc, section, name, NULL, "duplicate key (first set on line %d)",
                        p->cfg->src[r]);
    return 0;
  }
  if (config_set_value(p->cfg, r, value, msg, sizeof msg)) {
    p->failed = fail_at(p->err, p->errlen, loc, section, name, NULL, "%s", msg);
    return 0;
  }
  p->cfg->src[r] = p->line;
  return 1;
}

static int parse_deck_text(struct config *cfg, const char *path, const char *text, char *err, size_t errlen) {
  struct deck_parse p = {.cfg = cfg, .path = path, .pos = text, .err = err, .errlen = errlen};
  /* Debian's libinih takes its limits at run time: a heap line buffer long enough for
   * CFG_STR_MAX paths; no continuation lines (the reader strips leading blanks anyway). */
  ini_use_stack = 0;
  ini_allow_realloc = 0;
  ini_initial_alloc = DECK_LINE_MAX;
  ini_max_line = DECK_LINE_MAX;
  ini_allow_multiline = 0;
  int rc = ini_parse_stream(deck_reader, &p, deck_handler, &p);
  if (p.failed) return 2;
  if (rc == -2) {
    snprintf(err, errlen, "%s: out of memory while parsing", path);
    return 1;
  }
  if (rc != 0) {
    char loc[CFG_STR_MAX + 32];
    snprintf(loc, sizeof loc, "%s:%d", path, rc);
    return fail_at(err, errlen, loc, NULL, NULL, NULL, "unparsable line");
  }
  return 0;
}

/* ---- overrides ------------------------------------------------------------------------ */

int config_is_override(const char *arg) {
  const char *eq = strchr(arg, '='), *dot = strchr(arg, '.');
  if (!eq || !dot || dot > eq || arg[0] == '-' || dot == arg || dot + 1 == eq) return 0;
  for (const char *c = arg; c < eq; c++)
    if (c != dot && !(isalnum((unsigned char)*c) || *c == '_')) return 0;
  return 1;
}

void config_split_args(int argc, char **argv, char **over, int *n_over, char **rest, int *n_rest) {
  *n_over = *n_rest = 0;
  for (int i = 1; i < argc; i++) {
    if (config_is_override(argv[i])) over[(*n_over)++] = argv[i];
    else rest[(*n_rest)++] = argv[i];
  }
}

static int apply_override(struct config *cfg, int i, const char *arg, char *err, size_t errlen) {
  char loc[CFG_STR_MAX + 64], section[128], name[128], msg[768], hint[512];
  snprintf(loc, sizeof loc, "override '%s'", arg);
  const char *eq = strchr(arg, '='), *dot = strchr(arg, '.');
  if (!eq || !dot || dot > eq)
    return fail_at(err, errlen, loc, NULL, NULL, "e.g. algo.group_size=8", "expected section.key=value");
  size_t ls = (size_t)(dot - arg), ln = (size_t)(eq - dot - 1);
  if (ls >= sizeof section || ln >= sizeof name)
    return fail_at(err, errlen, loc, NULL, NULL, NULL, "section or key name too long");
  memcpy(section, arg, ls);
  section[ls] = '\0';
  memcpy(name, dot + 1, ln);
  name[ln] = '\0';
  if (!section_known(section)) {
    suggest_section_hint(section, name, hint, sizeof hint);
    return fail_at(err, errlen, loc, section, NULL, hint, "unknown section");
  }
  int r = config_find(section, name);
  if (r < 0) {
    suggest_key(section, name, hint, sizeof hint);
    return fail_at(err, errlen, loc, section, name, hint, "unknown key");
  }
  if (cfg->src[r] < 0)
    return fail_at(err, errlen, loc, section, name, NULL, "overridden twice (first by override %d)",
                   -cfg->src[r]);
  if (config_set_value(cfg, r, eq + 1, msg, sizeof msg)) return fail_at(err, errlen, loc, section, name, NULL, "%s", msg);
  cfg->src[r] = -(i + 1);
  return 0;
}

/* ---- the API ------------------------------------------------------------------------- */

int config_parse_deck(struct config *cfg, const char *path, const char *text, int n_over,
                      char *const *over, char *err, size_t errlen) {
  config_defaults(cfg);
  err[0] = '\0';
  int rc = parse_deck_text(cfg, path, text, err, errlen);
  for (int i = 0; !rc && i < n_over; i++) rc = apply_override(cfg, i, over[i], err, errlen);
  if (rc) return rc;
  for (int r = 0; r < cfg_schema_len; r++)
    if ((cfg_schema[r].flags & CFG_REQUIRED) && cfg->src[r] == 0)
      return fail_at(err, errlen, path, cfg_schema[r].section, cfg_schema[r].name, NULL,
                     "missing required key (it has no default)");
  return 0;
}

void config_write_canonical(const struct config *cfg, FILE *f) {
  fprintf(f, "# rlpt %s canonical deck: every key in schema order; the comment says where its "
             "value came from\n", RLPT_VERSION);
  const char *section = NULL;
  for (int r = 0; r < cfg_schema_len; r++) {
    const struct cfg_key *k = &cfg_schema[r];
    if (!section || strcmp(section, k->section)) {
      fprintf(f, "%s[%s]\n", section ? "\n" : "", k->section);
      section = k->section;
    }
    char val[CFG_STR_MAX + 64], line[CFG_STR_MAX + 128];
    value_text(cfg, r, val, sizeof val);
    int n = snprintf(line, sizeof line, "%s = %s", k->name, val);
    int s = cfg->src[r];
    char where[32];
    if (s > 0) snprintf(where, sizeof where, "deck:%d", s);
    else snprintf(where, sizeof where, "%s", s < 0 ? "override" : "default");
    fprintf(f, "%s%*s  # %s\n", line, n < 38 ? 38 - n : 0, "", where);
  }
}

const char *config_type_name(enum cfg_type t) { return type_name(t); }

void config_allowed_text(const struct cfg_key *k, char *buf, size_t len) {
  buf[0] = '\0';
  if (k->type == CFG_ENUM) snprintf(buf, len, "%s", k->choices);
  else if (k->type == CFG_BOOL) snprintf(buf, len, "true|false");
  else if (has_range(k) && (k->type == CFG_INT || k->type == CFG_FLOAT || k->type == CFG_LIST)) {
    char lo[48], hi[48];
    fmt_bound(k->min, lo, sizeof lo);
    fmt_bound(k->max, hi, sizeof hi);
    snprintf(buf, len, "%s[%s, %s]%s", k->flags & CFG_AUTO ? "auto or " : "", lo, hi,
             k->type == CFG_LIST ? " each" : "");
  } else if (k->type == CFG_PATH) snprintf(buf, len, "path or empty");
}
