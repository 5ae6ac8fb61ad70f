/* env/test_tool_call.c: the tool-call parser (env/tool_call.h), the calculator against
 * hand-computed values and its errors (env/calculator.h), a tool call run through the
 * enabled tools (env/tools.h: unknown tool, wrong arguments), and the episode hook
 * (env/episode.h) fed a model turn token by token on the character tokenizer: the tool
 * turn it returns, max_turns, the counters. Values are exact (doubles of small integers
 * and of decimals compared at 1e-12). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/calculator.h"
#include "env/episode.h"
#include "env/tool_call.h"
#include "env/tools.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

static enum tool_call_status parse(const char *text, struct tool_call *c, char *err) {
  return tool_call_parse(text, strlen(text), c, err, 256);
}

static void test_parser(void) {
  struct tool_call c;
  char err[256] = "";
  const char *ok = "Let me compute. <tool_call>\n{\"name\": \"calculator\", \"arguments\": "
                   "{\"expression\": \"12*34\"}}\n</tool_call>";
  CHECK(tool_call_ends(ok, strlen(ok)));
  CHECK(parse(ok, &c, err) == TOOL_CALL_OK);
  CHECK(strcmp(c.name, "calculator") == 0);
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(c.arguments, "expression");
  CHECK(cJSON_IsString(e) && strcmp(e->valuestring, "12*34") == 0);
  tool_call_free(&c);
  /* the last block of a turn that holds two */
  CHECK(parse("<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call> and "
              "<tool_call>{\"name\":\"b\",\"arguments\":{}}</tool_call>", &c, err) == TOOL_CALL_OK);
  CHECK(strcmp(c.name, "b") == 0);
  tool_call_free(&c);
  CHECK(parse("no call here", &c, err) == TOOL_CALL_NONE);
  CHECK(!tool_call_ends("<tool_call>{}", 13));
  CHECK(parse("<tool_call>{\"name\": \"calculator\", \"arg", &c, err) == TOOL_CALL_UNTERMINATED);
  CHECK(strstr(err, "unterminated") != NULL);
  CHECK(parse("<tool_call>{\"name\": calculator}</tool_call>", &c, err) == TOOL_CALL_MALFORMED);
  CHECK(strstr(err, "not valid JSON") != NULL);
  CHECK(parse("<tool_call>[1, 2]</tool_call>", &c, err) == TOOL_CALL_MALFORMED);
  CHECK(parse("<tool_call>{\"arguments\": {}}</tool_call>", &c, err) == TOOL_CALL_MALFORMED);
  CHECK(strstr(err, "\"name\"") != NULL);
  CHECK(parse("<tool_call>{\"name\": \"x\", \"arguments\": \"1+1\"}</tool_call>", &c, err) ==
        TOOL_CALL_MALFORMED);
  CHECK(strstr(err, "\"arguments\"") != NULL);
  CHECK(parse("2 </tool_call>", &c, err) == TOOL_CALL_MALFORMED);
  CHECK(c.arguments == NULL);
}

static double calc(const char *s, int *ok, char *err) {
  double v = NAN;
  *ok = calc_eval(s, strlen(s), &v, err, 256) == 0;
  return v;
}

static void test_calculator(void) {
  struct { const char *e; double v; } cases[] = {
    { "12*34", 408 }, { "1+2*3", 7 }, { "(1+2)*3", 9 }, { "2-3-4", -5 }, { "100/8/5", 2.5 },
    { "-(3+4)*2", -14 }, { "--5", 5 }, { " 7 * ( 6 - +2 ) ", 28 }, { "0.5*0.25", 0.125 },
    { "123456*789", 97406784 }, { "1.5+.5", 2 }, { "10/4", 2.5 }, { "((((2))))", 2 },
  };
  char err[256];
  int ok;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double v = calc(cases[i].e, &ok, err);
    CHECK_MSG(ok, "%s: %s", cases[i].e, err);
    CHECK_NEAR(v, cases[i].v, 1e-12);
  }
  const char *bad[][2] = {
    { "", "empty" }, { "1+", "ended" }, { "2*(3+4", "expected ')'" }, { "5/0", "division by zero" },
    { "5/(2-2)", "division by zero" }, { "2^3", "unexpected character '^'" },
    { "1.2.3", "malformed number" }, { "3 4", "unexpected character '4'" },
    { "import os", "unexpected character 'i'" }, { ")", "unexpected character ')'" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    calc(bad[i][0], &ok, err);
    CHECK_MSG(!ok && strstr(err, bad[i][1]), "'%s' gave '%s'", bad[i][0], ok ? "ok" : err);
  }
  char deep[200];
  memset(deep, '(', 100);
  snprintf(deep + 100, 100, "1");
  calc(deep, &ok, err);
  CHECK(!ok && strstr(err, "nested deeper"));
  char buf[64];
  calc_format(408, buf, sizeof buf);
  CHECK(strcmp(buf, "408") == 0);
  calc_format(-2.5, buf, sizeof buf);
  CHECK(strcmp(buf, "-2.5") == 0);
  calc_format(0.1 + 0.2, buf, sizeof buf);
  CHECK(strtod(buf, NULL) == 0.1 + 0.2);
}

static int run_tool(const struct env_tools *t, const char *block, char *out) {
  struct tool_call c;
  char err[256];
  CHECK(parse(block, &c, err) == TOOL_CALL_OK);
  int rc = env_tool_run(t, &c, out, 512);
  tool_call_free(&c);
  return rc;
}

static void test_tools(void) {
  unsigned mask;
  char err[256], out[512];
  CHECK(env_tools_parse("calculator", &mask, err, sizeof err) == 0 && mask == ENV_TOOL_BIT(ENV_TOOL_CALCULATOR));
  CHECK(env_tools_parse("calculator, python", &mask, err, sizeof err) == 0 && mask == 3u);
  CHECK(env_tools_parse("calculator,search", &mask, err, sizeof err) != 0 && strstr(err, "'search'"));
  CHECK(env_tools_parse("python,python", &mask, err, sizeof err) != 0 && strstr(err, "repeated"));
  CHECK(env_tools_parse("", &mask, err, sizeof err) != 0);
  struct env_tools t = { .enabled = ENV_TOOL_BIT(ENV_TOOL_CALCULATOR) };
  CHECK(run_tool(&t, "<tool_call>{\"name\":\"calculator\",\"arguments\":{\"expression\":\"37*43\"}}</tool_call>", out) == 0);
  CHECK(strcmp(out, "1591") == 0);
  CHECK(run_tool(&t, "<tool_call>{\"name\":\"calculator\",\"arguments\":{\"expression\":\"1/0\"}}</tool_call>", out) == 1);
  CHECK(strncmp(out, "error: division by zero", 23) == 0);
  CHECK(run_tool(&t, "<tool_call>{\"name\":\"calculator\",\"arguments\":{\"expr\":\"1\"}}</tool_call>", out) == 1);
  CHECK(strstr(out, "\"expression\"") != NULL);
  CHECK(run_tool(&t, "<tool_call>{\"name\":\"search\",\"arguments\":{}}</tool_call>", out) == 1);
  CHECK(strcmp(out, "error: unknown tool 'search' (enabled: calculator)") == 0);
  /* python is known but not enabled here: the same error, no sandbox touched */
  CHECK(run_tool(&t, "<tool_call>{\"name\":\"python\",\"arguments\":{\"code\":\"print(1)\"}}</tool_call>", out) == 1);
  CHECK(strstr(out, "unknown tool 'python'") != NULL);
}

/* Feed text to env_turn as a model would sample it, one character token at a time; the
 * tool turn's text (or "" when none came) into got, env_turn's last return into *rc. */
static void feed(struct env *e, int r, int *resp, int *n, const char *text, char *got, int *rc) {
  const struct tokenizer *tok = e->tok;
  got[0] = 0;
  *rc = 0;
  for (const char *p = text; *p && *rc == 0; p++) {
    resp[(*n)++] = *p - 32;
    *rc = env_turn(e, r, resp, *n, resp + *n, 256 - *n);
  }
  if (*rc > 0) {
    size_t len = 0;
    CHECK(tokenizer_decode(tok, resp + *n, (size_t)*rc, got, 512, &len) == TOK_OK);
    *n += *rc;
  }
}

static void test_episode(void) {
  struct tokenizer tok;
  tokenizer_init_char(&tok);
  struct env_tools tools = { .enabled = ENV_TOOL_BIT(ENV_TOOL_CALCULATOR) };
  struct env e;
  env_init(&e, &tools, 3, ENV_WRAP_PLAIN, &tok);
  struct rollout_prompt p = { .prompt_id = 1 };
  CHECK(env_begin(&e, &p, 1, 2) == 0 && e.n_ep == 2);
  int resp[256], n = 0, rc;
  char got[512];
  feed(&e, 0, resp, &n, "<tool_call>{\"name\":\"calculator\",\"arguments\":{\"expression\":\"12*34\"}}</tool_call>",
       got, &rc);
  CHECK_MSG(strcmp(got, "<tool_response>408</tool_response>") == 0, "got '%s'", got);
  feed(&e, 0, resp, &n, "<tool_call>{\"name\":\"calc\",\"arguments\":{}}</tool_call>", got, &rc);
  CHECK_MSG(strcmp(got, "<tool_response>error: unknown tool 'calc' (enabled: calculator)</tool_response>") == 0,
            "got '%s'", got);
  /* the third model turn is the last (max_turns 3): its call ends the episode */
  feed(&e, 0, resp, &n, "<tool_call>{\"name\":\"calculator\",\"arguments\":{\"expression\":\"1\"}}</tool_call>",
       got, &rc);
  CHECK(rc == GEN_ENV_END && got[0] == 0);
  /* sequence 1: text without a call, then a malformed one */
  int resp1[256], n1 = 0;
  feed(&e, 1, resp1, &n1, "408 is the answer", got, &rc);
  CHECK(rc == 0 && got[0] == 0);
  feed(&e, 1, resp1, &n1, " <tool_call>{oops}</tool_call>", got, &rc);
  CHECK(strstr(got, "error: malformed tool call") != NULL);
  /* a tool turn cut to the room left */
  int resp2[64];
  env_begin(&e, &p, 1, 1);
  int n2 = 0;
  const char *call = "<tool_call>{\"name\":\"calculator\",\"arguments\":{\"expression\":\"2*3\"}}</tool_call>";
  for (const char *q = call; *q; q++) resp2[n2++] = *q - 32;
  CHECK(env_turn(&e, 0, resp2, n2 - 1, resp2 + n2 - 1, 5) == 0);  /* not ended yet */
  CHECK(env_turn(&e, 0, resp2, n2, resp2 + n2, 5) == 5);
  /* a prompt that opens the call: the first turn completes it */
  const char *forced = "Q: 2*3? <tool_call>{\"name\":\"calculator\",\"arguments\":{\"expression\":\"";
  int ptok[128], n3 = 0, resp3[256];
  for (const char *q = forced; *q; q++) ptok[n3++] = *q - 32;
  struct rollout_prompt fp = { .prompt_id = 2, .tokens = ptok, .n_tokens = n3 };
  CHECK(env_begin(&e, &fp, 1, 1) == 0);
  n3 = 0;
  feed(&e, 0, resp3, &n3, "2*3\"}}</tool_call>", got, &rc);
  CHECK_MSG(strcmp(got, "<tool_response>6</tool_response>") == 0, "got '%s'", got);
  feed(&e, 0, resp3, &n3, "<tool_call>{\"name\":\"calculator\",\"arguments\":{\"expression\":\"1+1\"}}</tool_call>", got, &rc);
  CHECK(strcmp(got, "<tool_response>2</tool_response>") == 0);  /* later turns: their own text */
  env_begin(&e, &p, 1, 1);
  n2 = 0;
  for (const char *q = call; *q; q++) resp2[n2++] = *q - 32;
  CHECK(env_turn(&e, 0, resp2, n2, resp2 + n2, 5) == 5);
  struct env_stats st;
  env_stats_get(&e, &st);
  CHECK(st.episodes == 1 && st.turns == 2 && st.tool_calls == 1 && st.tool_errors == 0);
  env_free(&e);
  tokenizer_free(&tok);
}

int main(void) {
  test_parser();
  test_calculator();
  test_tools();
  test_episode();
  return TEST_RESULT("test_tool_call");
}
