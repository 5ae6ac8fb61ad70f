/* env/demo.c: SFT examples of multi-turn episodes, tool tokens marked (env/demo.h). */
#include "env/demo.h"

#include <string.h>

#include "tokenizer/tokenizer.h"

/* Encode s[0..len) at ids + *n, marking its tokens is_tool. 0 or TOK_ERR_*. */
static int put(const struct tokenizer *tok, const char *s, size_t len, int is_tool, int *ids,
               unsigned char *tool, size_t cap, size_t *n) {
  size_t got = 0, bad = 0;
  if (len == 0) return 0;
  int rc = tokenizer_encode(tok, s, len, ids + *n, cap - *n, &got, &bad);
  if (rc) return rc;
  memset(tool + *n, is_tool, got);
  *n += got;
  return 0;
}

int env_sft_tokens(const struct tokenizer *tok, const struct task_prompt *p, int *ids,
                   unsigned char *tool, size_t cap, size_t *n_prompt, size_t *n_total) {
  size_t n = 0, bad = 0, lo = strlen(TASK_TOOL_RESPONSE_OPEN), lc = strlen(TASK_TOOL_RESPONSE_CLOSE);
  if (cap < 2) return TOK_ERR_SPACE;
  int rc = tokenizer_encode_prompt(tok, p->text, strlen(p->text), ids, cap - 1, &n, &bad);
  if (rc) return rc;
  memset(tool, 0, n);
  *n_prompt = n;
  for (const char *a = p->answer; *a && !rc;) {
    const char *open = strstr(a, TASK_TOOL_RESPONSE_OPEN);
    const char *close = open ? strstr(open + lo, TASK_TOOL_RESPONSE_CLOSE) : NULL;
    if (!close) {  /* no (complete) block left: the rest is the model's */
      rc = put(tok, a, strlen(a), 0, ids, tool, cap - 1, &n);
      break;
    }
    rc = put(tok, a, (size_t)(open - a), 0, ids, tool, cap - 1, &n);
    if (!rc) rc = put(tok, open, (size_t)(close + lc - open), 1, ids, tool, cap - 1, &n);
    a = close + lc;
  }
  if (rc) return rc;
  ids[n] = tok->eos_id;
  tool[n] = 0;
  *n_total = n + 1;
  return 0;
}
