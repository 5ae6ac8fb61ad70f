/* env/tools.c: the enabled tools and one call of one (env/tools.h). */
#include "env/tools.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/calculator.h"
#include "sandbox/sandbox.h"
#include "util/line_workers.h"

#define KNOWN "(known: calculator, python, command)"

static const char *const names[ENV_TOOL_COUNT] = { "calculator", "python", "command" };

struct env_command {
  struct line_workers *lw;
  long calls;              /* requests sent so far (the next one's id) */
};

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
      snprintf(err, errlen, "%s tool '%.*s' " KNOWN,
               t < 0 ? "unknown" : "repeated", (int)n, p);
      return -1;
    }
    *mask |= ENV_TOOL_BIT(t);
    p += n;
  }
  if (*mask == 0) {
    snprintf(err, errlen, "no tool listed " KNOWN);
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

int env_tools_open_command(struct env_tools *t, const char *command, double timeout_s, char *err, size_t errlen) {
  struct env_command *c = calloc(1, sizeof *c);
  if (!c) return 1;
  int rc = line_workers_open(&c->lw, command, 1, timeout_s, "env", "an error tool turn (tool_errors)", err, errlen);
  if (rc) {
    free(c);
    return rc;
  }
  t->cmd = c;
  return 0;
}

void env_tools_close(struct env_tools *t) {
  if (!t->cmd) return;
  line_workers_close(t->cmd->lw);
  free(t->cmd);
  t->cmd = NULL;
}

/* One command call (util/line_workers.h's client of one request). */
struct command_call {
  const struct tool_call *call;
  const struct env_call_episode *ep;
  long id;
  char *out;
  size_t cap;
  int failed;
};

static char *command_request(void *ctx, int item, size_t *len) {
  const struct command_call *cc = ctx;
  const struct env_call_episode *ep = cc->ep;
  cJSON *o = cJSON_CreateObject(), *e = cJSON_CreateObject();
  cJSON *args = cc->call->arguments ? cJSON_Duplicate(cc->call->arguments, 1) : cJSON_CreateObject();
  char *text = NULL, *line = NULL;
  (void)item;
  if (o && e && args) {
    cJSON_AddNumberToObject(o, "id", (double)cc->id);
    cJSON_AddStringToObject(o, "name", cc->call->name);
    cJSON_AddItemToObject(o, "arguments", args);
    args = NULL;
    cJSON_AddStringToObject(e, "prompt", ep && ep->prompt ? ep->prompt : "");
    cJSON_AddStringToObject(e, "response", ep && ep->response ? ep->response : "");
    cJSON_AddNumberToObject(e, "turn", ep ? ep->turn : 0);
    cJSON_AddItemToObject(o, "episode", e);
    e = NULL;
    text = cJSON_PrintUnformatted(o);
  }
  if (text && (line = malloc(strlen(text) + 2))) *len = (size_t)sprintf(line, "%s\n", text);
  cJSON_Delete(args);
  cJSON_Delete(e);
  cJSON_Delete(o);
  free(text);
  return line;
}

static int command_reply(void *ctx, int item, const char *line, char *msg, size_t msglen) {
  struct command_call *cc = ctx;
  cJSON *o = cJSON_Parse(line);
  const cJSON *jid = cJSON_GetObjectItemCaseSensitive(o, "id"), *jc = cJSON_GetObjectItemCaseSensitive(o, "content");
  int ok = cJSON_IsObject(o) && cJSON_IsNumber(jid) && jid->valuedouble == (double)cc->id && cJSON_IsString(jc);
  (void)item;
  if (ok) content_copy(cc->out, cc->cap, jc->valuestring, strlen(jc->valuestring));
  else
    snprintf(msg, msglen, "answered garbage (not {\"id\": %ld, \"content\": \"...\"}): '%.120s'", cc->id, line);
  cJSON_Delete(o);
  return ok ? 0 : -1;
}

static void command_fail(void *ctx, int item, const char *why) {
  struct command_call *cc = ctx;
  (void)item;
  cc->failed = 1;
  tool_error(cc->out, cc->cap, "[env] command: %.400s", why);
}

static int run_command(const struct env_tools *t, const struct tool_call *call, const struct env_call_episode *ep,
                       char *out, size_t cap) {
  struct command_call cc = {.call = call, .ep = ep, .id = t->cmd->calls++, .out = out, .cap = cap};
  const struct line_client cl = {.ctx = &cc, .first_id = cc.id, .request = command_request,
                                 .reply = command_reply, .fail = command_fail};
  if (line_workers_run(t->cmd->lw, 1, &cl) != 0) return tool_error(out, cap, "out of memory running the command");
  return cc.failed;
}

int env_tool_run(const struct env_tools *t, const struct tool_call *call, char *out, size_t cap) {
  return env_tool_run_episode(t, call, NULL, out, cap);
}

int env_tool_run_episode(const struct env_tools *t, const struct tool_call *call, const struct env_call_episode *ep,
                         char *out, size_t cap) {
  int tool = tool_by_name(call->name, strlen(call->name));
  int builtin = tool >= 0 && tool != ENV_TOOL_COMMAND;
  if (!builtin && t->cmd && (t->enabled & ENV_TOOL_BIT(ENV_TOOL_COMMAND))) return run_command(t, call, ep, out, cap);
  if (!builtin || !(t->enabled & ENV_TOOL_BIT(tool))) {
    char list[64] = "";
    for (int k = 0; k < ENV_TOOL_COUNT; k++)
      if (t->enabled & ENV_TOOL_BIT(k))
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "", names[k]);
    return tool_error(out, cap, "unknown tool '%s' (enabled: %s)", call->name, list);
  }
  if (tool == ENV_TOOL_CALCULATOR) return run_calculator(call, out, cap);
  return run_python(t, call, out, cap);
}
