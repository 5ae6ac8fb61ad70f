/* cli/cmd_generate.c: `rlpt generate --model MODEL --prompt TEXT [--chat] [-n G]
 * [--temperature T] [--top-p P] [--top-k K] [--max-new-tokens N] [--seed S] [--json]`.
 *
 * Samples G responses to one prompt with the rollout engine (rollout/engine.h) and
 * prints each with its per-token logprobs and finish reason; with --json one
 * object per line: {"prompt", "prompt_tokens", "text", "tokens", "logprobs",
 * "finish_reason"}. MODEL is an rlpt model file (FILE.h5, written by `rlpt
 * init` / `rlpt convert`), whose text goes through the built-in character
 * tokenizer (the model's vocabulary must cover its 98 ids), or gguf:PATH /
 * hf:DIR as `[model] init` takes them: the model's own BPE tokenizer, BOS when
 * the model adds it, and with --chat the prompt as one user message in the
 * model's chat template (model/import.h). Defaults are the deck's [rollout]
 * defaults; --device auto|cpu|cuda picks the backend as [run] device does (auto:
 * the GPU when there is one). Bad arguments or an unreadable model: message, exit 2.
 * No MPI. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "io/model_h5.h"
#include "model/device.h"
#include "model/import.h"
#include "model/model.h"
#include "rollout/engine.h"
#include "tasks/chat.h"
#include "tokenizer/tokenizer.h"

struct gen_args {
  const char *model, *prompt, *device;
  long n, top_k, max_new, seed;
  double temperature, top_p;
  int json, chat;
  int imported;  /* --model gguf:PATH or hf:DIR */
};

static int gen_usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: rlpt generate --model MODEL --prompt TEXT [--chat] [-n G] [--temperature T]\n"
          "                     [--top-p P] [--top-k K] [--max-new-tokens N] [--seed S] [--json]\n"
          "                     [--device auto|cpu|cuda]\n"
          "  MODEL: FILE.h5 (character tokenizer), gguf:PATH or hf:DIR (the model's tokenizer;\n"
          "  --chat puts the prompt in the model's chat template as a user message).\n"
          "  G samples of one prompt with logprobs and finish reasons;\n"
          "  --json: one {\"prompt\", \"prompt_tokens\", \"text\", \"tokens\", \"logprobs\",\n"
          "  \"finish_reason\"} object per line. Temperature 0 is greedy.\n");
  return rc;
}

/* The number in s within [lo, hi]; 0, or 2 with a message naming the option. */
static int num_arg(const char *opt, const char *s, double lo, double hi, int integer, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  if (end == s || *end || errno || *v < lo || *v > hi || (integer && *v != (double)(long)*v)) {
    fprintf(stderr, "rlpt: generate: %s '%s': expected %s in [%g, %g]\n", opt, s,
            integer ? "an integer" : "a number", lo, hi);
    return 2;
  }
  return 0;
}

static int gen_parse(struct gen_args *a, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    double v = 0;
    int rc = 0;
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) return gen_usage(0) - 1;
    if (!strcmp(o, "--json")) { a->json = 1; continue; }
    if (!strcmp(o, "--chat")) { a->chat = 1; continue; }
    if (i + 1 >= argc) {
      fprintf(stderr, "rlpt: generate: unexpected argument '%s'\n", o);
      return gen_usage(2);
    }
    const char *s = argv[++i];
    if (!strcmp(o, "--model")) a->model = s;
    else if (!strcmp(o, "--prompt")) a->prompt = s;
    else if (!strcmp(o, "--device")) a->device = s;
    else if (!strcmp(o, "-n")) { rc = num_arg(o, s, 1, 1e5, 1, &v); a->n = (long)v; }
    else if (!strcmp(o, "--temperature")) { rc = num_arg(o, s, 0, 100, 0, &v); a->temperature = v; }
    else if (!strcmp(o, "--top-p")) { rc = num_arg(o, s, 0, 1, 0, &v); a->top_p = v; }
    else if (!strcmp(o, "--top-k")) { rc = num_arg(o, s, 0, 1e8, 1, &v); a->top_k = (long)v; }
    else if (!strcmp(o, "--max-new-tokens")) { rc = num_arg(o, s, 1, 1e6, 1, &v); a->max_new = (long)v; }
    else if (!strcmp(o, "--seed")) { rc = num_arg(o, s, 0, 9e15, 1, &v); a->seed = (long)v; }
    else {
      fprintf(stderr, "rlpt: generate: unexpected argument '%s'\n", o);
      return gen_usage(2);
    }
    if (rc) return rc;
  }
  if (!a->model || !a->prompt) {
    fprintf(stderr, "rlpt: generate: --model and --prompt are required\n");
    return gen_usage(2);
  }
  a->imported = !strncmp(a->model, "gguf:", 5) || !strncmp(a->model, "hf:", 3);
  if (a->chat && !a->imported) {
    fprintf(stderr, "rlpt: generate: --chat needs a model with a chat template (gguf:PATH or hf:DIR)\n");
    return 2;
  }
  return 0;
}

/* Text of tokens: the tokenizer's decoding; ids it cannot decode appear as <id>. */
static char *tokens_text(const struct tokenizer *tok, const int32_t *t, int n) {
  size_t cap = 64, len = 0, k;
  char *buf = malloc(cap), one[1024];
  for (int i = 0; buf && i < n; i++) {
    int id = t[i];
    if (tokenizer_decode(tok, &id, 1, one, sizeof one, &k) != TOK_OK) k = (size_t)snprintf(one, sizeof one, "<%d>", id);
    char *nb = len + k + 1 > cap ? realloc(buf, cap = 2 * (len + k + 1)) : buf;
    if (!nb) free(buf);
    buf = nb;
    if (buf) memcpy(buf + len, one, k);
    len += k;
  }
  if (buf) buf[len] = '\0';
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

static void print_json(const struct gen_args *a, const struct sample *s, const char *text) {
  cJSON *o = cJSON_CreateObject(), *lp = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "prompt", a->prompt);
  cJSON_AddItemToObject(o, "prompt_tokens", int_array(s->prompt, s->n_prompt));
  cJSON_AddStringToObject(o, "text", text);
  cJSON_AddItemToObject(o, "tokens", int_array(s->resp, s->n_resp));
  for (int i = 0; i < s->n_resp; i++) cJSON_AddItemToArray(lp, num7(s->logprobs[i]));
  cJSON_AddItemToObject(o, "logprobs", lp);
  cJSON_AddStringToObject(o, "finish_reason", finish_reason_name(s->finish));
  char *str = cJSON_PrintUnformatted(o);
  if (str) printf("%s\n", str);
  free(str);
  cJSON_Delete(o);
}

static void print_text(const struct sample *s, const char *text) {
  double sum = 0;
  for (int i = 0; i < s->n_resp; i++) sum += s->logprobs[i];
  printf("[%d] finish=%s tokens=%d logprob=%.4f\n    text: %s\n    logprobs:", s->index,
         finish_reason_name(s->finish), s->n_resp, sum, text);
  for (int i = 0; i < s->n_resp; i++) printf(" %.4f", s->logprobs[i]);
  printf("\n");
}

/* An rlpt model file's config, checked against the character tokenizer and the length. */
static int gen_h5_config(const struct gen_args *a, int n_prompt, struct model_config *mc) {
  int rc = model_h5_read_config(a->model, mc);
  if (rc) return rc;
  if (mc->vocab_size < TOK_CHAR_VOCAB) {
    fprintf(stderr, "rlpt: %s: vocabulary %d is smaller than the character tokenizer's %d ids\n",
            a->model, mc->vocab_size, TOK_CHAR_VOCAB);
    return 2;
  }
  if (n_prompt + a->max_new > mc->max_seq) { /* checked before sizing anything by it */
    fprintf(stderr, "rlpt: %s: the prompt (%d tokens) + --max-new-tokens %ld exceeds the model's "
            "max_seq = %d\n", a->model, n_prompt, a->max_new, mc->max_seq);
    return 2;
  }
  return 0;
}

/* The model; cfg holds the gguf:/hf: init. 0, or 2 (unreadable / unsuitable file), 1. */
static int gen_load(struct model *m, const struct gen_args *a, struct config *cfg, int n_prompt) {
  struct model_config mc;
  char err[1024];
  int rc;
  cfg->model.max_seq = n_prompt + a->max_new;  /* must fit the file's context */
  if (a->imported && (rc = model_import_config(cfg, &mc, err, sizeof err)))
    fprintf(stderr, "rlpt: generate: %s\n", err);
  else if (!a->imported)
    rc = gen_h5_config(a, n_prompt, &mc);
  if (rc) return rc;
  /* one prefill (or a preempted sample's recompute) plus one decode row per sample */
  long budget = (long)n_prompt + a->max_new + a->n;
  const struct backend_ops *ops = device_backend_named(a->device, err, sizeof err);
  if (!ops) {
    fprintf(stderr, "rlpt: generate: %s\n", err);
    return 2;
  }
  if (model_create(m, &mc, (int)budget, ops)) return 1;
  if (!a->imported) return model_h5_read_params(a->model, &m->table, m->params);
  rc = model_import_params(m, a->model, err, sizeof err);
  if (rc) fprintf(stderr, "rlpt: generate: %s\n", err);
  return rc;
}

static int gen_run_prompt(const struct gen_args *a, struct model *m, const struct tokenizer *tok,
                          int *ids, int n_ids) {
  struct config cfg;
  config_defaults(&cfg);
  cfg.run.seed = a->seed;
  cfg.rollout.max_new_tokens = a->max_new;
  cfg.rollout.max_num_seqs = a->n;
  cfg.rollout.max_batch_tokens = m->max_tokens;
  cfg.rollout.temperature = a->temperature;
  cfg.rollout.top_p = a->top_p;
  cfg.rollout.top_k = a->top_k;
  /* a pool for every sample's whole context at once (+1 MiB of block rounding) */
  const struct model_config *mc = &m->cfg;
  double kv_bytes = 8.0 * mc->layers * mc->kv_heads * mc->head_dim * (double)a->n *
                    (double)(n_ids + a->max_new);
  cfg.rollout.kv_cache_mb = (long)(kv_bytes / (1 << 20)) + 2;
  struct rollout_engine *re = NULL;
  struct sample_batch b;
  sample_batch_init(&b);
  char err[512] = "";
  struct rollout_prompt p = { .prompt_id = 0, .group = 0, .tokens = ids, .n_tokens = n_ids };
  int rc = rollout_create(&re, m, &cfg, tok, err, sizeof err);
  if (!rc) rc = rollout_generate(re, &p, 1, (int)a->n, 0, 0, &b, NULL, err, sizeof err);
  if (rc) fprintf(stderr, "rlpt: %s: %s\n", a->model, err);
  if (!rc && !a->json) printf("prompt: %s (%d tokens)\n", a->prompt, n_ids);
  for (int i = 0; !rc && i < b.n; i++) {
    char *text = tokens_text(tok, b.s[i].resp, b.s[i].n_resp);
    if (!text) { rc = 1; break; }
    if (a->json) print_json(a, &b.s[i], text);
    else print_text(&b.s[i], text);
    free(text);
  }
  sample_batch_free(&b);
  rollout_free(re);
  return rc;
}

/* The tokenizer: the model's own for gguf:/hf: (cfg gets the init), else the
 * character tokenizer. 0, or 2 with a message. */
static int gen_tokenizer(const struct gen_args *a, struct config *cfg, struct tokenizer *tok) {
  struct model_config mc;
  char err[1024];
  if (!a->imported) {
    tokenizer_init_char(tok);
    return 0;
  }
  snprintf(cfg->model.init, sizeof cfg->model.init, "%s", a->model);
  cfg->model.max_seq = 1;  /* the length is checked once the prompt is encoded */
  if (!model_import_setup(cfg, &mc, tok, err, sizeof err)) return 0;
  fprintf(stderr, "rlpt: generate: %s\n", err);
  return 2;
}

/* The prompt's ids, with --chat in the model's chat template; an imported
 * model's BOS first when it adds one (an rlpt model file's prompt stays as
 * given). NULL after a message. */
static int *gen_prompt_ids(const struct gen_args *a, const struct tokenizer *tok, size_t *n_ids) {
  struct chat_template ct;
  struct chat_msg msg = {"user", a->prompt};
  char err[1024];
  size_t len = strlen(a->prompt), at = 0;
  char *text = NULL;
  if (a->chat && model_import_chat_template(a->model, &ct, err, sizeof err)) {
    fprintf(stderr, "rlpt: generate: %s\n", err);
    return NULL;
  }
  text = a->chat ? chat_format(&ct, &msg, 1, 1, &len) : strdup(a->prompt);
  int *ids = text ? malloc(sizeof(int) * (len + 2)) : NULL;
  /* an imported model's prompts start with its BOS (one, whatever the template wrote) */
  int rc = !ids ? TOK_ERR_SPACE : len == 0 ? TOK_ERR_UNKNOWN
           : a->imported ? tokenizer_encode_prompt(tok, text, len, ids, len + 2, n_ids, &at)
                         : tokenizer_encode(tok, text, len, ids, len + 1, n_ids, &at);
  if (rc && len == 0) fprintf(stderr, "rlpt: generate: --prompt is empty\n");
  else if (rc == TOK_ERR_UNKNOWN)
    fprintf(stderr, "rlpt: generate: --prompt: byte %zu (0x%02x) has no token in %s\n", at,
            (unsigned char)text[at], a->imported ? "the model's vocabulary" :
            "the character tokenizer (printable ASCII only)");
  else if (rc) fprintf(stderr, "rlpt: generate: out of memory\n");
  free(text);
  if (rc) free(ids);
  return rc ? NULL : ids;
}

int cmd_generate(int argc, char **argv) {
  struct config def;
  config_defaults(&def);
  struct gen_args a = { .device = "auto", .n = 1, .top_k = def.rollout.top_k, .max_new = def.rollout.max_new_tokens,
                        .seed = def.run.seed, .temperature = def.rollout.temperature,
                        .top_p = def.rollout.top_p };
  int rc = gen_parse(&a, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  struct tokenizer tok;
  size_t n_ids = 0;
  if (gen_tokenizer(&a, &def, &tok)) return 2;
  int *ids = gen_prompt_ids(&a, &tok, &n_ids);
  struct model m = {0};
  rc = ids ? gen_load(&m, &a, &def, (int)n_ids) : 2;
  if (!rc) rc = gen_run_prompt(&a, &m, &tok, ids, (int)n_ids);
  if (m.params) model_free(&m);
  free(ids);
  tokenizer_free(&tok);
  return rc;
}
