/* env/tools.h: the tools a multi-turn rollout's model may call (env/tool_call.h's format):
 *
 *   calculator  arguments {"expression": "12*34+5"}: env/calculator.h, in process;
 *               content: the value ("413") or "error: ..."
 *   python      arguments {"code": "print(6*7)"}: the code runs in the sandbox
 *               (sandbox/sandbox.h, one job); content: its stdout when it exits 0, else
 *               "error: " and its status and the end of its stderr
 *
 * A call of a tool that is not enabled, or with arguments of the wrong shape, gets an error
 * content ("error: unknown tool 'x' (enabled: calculator)") and counts as a tool error. */
#ifndef RLPT_ENV_TOOLS_H
#define RLPT_ENV_TOOLS_H

#include <stddef.h>

#include "env/tool_call.h"

struct sandbox;

enum env_tool { ENV_TOOL_CALCULATOR = 0, ENV_TOOL_PYTHON, ENV_TOOL_COUNT };

#define ENV_TOOL_BIT(t) (1u << (t))
#define ENV_CONTENT_MAX 1024  /* bytes of a tool's content kept (longer: cut, "..." added) */

struct env_tools {
  unsigned enabled;            /* ENV_TOOL_BIT mask */
  const struct sandbox *sb;    /* set up (sandbox_init) when python is enabled */
};

const char *env_tool_name(enum env_tool t);
/* "calculator,python" (commas, optional spaces) into a mask. 0, or -1 naming the unknown
 * or repeated tool and the known ones in err. */
int env_tools_parse(const char *list, unsigned *mask, char *err, size_t errlen);
/* Run call; the content (NUL-terminated, at most ENV_CONTENT_MAX + 3 bytes) into
 * out[cap]. Returns 0, or 1 when the content is an error (counted as a tool error). */
int env_tool_run(const struct env_tools *t, const struct tool_call *call, char *out, size_t cap);

#endif
