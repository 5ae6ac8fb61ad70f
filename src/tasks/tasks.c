/* tasks/tasks.c: the built-in arith and countdown tasks: deck validation, the keyed
 * prompt generators with a disjoint held-out split, verification and SFT tokens
 * (rules in tasks/tasks.h). */
#include "tasks/tasks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/dataset.h"
#include "tasks/verify.h"
#include "util/rng.h"

const char *task_name(enum task_kind kind) {
  switch (kind) {
    case TASK_ARITH: return "arith";
    case TASK_COUNTDOWN: return "countdown";
    case TASK_JSONL: return "jsonl";
  }
  return "?";
}

static int task_fail(char *err, size_t errlen, const char *key, const char *msg) {
  snprintf(err, errlen, "[task] %s: %s", key, msg);
  return 2;
}

static int init_ops(struct task *t, const char *ops, char *err, size_t errlen) {
  char msg[160];
  t->n_ops = 0;
  for (const char *c = ops; *c; c++) {
    if (*c != '+' && *c != '-' && *c != '*') {
      snprintf(msg, sizeof msg, "'%c' is not an operator of arith (use some of +-*)", *c);
      return task_fail(err, errlen, "ops", msg);
    }
    if (memchr(t->ops, *c, (size_t)t->n_ops)) {
      snprintf(msg, sizeof msg, "'%c' is listed twice in \"%s\"", *c, ops);
      return task_fail(err, errlen, "ops", msg);
    }
    t->ops[t->n_ops++] = *c;
  }
  if (t->n_ops == 0) return task_fail(err, errlen, "ops", "empty: give at least one of +-*");
  return 0;
}

static int task_init_jsonl(struct task *t, const struct config *cfg, char *err, size_t errlen) {
  t->kind = TASK_JSONL;
  t->heldout_frac = cfg->data.eval_frac;
  t->ds = malloc(sizeof *t->ds);
  if (!t->ds) return 1;
  /* every rank loads the rows; only world rank 0 (or a serial command) prints the summary */
  int mpi_on = 0, rank = 0;
  MPI_Initialized(&mpi_on);
  if (mpi_on) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = dataset_load(t->ds, cfg, t->chat ? &t->chat_tpl : NULL, rank == 0 ? stderr : NULL, err, errlen);
  if (rc) {
    free(t->ds);
    t->ds = NULL;
  }
  return rc;
}

void task_free(struct task *t) {
  if (t->ds) dataset_free(t->ds);
  free(t->ds);
  t->ds = NULL;
}

int task_init(struct task *t, const struct config *cfg, char *err, size_t errlen) {
  char msg[256];
  memset(t, 0, sizeof *t);
  t->seed = (uint64_t)cfg->run.seed;
  t->heldout_frac = cfg->task.heldout_frac;
  if (cfg->data.chat_template[0]) {  /* the one lookup, for arith prompts and jsonl rows */
    if (strcmp(cfg->task.name, "arith") && strcmp(cfg->task.name, "jsonl")) {
      snprintf(err, errlen, "[data] chat_template: used by [task] name = arith or jsonl, not %s",
               cfg->task.name);
      return 2;
    }
    if (chat_template_by_name(&t->chat_tpl, cfg->data.chat_template, msg, sizeof msg)) {
      snprintf(err, errlen, "[data] chat_template: %s", msg);
      return 2;
    }
    t->chat = 1;
  }
  if (!strcmp(cfg->task.name, "arith")) t->kind = TASK_ARITH;
  else if (!strcmp(cfg->task.name, "countdown")) t->kind = TASK_COUNTDOWN;
  else if (!strcmp(cfg->task.name, "jsonl")) return task_init_jsonl(t, cfg, err, errlen);
  else {
    snprintf(msg, sizeof msg, "'%s' is not a built-in task (arith | countdown) or jsonl", cfg->task.name);
    return task_fail(err, errlen, "name", msg);
  }
  if (t->kind == TASK_ARITH) {
    t->digits_min = (int)cfg->task.digits_min;
    t->digits_max = (int)cfg->task.digits_max;
    if (t->digits_min > t->digits_max) {
      snprintf(msg, sizeof msg, "digits_min = %d is larger than digits_max = %d", t->digits_min, t->digits_max);
      return task_fail(err, errlen, "digits_min", msg);
    }
    return init_ops(t, cfg->task.ops, err, errlen);
  }
  t->numbers_min = (int)cfg->task.numbers_min;
  t->numbers_max = (int)cfg->task.numbers_max;
  t->number_max = cfg->task.number_max;
  t->target_max = cfg->task.target_max;
  if (t->numbers_min > t->numbers_max) {
    snprintf(msg, sizeof msg, "numbers_min = %d is larger than numbers_max = %d", t->numbers_min, t->numbers_max);
    return task_fail(err, errlen, "numbers_min", msg);
  }
  if (t->numbers_max > TASK_MAX_NUMS) return task_fail(err, errlen, "numbers_max", "at most 6");
  return 0;
}

/* Does the problem (hashed words) belong to the held-out split? */
static int is_heldout(const struct task *t, const uint32_t *w, size_t n) {
  uint64_t h = rng_hash_words(t->seed, RNG_STREAM_TASK_SPLIT, w, n);
  return (double)(h >> 11) * 0x1.0p-53 < t->heldout_frac;
}

static long pow10l_int(int d) {
  long p = 1;
  while (d-- > 0) p *= 10;
  return p;
}

static long draw_operand(const struct task *t, struct rng_seq *s) {
  int d = t->digits_min + (int)rng_seq_below(s, (uint64_t)(t->digits_max - t->digits_min + 1));
  long lo = d == 1 ? 0 : pow10l_int(d - 1), hi = pow10l_int(d) - 1;
  return lo + (long)rng_seq_below(s, (uint64_t)(hi - lo + 1));
}

/* The chat-form prompt of a op b (tasks/tasks.h). 0, or 1 when out of memory or too long. */
static int arith_chat_text(const struct task *t, long a, char op, long b, struct task_prompt *p) {
  char q[128];
  snprintf(q, sizeof q, "What is %ld%c%ld? Answer with just the number.", a, op, b);
  struct chat_msg m = {.role = "user", .content = q};
  size_t n = 0;
  char *text = chat_format(&t->chat_tpl, &m, 1, 1, &n);
  int ok = text && n < sizeof p->text;
  if (ok) memcpy(p->text, text, n + 1);
  free(text);
  return !ok;
}

static int arith_prompt(const struct task *t, struct rng_seq *s, enum task_split split, struct task_prompt *p) {
  for (int attempt = 0; attempt < TASK_MAX_ATTEMPTS; attempt++) {
    long a = draw_operand(t, s);
    char op = t->ops[rng_seq_below(s, (uint64_t)t->n_ops)];
    long b = draw_operand(t, s);
    const uint32_t w[3] = {(uint32_t)a, (uint32_t)op, (uint32_t)b};
    if (is_heldout(t, w, 3) != (split == TASK_EVAL)) continue;
    long long r = op == '+' ? (long long)a + b : op == '-' ? (long long)a - b : (long long)a * b;
    snprintf(p->answer, sizeof p->answer, "%lld", r);
    if (t->chat) return arith_chat_text(t, a, op, b, p);
    snprintf(p->text, sizeof p->text, "%ld%c%ld=", a, op, b);
    return 0;
  }
  return 1;
}

/* A countdown sub-expression: value, precedence of its top operator (3 = a number), text. */
struct cd_node {
  long v;
  int prec;
  char s[TASK_TEXT_MAX];
};

static int op_prec(char op) { return (op == '+' || op == '-') ? 1 : 2; }

static size_t append(char *buf, size_t off, const char *s) {
  size_t n = strlen(s);
  if (off + n >= TASK_TEXT_MAX) return off;  /* cannot happen: 6 numbers of 3 digits need < 50 */
  memcpy(buf + off, s, n + 1);
  return off + n;
}

/* out = l op r with the fewest parentheses that keep the meaning. */
static void cd_combine(const struct cd_node *l, char op, const struct cd_node *r, long v, struct cd_node *out) {
  int p = op_prec(op);
  int wl = l->prec < p, wr = r->prec < p || (r->prec == p && (op == '-' || op == '/'));
  char buf[TASK_TEXT_MAX] = "", ops[2] = {op, '\0'};
  size_t off = 0;
  off = append(buf, off, wl ? "(" : "");
  off = append(buf, off, l->s);
  off = append(buf, off, wl ? ")" : "");
  off = append(buf, off, ops);
  off = append(buf, off, wr ? "(" : "");
  off = append(buf, off, r->s);
  append(buf, off, wr ? ")" : "");
  memcpy(out->s, buf, sizeof buf);
  out->v = v;
  out->prec = p;
}

/* Fold the numbers (in a random order) into one expression; 0 when every
 * intermediate stayed in 1..10*target_max. */
static int cd_build(const struct task *t, struct rng_seq *s, const long *nums, int n, struct cd_node *cur) {
  int perm[TASK_MAX_NUMS];
  for (int i = 0; i < n; i++) perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)rng_seq_below(s, (uint64_t)i + 1), tmp = perm[i];
    perm[i] = perm[j];
    perm[j] = tmp;
  }
  cur->v = nums[perm[0]];
  cur->prec = 3;
  snprintf(cur->s, sizeof cur->s, "%ld", cur->v);
  for (int k = 1; k < n; k++) {
    struct cd_node x = {.v = nums[perm[k]], .prec = 3};
    snprintf(x.s, sizeof x.s, "%ld", x.v);
    char op = "+-*/"[rng_seq_below(s, 4)];
    int swap = (int)rng_seq_below(s, 2);
    const struct cd_node *l = swap ? &x : cur, *r = swap ? cur : &x;
    if (op == '-' && l->v <= r->v) { const struct cd_node *tmp = l; l = r; r = tmp; }
    if (op == '-' && l->v == r->v) op = '+';
    if (op == '/' && !(r->v > 1 && l->v % r->v == 0)) {
      const struct cd_node *tmp = l; l = r; r = tmp;
      if (!(r->v > 1 && l->v % r->v == 0)) op = '*';
    }
    long v = op == '+' ? l->v + r->v : op == '-' ? l->v - r->v : op == '*' ? l->v * r->v : l->v / r->v;
    if (v < 1 || v > 10 * t->target_max) return 1;
    struct cd_node out;
    cd_combine(l, op, r, v, &out);
    *cur = out;
  }
  return 0;
}

static int countdown_prompt(const struct task *t, struct rng_seq *s, enum task_split split, struct task_prompt *p) {
  /* drawn once, so the count stays uniform even though larger sets are rejected more often */
  int n = t->numbers_min + (int)rng_seq_below(s, (uint64_t)(t->numbers_max - t->numbers_min + 1));
  for (int attempt = 0; attempt < TASK_MAX_ATTEMPTS; attempt++) {
    long nums[TASK_MAX_NUMS];
    for (int i = 0; i < n; i++) nums[i] = 1 + (long)rng_seq_below(s, (uint64_t)t->number_max);
    struct cd_node e;
    if (cd_build(t, s, nums, n, &e) || e.v > t->target_max) continue;
    int trivial = 0;
    for (int i = 0; i < n; i++) trivial |= nums[i] == e.v;
    if (trivial) continue;
    uint32_t w[TASK_MAX_NUMS + 2];
    long sorted[TASK_MAX_NUMS];
    memcpy(sorted, nums, sizeof(long) * (size_t)n);
    for (int i = 1; i < n; i++)
      for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) { long tmp = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = tmp; }
    w[0] = (uint32_t)n;
    for (int i = 0; i < n; i++) w[1 + i] = (uint32_t)sorted[i];
    w[n + 1] = (uint32_t)e.v;
    if (is_heldout(t, w, (size_t)n + 2) != (split == TASK_EVAL)) continue;
    int off = snprintf(p->text, sizeof p->text, "Using");
    for (int i = 0; i < n; i++) off += snprintf(p->text + off, sizeof p->text - (size_t)off, " %ld", nums[i]);
    snprintf(p->text + off, sizeof p->text - (size_t)off, " make %ld:", e.v);
    snprintf(p->answer, sizeof p->answer, "%s", e.s);
    p->n_nums = n;
    memcpy(p->nums, nums, sizeof(long) * (size_t)n);
    p->target = e.v;
    return 0;
  }
  return 1;
}

int task_prompt(const struct task *t, uint64_t index, enum task_split split, struct task_prompt *p) {
  struct rng_seq s;
  memset(p, 0, sizeof *p);
  if (t->kind == TASK_JSONL) return dataset_prompt(t->ds, index, split, p);
  p->index = index;
  p->split = split;
  rng_seq_init(&s, t->seed, split == TASK_EVAL ? RNG_STREAM_TASK_EVAL : RNG_STREAM_TASK_TRAIN, (uint32_t)index,
               (uint32_t)(index >> 32));
  return t->kind == TASK_ARITH ? arith_prompt(t, &s, split, p) : countdown_prompt(t, &s, split, p);
}

double task_verify(const struct task *t, const struct task_prompt *p, const char *resp, size_t len) {
  if (t->kind == TASK_ARITH && t->chat) return verify_math(resp, len, p->answer);
  if (t->kind == TASK_ARITH) return verify_arith(resp, len, p->answer);
  if (t->kind == TASK_JSONL) return dataset_verify(t->ds, p, resp, len);
  return verify_countdown(resp, len, p->nums, p->n_nums, p->target);
}

long task_answer(const struct task *t, const char *resp, size_t len, char *out, size_t cap) {
  enum verify_kind k = VERIFY_MATH;
  if (t->kind == TASK_COUNTDOWN) return -1;
  if (t->kind == TASK_ARITH) k = t->chat ? VERIFY_MATH : VERIFY_ARITH;
  if (t->kind == TASK_JSONL) {
    enum data_verifier v = t->ds->verifier;
    if (v == DATA_VERIFY_COUNTDOWN || v == DATA_VERIFY_CODE) return -1;
    k = v == DATA_VERIFY_ARITH ? VERIFY_ARITH : v == DATA_VERIFY_EXACT ? VERIFY_EXACT : VERIFY_MATH;
  }
  return (long)verify_answer_canon(k, resp, len, out, cap);
}

int task_sandboxed(const struct task *t) { return t->kind == TASK_JSONL && t->ds && t->ds->sb; }

int task_verify_batch(const struct task *t, const struct task_prompt *const *p, const char *const *resp,
                      const size_t *len, int n, double *out, struct code_stats *st) {
  if (t->kind == TASK_JSONL) return dataset_verify_batch(t->ds, p, resp, len, n, out, st);
  for (int i = 0; i < n; i++) out[i] = task_verify(t, p[i], resp[i], len[i]);
  return 0;
}

int task_sft_tokens(const struct tokenizer *tok, const struct task_prompt *p, int *ids, size_t cap,
                    size_t *n_prompt, size_t *n_total) {
  size_t n = 0, m = 0, bad = 0;
  if (cap < 2) return TOK_ERR_SPACE;
  /* [BOS] prompt (the rollout's prompt ids), answer, EOS (the last slot kept for it) */
  int rc = tokenizer_encode_prompt(tok, p->text, strlen(p->text), ids, cap - 1, &n, &bad);
  if (rc) return rc;
  rc = tokenizer_encode(tok, p->answer, strlen(p->answer), ids + n, cap - 1 - n, &m, &bad);
  if (rc) return rc;
  ids[n + m] = tok->eos_id;
  *n_prompt = n;
  *n_total = n + m + 1;
  return 0;
}

/* One prompt against the limits; what names it ("FILE:LINE: the prompt" of a dataset row,
 * else "MODEL: the held-out prompt '...'"). */
static int fit_one(const struct tokenizer *tok, const struct task_prompt *p, const struct fit_limits *l,
                   const char *what, char *err, size_t errlen) {
  int ids[2 * TASK_TEXT_MAX + 2];  /* prompt and answer are under TASK_TEXT_MAX bytes each */
  size_t n = 0, at = 0, n_prompt = 0, n_total = 0;
  if (tokenizer_encode_prompt(tok, p->text, strlen(p->text), ids, TASK_TEXT_MAX + 1, &n, &at) != TOK_OK) {
    snprintf(err, errlen, "%s does not encode with the tokenizer (byte %zu)", what, at);
    return 2;
  }
  if ((long)n + l->max_new > l->max_seq) {
    snprintf(err, errlen, "%s takes %zu tokens but %s - [rollout] max_new_tokens = %d - %ld leaves %ld", what,
             n, l->limit, l->max_seq, l->max_new, l->max_seq - l->max_new);
    return 2;
  }
  if (!l->sft) return 0;
  if (task_sft_tokens(tok, p, ids, sizeof ids / sizeof *ids, &n_prompt, &n_total) != 0) {
    snprintf(err, errlen, "%s: its answer (the SFT completion) does not encode with the tokenizer", what);
    return 2;
  }
  if ((long)n_total > l->max_seq) {
    snprintf(err, errlen, "%s with its answer (the SFT example) takes %zu tokens but %s = %d", what, n_total,
             l->limit, l->max_seq);
    return 2;
  }
  return 0;
}

/* Every row of a JSONL dataset's splits that have a count in n, named by FILE:LINE. */
static int fit_rows(const struct task *t, const struct tokenizer *tok, const struct fit_limits *l,
                    const long n[2], char *err, size_t errlen) {
  const struct dataset *ds = t->ds;
  for (int s = 0; s < 2; s++)
    for (long i = 0; n[s] > 0 && i < ds->n[s]; i++) {
      const struct data_row *r = &ds->rows[s][i];
      struct task_prompt p;
      char what[CFG_STR_MAX + 48];
      snprintf(what, sizeof what, "%s:%ld: the prompt", ds->path[s], r->line);
      snprintf(p.text, sizeof p.text, "%s", r->prompt);  /* under TASK_TEXT_MAX bytes (dataset_load) */
      snprintf(p.answer, sizeof p.answer, "%s", r->answer);
      int rc = fit_one(tok, &p, l, what, err, errlen);
      if (rc) return rc;
    }
  return 0;
}

int task_check_fit(const struct task *t, const struct tokenizer *tok, const struct fit_limits *l, long n_train,
                   long n_eval, char *err, size_t errlen) {
  const long n[2] = {n_train, n_eval};  /* by enum task_split */
  if (t->kind == TASK_JSONL) return fit_rows(t, tok, l, n, err, errlen);
  for (int s = 0; s < 2; s++)
    for (long i = 0; i < n[s]; i++) {
      struct task_prompt p;
      char what[TASK_TEXT_MAX + 256];
      const char *split = s == TASK_TRAIN ? "train" : "held-out";
      if (task_prompt(t, (uint64_t)i, (enum task_split)s, &p) != 0) {
        snprintf(err, errlen, "%s: the task has no %s problem for %s prompt %ld of %ld (a problem space too "
                 "small for [task] heldout_frac): no %s set", l->where, split, s ? "eval" : "train", i, n[s],
                 s ? "eval" : "train");
        return 2;
      }
      snprintf(what, sizeof what, "%s: the %s prompt '%s'", l->where, split, p.text);
      int rc = fit_one(tok, &p, l, what, err, errlen);
      if (rc) return rc;
    }
  return 0;
}

