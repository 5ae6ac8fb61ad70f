/* env/tool_call.c: finding and parsing a model turn's tool call (env/tool_call.h). */
#include "env/tool_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Last occurrence of needle in text[0..len), or NULL. */
static const char *find_last(const char *text, size_t len, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = len >= k ? len - k + 1 : 0; i-- > 0;)
    if (memcmp(text + i, needle, k) == 0) return text + i;
  return NULL;
}

int tool_call_ends(const char *text, size_t len) {
  size_t k = strlen(TOOL_CALL_CLOSE);
  return len >= k && memcmp(text + len - k, TOOL_CALL_CLOSE, k) == 0;
}

static enum tool_call_status malformed(char *err, size_t errlen, const char *what) {
  snprintf(err, errlen, "malformed tool call: %s", what);
  return TOOL_CALL_MALFORMED;
}

/* body[0..n) as {"name": string, "arguments": object} into call. */
static enum tool_call_status parse_body(const char *body, size_t n, struct tool_call *call,
                                        char *err, size_t errlen) {
  cJSON *j = cJSON_ParseWithLength(body, n);
  if (!j) return malformed(err, errlen, "the block is not valid JSON");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
  cJSON *args = cJSON_DetachItemFromObjectCaseSensitive(j, "arguments");
  enum tool_call_status st = TOOL_CALL_OK;
  if (!cJSON_IsObject(j)) st = malformed(err, errlen, "the block is not a JSON object");
  else if (!cJSON_IsString(name) || !name->valuestring[0])
    st = malformed(err, errlen, "no string \"name\"");
  else if (strlen(name->valuestring) >= TOOL_NAME_MAX)
    st = malformed(err, errlen, "the tool name is too long");
  else if (!cJSON_IsObject(args)) st = malformed(err, errlen, "no object \"arguments\"");
  if (st == TOOL_CALL_OK) {
    snprintf(call->name, sizeof call->name, "%s", name->valuestring);
    call->arguments = args;
  } else {
    cJSON_Delete(args);
  }
  cJSON_Delete(j);
  return st;
}

enum tool_call_status tool_call_parse(const char *text, size_t len, struct tool_call *call,
                                      char *err, size_t errlen) {
  *call = (struct tool_call){ .arguments = NULL };
  const char *close = find_last(text, len, TOOL_CALL_CLOSE);
  size_t upto = close ? (size_t)(close - text) : len;
  const char *open = find_last(text, upto, TOOL_CALL_OPEN);
  if (!open) {
    if (!close) return TOOL_CALL_NONE;
    return malformed(err, errlen, "\"" TOOL_CALL_CLOSE "\" without \"" TOOL_CALL_OPEN "\"");
  }
  if (!close) {
    snprintf(err, errlen, "unterminated tool call: \"" TOOL_CALL_OPEN "\" without \""
             TOOL_CALL_CLOSE "\"");
    return TOOL_CALL_UNTERMINATED;
  }
  const char *body = open + strlen(TOOL_CALL_OPEN);
  return parse_body(body, (size_t)(close - body), call, err, errlen);
}

void tool_call_free(struct tool_call *call) {
  cJSON_Delete(call->arguments);
  call->arguments = NULL;
}
