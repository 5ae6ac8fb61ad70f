/* tasks/test_tasks.c: the built-in tasks: determinism, the arithmetic of every arith
 * prompt, countdown references that verify, train/held-out disjointness, SFT
 * tokens and deck validation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/tasks.h"
#include "testutil.h"

static struct config base_config(const char *name) {
  struct config cfg;
  config_defaults(&cfg);
  snprintf(cfg.task.name, sizeof cfg.task.name, "%s", name);
  return cfg;
}

static void test_arith(void) {
  struct config cfg = base_config("arith");
  cfg.task.digits_min = 1;
  cfg.task.digits_max = 3;
  snprintf(cfg.task.ops, sizeof cfg.task.ops, "+-*");
  struct task t;
  char err[256];
  CHECK(task_init(&t, &cfg, err, sizeof err) == 0);
  int seen[3] = {0, 0, 0};
  for (uint64_t i = 0; i < 3000; i++) {
    struct task_prompt p, q;
    CHECK(task_prompt(&t, i, TASK_TRAIN, &p) == 0);
    CHECK(task_prompt(&t, i, TASK_TRAIN, &q) == 0);
    CHECK(strcmp(p.text, q.text) == 0 && strcmp(p.answer, q.answer) == 0);
    long a, b;
    char op, eq;
    CHECK(sscanf(p.text, "%ld%c%ld%c", &a, &op, &b, &eq) == 4 && eq == '=');
    CHECK(a >= 0 && a <= 999 && b >= 0 && b <= 999);
    long want = op == '+' ? a + b : op == '-' ? a - b : a * b;
    char ws[32];
    snprintf(ws, sizeof ws, "%ld", want);
    CHECK_MSG(strcmp(ws, p.answer) == 0, "%s -> %s", p.text, p.answer);
    const char *o = strchr("+-*", op);
    CHECK(o != NULL);
    if (o) seen[o - "+-*"]++;
    CHECK(task_verify(&t, &p, p.answer, strlen(p.answer)) == 1.0);
    snprintf(ws, sizeof ws, "%ld", want + 1);
    CHECK(task_verify(&t, &p, ws, strlen(ws)) == 0.0);
    CHECK(task_verify(&t, &p, "", 0) == 0.0);
  }
  /* each op ~1000 of 3000 (sd ~26) */
  for (int k = 0; k < 3; k++) CHECK_NEAR(seen[k], 1000, 150);
  /* another seed gives other prompts */
  cfg.run.seed = 99;
  struct task t2;
  CHECK(task_init(&t2, &cfg, err, sizeof err) == 0);
  int differ = 0;
  for (uint64_t i = 0; i < 20; i++) {
    struct task_prompt p, q;
    task_prompt(&t, i, TASK_TRAIN, &p);
    task_prompt(&t2, i, TASK_TRAIN, &q);
    differ += strcmp(p.text, q.text) != 0;
  }
  CHECK(differ >= 15);
}

/* Pinned prompts: a change here changes every run's data (and breaks restarts). */
static void test_frozen(void) {
  struct config cfg = base_config("arith");
  struct task t;
  char err[256];
  struct task_prompt p;
  CHECK(task_init(&t, &cfg, err, sizeof err) == 0);
  CHECK(task_prompt(&t, 0, TASK_TRAIN, &p) == 0);
  CHECK_MSG(strcmp(p.text, "57+70=") == 0, "arith train 0: \"%s\"", p.text);
  cfg = base_config("countdown");
  CHECK(task_init(&t, &cfg, err, sizeof err) == 0);
  CHECK(task_prompt(&t, 0, TASK_TRAIN, &p) == 0);
  CHECK_MSG(strcmp(p.text, "Using 35 47 53 62 make 908:") == 0, "countdown train 0: \"%s\"", p.text);
}

/* 1-digit '+': 100 problems. Train and eval must never share one. */
static void test_split_disjoint(void) {
  struct config cfg = base_config("arith");
  cfg.task.digits_min = cfg.task.digits_max = 1;
  snprintf(cfg.task.ops, sizeof cfg.task.ops, "+");
  cfg.task.heldout_frac = 0.2;
  struct task t;
  char err[256];
  CHECK(task_init(&t, &cfg, err, sizeof err) == 0);
  char train[100] = {0}, eval[100] = {0};
  for (uint64_t i = 0; i < 2000; i++) {
    struct task_prompt p;
    CHECK(task_prompt(&t, i, TASK_TRAIN, &p) == 0);
    int a = p.text[0] - '0', b = p.text[2] - '0';
    train[a * 10 + b] = 1;
    if (i < 500) {
      CHECK(task_prompt(&t, i, TASK_EVAL, &p) == 0);
      a = p.text[0] - '0';
      b = p.text[2] - '0';
      eval[a * 10 + b] = 1;
    }
  }
  int nt = 0, ne = 0, both = 0;
  for (int k = 0; k < 100; k++) {
    nt += train[k];
    ne += eval[k];
    both += train[k] && eval[k];
  }
  CHECK(both == 0);
  CHECK(nt + ne == 100);  /* 2000 and 500 draws cover every problem of each side */
  /* held-out share ~20 of 100 (binomial sd 4): allow 6..40 */
  CHECK(ne >= 6 && ne <= 40);
}

static void test_countdown(void) {
  struct config cfg = base_config("countdown");
  struct task t;
  char err[256];
  CHECK(task_init(&t, &cfg, err, sizeof err) == 0);
  int count_n[7] = {0};
  for (uint64_t i = 0; i < 2000; i++) {
    struct task_prompt p;
    enum task_split split = (i % 4 == 0) ? TASK_EVAL : TASK_TRAIN;
    CHECK(task_prompt(&t, i, split, &p) == 0);
    CHECK(p.n_nums >= 3 && p.n_nums <= 4);
    if (p.n_nums >= 3 && p.n_nums <= 4) count_n[p.n_nums]++;
    CHECK(p.target >= 1 && p.target <= 999);
    for (int k = 0; k < p.n_nums; k++) CHECK(p.nums[k] >= 1 && p.nums[k] <= 99 && p.nums[k] != p.target);
    CHECK_MSG(task_verify(&t, &p, p.answer, strlen(p.answer)) == 1.0, "%s -> %s", p.text, p.answer);
    char wrong[TASK_TEXT_MAX + 8];
    snprintf(wrong, sizeof wrong, "%s+1", p.answer);
    CHECK(task_verify(&t, &p, wrong, strlen(wrong)) == 0.0);
    /* the prompt lists the numbers and the target */
    char expect[TASK_TEXT_MAX];
    int off = snprintf(expect, sizeof expect, "Using");
    for (int k = 0; k < p.n_nums; k++) off += snprintf(expect + off, sizeof expect - (size_t)off, " %ld", p.nums[k]);
    snprintf(expect + off, sizeof expect - (size_t)off, " make %ld:", p.target);
    CHECK(strcmp(expect, p.text) == 0);
  }
  CHECK(count_n[3] > 800 && count_n[4] > 800);
}

static void test_sft_tokens(void) {
  struct tokenizer tok;
  tokenizer_init_char(&tok);
  struct task_prompt p = {0};
  snprintf(p.text, sizeof p.text, "12+34=");
  snprintf(p.answer, sizeof p.answer, "46");
  int ids[16];
  size_t np = 0, nt = 0;
  CHECK(task_sft_tokens(&tok, &p, ids, 16, &np, &nt) == 0);
  CHECK(np == 7 && nt == 10);
  CHECK(ids[0] == tok.bos_id && ids[1] == '1' - 32 && ids[7] == '4' - 32 && ids[8] == '6' - 32 && ids[9] == tok.eos_id);
  CHECK(task_sft_tokens(&tok, &p, ids, 9, &np, &nt) == TOK_ERR_SPACE);
  CHECK(task_sft_tokens(&tok, &p, ids, 10, &np, &nt) == 0);
}

static void test_init_errors(void) {
  struct task t;
  char err[256];
  struct config cfg = base_config("sudoku");
  CHECK(task_init(&t, &cfg, err, sizeof err) == 2 && strstr(err, "[task] name") && strstr(err, "sudoku"));
  cfg = base_config("arith");
  snprintf(cfg.task.ops, sizeof cfg.task.ops, "+/");
  CHECK(task_init(&t, &cfg, err, sizeof err) == 2 && strstr(err, "[task] ops"));
  snprintf(cfg.task.ops, sizeof cfg.task.ops, "++");
  CHECK(task_init(&t, &cfg, err, sizeof err) == 2 && strstr(err, "twice"));
  snprintf(cfg.task.ops, sizeof cfg.task.ops, "%s", "");
  CHECK(task_init(&t, &cfg, err, sizeof err) == 2);
  cfg = base_config("arith");
  cfg.task.digits_min = 3;
  cfg.task.digits_max = 2;
  CHECK(task_init(&t, &cfg, err, sizeof err) == 2 && strstr(err, "digits_min"));
  cfg = base_config("countdown");
  cfg.task.numbers_min = 5;
  cfg.task.numbers_max = 4;
  CHECK(task_init(&t, &cfg, err, sizeof err) == 2 && strstr(err, "numbers_min"));
  CHECK(strcmp(task_name(TASK_COUNTDOWN), "countdown") == 0);
}

int main(void) {
  test_arith();
  test_frozen();
  test_split_disjoint();
  test_countdown();
  test_sft_tokens();
  test_init_errors();
  return TEST_RESULT("test_tasks");
}
