/* env/episode.c: tool turns of multi-turn rollouts (env/episode.h). */
#include "env/episode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"
#include "util/clock.h"

#define TAIL_TOKENS 24  /* enough for "</tool_call>" whatever the tokens' bytes (each >= 1) */

void env_init(struct env *e, const struct env_tools *tools, int max_turns, enum env_wrap wrap,
              const struct tokenizer *tok) {
  *e = (struct env){ .tools = *tools, .max_turns = max_turns, .wrap = wrap, .tok = tok };
}

static void free_open_calls(struct env *e) {
  for (int i = 0; i < e->n_prompts; i++) {
    free(e->open_call[i]);
    free(e->prompt_text[i]);
  }
  free(e->open_call);
  free(e->prompt_text);
  e->open_call = e->prompt_text = NULL;
  e->n_prompts = 0;
}

void env_free(struct env *e) {
  free_open_calls(e);
  free(e->ep);
  e->ep = NULL;
  e->n_ep = e->cap_ep = 0;
}

static char *decode(const struct env *e, const int *tokens, int n);

/* The prompts' texts (for the command tool) and open "<tool_call>" tails (a forced start
 * of the first turn). 0 or -1. */
static int find_open_calls(struct env *e, const struct rollout_prompt *prompts, int n) {
  free_open_calls(e);
  e->open_call = calloc((size_t)n + 1, sizeof *e->open_call);
  e->prompt_text = calloc((size_t)n + 1, sizeof *e->prompt_text);
  if (!e->open_call || !e->prompt_text) return -1;
  e->n_prompts = n;
  for (int i = 0; i < n; i++) {
    char *text = decode(e, prompts[i].tokens, prompts[i].n_tokens), *open = NULL;
    e->prompt_text[i] = text;
    for (char *p = text; p && (p = strstr(p, TOOL_CALL_OPEN)); p++) open = p;
    if (open && !strstr(open, TOOL_CALL_CLOSE) && !(e->open_call[i] = strdup(open))) return -1;
  }
  return 0;
}

int env_begin(void *ctx, const struct rollout_prompt *prompts, int n, int group_size) {
  struct env *e = ctx;
  int need = n * group_size;
  e->group_size = group_size;
  if (find_open_calls(e, prompts, n) != 0) return -1;
  if (need > e->cap_ep) {
    struct env_episode *p = realloc(e->ep, sizeof *p * (size_t)need);
    if (!p) return -1;
    e->ep = p;
    e->cap_ep = need;
  }
  e->n_ep = need;
  memset(e->ep, 0, sizeof *e->ep * (size_t)need);
  e->tool_s = 0;
  return 0;
}

/* tokens[0..n) decoded (special tokens skipped) into a new string, or NULL. */
static char *decode(const struct env *e, const int *tokens, int n) {
  char *text = NULL;
  size_t len = 0;
  if (tokenizer_decode_generated(e->tok, tokens, (size_t)n, &text, &len) != TOK_OK) return NULL;
  return text;
}

/* 1 when the turn's text ends with "</tool_call>" (the last TAIL_TOKENS tokens suffice). */
static int turn_ends_with_call(const struct env *e, const int *turn, int n) {
  int k = n < TAIL_TOKENS ? n : TAIL_TOKENS;
  char *tail = decode(e, turn + n - k, k);
  int ends = tail && tool_call_ends(tail, strlen(tail));
  free(tail);
  return ends;
}

/* The tool's content for the turn's text (error contents count in ep->errors); where
 * tells the command tool the episode. */
static void run_call(struct env *e, struct env_episode *ep, const char *text, const struct env_call_episode *where,
                     char *out, size_t cap) {
  struct tool_call call;
  char msg[256];
  enum tool_call_status st = tool_call_parse(text, strlen(text), &call, msg, sizeof msg);
  double t0 = clock_seconds();
  int bad = st != TOOL_CALL_OK;
  if (bad) snprintf(out, cap, "error: %s", msg);
  else bad = env_tool_run_episode(&e->tools, &call, where, out, cap) != 0;
  e->tool_s += clock_seconds() - t0;
  ep->errors += bad;
  tool_call_free(&call);
}

/* Bytes the tokenizer cannot take become spaces: printable ASCII only for the character
 * tokenizer, no control bytes but newline and tab otherwise. */
static void sanitize(const struct env *e, char *s) {
  for (unsigned char *p = (unsigned char *)s; *p; p++) {
    int ok = e->tok->kind == TOK_CHAR ? (*p >= 32 && *p < 127) : (*p >= 32 || *p == '\n' || *p == '\t');
    if (!ok) *p = ' ';
  }
}

static void wrap_turn(enum env_wrap w, const char *content, char *out, size_t cap) {
  if (w == ENV_WRAP_CHATML)
    snprintf(out, cap, "<|im_end|>\n<|im_start|>tool\n<tool_response>\n%s\n</tool_response>"
             "<|im_end|>\n<|im_start|>assistant\n", content);
  else if (w == ENV_WRAP_LLAMA3)
    snprintf(out, cap, "<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n%s<|eot_id|>"
             "<|start_header_id|>assistant<|end_header_id|>\n\n", content);
  else
    snprintf(out, cap, "<tool_response>%s</tool_response>", content);
}

/* The tool turn's tokens into ins[cap] (cut at cap). Returns the count, or GEN_ENV_FAIL. */
static int encode_turn(const struct env *e, const char *turn, int *ins, int cap) {
  size_t n = strlen(turn), got = 0, at = 0;
  int *ids = malloc(sizeof(int) * (n + 1));
  if (!ids) return GEN_ENV_FAIL;
  int rc = tokenizer_encode(e->tok, turn, n, ids, n + 1, &got, &at);
  int k = rc == TOK_OK ? ((int)got < cap ? (int)got : cap) : GEN_ENV_FAIL;
  if (k > 0) memcpy(ins, ids, sizeof(int) * (size_t)k);
  free(ids);
  return k;
}

int env_turn(void *ctx, int r, const int *resp, int n, int *ins, int cap) {
  struct env *e = ctx;
  if (r < 0 || r >= e->n_ep) return GEN_ENV_FAIL;
  struct env_episode *ep = &e->ep[r];
  const int *turn = resp + ep->turn_start;
  int nt = n - ep->turn_start;
  if (!turn_ends_with_call(e, turn, nt)) return 0;
  if (ep->tool_turns + 1 >= e->max_turns) return GEN_ENV_END;  /* the last turn: no tool runs */
  char *text = decode(e, turn, nt);
  if (!text) return GEN_ENV_FAIL;
  const char *lent = ep->tool_turns == 0 ? e->open_call[r / e->group_size] : NULL;
  if (lent) {  /* the prompt opened the call: parse it whole */
    size_t a = strlen(lent), b = strlen(text);
    char *whole = malloc(a + b + 1);
    if (!whole) {
      free(text);
      return GEN_ENV_FAIL;
    }
    memcpy(whole, lent, a);
    memcpy(whole + a, text, b + 1);
    free(text);
    text = whole;
  }
  char content[ENV_CONTENT_MAX + 512], wrapped[ENV_CONTENT_MAX + 768];
  char *so_far = e->tools.cmd ? decode(e, resp, n) : NULL;
  const char *prompt = e->prompt_text[r / e->group_size];
  const struct env_call_episode where = {.prompt = prompt, .response = so_far, .turn = ep->tool_turns + 1};
  run_call(e, ep, text, &where, content, sizeof content);
  free(so_far);
  free(text);
  sanitize(e, content);
  wrap_turn(e->wrap, content, wrapped, sizeof wrapped);
  int k = encode_turn(e, wrapped, ins, cap);
  if (k < 0) return k;
  ep->tool_turns++;
  ep->turn_start = n + k;
  return k;
}

struct rollout_env env_rollout_hooks(struct env *e) {
  return (struct rollout_env){ .ctx = e, .begin = env_begin, .turn = env_turn };
}

void env_stats_get(const struct env *e, struct env_stats *st) {
  *st = (struct env_stats){ .episodes = e->n_ep, .tool_s = e->tool_s };
  for (int i = 0; i < e->n_ep; i++) {
    st->turns += e->ep[i].tool_turns + 1;
    st->tool_calls += e->ep[i].tool_turns;
    st->tool_errors += e->ep[i].errors;
  }
}
