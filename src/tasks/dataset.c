/* tasks/dataset.c: loading, checking, splitting and ordering JSONL datasets, and their
 * verifiers (rules in tasks/dataset.h). */
#include "tasks/dataset.h"

#include <stdlib.h>
#include <string.h>

#include "io/jsonl.h"
#include "tasks/chat.h"
#include "tasks/verify.h"
#include "util/rng.h"

#define MSG_MAX JSONL_MSG_MAX

/* What every row conversion needs from the deck. */
struct row_ctx {
  const struct config *cfg;
  const char *path;
  char tmpl[CFG_STR_MAX];
  const struct chat_template *chat;  /* NULL: no chat rendering */
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
  if (cJSON_GetObjectItemCaseSensitive(obj, key) || last_user < 0)
    return jsonl_get_text(obj, key, x->path, line, text, numbuf, numlen, msg, msglen);
  int n = cJSON_GetArraySize(msgs);
  const cJSON *last = cJSON_GetArrayItem(msgs, n - 1);
  if (n - 1 > last_user && !strcmp(cJSON_GetObjectItemCaseSensitive(last, "role")->valuestring, "assistant")) {
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
  if ((rc = row_prompt(x, obj, line, &prompt, &last_user, nb1, sizeof nb1, msg, msglen)) ||
      (rc = row_answer(x, obj, line, last_user, &answer, nb2, sizeof nb2, msg, msglen)))
    return rc;
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

/* All good rows of one file, in order. */
static int load_file(const struct row_ctx *x, FILE *log, struct data_row **out, long *n_out, char *err,
                     size_t errlen) {
  struct jsonl_reader rd;
  struct jsonl_bad bad = {0};
  enum jsonl_policy pol = x->cfg->data.on_bad_line == DATA_BAD_LINE_SKIP ? JSONL_SKIP : JSONL_ERROR;
  char msg[MSG_MAX];
  long n = 0, cap = 0, n_lines = 0;
  struct data_row *rows = NULL;
  int rc = jsonl_open(&rd, x->path, err, errlen);
  if (!rc) jsonl_set_max_line(&rd, (size_t)x->cfg->data.max_row_bytes, "[data] max_row_bytes");
  while (!rc) {
    cJSON *obj = NULL;
    long line = 0;
    int got = jsonl_next(&rd, &obj, &line, msg, sizeof msg);
    if (got == JSONL_EOF) break;
    if (got == JSONL_IOERR) { snprintf(err, errlen, "%s", msg); rc = 2; break; }
    n_lines++;
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      struct data_row *nr = realloc(rows, (size_t)cap * sizeof *rows);
      if (!nr) { cJSON_Delete(obj); rc = 1; break; }
      rows = nr;
    }
    int brc = got == JSONL_BAD ? 2 : row_build(x, obj, line, &rows[n], msg, sizeof msg);
    cJSON_Delete(obj);
    if (brc == 0) { n++; continue; }
    if (got != JSONL_BAD) row_free(&rows[n]);
    rc = brc == 1 ? 1 : jsonl_bad_line(pol, &bad, msg, err, errlen);
  }
  jsonl_close(&rd);
  if (!rc && n == 0) {
    snprintf(err, errlen, "%s: no usable rows (%ld lines%s%s)", x->path, n_lines, bad.n_bad ? ", skipped; first: " : "",
             bad.n_bad ? bad.first : "");
    rc = 2;
  }
  if (!rc) jsonl_bad_report(&bad, n_lines, x->path, log);
  if (rc) {
    for (long i = 0; i < n; i++) row_free(&rows[i]);
    free(rows);
    return rc;
  }
  *out = rows;
  *n_out = n;
  return 0;
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

int dataset_load(struct dataset *ds, const struct config *cfg, const struct chat_template *chat, FILE *log,
                 char *err, size_t errlen) {
  struct row_ctx x;
  memset(ds, 0, sizeof *ds);
  memset(&x, 0, sizeof x);
  ds->seed = (uint64_t)cfg->run.seed;
  ds->shuffle = cfg->data.shuffle;
  ds->verifier = (enum data_verifier)cfg->data.verifier;
  x.cfg = cfg;
  x.chat = chat;
  if (!cfg->data.train_path[0]) {
    snprintf(err, errlen, "[data] train_path: empty; [task] name = jsonl needs a JSONL file of rows");
    return 2;
  }
  int rc = dataset_template_unescape(cfg->data.prompt_template, x.tmpl, sizeof x.tmpl, err, errlen);
  for (int s = 0; s < 2 && !rc; s++) {
    const char *path = s == TASK_TRAIN ? cfg->data.train_path : cfg->data.eval_path;
    if (!path[0]) continue;
    snprintf(ds->path[s], sizeof ds->path[s], "%s", path);
    x.path = path;
    rc = load_file(&x, log, &ds->rows[s], &ds->n[s], err, errlen);
  }
  if (!rc && !cfg->data.eval_path[0]) rc = hold_out(ds, cfg->data.eval_frac, err, errlen);
  if (rc) dataset_free(ds);
  return rc;
}

void dataset_free(struct dataset *ds) {
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
  }
  return 0.0;
}
