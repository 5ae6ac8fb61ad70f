/* env/test_smollm2_tools.c: a tool-calling episode of SmolLM2-135M-Instruct (Q4_1 GGUF) in
 * its own chat template (label model; skips with 77 without the file). The system message
 * describes the calculator in the Hermes format; the 135M model does not call tools on its
 * own, so the prompt forces the first tokens of the assistant turn,
 *     <tool_call>\n{"name": "calculator", "arguments": {"expression": "
 * and the model writes the rest greedily. Checks the mechanics, not the model's quality:
 * the call is parsed and run (one tool call, no error), the ChatML tool turn is appended
 * with mask 0 (its text is the wrapper around the calculator's result), the model's tokens
 * before it end the call and generation goes on after it (mask 1, on the same KV cache),
 * and the logprobs of the model's tokens on both sides of the tool turn equal a
 * from-scratch forward of the whole episode (1e-4: the trainer's path; at T = 1, top_k 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "env/episode.h"
#include "model/import.h"
#include "model/model.h"
#include "rollout/engine.h"
#include "tasks/chat.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

#define LP_TOL 1e-4
static const char *SYSTEM =
  "You are a function calling AI model. You are provided with function signatures within "
  "<tools></tools> XML tags. You may call one or more functions to assist with the user query. "
  "Here are the available tools: <tools>{\"type\": \"function\", \"function\": {\"name\": "
  "\"calculator\", \"description\": \"Evaluates an arithmetic expression\", \"parameters\": "
  "{\"type\": \"object\", \"properties\": {\"expression\": {\"type\": \"string\"}}, "
  "\"required\": [\"expression\"]}}}</tools> For each function call return a json object with "
  "function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
  "{\"name\": <function-name>, \"arguments\": <args-dict>}\n</tool_call>";
static const char *FORCED = "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"";

static char *decode(const struct tokenizer *tok, const int32_t *ids, int n) {
  char *text = NULL;
  size_t len = 0;
  return tokenizer_decode_generated(tok, (const int *)ids, (size_t)n, &text, &len) == TOK_OK ? text : NULL;
}

int main(void) {
  const char *home = getenv("HOME"), *g = getenv("RLPT_SMOLLM2_GGUF");
  char path[512];
  snprintf(path, sizeof path, "%.500s", g ? g : "");
  if (!g) snprintf(path, sizeof path, "%.400s/.cache/rlpt/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : ".");
  FILE *f = fopen(path, "rb");
  if (!f) {
    printf("skip: no %s (jobscripts/fetch-smollm2.sh)\n", path);
    return 77;
  }
  fclose(f);
  struct config cfg;
  config_defaults(&cfg);
  snprintf(cfg.model.init, sizeof cfg.model.init, "gguf:%.480s", path);
  cfg.model.max_seq = 512;
  cfg.rollout.max_new_tokens = 96;
  cfg.rollout.temperature = 1.0;
  cfg.rollout.top_k = 1;  /* greedy, with the logprobs of the T = 1 distribution */
  cfg.rollout.max_num_seqs = 1;
  cfg.rollout.max_batch_tokens = 1024;
  cfg.rollout.kv_cache_mb = 64;
  struct model_config mc;
  struct tokenizer tok;
  struct chat_template ct;
  struct model m;
  char err[1024];
  CHECK_MSG(model_import_setup(&cfg, &mc, &tok, err, sizeof err) == 0, "%s", err);
  CHECK_MSG(model_import_chat_template(cfg.model.init, &ct, err, sizeof err) == 0, "%s", err);
  CHECK(model_create(&m, &mc, 1024, &cpu_backend) == 0);
  CHECK_MSG(model_import_params(&m, cfg.model.init, err, sizeof err) == 0, "%s", err);
  if (tu_failures) return TEST_RESULT("test_smollm2_tools");
  struct chat_msg msgs[2] = { { "system", SYSTEM }, { "user", "What is 37*43?" } };
  char *chat = chat_format(&ct, msgs, 2, 1, NULL), text[4096];
  snprintf(text, sizeof text, "%s%s", chat, FORCED);
  free(chat);
  int ids[1024];
  size_t n = 0, at = 0;
  CHECK(tokenizer_encode_prompt(&tok, text, strlen(text), ids, 1024, &n, &at) == TOK_OK);
  struct rollout_prompt p = { .prompt_id = 1, .tokens = ids, .n_tokens = (int)n };
  struct env_tools tools = { .enabled = ENV_TOOL_BIT(ENV_TOOL_CALCULATOR) };
  struct env e;
  env_init(&e, &tools, 2, ENV_WRAP_CHATML, &tok);
  struct rollout_env hooks = env_rollout_hooks(&e);
  struct rollout_engine *re = NULL;
  struct sample_batch b;
  sample_batch_init(&b);
  CHECK_MSG(rollout_create(&re, &m, &cfg, &tok, err, sizeof err) == 0, "%s", err);
  CHECK(re && rollout_set_env(re, &hooks, err, sizeof err) == 0);
  CHECK_MSG(re && rollout_generate(re, &p, 1, 1, 1, 0, &b, NULL, err, sizeof err) == 0, "%s", err);
  struct env_stats st;
  env_stats_get(&e, &st);
  const struct sample *s = b.n == 1 ? &b.s[0] : NULL;
  CHECK(s && s->resp_mask);
  if (s && s->resp_mask) {
    char *all = decode(&tok, s->resp, s->n_resp);
    printf("episode (%d tokens, finish %s):\n%s%s\n", s->n_resp, finish_reason_name(s->finish), FORCED,
           all ? all : "?");
    int t0 = 0, t1;
    while (t0 < s->n_resp && s->resp_mask[t0]) t0++;
    for (t1 = t0; t1 < s->n_resp && !s->resp_mask[t1];) t1++;
    char *before = decode(&tok, s->resp, t0), *turn = decode(&tok, s->resp + t0, t1 - t0);
    CHECK(before && strstr(before, "</tool_call>") && tool_call_ends(before, strlen(before)));
    CHECK(turn && strstr(turn, "tool\n<tool_response>\n"));  /* <|im_end|>, <|im_start|> are special */
    CHECK(turn && strstr(turn, "</tool_response>") && strstr(turn, "assistant\n"));
    CHECK_MSG(st.tool_calls == 1 && st.tool_errors == 0 && st.turns == 2, "calls %ld errors %ld turns %ld",
              st.tool_calls, st.tool_errors, st.turns);
    CHECK(t1 < s->n_resp);  /* the model went on after the tool turn */
    for (int j = t1; j < s->n_resp; j++) CHECK(s->resp_mask[j] == 1);
    double d = rollout_logprob_diff_max(&m, &b);
    printf("tool turn: tokens %d..%d '%s'; logprob vs from-scratch forward max diff %.3g\n", t0, t1,
           turn ? turn : "?", d);
    CHECK(d <= LP_TOL);
    free(all);
    free(before);
    free(turn);
  }
  sample_batch_free(&b);
  rollout_free(re);
  env_free(&e);
  model_free(&m);
  tokenizer_free(&tok);
  return TEST_RESULT("test_smollm2_tools");
}
