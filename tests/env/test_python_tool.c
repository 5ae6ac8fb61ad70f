/* env/test_python_tool.c: the python tool (env/tools.h) through the sandbox: a call's code
 * runs isolated and its stdout is the content; a failing program gives an error content
 * with its status and stderr; a program that loops forever is killed at [sandbox] timeout_s
 * and reported. Skips (77) where the sandbox cannot isolate (sandbox_init refuses). */
#include <stdio.h>
#include <string.h>

#include "deck/config.h"
#include "env/tools.h"
#include "sandbox/sandbox.h"
#include "testutil.h"

static int run(const struct env_tools *t, const char *code, char *out, size_t cap) {
  struct tool_call c = { .arguments = cJSON_CreateObject() };
  snprintf(c.name, sizeof c.name, "python");
  cJSON_AddStringToObject(c.arguments, "code", code);
  int rc = env_tool_run(t, &c, out, cap);
  tool_call_free(&c);
  return rc;
}

int main(void) {
  struct config cfg;
  config_defaults(&cfg);
  cfg.sandbox.timeout_s = 2;
  struct sandbox_opts o;
  sandbox_opts_from_config(&o, &cfg);
  struct sandbox sb;
  char err[768];
  if (sandbox_init(&sb, &o, err, sizeof err) != 0) {
    printf("skip: %s\n", err);
    return 77;
  }
  struct env_tools t = { .enabled = ENV_TOOL_BIT(ENV_TOOL_PYTHON), .sb = &sb };
  char out[2048];
  CHECK(run(&t, "print(37*43)", out, sizeof out) == 0);
  CHECK_MSG(strcmp(out, "1591\n") == 0, "got '%s'", out);
  CHECK(run(&t, "import os\nprint(os.path.exists('/etc/passwd'))", out, sizeof out) == 0);
  CHECK_MSG(strcmp(out, "False\n") == 0, "host file visible: '%s'", out);
  CHECK(run(&t, "raise ValueError('bad input')", out, sizeof out) == 1);
  CHECK_MSG(strstr(out, "error: ") == out && strstr(out, "ValueError: bad input"), "got '%s'", out);
  CHECK(run(&t, "while True: pass", out, sizeof out) == 1);
  CHECK_MSG(strstr(out, "timeout") || strstr(out, "cpu"), "got '%s'", out);
  CHECK(run(&t, "print('x' * 5000)", out, sizeof out) == 0);
  CHECK(strlen(out) == ENV_CONTENT_MAX + 3 && strcmp(out + ENV_CONTENT_MAX, "...") == 0);
  return TEST_RESULT("test_python_tool");
}
