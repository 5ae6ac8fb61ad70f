/* env/tool_call.h: the tool-call format of multi-turn rollouts — the blocks that
 * Qwen/Hermes-style chat templates use:
 *
 *     <tool_call>{"name": "calculator", "arguments": {"expression": "12*34"}}</tool_call>
 *
 * (whitespace and newlines around the JSON allowed). A model turn ends at the first
 * "</tool_call>" it writes; the call is the last "<tool_call>" block before it. */
#ifndef RLPT_ENV_TOOL_CALL_H
#define RLPT_ENV_TOOL_CALL_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define TOOL_CALL_OPEN "<tool_call>"
#define TOOL_CALL_CLOSE "</tool_call>"
#define TOOL_NAME_MAX 64

enum tool_call_status {
  TOOL_CALL_NONE = 0,      /* no "<tool_call>" in the text */
  TOOL_CALL_OK,            /* name and arguments parsed */
  TOOL_CALL_MALFORMED,     /* not a JSON object with a string "name" and an object "arguments" */
  TOOL_CALL_UNTERMINATED,  /* "<tool_call>" without its "</tool_call>" */
};

struct tool_call {
  char name[TOOL_NAME_MAX];
  cJSON *arguments;        /* the "arguments" object (owned), NULL unless TOOL_CALL_OK */
};

/* 1 when text[0..len) ends with TOOL_CALL_CLOSE: the turn is over and a tool must run. */
int tool_call_ends(const char *text, size_t len);
/* The last tool-call block of text[0..len) into *call (freed with tool_call_free). Returns
 * the status; on MALFORMED and UNTERMINATED err says what is wrong (it becomes the tool's
 * error turn). */
enum tool_call_status tool_call_parse(const char *text, size_t len, struct tool_call *call,
                                      char *err, size_t errlen);
void tool_call_free(struct tool_call *call);

#endif
