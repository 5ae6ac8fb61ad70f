/* tasks/test_dataset.c: JSONL datasets ([task] name = jsonl): prompt template, messages
 * rows (and a chat template), the held-out split (disjoint, complete, deterministic,
 * seed-dependent), the per-epoch shuffle (a true permutation, deterministic, new each
 * epoch), cursor reproducibility across loads, too-long prompts, the error/skip
 * policy counts, the verifiers and the task interface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/hf_tokenizer.h"
#include "io/jsonl.h"
#include "tasks/dataset.h"
#include "tasks/tasks.h"
#include "testutil.h"

static char g_dir[] = "/tmp/rlpt_test_dataset_XXXXXX";
static const char *write_file(const char *name, const char *text) { return tu_write_file(g_dir, name, text); }

/* n rows {"prompt": "p<i>", "answer": "<i>"}. */
static const char *write_rows(const char *name, int n) {
  size_t cap = (size_t)n * 48 + 1;
  char *t = malloc(cap), *o = t;
  for (int i = 0; i < n; i++) o += sprintf(o, "{\"prompt\": \"p%d\", \"answer\": \"%d\"}\n", i, i);
  *o = '\0';
  const char *p = write_file(name, t);
  free(t);
  return p;
}

static struct config data_config(const char *train) {
  struct config cfg;
  config_defaults(&cfg);
  snprintf(cfg.task.name, sizeof cfg.task.name, "jsonl");
  snprintf(cfg.data.train_path, sizeof cfg.data.train_path, "%s", train);
  cfg.model.max_seq = 512;
  cfg.rollout.max_new_tokens = 16;
  return cfg;
}

static void test_template(void) {
  char out[256], err[256];
  CHECK(dataset_template_unescape("Q: {prompt}\\nA:\\t\\\\boxed", out, sizeof out, err, sizeof err) == 0);
  CHECK(!strcmp(out, "Q: {prompt}\nA:\t\\boxed"));
  CHECK(dataset_template_unescape("Solve \\boxed{}", out, sizeof out, err, sizeof err) == 0 + 2);
  CHECK(strstr(err, "[data] prompt_template") && strstr(err, "has no {prompt}"));
  char *s = dataset_apply_template("<{prompt}|{prompt}>", "xy");
  CHECK(s && !strcmp(s, "<xy|xy>"));
  free(s);
  /* through a load: template applied, answer kept whole, math reference = the final answer */
  struct config cfg = data_config(write_file("tmpl.jsonl", "{\"q\": \"1+2?\", \"a\": \"1+2 = 3 #### 3\"}\n"
                                                           "{\"q\": \"2*4?\", \"a\": 8}\n"));
  snprintf(cfg.data.prompt_key, sizeof cfg.data.prompt_key, "q");
  snprintf(cfg.data.answer_key, sizeof cfg.data.answer_key, "a");
  snprintf(cfg.data.eval_path, sizeof cfg.data.eval_path, "%s", cfg.data.train_path);
  snprintf(cfg.data.prompt_template, sizeof cfg.data.prompt_template, "Solve: {prompt}\\nPut it in \\boxed{}.");
  struct dataset ds;
  CHECK(dataset_load(&ds, &cfg, NULL, NULL, err, sizeof err) == 0);
  CHECK(ds.n[TASK_TRAIN] == 2 && ds.n[TASK_EVAL] == 2);
  const struct data_row *r = &ds.rows[TASK_EVAL][0];
  CHECK(!strcmp(r->prompt, "Solve: 1+2?\nPut it in \\boxed{}.") && !strcmp(r->answer, "1+2 = 3 #### 3"));
  CHECK(!strcmp(r->ref, "3") && r->line == 1);
  CHECK(!strcmp(ds.rows[TASK_EVAL][1].answer, "8") && ds.rows[TASK_EVAL][1].line == 2);
  struct task_prompt p;
  CHECK(dataset_prompt(&ds, 0, TASK_EVAL, &p) == 0 && !strcmp(p.text, r->prompt));
  CHECK(dataset_verify(&ds, &p, "so \\boxed{3}", 12) == 1.0);
  CHECK(dataset_verify(&ds, &p, "#### 3.0", 8) == 1.0);
  CHECK(dataset_verify(&ds, &p, "\\boxed{4}", 9) == 0.0);
  CHECK(dataset_verify(&ds, &p, "", 0) == 0.0);
  dataset_free(&ds);
}

static void test_messages(void) {
  const char *path = write_file("msgs.jsonl",
    "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U1\"}, "
    "{\"role\": \"assistant\", \"content\": \"A1\"}, {\"role\": \"user\", \"content\": \"U2\"}, "
    "{\"role\": \"assistant\", \"content\": \"A2\"}]}\n"
    "{\"messages\": [{\"role\": \"user\", \"content\": \"only\"}], \"answer\": \"42\"}\n"
    "{\"messages\": [{\"role\": \"user\", \"content\": \"no answer\"}]}\n"
    "{\"messages\": [{\"role\": \"user\", \"content\": 5}], \"answer\": \"1\"}\n"
    "{\"messages\": \"text\", \"answer\": \"1\"}\n"
    "{\"messages\": [{\"role\": \"assistant\", \"content\": \"x\"}], \"answer\": \"1\"}\n");
  struct config cfg = data_config(path);
  snprintf(cfg.data.eval_path, sizeof cfg.data.eval_path, "%s", path);
  cfg.data.on_bad_line = DATA_BAD_LINE_SKIP;
  cfg.data.verifier = DATA_VERIFY_EXACT;
  struct dataset ds;
  char err[JSONL_MSG_MAX];
  FILE *log = tmpfile();
  CHECK(dataset_load(&ds, &cfg, NULL, log, err, sizeof err) == 0);
  CHECK(ds.n[TASK_TRAIN] == 2);
  CHECK(!strcmp(ds.rows[0][0].prompt, "U2") && !strcmp(ds.rows[0][0].answer, "A2"));
  CHECK(!strcmp(ds.rows[0][1].prompt, "only") && !strcmp(ds.rows[0][1].answer, "42"));
  struct task_prompt p;
  CHECK(dataset_prompt(&ds, 1, TASK_EVAL, &p) == 0);
  CHECK(dataset_verify(&ds, &p, "  42\n", 5) == 1.0 && dataset_verify(&ds, &p, "42.0", 4) == 0.0);
  dataset_free(&ds);
  char line[1024] = "";
  rewind(log);
  CHECK(fgets(line, sizeof line, log) != NULL);  /* train file: 4 of 6 skipped, first at line 3 */
  CHECK_MSG(strstr(line, "skipped 4 of 6 lines of ") && strstr(line, "msgs.jsonl:3: no 'answer' key and 'messages' "
            "does not end with an assistant turn"), "got '%s'", line);
  fclose(log);
  cfg.data.on_bad_line = DATA_BAD_LINE_ERROR;
  CHECK(dataset_load(&ds, &cfg, NULL, NULL, err, sizeof err) == 2 && strstr(err, "msgs.jsonl:3: "));
  /* a chat template renders the turns up to the last user turn and a generation prompt */
  cfg.data.on_bad_line = DATA_BAD_LINE_SKIP;
  snprintf(cfg.data.chat_template, sizeof cfg.data.chat_template, "chatml");
  snprintf(cfg.data.prompt_template, sizeof cfg.data.prompt_template, "Q: {prompt}");
  struct task t;
  CHECK(task_init(&t, &cfg, err, sizeof err) == 0 && t.chat && t.ds);  /* task_init looks it up */
  struct dataset *tds = t.ds;
  CHECK(dataset_load(&ds, &cfg, &t.chat_tpl, NULL, err, sizeof err) == 0);
  CHECK_MSG(tds && !strcmp(tds->rows[0][0].prompt, ds.rows[0][0].prompt), "task_init's rows differ");
  task_free(&t);
  const char *want = "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1"
                     "<|im_end|>\n<|im_start|>user\nQ: U2<|im_end|>\n<|im_start|>assistant\n";
  CHECK_MSG(!strcmp(ds.rows[0][0].prompt, want), "got '%s'", ds.rows[0][0].prompt);
  dataset_free(&ds);
  snprintf(cfg.data.chat_template, sizeof cfg.data.chat_template, "nosuch");
  CHECK(task_init(&t, &cfg, err, sizeof err) == 2 && strstr(err, "[data] chat_template"));
}

static int has_prompt(const struct dataset *ds, int split, const char *s) {
  for (long i = 0; i < ds->n[split]; i++)
    if (!strcmp(ds->rows[split][i].prompt, s)) return 1;
  return 0;
}

static void test_split(void) {
  struct config cfg = data_config(write_rows("rows50.jsonl", 50));
  cfg.data.eval_frac = 0.2;
  struct dataset a, b, c;
  char err[JSONL_MSG_MAX], name[32];
  CHECK(dataset_load(&a, &cfg, NULL, NULL, err, sizeof err) == 0);
  CHECK(dataset_load(&b, &cfg, NULL, NULL, err, sizeof err) == 0);
  cfg.run.seed += 1;
  CHECK(dataset_load(&c, &cfg, NULL, NULL, err, sizeof err) == 0);
  CHECK(a.n[TASK_TRAIN] == 40 && a.n[TASK_EVAL] == 10);
  int both = 0, none = 0, same = 1, differs = 0;
  for (int i = 0; i < 50; i++) {
    snprintf(name, sizeof name, "p%d", i);
    int t = has_prompt(&a, TASK_TRAIN, name), e = has_prompt(&a, TASK_EVAL, name);
    both += t && e;
    none += !t && !e;
    same &= has_prompt(&b, TASK_EVAL, name) == e;
    differs |= has_prompt(&c, TASK_EVAL, name) != e;
  }
  CHECK(both == 0 && none == 0);  /* disjoint and complete */
  CHECK(same);                    /* deterministic for a seed */
  CHECK(differs);                 /* and keyed by it */
  for (long i = 1; i < a.n[TASK_EVAL]; i++) CHECK(a.rows[TASK_EVAL][i - 1].line < a.rows[TASK_EVAL][i].line);
  dataset_free(&a);
  dataset_free(&b);
  dataset_free(&c);
  /* at least one row on each side */
  cfg = data_config(write_rows("rows3.jsonl", 3));
  cfg.data.eval_frac = 0.001;
  CHECK(dataset_load(&a, &cfg, NULL, NULL, err, sizeof err) == 0 && a.n[TASK_EVAL] == 1 && a.n[TASK_TRAIN] == 2);
  dataset_free(&a);
  cfg.data.eval_frac = 0.9;
  CHECK(dataset_load(&a, &cfg, NULL, NULL, err, sizeof err) == 0 && a.n[TASK_EVAL] == 2 && a.n[TASK_TRAIN] == 1);
  dataset_free(&a);
  cfg = data_config(write_rows("rows1.jsonl", 1));
  CHECK(dataset_load(&a, &cfg, NULL, NULL, err, sizeof err) == 2 && strstr(err, "at least 2"));
}

static void test_perm(void) {
  const uint64_t ns[] = {1, 2, 3, 7, 50, 1000, 4097};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    uint64_t n = ns[k];
    char *seen = calloc(n, 1);
    for (uint64_t epoch = 0; epoch < 3; epoch++) {
      memset(seen, 0, n);
      int ok = 1;
      for (uint64_t i = 0; i < n; i++) {
        uint64_t j = dataset_perm(9, epoch, n, i);
        ok &= j < n && !seen[j] && j == dataset_perm(9, epoch, n, i);
        if (j < n) seen[j] = 1;
      }
      CHECK_MSG(ok, "n = %llu epoch %llu is not a deterministic permutation", (unsigned long long)n,
                (unsigned long long)epoch);
    }
    free(seen);
  }
  /* epochs and seeds give different orders; not the identity */
  int d_epoch = 0, d_seed = 0, moved = 0;
  for (uint64_t i = 0; i < 50; i++) {
    d_epoch += dataset_perm(9, 0, 50, i) != dataset_perm(9, 1, 50, i);
    d_seed += dataset_perm(9, 0, 50, i) != dataset_perm(10, 0, 50, i);
    moved += dataset_perm(9, 0, 50, i) != i;
  }
  CHECK(d_epoch > 25 && d_seed > 25 && moved > 25);
}

static void test_cursor(void) {
  struct config cfg = data_config(write_rows("rows30.jsonl", 30));
  cfg.data.eval_frac = 1.0 / 3.0;
  struct dataset a, b;
  char err[JSONL_MSG_MAX];
  CHECK(dataset_load(&a, &cfg, NULL, NULL, err, sizeof err) == 0 && a.n[TASK_TRAIN] == 20);
  CHECK(dataset_load(&b, &cfg, NULL, NULL, err, sizeof err) == 0);
  /* each epoch of 20 prompts visits every train row once; a fresh load at any index agrees */
  int order_differs = 0;
  for (uint64_t epoch = 0; epoch < 3; epoch++) {
    int count[30] = {0};
    for (uint64_t pos = 0; pos < 20; pos++) {
      struct task_prompt p, q;
      uint64_t i = epoch * 20 + pos;
      CHECK(dataset_prompt(&a, i, TASK_TRAIN, &p) == 0);
      CHECK(dataset_prompt(&b, i, TASK_TRAIN, &q) == 0);
      CHECK(p.index == i && !strcmp(p.text, q.text) && !strcmp(p.answer, q.answer));
      count[atoi(p.text + 1)]++;
      if (epoch == 1) {
        struct task_prompt e0;
        dataset_prompt(&a, pos, TASK_TRAIN, &e0);
        order_differs |= strcmp(e0.text, p.text) != 0;
      }
    }
    int ok = 1;
    for (long r = 0; r < a.n[TASK_TRAIN]; r++) ok &= count[atoi(a.rows[TASK_TRAIN][r].prompt + 1)] == 1;
    CHECK_MSG(ok, "epoch %llu does not visit every train row once", (unsigned long long)epoch);
  }
  CHECK(order_differs);
  /* without shuffle: file order; eval: file order, wrapping */
  a.shuffle = 0;
  struct task_prompt p;
  for (uint64_t i = 0; i < 40; i++) {
    CHECK(dataset_prompt(&a, i, TASK_TRAIN, &p) == 0 && !strcmp(p.text, a.rows[TASK_TRAIN][i % 20].prompt));
    CHECK(dataset_prompt(&a, i, TASK_EVAL, &p) == 0 && !strcmp(p.text, a.rows[TASK_EVAL][i % 10].prompt));
  }
  dataset_free(&a);
  dataset_free(&b);
}

static void test_bad_rows(void) {
  /* line 2 broken JSON, 6 wrong type; 4 is longer than max_seq 32 - max_new_tokens 16 in
   * bytes, which load does not judge (task_check_fit counts tokens, test_fit) */
  const char *path = write_file("bad.jsonl",
    "{\"prompt\": \"short\", \"answer\": \"1\"}\n"
    "{\"prompt\": \"x\" \"answer\": \"1\"}\n"
    "{\"prompt\": \"fifteen bytes!!\", \"answer\": \"1\"}\n"
    "{\"prompt\": \"sixteen bytes!!!\", \"answer\": \"1\"}\n"
    "\n"
    "{\"prompt\": [\"a\"], \"answer\": \"1\"}\n"
    "{\"prompt\": \"ok\", \"answer\": \"2\"}\n");
  struct config cfg = data_config(path);
  cfg.model.max_seq = 32;
  cfg.rollout.max_new_tokens = 16;
  struct dataset ds;
  char err[JSONL_MSG_MAX], want[700];
  CHECK(dataset_load(&ds, &cfg, NULL, NULL, err, sizeof err) == 2);
  snprintf(want, sizeof want, "%s:2: invalid JSON", path);
  CHECK_MSG(strstr(err, want) == err, "got '%s'", err);
  cfg.data.on_bad_line = DATA_BAD_LINE_SKIP;
  FILE *log = tmpfile();
  CHECK(dataset_load(&ds, &cfg, NULL, log, err, sizeof err) == 0);
  CHECK(ds.n[TASK_TRAIN] + ds.n[TASK_EVAL] == 4);
  for (int s = 0; s < 2; s++)
    for (long i = 0; i < ds.n[s]; i++) {
      long ln = ds.rows[s][i].line;
      CHECK(ln == 1 || ln == 3 || ln == 4 || ln == 7);
    }
  dataset_free(&ds);
  char line[1200] = "";
  rewind(log);
  CHECK(fgets(line, sizeof line, log) != NULL);
  snprintf(want, sizeof want, "rlpt: skipped 2 of 6 lines of %s (first: %s:2: invalid JSON", path, path);
  CHECK_MSG(strstr(line, want) == line, "got '%s'", line);
  CHECK(fgets(line, sizeof line, log) == NULL);  /* reported once */
  fclose(log);
  /* a file with no usable row */
  cfg.data.on_bad_line = DATA_BAD_LINE_SKIP;
  snprintf(cfg.data.train_path, sizeof cfg.data.train_path, "%s", write_file("allbad.jsonl", "[]\n{}\n"));
  CHECK(dataset_load(&ds, &cfg, NULL, NULL, err, sizeof err) == 2 && strstr(err, "no usable rows (2 lines"));
}

/* Whether rows fit max_seq - max_new_tokens is counted in tokens of the run's tokenizer
 * (task_check_fit): a row that does not names its line and the limit; with byte-level
 * BPE (the hf_tok_a fixture, tokens of up to 32 bytes) a row longer in bytes than the
 * limit fits when its tokens do. */
static void test_fit(void) {
  const char *ab = "abababababababababababababababab";  /* 32 bytes; one token of hf_tok_a */
  char rows[256], err[JSONL_MSG_MAX], dir[1024];
  snprintf(rows, sizeof rows, "{\"prompt\": \"ok\", \"answer\": \"1\"}\n{\"prompt\": \"%s\", \"answer\": \"1\"}\n", ab);
  struct config cfg = data_config(write_file("long.jsonl", rows));
  snprintf(cfg.data.prompt_template, sizeof cfg.data.prompt_template, "{prompt}");
  const char *src = getenv("RLPT_SOURCE_DIR");
  snprintf(dir, sizeof dir, "%s/tests/data/hf_tok_a", src ? src : "..");
  struct tokenizer ch, bpe;
  tokenizer_init_char(&ch);
  CHECK(hf_tokenizer_load(&bpe, dir, NULL, err, sizeof err) == 0);
  struct task t;
  CHECK(task_init(&t, &cfg, err, sizeof err) == 0);  /* loading does not judge lengths in tokens */
  struct fit_limits l = {.max_seq = 32, .max_new = 16, .sft = 1, .where = "deck", .limit = "[model] max_seq"};
  CHECK(task_check_fit(&t, &ch, &l, 1, 1, err, sizeof err) == 2);  /* 32 bytes + BOS = 33 tokens */
  CHECK_MSG(strstr(err, "long.jsonl:2: the prompt takes 33 tokens but [model] max_seq - [rollout] "
                        "max_new_tokens = 32 - 16 leaves 16"), "got '%s'", err);
  CHECK_MSG(task_check_fit(&t, &bpe, &l, 1, 1, err, sizeof err) == 0, "BPE: %s", err);
  l.max_seq = 49;  /* the character tokenizer: 33 + 16 fit, the SFT example (+ answer, EOS) too */
  CHECK_MSG(task_check_fit(&t, &ch, &l, 1, 1, err, sizeof err) == 0, "%s", err);
  l.max_new = 32;  /* ... but not with 32 new tokens */
  CHECK(task_check_fit(&t, &ch, &l, 1, 1, err, sizeof err) == 2 && strstr(err, "long.jsonl:2: "));
  l.max_new = 1;  /* prompt fits; the SFT example [BOS] 32 bytes "1" [EOS] = 35 tokens needs max_seq 35 */
  l.max_seq = 34;
  CHECK(task_check_fit(&t, &ch, &l, 1, 1, err, sizeof err) == 2 && strstr(err, "(the SFT example) takes 35"));
  task_free(&t);
  tokenizer_free(&bpe);
  tokenizer_free(&ch);
}

static void test_task(void) {
  const char *path = write_file("cd.jsonl",
    "{\"prompt\": \"Using 3 5 make 15:\", \"answer\": \"3*5\", \"nums\": [3, 5], \"target\": 15}\n"
    "{\"prompt\": \"Using 2 9 make 11:\", \"answer\": \"2+9\", \"nums\": [2, 9], \"target\": 11}\n"
    "{\"prompt\": \"Using 4 make 4:\", \"answer\": \"4\", \"nums\": 4, \"target\": 4}\n");
  struct config cfg = data_config(path);
  cfg.data.verifier = DATA_VERIFY_COUNTDOWN;
  struct task t;
  char err[JSONL_MSG_MAX];
  CHECK(task_init(&t, &cfg, err, sizeof err) == 2 && strstr(err, "cd.jsonl:3: countdown rows need"));
  cfg.data.on_bad_line = DATA_BAD_LINE_SKIP;
  CHECK(task_init(&t, &cfg, err, sizeof err) == 0 && t.kind == TASK_JSONL && !strcmp(task_name(t.kind), "jsonl"));
  struct task_prompt p;
  CHECK(task_prompt(&t, 0, TASK_EVAL, &p) == 0 && p.n_nums == 2);
  CHECK(task_verify(&t, &p, p.answer, strlen(p.answer)) == 1.0);
  CHECK(task_verify(&t, &p, "3+5", 3) == 0.0);
  CHECK(task_prompt(&t, 5, TASK_TRAIN, &p) == 0 && task_verify(&t, &p, p.answer, strlen(p.answer)) == 1.0);
  task_free(&t);
  CHECK(t.ds == NULL);
  cfg.data.train_path[0] = '\0';
  CHECK(task_init(&t, &cfg, err, sizeof err) == 2 && strstr(err, "[data] train_path"));
}

int main(void) {
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_template();
  test_messages();
  test_split();
  test_perm();
  test_cursor();
  test_bad_rows();
  test_fit();
  test_task();
  const char *names[] = {"tmpl.jsonl", "msgs.jsonl", "rows50.jsonl", "rows3.jsonl", "rows1.jsonl", "rows30.jsonl",
                         "bad.jsonl", "long.jsonl", "allbad.jsonl", "cd.jsonl"};
  char p[600];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", g_dir, names[i]);
    unlink(p);
  }
  rmdir(g_dir);
  return TEST_RESULT("test_dataset");
}
