/* env/test_command_tool.c: the command tool (env/tools.h) with a Python worker: episodes fed
 * token by token on the character tokenizer (env/episode.h) get the built-in calculator's
 * tool turns when the same expressions go to a Python calculator under another tool name;
 * the request carries the episode (prompt, response so far, turn); a worker that crashes,
 * hangs or answers garbage gives a named error turn counted in tool_errors, and the next
 * call goes to a fresh worker; a missing program is refused (2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/episode.h"
#include "env/tools.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "util/clock.h"

#define WORKER "test_command_tool_worker.py"

static const char *const worker_py =
    "import json, os, sys, time\n"
    "for line in sys.stdin:\n"
    "    q = json.loads(line)\n"
    "    name, a, ep = q['name'], q['arguments'], q['episode']\n"
    "    if name == 'crash': os._exit(3)\n"
    "    if name == 'hang': time.sleep(30)\n"
    "    if name == 'garbage':\n"
    "        print('hello, not json', flush=True)\n"
    "        continue\n"
    "    if name == 'episode':\n"
    "        c = '%s|%s|%d|%d' % (ep['prompt'], ep['response'][-12:], ep['turn'], q['id'])\n"
    "    else:\n"
    "        v = eval(a['expression'], {'__builtins__': {}})\n"
    "        c = str(int(v)) if v == int(v) else repr(v)\n"
    "    print(json.dumps({'id': q['id'], 'content': c}), flush=True)\n";

/* Feed text to env_turn one character token at a time; the tool turn's text into got. */
static int feed(struct env *e, int r, int *resp, int *n, const char *text, char *got) {
  int rc = 0;
  got[0] = 0;
  for (const char *p = text; *p && rc == 0; p++) {
    resp[(*n)++] = *p - 32;
    rc = env_turn(e, r, resp, *n, resp + *n, 1024 - *n);
  }
  if (rc > 0) {
    size_t len = 0;
    CHECK(tokenizer_decode(e->tok, resp + *n, (size_t)rc, got, 2048, &len) == TOK_OK);
    *n += rc;
  }
  return rc;
}

static void call_text(char *out, size_t cap, const char *name, const char *expr) {
  snprintf(out, cap, "<tool_call>{\"name\":\"%s\",\"arguments\":{\"expression\":\"%s\"}}</tool_call>", name, expr);
}

/* The tool turns of one episode calling name on each expression (its prompt text prompt). */
static void episode_turns(struct env_tools *tools, const char *name, const char *const *expr, int n_expr,
                          char turns[][2048]) {
  struct tokenizer tok;
  tokenizer_init_char(&tok);
  struct env e;
  env_init(&e, tools, n_expr + 1, ENV_WRAP_PLAIN, &tok);
  struct rollout_prompt p = {.prompt_id = 1};
  CHECK(env_begin(&e, &p, 1, 1) == 0);
  int resp[1024], n = 0;
  char call[256];
  for (int i = 0; i < n_expr; i++) {
    call_text(call, sizeof call, name, expr[i]);
    CHECK(feed(&e, 0, resp, &n, call, turns[i]) > 0);
  }
  struct env_stats st;
  env_stats_get(&e, &st);
  CHECK(st.tool_calls == n_expr && st.tool_errors == 0);
  env_free(&e);
  tokenizer_free(&tok);
}

static void test_same_as_calculator(void) {
  const char *const expr[] = {"12*34", "(7+5)*3-4", "100/4", "2*(3+4)*5"};
  enum { N = 4 };
  static char builtin[N][2048], command[N][2048];
  struct env_tools calc = {.enabled = ENV_TOOL_BIT(ENV_TOOL_CALCULATOR)};
  episode_turns(&calc, "calculator", expr, N, builtin);
  struct env_tools cmd = {.enabled = ENV_TOOL_BIT(ENV_TOOL_CALCULATOR) | ENV_TOOL_BIT(ENV_TOOL_COMMAND)};
  char err[256];
  CHECK(env_tools_open_command(&cmd, "/usr/bin/python3 " WORKER, 5.0, err, sizeof err) == 0);
  episode_turns(&cmd, "pycalc", expr, N, command);
  for (int i = 0; i < N; i++)
    CHECK_MSG(strcmp(builtin[i], command[i]) == 0, "%s: built-in '%s', command '%s'", expr[i], builtin[i],
              command[i]);
  /* a built-in name still goes to the built-in tool with command enabled */
  episode_turns(&cmd, "calculator", expr, 1, command);
  CHECK(strcmp(builtin[0], command[0]) == 0);
  env_tools_close(&cmd);
  CHECK(cmd.cmd == NULL);
}

/* The request's episode, the failures and the restarts, on one worker. */
static void test_episode_and_failures(void) {
  struct tokenizer tok;
  tokenizer_init_char(&tok);
  struct env_tools tools = {.enabled = ENV_TOOL_BIT(ENV_TOOL_COMMAND)};
  char err[256], got[2048], call[256];
  CHECK(env_tools_open_command(&tools, "/usr/bin/python3 " WORKER, 0.5, err, sizeof err) == 0);
  struct env e;
  env_init(&e, &tools, 8, ENV_WRAP_PLAIN, &tok);
  const char *prompt = "Q: 6*7?";
  int ptok[16], np = 0, resp[1024], n = 0;
  for (const char *q = prompt; *q; q++) ptok[np++] = *q - 32;
  struct rollout_prompt p = {.prompt_id = 1, .tokens = ptok, .n_tokens = np};
  CHECK(env_begin(&e, &p, 1, 1) == 0);
  call_text(call, sizeof call, "episode", "");
  CHECK(feed(&e, 0, resp, &n, call, got) > 0);
  CHECK_MSG(strcmp(got, "<tool_response>Q: 6*7?|</tool_call>|1|0</tool_response>") == 0, "got '%s'", got);
  const char *bad[] = {"crash", "hang", "garbage"}, *why[] = {"exited or closed its stdout before answering",
                                                              "no answer within [env] command_timeout_s = 0.5 s",
                                                              "answered garbage"};
  for (int i = 0; i < 3; i++) {
    call_text(call, sizeof call, bad[i], "1");
    double t0 = clock_seconds();
    CHECK(feed(&e, 0, resp, &n, call, got) > 0);
    CHECK_MSG(clock_seconds() - t0 < 5.0, "%s took %.1f s", bad[i], clock_seconds() - t0);
    CHECK_MSG(strstr(got, "<tool_response>error: [env] command: ") == got && strstr(got, why[i]), "%s: '%s'", bad[i],
              got);
    /* the next call goes to a fresh worker */
    call_text(call, sizeof call, "pycalc", "6*7");
    CHECK(feed(&e, 0, resp, &n, call, got) > 0);
    CHECK_MSG(strcmp(got, "<tool_response>42</tool_response>") == 0, "after %s: '%s'", bad[i], got);
  }
  struct env_stats st;
  env_stats_get(&e, &st);
  CHECK(st.tool_calls == 7 && st.tool_errors == 3);
  env_free(&e);
  env_tools_close(&tools);
  tokenizer_free(&tok);
}

static void test_missing_program(void) {
  struct env_tools tools = {.enabled = ENV_TOOL_BIT(ENV_TOOL_COMMAND)};
  char err[256];
  CHECK(env_tools_open_command(&tools, "no-such-tool-program --x", 1.0, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "[env] command: 'no-such-tool-program' is not an executable program") != NULL, "%s", err);
  CHECK(tools.cmd == NULL);
}

int main(void) {
  FILE *f = fopen(WORKER, "w");
  CHECK(f && fputs(worker_py, f) >= 0 && fclose(f) == 0);
  test_same_as_calculator();
  test_episode_and_failures();
  test_missing_program();
  remove(WORKER);
  return TEST_RESULT("test_command_tool");
}
