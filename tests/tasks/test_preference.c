/* tasks/test_preference.c: preference pairs (src/tasks/preference.c): {prompt, chosen,
 * rejected} rows with the prompt template and custom key names, chat "messages" rows ending
 * in two assistant turns (rendered with ChatML), numbers as text; bad rows named by
 * FILE:LINE (missing rejected, equal responses, a messages row without the two final
 * assistant turns) under on_bad_line = error and counted under skip; the held-out split
 * (round(eval_frac n) rows, disjoint, deterministic) or pref_eval_path; the train order (a
 * permutation per epoch, identity with shuffle = false); the token layout and the
 * max_seq check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tasks/preference.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"

static char g_dir[] = "/tmp/rlpt_test_pref_XXXXXX";

static const char *write_file(const char *name, const char *text) { return tu_write_file(g_dir, name, text); }

static struct config pref_config(const char *path) {
  struct config cfg;
  config_defaults(&cfg);
  snprintf(cfg.data.pref_path, sizeof cfg.data.pref_path, "%s", path);
  return cfg;
}

static void test_rows(void) {
  const char *p = write_file("keys.jsonl",
                             "{\"q\": \"1+1=\", \"good\": \"2\", \"bad\": 3}\n"
                             "{\"q\": \"2+2=\", \"good\": \"4\", \"bad\": \"44\"}\n");
  struct config cfg = pref_config(p);
  snprintf(cfg.data.prompt_key, sizeof cfg.data.prompt_key, "q");
  snprintf(cfg.data.chosen_key, sizeof cfg.data.chosen_key, "good");
  snprintf(cfg.data.rejected_key, sizeof cfg.data.rejected_key, "bad");
  snprintf(cfg.data.prompt_template, sizeof cfg.data.prompt_template, "Q: {prompt}");
  struct pref_set ps;
  char err[1024];
  CHECK(pref_load(&ps, &cfg, NULL, NULL, err, sizeof err) == 0);
  CHECK(ps.n[TASK_TRAIN] == 1 && ps.n[TASK_EVAL] == 1);
  const struct pref_row *r = ps.n[TASK_TRAIN] ? &ps.rows[TASK_TRAIN][0] : NULL;
  CHECK(r && !strncmp(r->prompt, "Q: ", 3) && (!strcmp(r->rejected, "3") || !strcmp(r->rejected, "44")));
  pref_free(&ps);
  /* chat rows: the two final assistant turns, the turns before rendered with ChatML */
  p = write_file("chat.jsonl",
                 "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"},"
                 " {\"role\": \"assistant\", \"content\": \"W\"}, {\"role\": \"assistant\", \"content\": \"L\"}]}\n");
  cfg = pref_config(p);
  snprintf(cfg.data.pref_eval_path, sizeof cfg.data.pref_eval_path, "%s", p);
  struct chat_template ct;
  CHECK(chat_template_by_name(&ct, "chatml", err, sizeof err) == 0);
  CHECK(pref_load(&ps, &cfg, &ct, NULL, err, sizeof err) == 0);
  r = &ps.rows[TASK_TRAIN][0];
  CHECK(ps.n[TASK_TRAIN] == 1 && ps.n[TASK_EVAL] == 1);
  CHECK(!strcmp(r->prompt, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"));
  CHECK(!strcmp(r->chosen, "W") && !strcmp(r->rejected, "L"));
  pref_free(&ps);
}

/* A file whose line `bad` is broken: error names FILE:LINE and what; skip counts it. */
static void expect_bad(const char *name, const char *bad_row, const char *what) {
  char text[1024];
  snprintf(text, sizeof text, "{\"prompt\": \"a\", \"chosen\": \"1\", \"rejected\": \"2\"}\n%s\n"
           "{\"prompt\": \"b\", \"chosen\": \"1\", \"rejected\": \"2\"}\n"
           "{\"prompt\": \"c\", \"chosen\": \"1\", \"rejected\": \"2\"}\n", bad_row);
  const char *p = write_file(name, text);
  struct config cfg = pref_config(p);
  struct pref_set ps;
  char err[1024], want[600];
  CHECK(pref_load(&ps, &cfg, NULL, NULL, err, sizeof err) == 2);
  snprintf(want, sizeof want, "%s:2: ", p);
  CHECK_MSG(strstr(err, want) && strstr(err, what), "%s: got '%s'", name, err);
  cfg.data.on_bad_line = DATA_BAD_LINE_SKIP;
  CHECK(pref_load(&ps, &cfg, NULL, NULL, err, sizeof err) == 0);
  CHECK(ps.n[TASK_TRAIN] + ps.n[TASK_EVAL] == 3);
  pref_free(&ps);
}

static void test_bad(void) {
  expect_bad("norej.jsonl", "{\"prompt\": \"x\", \"chosen\": \"1\"}", "key 'rejected' is missing");
  expect_bad("same.jsonl", "{\"prompt\": \"x\", \"chosen\": \"1\", \"rejected\": \"1\"}", "chosen and rejected are the same");
  expect_bad("chat1.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"W\"}]}",
             "'messages' must end with a user turn and then two assistant turns");
  expect_bad("json.jsonl", "{\"prompt\": ", "invalid JSON");
}

static void test_split_order(void) {
  char *text = malloc(200 * 64), *o = text;
  for (int i = 0; i < 200; i++) o += sprintf(o, "{\"prompt\": \"p%d\", \"chosen\": \"%d\", \"rejected\": \"x\"}\n", i, i);
  const char *p = write_file("many.jsonl", text);
  free(text);
  struct config cfg = pref_config(p);
  cfg.data.eval_frac = 0.1;
  struct pref_set a, b;
  char err[512];
  CHECK(pref_load(&a, &cfg, NULL, NULL, err, sizeof err) == 0 && pref_load(&b, &cfg, NULL, NULL, err, sizeof err) == 0);
  CHECK(a.n[TASK_EVAL] == 20 && a.n[TASK_TRAIN] == 180);
  int seen[200] = {0};
  for (int s = 0; s < 2; s++)
    for (long i = 0; i < a.n[s]; i++) seen[a.rows[s][i].line - 1]++;
  int all_once = 1;
  for (int i = 0; i < 200; i++) all_once &= seen[i] == 1;
  CHECK(all_once);
  /* epoch 0 and 1 each visit every train row once, in different orders; both loads agree */
  int hits[200] = {0}, same_order = 1;
  for (uint64_t k = 0; k < 360; k++) {
    const struct pref_row *r = pref_row_at(&a, TASK_TRAIN, k);
    CHECK(r == &a.rows[TASK_TRAIN][r - a.rows[TASK_TRAIN]]);
    hits[r->line - 1]++;
    CHECK(pref_row_at(&b, TASK_TRAIN, k)->line == r->line);
    if (k < 180) same_order &= pref_row_at(&a, TASK_TRAIN, k + 180) == r;
  }
  int twice = 1;
  for (long i = 0; i < a.n[TASK_TRAIN]; i++) twice &= hits[a.rows[TASK_TRAIN][i].line - 1] == 2;
  for (long i = 0; i < a.n[TASK_EVAL]; i++) twice &= hits[a.rows[TASK_EVAL][i].line - 1] == 0;
  CHECK(twice && !same_order);
  a.shuffle = 0;
  CHECK(pref_row_at(&a, TASK_TRAIN, 5) == &a.rows[TASK_TRAIN][5]);
  /* [BOS] prompt response [EOS]; the fit check names FILE:LINE */
  struct tokenizer tok;
  tokenizer_init_char(&tok);
  int ids[64];
  size_t np, nt;
  CHECK(pref_tokens(&tok, &a.rows[TASK_TRAIN][0], 1, ids, 64, &np, &nt) == 0);
  CHECK(ids[0] == tok.bos_id && ids[nt - 1] == tok.eos_id && nt == np + strlen(a.rows[TASK_TRAIN][0].chosen) + 1);
  CHECK(pref_check_fit(&a, &tok, 64, err, sizeof err) == 0);
  CHECK(pref_check_fit(&a, &tok, 6, err, sizeof err) == 2 && strstr(err, p) && strstr(err, "[model] max_seq = 6"));
  tokenizer_free(&tok);
  pref_free(&a);
  pref_free(&b);
}

int main(void) {
  CHECK(mkdtemp(g_dir) != NULL);
  test_rows();
  test_bad();
  test_split_order();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  CHECK(system(cmd) == 0);
  return TEST_RESULT("test_preference");
}
