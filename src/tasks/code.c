/* tasks/code.c: HumanEval and MBPP rows, the program of a response and its tests run over
 * the sandbox pool (rules in tasks/code.h). */
#include "tasks/code.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "io/jsonl.h"
#include "sandbox/sandbox.h"
#include "tasks/dataset.h"
#include "util/clock.h"

#define MARKER_HEX 32

static const char *row_string(const cJSON *obj, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int add_test(struct data_row *r, const char *a, const char *b, const char *c) {
  size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
  char **t = realloc(r->tests, sizeof *t * (size_t)(r->n_tests + 1));
  if (!t) return 1;
  r->tests = t;
  if (!(t[r->n_tests] = malloc(n))) return 1;
  snprintf(t[r->n_tests++], n, "%s%s%s", a, b, c);
  return 0;
}

/* HumanEval: one test, check(entry_point) after the row's test code. */
static int humaneval_row(const cJSON *obj, const char *prompt_key, struct data_row *r, const char **answer) {
  const char *test = row_string(obj, "test"), *entry = row_string(obj, "entry_point");
  const char *prompt = row_string(obj, prompt_key);
  char call[320];
  snprintf(call, sizeof call, "\n\ncheck(%s)\n", entry);
  r->code_prefix = strdup(prompt ? prompt : "");
  if (!r->code_prefix || add_test(r, test, call, "")) return 1;
  if (!*answer) *answer = row_string(obj, "canonical_solution");
  return 0;
}

static int mbpp_row(const cJSON *obj, const char *path, long line, struct data_row *r, const char **answer,
                    char *msg, size_t msglen) {
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, "test_list");
  const char *setup = row_string(obj, "test_setup_code");
  int i = 0;
  for (const cJSON *t = list->child; t; t = t->next, i++) {
    if (!cJSON_IsString(t)) {
      snprintf(msg, msglen, "%s:%ld: test_list[%d] is %s, expected a string", path, line, i, jsonl_type_name(t));
      return 2;
    }
    if (add_test(r, setup ? setup : "", setup ? "\n" : "", t->valuestring)) return 1;
  }
  if (!*answer) *answer = row_string(obj, "code");
  return 0;
}

int code_row_parse(const cJSON *obj, const char *path, long line, const char *prompt_key, struct data_row *r,
                   const char **answer, char *msg, size_t msglen) {
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, "test_list");
  const char *entry = row_string(obj, "entry_point");
  int rc;
  if (row_string(obj, "test") && entry && strlen(entry) < 256 && strspn(entry, "abcdefghijklmnopqrstuvwxyz"
      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == strlen(entry) && entry[0])
    rc = humaneval_row(obj, prompt_key, r, answer);
  else if (cJSON_IsArray(list) && cJSON_GetArraySize(list) > 0)
    rc = mbpp_row(obj, path, line, r, answer, msg, msglen);
  else {
    snprintf(msg, msglen, "%s:%ld: a code row needs \"test\" and \"entry_point\" (a Python name; HumanEval) or a "
             "non-empty \"test_list\" of strings (MBPP)", path, line);
    return 2;
  }
  if (!rc && !*answer) {
    snprintf(msg, msglen, "%s:%ld: no reference solution: the row has no answer key, \"canonical_solution\" or "
             "\"code\"", path, line);
    rc = 2;
  }
  return rc;
}

void code_row_free(struct data_row *r) {
  for (int i = 0; i < r->n_tests; i++) free(r->tests[i]);
  free(r->tests);
  free(r->code_prefix);
  r->tests = NULL;
  r->code_prefix = NULL;
  r->n_tests = 0;
}

void code_extract(const char *resp, size_t len, size_t *off, size_t *n) {
  static const char *const fences[] = {"```python\n", "```py\n", "```\n"};
  *off = 0;
  *n = len;
  for (int f = 0; f < 3; f++) {
    size_t fl = strlen(fences[f]);
    for (size_t i = 0; i + fl <= len; i++) {
      if (memcmp(resp + i, fences[f], fl)) continue;
      size_t start = i + fl, end = start;
      while (end + 3 <= len && memcmp(resp + end, "```", 3)) end++;
      if (end + 3 > len) end = len;  /* an unclosed block runs to the end */
      *off = start;
      *n = end - start;
      return;
    }
  }
}

/* One execution's program: [prefix \n] program \n\n test \n print(marker). */
static char *test_program(const struct data_row *r, const char *prog, size_t n, int k, const char *marker,
                          size_t *out_len) {
  const char *prefix = r->code_prefix ? r->code_prefix : "";
  size_t cap = strlen(prefix) + n + strlen(r->tests[k]) + MARKER_HEX + 32;
  char *p = malloc(cap);
  if (!p) return NULL;
  size_t at = (size_t)snprintf(p, cap, "%s%s", prefix, prefix[0] ? "\n" : "");
  memcpy(p + at, prog, n);
  at += n;
  at += (size_t)snprintf(p + at, cap - at, "\n\n%s\nprint(\"%s\")\n", r->tests[k], marker);
  *out_len = at;
  return p;
}

static void new_marker(char *hex) {
  unsigned char b[MARKER_HEX / 2];
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
    for (size_t i = 0; i < sizeof b; i++) b[i] = (unsigned char)rand();
  for (size_t i = 0; i < sizeof b; i++) snprintf(hex + 2 * i, 3, "%02x", b[i]);
}

/* stdout ends with the marker and its newline (the program's own output may not end a line). */
static int ends_with_marker(const struct sandbox_job *j, const char *marker) {
  size_t m = strlen(marker), n = j->out_len;
  return j->out && n >= m + 1 && j->out[n - 1] == '\n' && !memcmp(j->out + n - 1 - m, marker, m);
}

int code_score_batch(const struct sandbox *sb, int workers, int all_or_nothing, const struct data_row *const *rows,
                     const char *const *resp, const size_t *len, int n, double *score, int *passed,
                     struct code_stats *st) {
  int total = 0, rc = 0;
  for (int i = 0; i < n; i++) total += rows[i]->n_tests;
  struct sandbox_job *jobs = calloc((size_t)total + 1, sizeof *jobs);
  char (*marker)[MARKER_HEX + 1] = calloc((size_t)total + 1, sizeof *marker);
  if (!jobs || !marker) rc = 1;
  for (int i = 0, t = 0; !rc && i < n; i++) {
    size_t off, m;
    code_extract(resp[i], len[i], &off, &m);
    for (int k = 0; k < rows[i]->n_tests && !rc; k++, t++) {
      new_marker(marker[t]);
      jobs[t].program = test_program(rows[i], resp[i] + off, m, k, marker[t], &jobs[t].program_len);
      rc = !jobs[t].program;
    }
  }
  double t0 = clock_seconds();
  if (!rc) rc = sandbox_run(sb, jobs, total, workers);
  st->wall_s += clock_seconds() - t0;
  for (int i = 0, t = 0; i < n; i++) {
    int ok = 0;
    for (int k = 0; k < rows[i]->n_tests; k++, t++) {
      ok += !rc && sandbox_job_ok(&jobs[t]) && ends_with_marker(&jobs[t], marker[t]);
      st->start_failures += !rc && jobs[t].status == SANDBOX_START_FAILED;
    }
    int nt = rows[i]->n_tests;
    score[i] = all_or_nothing ? (ok == nt ? 1.0 : 0.0) : (double)ok / nt;
    if (passed) passed[i] = ok;
    st->passed += ok;
  }
  st->executions += rc ? 0 : total;
  for (int t = 0; jobs && t < total; t++) {
    free((char *)jobs[t].program);
    sandbox_job_clear(&jobs[t]);
  }
  free(jobs);
  free(marker);
  return rc;
}
