/* tasks/preference.c: preference pairs from JSONL (tasks/preference.h). */
#include "tasks/preference.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/jsonl.h"
#include "io/jsonl_rows.h"
#include "tasks/dataset.h"
#include "tasks/tasks.h"
#include "tokenizer/tokenizer.h"

/* the epoch key of the hold-out permutation: no training epoch reaches it */
#define PREF_HOLDOUT_EPOCH UINT64_MAX

struct pref_ctx {
  const struct config *cfg;
  const struct chat_template *chat;
  const char *path;
  char tmpl[CFG_STR_MAX];
};

static void row_free(struct pref_row *r) {
  free(r->prompt);
  free(r->chosen);
  free(r->rejected);
  memset(r, 0, sizeof *r);
}

/* prompt_template over the prompt text, then the chat template over turns[0..n-1) and it. */
static char *render(const struct pref_ctx *x, const cJSON *turns, int n, const char *prompt) {
  char *body = dataset_apply_template(x->tmpl, prompt);
  if (!body || !x->chat) return body;
  struct chat_msg *cm = calloc((size_t)n + 1, sizeof *cm);
  char *out = NULL;
  if (cm) {
    for (int i = 0; i < n; i++) {
      const cJSON *m = cJSON_GetArrayItem(turns, i);
      cm[i] = (struct chat_msg){.role = cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring,
                                .content = cJSON_GetObjectItemCaseSensitive(m, "content")->valuestring};
    }
    cm[n] = (struct chat_msg){.role = "user", .content = body};
    out = chat_format(x->chat, cm, n + 1, 1, NULL);
  }
  free(cm);
  free(body);
  return out;
}

/* A "messages" row: ..., user turn u, assistant CHOSEN, assistant REJECTED. */
static int row_messages(const struct pref_ctx *x, const cJSON *msgs, long line, struct pref_row *r, char *msg,
                        size_t msglen) {
  int n = cJSON_IsArray(msgs) ? cJSON_GetArraySize(msgs) : 0, last_user = -1;
  for (int i = 0; i < n; i++) {
    const cJSON *m = cJSON_GetArrayItem(msgs, i);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!cJSON_IsString(role) || !cJSON_IsString(content)) {
      snprintf(msg, msglen, "%s:%ld: messages[%d] must be an object with string \"role\" and \"content\"", x->path,
               line, i);
      return 2;
    }
    if (i < n - 2 && !strcmp(role->valuestring, "user")) last_user = i;
    if (i >= n - 2 && strcmp(role->valuestring, "assistant")) last_user = -2;
  }
  if (n < 3 || last_user < 0) {
    snprintf(msg, msglen, "%s:%ld: 'messages' must end with a user turn and then two assistant turns (chosen, "
             "rejected), or the row needs '%s', '%s' and '%s'", x->path, line, x->cfg->data.prompt_key,
             x->cfg->data.chosen_key, x->cfg->data.rejected_key);
    return 2;
  }
  const char *prompt = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, last_user), "content")->valuestring;
  r->prompt = render(x, msgs, last_user, prompt);
  r->chosen = strdup(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, n - 2), "content")->valuestring);
  r->rejected = strdup(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, n - 1), "content")->valuestring);
  return r->prompt && r->chosen && r->rejected ? 0 : 1;
}

/* A {prompt, chosen, rejected} row (key names from [data]). */
static int row_keys(const struct pref_ctx *x, const cJSON *obj, long line, struct pref_row *r, char *msg,
                    size_t msglen) {
  const struct config *c = x->cfg;
  char nb[3][64];
  const char *p = NULL, *w = NULL, *l = NULL;
  int rc = jsonl_get_text(obj, c->data.prompt_key, x->path, line, &p, nb[0], sizeof nb[0], msg, msglen);
  if (!rc) rc = jsonl_get_text(obj, c->data.chosen_key, x->path, line, &w, nb[1], sizeof nb[1], msg, msglen);
  if (!rc) rc = jsonl_get_text(obj, c->data.rejected_key, x->path, line, &l, nb[2], sizeof nb[2], msg, msglen);
  if (rc) return rc;
  r->prompt = render(x, NULL, 0, p);
  r->chosen = strdup(w);
  r->rejected = strdup(l);
  return r->prompt && r->chosen && r->rejected ? 0 : 1;
}

/* One JSON object -> a checked pair. 0; 2 bad row (msg); 1 out of memory. */
static int row_build(const struct pref_ctx *x, const cJSON *obj, long line, struct pref_row *r, char *msg,
                     size_t msglen) {
  memset(r, 0, sizeof *r);
  r->line = line;
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(obj, "messages");
  int rc = msgs && !cJSON_GetObjectItemCaseSensitive(obj, x->cfg->data.chosen_key)
               ? row_messages(x, msgs, line, r, msg, msglen)
               : row_keys(x, obj, line, r, msg, msglen);
  if (rc) return rc;
  const char *what[3] = {"prompt", "chosen response", "rejected response"};
  const char *text[3] = {r->prompt, r->chosen, r->rejected};
  for (int i = 0; i < 3; i++)
    if (strlen(text[i]) >= TASK_TEXT_MAX) {
      snprintf(msg, msglen, "%s:%ld: the %s is %zu bytes; at most %d", x->path, line, what[i], strlen(text[i]),
               TASK_TEXT_MAX - 1);
      return 2;
    }
  if (!strcmp(r->chosen, r->rejected)) {
    snprintf(msg, msglen, "%s:%ld: chosen and rejected are the same text", x->path, line);
    return 2;
  }
  return 0;
}

static int build_row(const void *ctx, const cJSON *obj, long line, void *row, char *msg, size_t msglen) {
  return row_build(ctx, obj, line, row, msg, msglen);
}

static void free_row(void *row) { row_free(row); }

/* All good rows of one file, in order. */
static int load_file(const struct pref_ctx *x, FILE *log, struct pref_row **out, long *n_out, char *err,
                     size_t errlen) {
  const struct jsonl_row_ops ops = {.size = sizeof(struct pref_row), .build = build_row, .free_row = free_row};
  void *rows = NULL;
  int rc = dataset_load_rows(x->cfg, x->path, ops, x, log, &rows, n_out, err, errlen);
  if (!rc) *out = rows;
  return rc;
}

/* The rows at the first k positions of the hold-out permutation go to the eval split. */
static int hold_out(struct pref_set *ps, double frac, char *err, size_t errlen) {
  long n = ps->n[TASK_TRAIN], k = (long)(frac * (double)n + 0.5);
  if (n < 2) {
    snprintf(err, errlen, "%s: %ld preference row(s): holding out [data] eval_frac needs at least 2 (or set "
             "[data] pref_eval_path)", ps->path[TASK_TRAIN], n);
    return 2;
  }
  k = k < 1 ? 1 : k > n - 1 ? n - 1 : k;
  char *is_eval = calloc((size_t)n, 1);
  struct pref_row *ev = malloc((size_t)k * sizeof *ev), *all = ps->rows[TASK_TRAIN];
  if (!is_eval || !ev) { free(is_eval); free(ev); return 1; }
  for (long j = 0; j < k; j++)
    is_eval[dataset_perm(ps->seed, PREF_HOLDOUT_EPOCH, (uint64_t)n, (uint64_t)j)] = 1;
  long nt = 0, ne = 0;
  for (long i = 0; i < n; i++) {
    if (is_eval[i]) ev[ne++] = all[i];
    else all[nt++] = all[i];
  }
  ps->rows[TASK_EVAL] = ev;
  ps->n[TASK_EVAL] = ne;
  ps->n[TASK_TRAIN] = nt;
  snprintf(ps->path[TASK_EVAL], sizeof ps->path[TASK_EVAL], "%s", ps->path[TASK_TRAIN]);
  free(is_eval);
  return 0;
}

int pref_load(struct pref_set *ps, const struct config *cfg, const struct chat_template *chat, FILE *log,
              char *err, size_t errlen) {
  struct pref_ctx x = {.cfg = cfg, .chat = chat};
  memset(ps, 0, sizeof *ps);
  ps->seed = (uint64_t)cfg->run.seed;
  ps->shuffle = cfg->data.shuffle;
  int rc = dataset_template_unescape(cfg->data.prompt_template, x.tmpl, sizeof x.tmpl, err, errlen);
  for (int s = 0; s < 2 && !rc; s++) {
    const char *path = s == TASK_TRAIN ? cfg->data.pref_path : cfg->data.pref_eval_path;
    if (!path[0]) continue;
    snprintf(ps->path[s], sizeof ps->path[s], "%s", path);
    x.path = path;
    rc = load_file(&x, log, &ps->rows[s], &ps->n[s], err, errlen);
  }
  if (!rc && !cfg->data.pref_eval_path[0]) rc = hold_out(ps, cfg->data.eval_frac, err, errlen);
  if (rc) pref_free(ps);
  return rc;
}

void pref_free(struct pref_set *ps) {
  for (int s = 0; s < 2; s++) {
    for (long i = 0; i < ps->n[s]; i++) row_free(&ps->rows[s][i]);
    free(ps->rows[s]);
    ps->rows[s] = NULL;
    ps->n[s] = 0;
  }
}

const struct pref_row *pref_row_at(const struct pref_set *ps, enum task_split split, uint64_t index) {
  uint64_t n = (uint64_t)ps->n[split];
  if (n == 0) return NULL;
  if (split == TASK_EVAL || !ps->shuffle) return &ps->rows[split][index % n];
  return &ps->rows[split][dataset_perm(ps->seed, index / n, n, index % n)];
}

int pref_tokens(const struct tokenizer *tok, const struct pref_row *row, int chosen, int *ids, size_t cap,
                size_t *n_prompt, size_t *n_total) {
  struct task_prompt p;
  snprintf(p.text, sizeof p.text, "%s", row->prompt);
  snprintf(p.answer, sizeof p.answer, "%s", chosen ? row->chosen : row->rejected);
  return task_sft_tokens(tok, &p, ids, cap, n_prompt, n_total);
}

int pref_check_fit(const struct pref_set *ps, const struct tokenizer *tok, int max_seq, char *err,
                   size_t errlen) {
  static int ids[2 * TASK_TEXT_MAX + 4];
  for (int s = 0; s < 2; s++)
    for (long i = 0; i < ps->n[s]; i++)
      for (int side = 1; side >= 0; side--) {
        size_t np, nt;
        const struct pref_row *r = &ps->rows[s][i];
        if (pref_tokens(tok, r, side, ids, sizeof ids / sizeof *ids, &np, &nt)) {
          snprintf(err, errlen, "%s:%ld: the prompt or %s response does not encode with the tokenizer", ps->path[s],
                   r->line, side ? "chosen" : "rejected");
          return 2;
        }
        if ((long)nt > max_seq) {
          snprintf(err, errlen, "%s:%ld: the prompt with its %s response takes %zu tokens but [model] max_seq = %d",
                   ps->path[s], r->line, side ? "chosen" : "rejected", nt, max_seq);
          return 2;
        }
      }
  return 0;
}
