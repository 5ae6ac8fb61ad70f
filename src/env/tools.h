/* env/tools.h: the tools a multi-turn rollout's model may call (env/tool_call.h's format):
 *
 *   calculator  arguments {"expression": "12*34+5"}: env/calculator.h, in process;
 *               content: the value ("413") or "error: ..."
 *   python      arguments {"code": "print(6*7)"}: the code runs in the sandbox
 *               (sandbox/sandbox.h, one job); content: its stdout when it exits 0, else
 *               "error: " and its status and the end of its stderr
 *   command     any call whose name is not a built-in tool (calculator, python) goes to
 *               [env] command's worker (util/line_workers.h: one long-lived process, JSON
 *               lines on its stdin/stdout), one request per call:
 *                 request {"id": N, "name": NAME, "arguments": {...},
 *                          "episode": {"prompt": P, "response": R, "turn": T}}
 *                 reply   {"id": N, "content": "..."}
 *               N counts the calls of this process from 0; NAME and arguments are the call's;
 *               P is the prompt's text, R the episode's response so far (model and tool
 *               turns, decoded, ending with this call's "</tool_call>"), T the model turn
 *               that made the call (1-based). content (a string) is the tool turn's content.
 *               A worker that exits, takes longer than [env] command_timeout_s, or answers
 *               anything else is killed and restarted; the call gets "error: [env] command:
 *               WHY" and counts as a tool error
 *
 * A call of a tool that is not enabled, or with arguments of the wrong shape, gets an error
 * content ("error: unknown tool 'x' (enabled: calculator)") and counts as a tool error. */
#ifndef RLPT_ENV_TOOLS_H
#define RLPT_ENV_TOOLS_H

#include <stddef.h>

#include "env/tool_call.h"

struct sandbox;
struct env_command;

enum env_tool { ENV_TOOL_CALCULATOR = 0, ENV_TOOL_PYTHON, ENV_TOOL_COMMAND, ENV_TOOL_COUNT };

#define ENV_TOOL_BIT(t) (1u << (t))
#define ENV_CONTENT_MAX 1024  /* bytes of a tool's content kept (longer: cut, "..." added) */

struct env_tools {
  unsigned enabled;            /* ENV_TOOL_BIT mask */
  const struct sandbox *sb;    /* set up (sandbox_init) when python is enabled */
  struct env_command *cmd;     /* env_tools_open_command when command is enabled */
};

/* Where a call was made, for the command tool's request. */
struct env_call_episode {
  const char *prompt, *response;
  int turn;
};

const char *env_tool_name(enum env_tool t);
/* [env] command's worker (not started yet) into t->cmd: 0, or 2 with a message naming
 * [env] command, 1 out of memory. */
int env_tools_open_command(struct env_tools *t, const char *command, double timeout_s, char *err, size_t errlen);
/* Stops the command's worker (t->cmd NULL after). */
void env_tools_close(struct env_tools *t);
/* "calculator,python" (commas, optional spaces) into a mask. 0, or -1 naming the unknown
 * or repeated tool and the known ones in err. */
int env_tools_parse(const char *list, unsigned *mask, char *err, size_t errlen);
/* Run call; the content (NUL-terminated, at most ENV_CONTENT_MAX + 3 bytes) into
 * out[cap]. Returns 0, or 1 when the content is an error (counted as a tool error). */
int env_tool_run(const struct env_tools *t, const struct tool_call *call, char *out, size_t cap);
/* The same, ep (NULL: empty) going into the command tool's request. */
int env_tool_run_episode(const struct env_tools *t, const struct tool_call *call, const struct env_call_episode *ep,
                         char *out, size_t cap);

#endif
