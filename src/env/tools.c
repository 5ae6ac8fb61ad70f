/* env/tools.c: the enabled tools and one call of one (env/tools.h). */
#include "env/tools.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "env/calculator.h"
#include "sandbox/sandbox.h"

static const char *const names[ENV_TOOL_COUNT] = { "calculator", "python" };

const char *env_tool_name(enum env_tool t) {
  return t >= 0 && t < ENV_TOOL_COUNT ? names[t] : "?";
}

static int tool_by_name(const char *s, size_t n) {
  for (int t = 0; t < ENV_TOOL_COUNT; t++)
    if (strlen(names[t]) == n && memcmp(names[t], s, n) == 0) return t;
  return -1;
}

int env_tools_parse(const char *list, unsigned *mask, char *err, size_t errlen) {
  *mask = 0;
  for (const char *p = list; *p;) {
    while (*p == ' ' || *p == ',') p++;
    size_t n = strcspn(p, ", ");
    if (n == 0) break;
    int t = tool_by_name(p, n);
    if (t < 0 || (*mask & ENV_TOOL_BIT(t))) {
      snprintf(err, errlen, "%s tool '%.*s' (known: calculator, python)",
               t < 0 ? "unknown" : "repeated", (int)n, p);
      return -1;
    }
    *mask |= ENV_TOOL_BIT(t);
    p += n;
  }
  if (*mask == 0) {
    snprintf(err, errlen, "no tool listed (known: calculator, python)");
    return -1;
  }
  return 0;
}

static int tool_error(char *out, size_t cap, const char *fmt, ...) {
  int k = snprintf(out, cap, "error: ");
  va_list ap;
  va_start(ap, fmt);
  if (k >= 0 && (size_t)k < cap) vsnprintf(out + k, cap - (size_t)k, fmt, ap);
  va_end(ap);
  return 1;
}

/* The string argument `key` of call, or NULL. */
static const char *string_arg(const struct tool_call *call, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(call->arguments, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int run_calculator(const struct tool_call *call, char *out, size_t cap) {
  const char *e = string_arg(call, "expression");
  if (!e) return tool_error(out, cap, "calculator needs a string argument \"expression\"");
  double v;
  char msg[160];
  if (calc_eval(e, strlen(e), &v, msg, sizeof msg) != 0) return tool_error(out, cap, "%s", msg);
  calc_format(v, out, cap);
  return 0;
}

/* s[0..n) into out, its first ENV_CONTENT_MAX bytes at most ("..." marks a cut). */
static void content_copy(char *out, size_t cap, const char *s, size_t n) {
  size_t k = n > ENV_CONTENT_MAX ? ENV_CONTENT_MAX : n;
  snprintf(out, cap, "%.*s%s", (int)k, s, k < n ? "..." : "");
}

static int run_python(const struct env_tools *t, const struct tool_call *call, char *out, size_t cap) {
  const char *code = string_arg(call, "code");
  if (!code) return tool_error(out, cap, "python needs a string argument \"code\"");
  struct sandbox_job j = { .program = code, .program_len = strlen(code) };
  if (sandbox_run(t->sb, &j, 1, 1) != 0) {
    sandbox_job_clear(&j);
    return tool_error(out, cap, "out of memory running the code");
  }
  int rc = 0;
  if (sandbox_job_ok(&j)) {
    content_copy(out, cap, j.out ? j.out : "", j.out_len);
  } else {
    const char *e = j.status == SANDBOX_START_FAILED ? j.start_error : j.err ? j.err : "";
    size_t n = strlen(e), tail = n > 400 ? n - 400 : 0;
    rc = tool_error(out, cap, "%s (exit %d): %s", sandbox_status_name(j.status), j.exit_code, e + tail);
  }
  sandbox_job_clear(&j);
  return rc;
}

int env_tool_run(const struct env_tools *t, const struct tool_call *call, char *out, size_t cap) {
  int tool = tool_by_name(call->name, strlen(call->name));
  if (tool < 0 || !(t->enabled & ENV_TOOL_BIT(tool))) {
    char list[64] = "";
    for (int k = 0; k < ENV_TOOL_COUNT; k++)
      if (t->enabled & ENV_TOOL_BIT(k))
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "", names[k]);
    return tool_error(out, cap, "unknown tool '%s' (enabled: %s)", call->name, list);
  }
  if (tool == ENV_TOOL_CALCULATOR) return run_calculator(call, out, cap);
  return run_python(t, call, out, cap);
}
