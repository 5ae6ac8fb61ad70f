/* rollout/generate_text.c: samples of one text prompt, printed as text or JSON
 * (rollout/generate_text.h). */
#include "rollout/generate_text.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "model/device.h"
#include "model/import.h"
#include "model/model.h"
#include "model/source.h"
#include "rollout/engine.h"
#include "tasks/chat.h"
#include "tokenizer/tokenizer.h"
#include "util/alloc.h"
#include "util/utf8.h"

void generate_text_defaults(struct generate_text_opts *o) {
  struct config def;
  config_defaults(&def);
  *o = (struct generate_text_opts){
    .device = "auto",
    .n = 1,
    .top_k = def.rollout.top_k,
    .max_new = def.rollout.max_new_tokens,
    .seed = def.run.seed,
    .temperature = def.rollout.temperature,
    .top_p = def.rollout.top_p,
  };
}

/* 1 for a gguf:PATH or hf:DIR model (its own tokenizer), 0 for an rlpt model file. */
static int imported(const struct generate_text_opts *o) {
  return !strncmp(o->model, "gguf:", 5) || !strncmp(o->model, "hf:", 3);
}

/* Text of tokens: the tokenizer's decoding; ids it cannot decode appear as <id>. */
static char *tokens_text(const struct tokenizer *tok, const int32_t *t, int n) {
  size_t cap = 64, len = 0, k;
  char *buf = malloc_check(cap), one[1024];
  for (int i = 0; i < n; i++) {
    int id = t[i];
    if (tokenizer_decode(tok, &id, 1, one, sizeof one, &k) != TOK_OK) k = (size_t)snprintf(one, sizeof one, "<%d>", id);
    if (len + k + 1 > cap) buf = realloc_check(buf, cap = 2 * (len + k + 1));
    memcpy(buf + len, one, k);
    len += k;
  }
  buf[len] = '\0';
  return buf;
}

/* A number printed with 7 significant digits (a float's precision). */
static cJSON *num7(double x) {
  char s[32];
  snprintf(s, sizeof s, "%.7g", x);
  return cJSON_CreateNumber(strtod(s, NULL));
}

static cJSON *int_array(const int32_t *t, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(t[i]));
  return a;
}

/* JSON strings must be valid UTF-8: a response cut inside a multi-byte character (a
 * byte-level BPE token at a time) and a prompt from the command line get U+FFFD where
 * their bytes are not (the tokens keep the exact ids). */
static void print_json(const struct generate_text_opts *o, const struct sample *s, const char *text) {
  cJSON *obj = cJSON_CreateObject(), *lp = cJSON_CreateArray();
  size_t np = strlen(o->prompt), nt = strlen(text);
  char *prompt = malloc_check(UTF8_SANITIZED_MAX(np)), *valid = malloc_check(UTF8_SANITIZED_MAX(nt));
  utf8_sanitize(o->prompt, np, prompt);
  utf8_sanitize(text, nt, valid);
  cJSON_AddStringToObject(obj, "prompt", prompt);
  cJSON_AddItemToObject(obj, "prompt_tokens", int_array(s->prompt, s->n_prompt));
  cJSON_AddStringToObject(obj, "text", valid);
  free(prompt);
  free(valid);
  cJSON_AddItemToObject(obj, "tokens", int_array(s->resp, s->n_resp));
  for (int i = 0; i < s->n_resp; i++) cJSON_AddItemToArray(lp, num7(s->logprobs[i]));
  cJSON_AddItemToObject(obj, "logprobs", lp);
  cJSON_AddStringToObject(obj, "finish_reason", finish_reason_name(s->finish));
  char *str = cJSON_PrintUnformatted(obj);
  if (str) printf("%s\n", str);
  free(str);
  cJSON_Delete(obj);
}

static void print_text(const struct sample *s, const char *text) {
  double sum = 0;
  for (int i = 0; i < s->n_resp; i++) sum += s->logprobs[i];
  printf("[%d] finish=%s tokens=%d logprob=%.4f\n    text: %s\n    logprobs:", s->index,
         finish_reason_name(s->finish), s->n_resp, sum, text);
  for (int i = 0; i < s->n_resp; i++) printf(" %.4f", s->logprobs[i]);
  printf("\n");
}

/* An rlpt model file, checkpoint file or checkpoint directory through model/source.h (a
 * checkpoint fully validated, CRCs included, as eval, score and convert read it), checked
 * against the character tokenizer and the length. */
static int h5_config(const struct generate_text_opts *o, int n_prompt, struct model_source *ms) {
  int rc = model_source_load(o->model, "generate", "--model", ms);
  const struct model_config *mc = &ms->mc;
  if (rc) return rc;
  if (ms->kind == MODEL_SRC_HF || ms->kind == MODEL_SRC_GGUF) {
    fprintf(stderr, "rlpt: generate: --model %s is a %s: write %s%s to use it with its own "
            "tokenizer\n", o->model, ms->kind == MODEL_SRC_HF ? "Hugging Face directory" : "GGUF file",
            ms->kind == MODEL_SRC_HF ? "hf:" : "gguf:", o->model);
    return 2;
  }
  if (mc->vocab_size < TOK_CHAR_VOCAB) {
    fprintf(stderr, "rlpt: %s: vocabulary %d is smaller than the character tokenizer's %d ids\n",
            o->model, mc->vocab_size, TOK_CHAR_VOCAB);
    return 2;
  }
  if (n_prompt + o->max_new > mc->max_seq) { /* checked before sizing anything by it */
    fprintf(stderr, "rlpt: %s: the prompt (%d tokens) + --max-new-tokens %ld exceeds the model's "
            "max_seq = %d\n", o->model, n_prompt, o->max_new, mc->max_seq);
    return 2;
  }
  return 0;
}

/* The model; cfg holds the gguf:/hf: init. 0, or 2 (unreadable / unsuitable file), 1. */
static int load_model(struct model *m, const struct generate_text_opts *o, struct config *cfg,
                      int n_prompt) {
  struct model_config mc;
  struct model_source ms;
  char err[1024];
  int rc;
  memset(&ms, 0, sizeof ms);
  cfg->model.max_seq = n_prompt + o->max_new;  /* must fit the file's context */
  if (imported(o) && (rc = model_import_config(cfg, &mc, err, sizeof err)))
    fprintf(stderr, "rlpt: generate: %s\n", err);
  else if (!imported(o))
    rc = h5_config(o, n_prompt, &ms), mc = ms.mc;
  if (rc) {
    model_source_free(&ms);
    return rc;
  }
  /* one prefill (or a preempted sample's recompute) plus one decode row per sample */
  long budget = (long)n_prompt + o->max_new + o->n;
  const struct backend_ops *ops = device_backend_named(o->device, err, sizeof err);
  if (!ops) fprintf(stderr, "rlpt: generate: %s\n", err);
  rc = !ops ? 2 : model_create_forward(m, &mc, (int)budget, ops) ? 1 : 0;
  if (!imported(o) || rc) {
    if (!rc) memcpy(m->params, ms.params, sizeof(float) * m->table.total);
    model_source_free(&ms);
    return rc;
  }
  rc = model_import_params(m, o->model, err, sizeof err);
  if (rc) fprintf(stderr, "rlpt: generate: %s\n", err);
  return rc;
}

/* The engine's deck: the options' sampling, every sample in one batch, a KV pool for
 * every sample's whole context at once (+1 MiB of block rounding). */
static void rollout_config(struct config *cfg, const struct generate_text_opts *o, const struct model *m,
                           int n_ids) {
  const struct model_config *mc = &m->cfg;
  double kv_bytes = 8.0 * mc->layers * mc->kv_heads * mc->head_dim * (double)o->n *
                    (double)(n_ids + o->max_new);
  config_defaults(cfg);
  cfg->run.seed = o->seed;
  cfg->rollout.max_new_tokens = o->max_new;
  cfg->rollout.max_num_seqs = o->n;
  cfg->rollout.max_batch_tokens = m->max_tokens;
  cfg->rollout.temperature = o->temperature;
  cfg->rollout.top_p = o->top_p;
  cfg->rollout.top_k = o->top_k;
  cfg->rollout.kv_cache_mb = (long)(kv_bytes / (1 << 20)) + 2;
}

static int run_prompt(const struct generate_text_opts *o, struct model *m, const struct tokenizer *tok,
                      int *ids, int n_ids) {
  struct config cfg;
  rollout_config(&cfg, o, m, n_ids);
  struct rollout_engine *re = NULL;
  struct sample_batch b;
  sample_batch_init(&b);
  char err[512] = "";
  struct rollout_prompt p = {.prompt_id = 0, .group = 0, .tokens = ids, .n_tokens = n_ids};
  int rc = rollout_create(&re, m, &cfg, tok, err, sizeof err);
  if (!rc) rc = rollout_generate(re, &p, 1, (int)o->n, 0, 0, &b, NULL, err, sizeof err);
  if (rc) fprintf(stderr, "rlpt: %s: %s\n", o->model, err);
  if (!rc && !o->json) printf("prompt: %s (%d tokens)\n", o->prompt, n_ids);
  for (int i = 0; !rc && i < b.n; i++) {
    char *text = tokens_text(tok, b.s[i].resp, b.s[i].n_resp);
    if (o->json) print_json(o, &b.s[i], text);
    else print_text(&b.s[i], text);
    free(text);
  }
  sample_batch_free(&b);
  rollout_free(re);
  return rc;
}

/* The tokenizer: the model's own for gguf:/hf: (cfg gets the init), else the
 * character tokenizer. 0, or 2 with a message. */
static int load_tokenizer(const struct generate_text_opts *o, struct config *cfg, struct tokenizer *tok) {
  struct model_config mc;
  char err[1024];
  if (!imported(o)) {
    tokenizer_init_char(tok);
    return 0;
  }
  snprintf(cfg->model.init, sizeof cfg->model.init, "%s", o->model);
  cfg->model.max_seq = 1;  /* the length is checked once the prompt is encoded */
  if (!model_import_setup(cfg, &mc, tok, err, sizeof err)) return 0;
  fprintf(stderr, "rlpt: generate: %s\n", err);
  return 2;
}

/* The prompt's ids, with chat in the model's chat template; an imported model's BOS
 * first when it adds one (an rlpt model file's prompt stays as given). NULL after a
 * message. */
static int *prompt_ids(const struct generate_text_opts *o, const struct tokenizer *tok, size_t *n_ids) {
  struct chat_template ct;
  struct chat_msg msg = {.role = "user", .content = o->prompt};
  char err[1024];
  size_t len = strlen(o->prompt), at = 0;
  char *text = NULL;
  if (o->chat && model_import_chat_template(o->model, &ct, err, sizeof err)) {
    fprintf(stderr, "rlpt: generate: %s\n", err);
    return NULL;
  }
  text = o->chat ? chat_format(&ct, &msg, 1, 1, &len) : strdup(o->prompt);
  int *ids = text ? malloc_check(sizeof(int) * (len + 2)) : NULL;
  /* an imported model's prompts start with its BOS (one, whatever the template wrote) */
  int rc = !ids ? TOK_ERR_SPACE : len == 0 ? TOK_ERR_UNKNOWN
           : imported(o) ? tokenizer_encode_prompt(tok, text, len, ids, len + 2, n_ids, &at)
                         : tokenizer_encode(tok, text, len, ids, len + 1, n_ids, &at);
  if (rc && len == 0) fprintf(stderr, "rlpt: generate: --prompt is empty\n");
  else if (rc == TOK_ERR_UNKNOWN)
    fprintf(stderr, "rlpt: generate: --prompt: byte %zu (0x%02x) has no token in %s\n", at,
            (unsigned char)text[at], imported(o) ? "the model's vocabulary" :
            "the character tokenizer (printable ASCII only)");
  else if (rc) fprintf(stderr, "rlpt: generate: out of memory\n");
  free(text);
  if (rc) free(ids);
  return rc ? NULL : ids;
}

int generate_text(const struct generate_text_opts *o) {
  if (o->chat && !imported(o)) {
    fprintf(stderr, "rlpt: generate: --chat needs a model with a chat template (gguf:PATH or hf:DIR)\n");
    return 2;
  }
  struct config cfg;
  config_defaults(&cfg);
  struct tokenizer tok;
  size_t n_ids = 0;
  if (load_tokenizer(o, &cfg, &tok)) return 2;
  int *ids = prompt_ids(o, &tok, &n_ids);
  struct model m = {0};
  int rc = ids ? load_model(&m, o, &cfg, (int)n_ids) : 2;
  if (!rc) rc = run_prompt(o, &m, &tok, ids, (int)n_ids);
  if (m.params) model_free(&m);
  free(ids);
  tokenizer_free(&tok);
  return rc;
}
