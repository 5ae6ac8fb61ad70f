/* tasks/dataset.c: loading, checking, splitting and ordering JSONL datasets, and their
 * verifiers (rules in tasks/dataset.h). */
#include "tasks/dataset.h"

#include <stdlib.h>
#include <string.h>

#include "io/jsonl.h"
#include "io/jsonl_rows.h"
#include "sandbox/sandbox.h"
#include "tasks/code.h"
#include "tasks/chat.h"
#include "tasks/verify.h"
#include "util/rng.h"


/* What every row conversion needs from the deck. */
struct row_ctx {
  const struct config *cfg;
  const char *path;
  char tmpl[CFG_STR_MAX];
  const struct chat_template *chat;  /* NULL: no chat rendering */
  int keep_json;                     /* keep each row's JSON (data_row.json) */
};

int dataset_template_unescape(const char *tmpl, char *out, size_t outlen, char *err, size_t errlen) {
  size_t o = 0;
  for (const char *c = tmpl; *c && o + 1 < outlen; c++) {
    if (c[0] == '\\' && (c[1] == 'n' || c[1] == 't' || c[1] == '\\')) {
      out[o++] = c[1] == 'n' ? '\n' : c[1] == 't' ? '\t' : '\\';
      c++;
    } else {
      out[o++] = *c;
    }
  }
  out[o] = '\0';
  if (!strstr(out, "{prompt}")) {
    snprintf(err, errlen, "[data] prompt_template: \"%s\" has no {prompt} (where the row's prompt goes)", tmpl);
    return 2;
  }
  return 0;
}

char *dataset_apply_template(const char *tmpl, const char *prompt) {
  size_t n_occ = 0, lp = strlen(prompt);
  for (const char *c = strstr(tmpl, "{prompt}"); c; c = strstr(c + 8, "{prompt}")) n_occ++;
  char *out = malloc(strlen(tmpl) + n_occ * lp + 1), *o = out;
  if (!out) return NULL;
  for (const char *c = tmpl; *c;) {
    if (!strncmp(c, "{prompt}", 8)) {
      memcpy(o, prompt, lp);
      o += lp;
      c += 8;
    } else {
      *o++ = *c++;
    }
  }
  *o = '\0';
  return out;
}

/* The prompt source of a row: its prompt_key, or the last user turn of "messages". On
 * success *last_user is that turn's index (-1 for prompt_key) and *text its content. */
static int row_prompt(const struct row_ctx *x, const cJSON *obj, long line, const char **text, int *last_user,
                      char *numbuf, size_t numlen, char *msg, size_t msglen) {
  const char *key = x->cfg->data.prompt_key;
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(obj, "messages");
  *last_user = -1;
  if (cJSON_GetObjectItemCaseSensitive(obj, key) || !msgs)
    return jsonl_get_text(obj, key, x->path, line, text, numbuf, numlen, msg, msglen);
  if (!cJSON_IsArray(msgs)) {
    snprintf(msg, msglen, "%s:%ld: key 'messages' is %s, expected an array", x->path, line, jsonl_type_name(msgs));
    return 2;
  }
  int i = 0;
  for (const cJSON *m = msgs->child; m; m = m->next, i++) {
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!cJSON_IsObject(m) || !cJSON_IsString(role) || !cJSON_IsString(content)) {
      snprintf(msg, msglen, "%s:%ld: messages[%d] must be an object with string \"role\" and \"content\"", x->path,
               line, i);
      return 2;
    }
    if (!strcmp(role->valuestring, "user")) {
      *last_user = i;
      *text = content->valuestring;
    }
  }
  if (*last_user < 0) {
    snprintf(msg, msglen, "%s:%ld: no '%s' key and no user turn in 'messages'", x->path, line, key);
    return 2;
  }
  return 0;
}

/* The answer: answer_key, else an assistant turn that ends "messages" after the prompt. */
static int row_answer(const struct row_ctx *x, const cJSON *obj, long line, int last_user, const char **text,
                      char *numbuf, size_t numlen, char *msg, size_t msglen) {
  const char *key = x->cfg->data.answer_key;
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(obj, "messages");
  int n = cJSON_GetArraySize(msgs), has_key = cJSON_GetObjectItemCaseSensitive(obj, key) != NULL;
  const cJSON *last = cJSON_GetArrayItem(msgs, n - 1);
  int assistant = last_user >= 0 && n - 1 > last_user &&
                  !strcmp(cJSON_GetObjectItemCaseSensitive(last, "role")->valuestring, "assistant");
  if (!has_key && !assistant && x->cfg->reward.self_consistency) {  /* label-free: voted on */
    *text = "";
    return 0;
  }
  if (has_key || last_user < 0)
    return jsonl_get_text(obj, key, x->path, line, text, numbuf, numlen, msg, msglen);
  if (assistant) {
    *text = cJSON_GetObjectItemCaseSensitive(last, "content")->valuestring;
    return 0;
  }
  snprintf(msg, msglen, "%s:%ld: no '%s' key and 'messages' does not end with an assistant turn", x->path, line,
           key);
  return 2;
}

/* The rendered prompt: template, then the chat template over the turns up to the prompt. */
static char *render_prompt(const struct row_ctx *x, const cJSON *obj, int last_user, const char *prompt) {
  char *body = dataset_apply_template(x->tmpl, prompt);
  if (!body || !x->chat) return body;
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(obj, "messages");
  int n = last_user < 0 ? 1 : last_user + 1;
  struct chat_msg *cm = calloc((size_t)n, sizeof *cm);
  char *out = NULL;
  if (cm) {
    for (int i = 0; i < n - 1; i++) {
      const cJSON *m = cJSON_GetArrayItem(msgs, i);
      cm[i].role = cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring;
      cm[i].content = cJSON_GetObjectItemCaseSensitive(m, "content")->valuestring;
    }
    cm[n - 1] = (struct chat_msg){.role = "user", .content = body};
    out = chat_format(x->chat, cm, n, 1, NULL);
  }
  free(cm);
  free(body);
  return out;
}

/* The verifier's reference: for math, the final answer of a worked solution. */
static int row_reference(const struct row_ctx *x, long line, struct data_row *r, char *msg, size_t msglen) {
  const char *a = r->answer;
  /* [env]: an episode's demonstration; the verifier scores the last model turn */
  for (const char *t; x->cfg->env.enabled && (t = strstr(a, TASK_TOOL_RESPONSE_CLOSE));)
    a = t + strlen(TASK_TOOL_RESPONSE_CLOSE);
  size_t off = 0, n = strlen(a);
  if (x->cfg->data.verifier == DATA_VERIFY_MATH && (strstr(a, "####") || strstr(a, "\\boxed"))) {
    if (verify_math_extract(a, n, &off, &n) || n == 0) {
      snprintf(msg, msglen, "%s:%ld: answer has \\boxed or #### but no final answer in it", x->path, line);
      return 2;
    }
  }
  size_t t_off = 0;
  verify_trim(a + off, n, &t_off, &n);
  r->ref = strndup(a + off + t_off, n);
  return r->ref ? 0 : 1;
}

static int row_countdown(const struct row_ctx *x, const cJSON *obj, long line, struct data_row *r, char *msg,
                         size_t msglen) {
  const cJSON *nums = cJSON_GetObjectItemCaseSensitive(obj, "nums");
  const cJSON *target = cJSON_GetObjectItemCaseSensitive(obj, "target");
  int n = cJSON_IsArray(nums) ? cJSON_GetArraySize(nums) : -1;
  if (n < 2 || n > TASK_MAX_NUMS || !cJSON_IsNumber(target)) {
    snprintf(msg, msglen, "%s:%ld: countdown rows need \"nums\" (an array of 2..%d integers) and \"target\" "
             "(an integer)", x->path, line, TASK_MAX_NUMS);
    return 2;
  }
  r->n_nums = n;
  r->target = (long)target->valuedouble;
  int i = 0;
  for (const cJSON *v = nums->child; v; v = v->next, i++) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != (double)(long)v->valuedouble) {
      snprintf(msg, msglen, "%s:%ld: nums[%d] is not a non-negative integer", x->path, line, i);
      return 2;
    }
    r->nums[i] = (long)v->valuedouble;
  }
  return 0;
}

static void row_free(struct data_row *r) {
  code_row_free(r);
  free(r->json);
  free(r->prompt);
  free(r->answer);
  free(r->ref);
  memset(r, 0, sizeof *r);
}

/* One JSON object -> a checked row. 0; 2 bad row (msg); 1 out of memory. */
static int row_build(const struct row_ctx *x, const cJSON *obj, long line, struct data_row *r, char *msg,
                     size_t msglen) {
  char nb1[64], nb2[64];
  const char *prompt = NULL, *answer = NULL;
  int last_user = -1, rc;
  memset(r, 0, sizeof *r);
  r->line = line;
  int code = x->cfg->data.verifier == DATA_VERIFY_CODE;
  if ((rc = row_prompt(x, obj, line, &prompt, &last_user, nb1, sizeof nb1, msg, msglen))) return rc;
  if ((!code || cJSON_GetObjectItemCaseSensitive(obj, x->cfg->data.answer_key)) &&
      (rc = row_answer(x, obj, line, last_user, &answer, nb2, sizeof nb2, msg, msglen)))
    return rc;
  if (code && (rc = code_row_parse(obj, x->path, line, x->cfg->data.prompt_key, r, &answer, msg, msglen)))
    return rc;
  if (x->keep_json && !(r->json = cJSON_PrintUnformatted(obj))) return 1;
  r->prompt = render_prompt(x, obj, last_user, prompt);
  r->answer = strdup(answer);
  if (!r->prompt || !r->answer) return 1;
  size_t lp = strlen(r->prompt), la = strlen(r->answer);
  if (lp >= TASK_TEXT_MAX || la >= TASK_TEXT_MAX) {
    snprintf(msg, msglen, "%s:%ld: the %s is %zu bytes%s; at most %d", x->path, line,
             lp >= TASK_TEXT_MAX ? "prompt" : "answer", lp >= TASK_TEXT_MAX ? lp : la,
             lp >= TASK_TEXT_MAX ? " after the template" : "", TASK_TEXT_MAX - 1);
    return 2;
  }
  if (x->cfg->data.verifier == DATA_VERIFY_COUNTDOWN && (rc = row_countdown(x, obj, line, r, msg, msglen)))
    return rc;
  return row_reference(x, line, r, msg, msglen);
}

static int build_row(const void *ctx, const cJSON *obj, long line, void *row, char *msg, size_t msglen) {
  return row_build(ctx, obj, line, row, msg, msglen);
}

static void free_row(void *row) { row_free(row); }

int dataset_load_rows(const struct config *cfg, const char *path, struct jsonl_row_ops ops, const void *ctx,
                      FILE *log, void **rows, long *n, char *err, size_t errlen) {
  enum jsonl_policy pol = cfg->data.on_bad_line == DATA_BAD_LINE_SKIP ? JSONL_SKIP : JSONL_ERROR;
  ops.max_line = (size_t)cfg->data.max_row_bytes;
  ops.limit = "[data] max_row_bytes";
  return jsonl_load_rows(path, pol, &ops, ctx, log, rows, n, err, errlen);
}

/* All good rows of one file, in order. */
static int load_file(const struct row_ctx *x, FILE *log, struct data_row **out, long *n_out, char *err,
                     size_t errlen) {
  const struct jsonl_row_ops ops = {.size = sizeof(struct data_row), .build = build_row, .free_row = free_row};
  void *rows = NULL;
  int rc = dataset_load_rows(x->cfg, x->path, ops, x, log, &rows, n_out, err, errlen);
  if (!rc) *out = rows;
  return rc;
}

struct keyed { uint64_t h; long i; };

static int cmp_keyed(const void *a, const void *b) {
  const struct keyed *x = a, *y = b;
  if (x->h != y->h) return x->h < y->h ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* Move the k rows with the smallest keyed hash of their line number to the eval split. */
static int hold_out(struct dataset *ds, double frac, char *err, size_t errlen) {
  long n = ds->n[TASK_TRAIN], k = (long)(frac * (double)n + 0.5);
  if (n < 2) {
    snprintf(err, errlen, "%s: %ld usable row(s): holding out [data] eval_frac needs at least 2 (or set "
             "[data] eval_path)", ds->path[TASK_TRAIN], n);
    return 2;
  }
  if (k < 1) k = 1;
  if (k > n - 1) k = n - 1;
  struct keyed *key = malloc((size_t)n * sizeof *key);
  char *is_eval = calloc((size_t)n, 1);
  struct data_row *ev = malloc((size_t)k * sizeof *ev), *all = ds->rows[TASK_TRAIN];
  if (!key || !is_eval || !ev) { free(key); free(is_eval); free(ev); return 1; }
  for (long i = 0; i < n; i++) {
    uint32_t w[2] = {(uint32_t)all[i].line, (uint32_t)((uint64_t)all[i].line >> 32)};
    key[i] = (struct keyed){.h = rng_hash_words(ds->seed, RNG_STREAM_TASK_SPLIT, w, 2), .i = i};
  }
  qsort(key, (size_t)n, sizeof *key, cmp_keyed);
  for (long j = 0; j < k; j++) is_eval[key[j].i] = 1;
  long nt = 0, ne = 0;
  for (long i = 0; i < n; i++) {
    if (is_eval[i]) ev[ne++] = all[i];
    else all[nt++] = all[i];
  }
  ds->rows[TASK_EVAL] = ev;
  ds->n[TASK_EVAL] = ne;
  ds->n[TASK_TRAIN] = nt;
  snprintf(ds->path[TASK_EVAL], sizeof ds->path[TASK_EVAL], "%s", ds->path[TASK_TRAIN]);
  free(key);
  free(is_eval);
  return 0;
}

/* The dataset's fields from the deck, the row context, and for verifier = code the sandbox
 * its tests run in. 0, or 2 with a message. */
static int dataset_open(struct dataset *ds, struct row_ctx *x, const struct config *cfg,
                        const struct chat_template *chat, char *err, size_t errlen) {
  memset(ds, 0, sizeof *ds);
  memset(x, 0, sizeof *x);
  ds->seed = (uint64_t)cfg->run.seed;
  ds->shuffle = cfg->data.shuffle;
  ds->verifier = (enum data_verifier)cfg->data.verifier;
  ds->sandbox_workers = (int)cfg->sandbox.workers;
  ds->code_all = cfg->data.code_score == CODE_SCORE_ALL;
  x->cfg = cfg;
  x->chat = chat;
  x->keep_json = cfg->reward.command[0] != '\0';
  int rc = dataset_template_unescape(cfg->data.prompt_template, x->tmpl, sizeof x->tmpl, err, errlen);
  if (rc || ds->verifier != DATA_VERIFY_CODE) return rc;
  struct sandbox_opts o;
  sandbox_opts_from_config(&o, cfg);
  if (!(ds->sb = malloc(sizeof *ds->sb))) return 1;
  return sandbox_init(ds->sb, &o, err, errlen);
}

static int load_split(struct dataset *ds, struct row_ctx *x, int s, const char *path, FILE *log, char *err,
                      size_t errlen) {
  snprintf(ds->path[s], sizeof ds->path[s], "%s", path);
  x->path = path;
  return load_file(x, log, &ds->rows[s], &ds->n[s], err, errlen);
}

int dataset_load(struct dataset *ds, const struct config *cfg, const struct chat_template *chat, FILE *log,
                 char *err, size_t errlen) {
  struct row_ctx x;
  if (!cfg->data.train_path[0]) {
    memset(ds, 0, sizeof *ds);
    snprintf(err, errlen, "[data] train_path: empty; [task] name = jsonl needs a JSONL file of rows");
    return 2;
  }
  int rc = dataset_open(ds, &x, cfg, chat, err, errlen);
  for (int s = 0; s < 2 && !rc; s++) {
    const char *path = s == TASK_TRAIN ? cfg->data.train_path : cfg->data.eval_path;
    if (path[0]) rc = load_split(ds, &x, s, path, log, err, errlen);
  }
  if (!rc && !cfg->data.eval_path[0]) rc = hold_out(ds, cfg->data.eval_frac, err, errlen);
  if (rc) dataset_free(ds);
  return rc;
}

int dataset_load_file(struct dataset *ds, const struct config *cfg, const char *path, FILE *log, char *err,
                      size_t errlen) {
  struct row_ctx x;
  int rc = dataset_open(ds, &x, cfg, NULL, err, errlen);
  x.keep_json = 1;
  if (!rc) rc = load_split(ds, &x, TASK_TRAIN, path, log, err, errlen);
  if (rc) dataset_free(ds);
  return rc;
}

void dataset_free(struct dataset *ds) {
  free(ds->sb);
  ds->sb = NULL;
  for (int s = 0; s < 2; s++) {
    for (long i = 0; i < ds->n[s]; i++) row_free(&ds->rows[s][i]);
    free(ds->rows[s]);
    ds->rows[s] = NULL;
    ds->n[s] = 0;
  }
}

/* One pass of a balanced Feistel network on 2*half bits. */
static uint64_t feistel(uint64_t seed, uint64_t epoch, int half, uint64_t x) {
  uint64_t mask = (UINT64_C(1) << half) - 1, l = x >> half, r = x & mask;
  for (uint32_t round = 0; round < 4; round++) {
    uint32_t w[5] = {(uint32_t)epoch, (uint32_t)(epoch >> 32), round, (uint32_t)r, (uint32_t)(r >> 32)};
    uint64_t f = rng_hash_words(seed, RNG_STREAM_SHUFFLE, w, 5) & mask;
    uint64_t nl = r;
    r = l ^ f;
    l = nl;
  }
  return (l << half) | r;
}

uint64_t dataset_perm(uint64_t seed, uint64_t epoch, uint64_t n, uint64_t pos) {
  int bits = 0;
  while (bits < 62 && (UINT64_C(1) << bits) < n) bits++;
  int half = bits / 2 + bits % 2;
  if (half == 0) half = 1;
  /* cycle-walking: a bijection of [0, 4^half) restricted to [0, n) stays a bijection */
  uint64_t x = pos;
  do x = feistel(seed, epoch, half, x); while (x >= n);
  return x;
}

const struct data_row *dataset_row(const struct dataset *ds, enum task_split split, uint64_t index) {
  uint64_t n = (uint64_t)ds->n[split];
  if (n == 0) return NULL;
  if (split == TASK_EVAL || !ds->shuffle) return &ds->rows[split][index % n];
  return &ds->rows[split][dataset_perm(ds->seed, index / n, n, index % n)];
}

int dataset_prompt(const struct dataset *ds, uint64_t index, enum task_split split, struct task_prompt *p) {
  const struct data_row *r = dataset_row(ds, split, index);
  memset(p, 0, sizeof *p);
  p->index = index;
  p->split = split;
  if (!r || strlen(r->prompt) >= sizeof p->text || strlen(r->answer) >= sizeof p->answer) return 1;
  memcpy(p->text, r->prompt, strlen(r->prompt) + 1);
  memcpy(p->answer, r->answer, strlen(r->answer) + 1);
  p->n_nums = r->n_nums;
  memcpy(p->nums, r->nums, sizeof p->nums);
  p->target = r->target;
  return 0;
}

double dataset_verify(const struct dataset *ds, const struct task_prompt *p, const char *resp, size_t len) {
  const struct data_row *r = dataset_row(ds, (enum task_split)p->split, p->index);
  if (!r) return 0.0;
  switch (ds->verifier) {
    case DATA_VERIFY_MATH: return verify_math(resp, len, r->ref);
    case DATA_VERIFY_ARITH: return verify_arith(resp, len, r->ref);
    case DATA_VERIFY_COUNTDOWN: return verify_countdown(resp, len, r->nums, r->n_nums, r->target);
    case DATA_VERIFY_EXACT: {
      size_t off = 0, n = 0;
      verify_trim(resp, len, &off, &n);
      return n == strlen(r->ref) && !memcmp(resp + off, r->ref, n) ? 1.0 : 0.0;
    }
    case DATA_VERIFY_CODE: {
      double score = 0.0;
      struct code_stats st = {0};
      return dataset_verify_batch(ds, &p, &resp, &len, 1, &score, &st) ? 0.0 : score;
    }
  }
  return 0.0;
}

int dataset_verify_batch(const struct dataset *ds, const struct task_prompt *const *p, const char *const *resp,
                         const size_t *len, int n, double *out, struct code_stats *st) {
  if (ds->verifier != DATA_VERIFY_CODE) {
    for (int i = 0; i < n; i++) out[i] = dataset_verify(ds, p[i], resp[i], len[i]);
    return 0;
  }
  const struct data_row **rows = malloc(sizeof *rows * (size_t)(n + 1));
  static const struct data_row none = {0};
  struct code_stats local = {0};
  if (!rows) return 1;
  for (int i = 0; i < n; i++) {
    rows[i] = dataset_row(ds, (enum task_split)p[i]->split, p[i]->index);
    if (!rows[i]) rows[i] = &none;
  }
  int rc = code_score_batch(ds->sb, ds->sandbox_workers, ds->code_all, rows, resp, len, n, out, NULL,
                            st ? st : &local);
  free(rows);
  return rc;
}
