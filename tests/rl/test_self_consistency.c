/* rl/test_self_consistency.c: majority-vote pseudo-labels ([reward] self_consistency,
 * rl/self_consistency.h) on hand-computed cases: the vote with abstainers and a tie (the
 * smallest answer text wins, whatever the order), the agreement threshold, a group without
 * votes; the canonical answers the votes compare (tasks/verify.h); the whole batch scored
 * through reward_score_batch on the arith task, where the majority beats the reference;
 * label-free JSONL rows; and the countdown verifier refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rl/reward.h"
#include "rl/self_consistency.h"
#include "tasks/verify.h"
#include "testutil.h"

static void test_majority(void) {
  char a[6][SC_ANSWER_MAX] = {"5/1", "3/1", "", "5/1", "3/1", "7/1"};
  int w;
  CHECK(sc_majority((const char (*)[SC_ANSWER_MAX])a, 6, &w) == 2);
  CHECK(w >= 0 && !strcmp(a[w], "3/1"));  /* 3/1 and 5/1 tie at 2: "3/1" < "5/1" */
  char b[6][SC_ANSWER_MAX] = {"3/1", "7/1", "5/1", "3/1", "", "5/1"};  /* another order */
  CHECK(sc_majority((const char (*)[SC_ANSWER_MAX])b, 6, &w) == 2 && !strcmp(b[w], "3/1"));
  char c[3][SC_ANSWER_MAX] = {"", "", ""};
  CHECK(sc_majority((const char (*)[SC_ANSWER_MAX])c, 3, &w) == 0 && w == -1);
  char d[4][SC_ANSWER_MAX] = {"9/1", "2/1", "2/1", "2/1"};
  CHECK(sc_majority((const char (*)[SC_ANSWER_MAX])d, 4, &w) == 3 && !strcmp(d[w], "2/1"));
}

static void test_pseudo_correct(void) {
  /* group 0: 2, 2, 3, (none) -> majority 2 with 2 of 4 = 0.5; group 1: no answers;
   * group 2: 4, 4, 4, 1 -> 0.75 */
  char a[12][SC_ANSWER_MAX] = {"2", "2", "3", "", "", "", "", "", "4", "4", "4", "1"};
  int group[12] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
  double correct[12], agree[3];
  int winner[3];
  CHECK(sc_pseudo_correct((const char (*)[SC_ANSWER_MAX])a, group, 12, 3, 0.0, correct, winner, agree) == 0);
  CHECK(winner[0] == 0 && winner[1] == -1 && winner[2] == 8);
  double want[12] = {1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0};
  for (int i = 0; i < 12; i++) CHECK_MSG(correct[i] == want[i], "sample %d: %g", i, correct[i]);
  CHECK_NEAR(agree[0], 0.5, 1e-15);
  CHECK(agree[1] == 0.0);
  CHECK_NEAR(agree[2], 0.75, 1e-15);
  /* min agreement 0.6: group 0 (0.5) gets 0 throughout, group 2 (0.75) keeps its labels */
  CHECK(sc_pseudo_correct((const char (*)[SC_ANSWER_MAX])a, group, 12, 3, 0.6, correct, NULL, NULL) == 0);
  for (int i = 0; i < 12; i++) CHECK(correct[i] == (i >= 8 && i < 11));
  /* at exactly the share: kept (>=) */
  CHECK(sc_pseudo_correct((const char (*)[SC_ANSWER_MAX])a, group, 12, 3, 0.5, correct, NULL, NULL) == 0);
  CHECK(correct[0] == 1 && correct[1] == 1);
}

static void test_canon(void) {
  char out[SC_ANSWER_MAX];
  CHECK(verify_answer_canon(VERIFY_ARITH, " 007 ", 5, out, sizeof out) == 1 && !strcmp(out, "7"));
  CHECK(verify_answer_canon(VERIFY_ARITH, "-0", 2, out, sizeof out) == 1 && !strcmp(out, "0"));
  CHECK(verify_answer_canon(VERIFY_ARITH, "7 apples", 8, out, sizeof out) == 0);
  const char *half = "so \\boxed{\\frac{1}{2}}";
  CHECK(verify_answer_canon(VERIFY_MATH, half, strlen(half), out, sizeof out) > 0 && !strcmp(out, "1/2"));
  CHECK(verify_answer_canon(VERIFY_MATH, "it is 0.50", 10, out, sizeof out) > 0 && !strcmp(out, "1/2"));
  const char *word = "\\boxed{ yes }";
  CHECK(verify_answer_canon(VERIFY_MATH, word, strlen(word), out, sizeof out) > 0 && !strcmp(out, "\"yes"));
  CHECK(verify_answer_canon(VERIFY_MATH, "no number", 9, out, sizeof out) == 0);
  CHECK(verify_answer_canon(VERIFY_EXACT, "  Paris\n", 8, out, sizeof out) == 5 && !strcmp(out, "Paris"));
  CHECK(verify_answer_canon(VERIFY_ARITH, "123456", 6, out, 4) == 0);  /* does not fit: abstains */
}

/* A group of 5 on "3+4=" whose majority says 8 and a group of 3 on "2+2=" whose majority
 * says 4: the pseudo-labels follow the majorities; the label accuracy is 1 of 2. */
static void test_batch(void) {
  struct config cfg;
  config_defaults(&cfg);
  cfg.reward.self_consistency = 1;
  struct reward_cfg rc;
  struct task t;
  char err[256];
  CHECK(reward_init(&rc, &cfg, err, sizeof err) == 0);
  CHECK(task_init(&t, &cfg, err, sizeof err) == 0);
  struct task_prompt p[2] = {{0}, {0}};
  snprintf(p[0].text, sizeof p[0].text, "3+4=");
  snprintf(p[0].answer, sizeof p[0].answer, "7");
  snprintf(p[1].text, sizeof p[1].text, "2+2=");
  snprintf(p[1].answer, sizeof p[1].answer, "4");
  const char *resp[8] = {"8", "08", "7", "+8", "x", "4", "5", "4"};
  struct reward_item it[8];
  for (int i = 0; i < 8; i++) it[i] = (struct reward_item){&p[i >= 5], resp[i], strlen(resp[i]), 2, i >= 5};
  double rew[8], parts[8][REWARD_NCOMPONENTS];
  struct reward_stats st;
  CHECK(reward_score_batch(&rc, &t, it, 8, 2, rew, parts, &st) == 0);
  double want[8] = {1, 1, 0, 1, 0, 1, 0, 1};
  for (int i = 0; i < 8; i++) {
    CHECK_MSG(parts[i][REWARD_CORRECT] == want[i], "sample %d: correct %g", i, parts[i][REWARD_CORRECT]);
    CHECK(rew[i] == want[i]);
  }
  CHECK_NEAR(st.acc, 5.0 / 8.0, 1e-15);
  CHECK(st.sc_labeled == 2 && st.sc_label_ok == 1);
  rc.sc_min_agreement = 0.8;  /* 3 of 5 = 0.6 and 2 of 3 agree: both groups get 0 */
  CHECK(reward_score_batch(&rc, &t, it, 8, 2, rew, parts, &st) == 0);
  for (int i = 0; i < 8; i++) CHECK(parts[i][REWARD_CORRECT] == 0.0 && rew[i] == 0.0);
  rc.self_consistency = 0;    /* off: the reference answers */
  CHECK(reward_score_batch(&rc, &t, it, 8, 2, rew, parts, &st) == 0);
  for (int i = 0; i < 8; i++) CHECK(parts[i][REWARD_CORRECT] == (i == 2 || i == 5 || i == 7));
  CHECK(st.sc_labeled == 0);
  task_free(&t);
}

/* JSONL rows without an answer load only with self_consistency; countdown is refused. */
static void test_label_free(void) {
  const char *path = "sc_label_free.jsonl";
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  for (int i = 0; i < 20; i++) fprintf(f, "{\"prompt\": \"what is %d+%d?\"}\n", i, i + 1);
  fclose(f);
  struct config cfg;
  config_defaults(&cfg);
  snprintf(cfg.task.name, sizeof cfg.task.name, "jsonl");
  snprintf(cfg.data.train_path, sizeof cfg.data.train_path, "%s", path);
  struct task t;
  char err[512];
  CHECK(task_init(&t, &cfg, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "answer") != NULL, "%s", err);
  cfg.reward.self_consistency = 1;
  CHECK_MSG(task_init(&t, &cfg, err, sizeof err) == 0, "%s", err);
  if (t.ds) task_free(&t);
  remove(path);
  snprintf(cfg.task.name, sizeof cfg.task.name, "countdown");
  CHECK(config_reward_check(&cfg, err, sizeof err) == 2);
  CHECK(strstr(err, "no answer to vote on") != NULL);
  /* The code verifier and [reward] command give scores, not answers: refused too. */
  snprintf(cfg.task.name, sizeof cfg.task.name, "jsonl");
  cfg.data.verifier = DATA_VERIFY_CODE;
  CHECK(config_reward_check(&cfg, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "the code verifier gives a score") != NULL, "%s", err);
  cfg.data.verifier = DATA_VERIFY_MATH;
  snprintf(cfg.reward.command, sizeof cfg.reward.command, "python3 worker.py");
  CHECK(config_reward_check(&cfg, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "[reward] command gives a score") != NULL, "%s", err);
}

int main(void) {
  test_majority();
  test_pseudo_correct();
  test_canon();
  test_batch();
  test_label_free();
  return TEST_RESULT("test_self_consistency");
}
