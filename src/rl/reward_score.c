/* rl/reward_score.c: `rlpt reward-score`: a file of responses scored through a deck's
 * reward (rl/reward_score.h). */
#include "rl/reward_score.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/import.h"
#include "rl/reward.h"
#include "rl/reward_command.h"
#include "tasks/dataset.h"
#include "tasks/tasks.h"
#include "tokenizer/tokenizer.h"
#include "util/alloc.h"
#include "util/atomic_file.h"

/* What the responses are scored with, and the responses by input line. */
struct score_env {
  struct config cfg;       /* the deck, with the input file as its only split */
  struct task t;
  struct reward_cfg rc;
  struct tokenizer tok;
  char **resp;             /* by row */
  long *n_tokens;          /* by row: its "n_tokens", or -1 */
  long n;
};

/* The deck's verifier for a file of rows: a dataset's own, arith's or countdown's. */
static void input_verifier(struct config *c) {
  if (!strcmp(c->task.name, "arith"))
    c->data.verifier = c->data.chat_template[0] ? DATA_VERIFY_MATH : DATA_VERIFY_ARITH;
  else if (!strcmp(c->task.name, "countdown"))
    c->data.verifier = DATA_VERIFY_COUNTDOWN;
  c->data.shuffle = 0;  /* prompt i is row i */
}

/* Row i's "response" and "n_tokens" (-1 when absent) from its JSON. 0, or 2 with FILE:LINE. */
static int row_response(const struct dataset *ds, long i, char **resp, long *n_tokens, char *err, size_t errlen) {
  const struct data_row *row = &ds->rows[TASK_TRAIN][i];
  cJSON *o = cJSON_Parse(row->json);
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "response");
  const cJSON *nt = cJSON_GetObjectItemCaseSensitive(o, "n_tokens");
  int rc = 0;
  *n_tokens = cJSON_IsNumber(nt) && nt->valuedouble >= 0 ? (long)nt->valuedouble : -1;
  if (!cJSON_IsString(r)) {
    snprintf(err, errlen, "%s:%ld: no \"response\" string (the text to score)", ds->path[TASK_TRAIN], row->line);
    rc = 2;
  } else {
    *resp = strdup(r->valuestring);
    if (!*resp) rc = 1;
  }
  cJSON_Delete(o);
  return rc;
}

static int env_open(struct score_env *e, const struct config *cfg, const struct reward_score_opts *o, char *err,
                    size_t errlen) {
  struct model_config mc;
  e->cfg = *cfg;
  input_verifier(&e->cfg);
  if (cfg->reward.rm_path[0]) {
    snprintf(err, errlen, "[reward] rm_path: reward-score scores rule and command rewards only; `rlpt "
             "reward-check` runs the reward model");
    return 2;
  }
  e->t.kind = TASK_JSONL;
  e->t.seed = (uint64_t)cfg->run.seed;
  e->t.ds = malloc_check(sizeof *e->t.ds);
  int rc = dataset_load_file(e->t.ds, &e->cfg, o->input, stderr, err, errlen);
  if (rc) { free(e->t.ds); e->t.ds = NULL; return rc; }
  e->n = e->t.ds->n[TASK_TRAIN];
  e->resp = calloc_check((size_t)e->n + 1, sizeof *e->resp);
  e->n_tokens = calloc_check((size_t)e->n + 1, sizeof *e->n_tokens);
  for (long i = 0; i < e->n; i++)
    if ((rc = row_response(e->t.ds, i, &e->resp[i], &e->n_tokens[i], err, errlen))) return rc;
  if ((rc = reward_init(&e->rc, &e->cfg, err, errlen))) return rc;
  return model_import_or_deck(&e->cfg, &mc, &e->tok, err, errlen) ? 2 : 0;
}

static void env_close(struct score_env *e) {
  reward_free(&e->rc);
  task_free(&e->t);
  tokenizer_free(&e->tok);
  for (long i = 0; e->resp && i < e->n; i++) free(e->resp[i]);
  free(e->resp);
  free(e->n_tokens);
}

/* The response's tokens as the deck's tokenizer counts them (its bytes when it cannot). */
static long count_tokens(const struct tokenizer *tok, const char *s, size_t len) {
  int *ids = malloc_check(sizeof(int) * (len + 1));
  size_t n = 0, at = 0;
  long out = tokenizer_encode(tok, s, len, ids, len + 1, &n, &at) == TOK_OK ? (long)n : (long)len;
  free(ids);
  return out;
}

/* One output line. */
static void write_line(FILE *f, const struct reward_cfg *rc, const struct data_row *row, double reward,
                       const double *parts, const char *cmd_parts) {
  cJSON *o = cJSON_CreateObject(), *p = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "line", (double)row->line);
  cJSON_AddNumberToObject(o, "reward", reward);
  for (int c = 0; c < REWARD_NCOMPONENTS; c++)
    if (rc->weight[c] != 0.0 || c == REWARD_CORRECT) cJSON_AddNumberToObject(p, reward_component_name(c), parts[c]);
  cJSON_AddItemToObject(o, "parts", p);
  if (row->n_tests) cJSON_AddNumberToObject(o, "tests", row->n_tests);
  cJSON *cp = cmd_parts ? cJSON_Parse(cmd_parts) : NULL;
  if (cp) cJSON_AddItemToObject(o, "command_parts", cp);
  char *text = cJSON_PrintUnformatted(o);
  if (text) fprintf(f, "%s\n", text);
  free(text);
  cJSON_Delete(o);
}

/* The rows' items (prompts in tp, responses from e): one group. 2 with a message when a
 * row has no response. */
static int build_items(struct score_env *e, struct task_prompt *tp, struct reward_item *it, long n, char *err,
                       size_t errlen) {
  for (long i = 0; i < n; i++) {
    const struct data_row *row = &e->t.ds->rows[TASK_TRAIN][i];
    const char *r = e->resp[i];
    if (task_prompt(&e->t, (uint64_t)i, TASK_TRAIN, &tp[i])) {
      snprintf(err, errlen, "%s:%ld: the row does not fit a prompt", e->t.ds->path[TASK_TRAIN], row->line);
      return 2;
    }
    size_t len = strlen(r);
    long nt = e->n_tokens[i];
    it[i] = (struct reward_item){.prompt = &tp[i], .text = r, .len = len, .group = 0,
                                 .n_tokens = nt >= 0 ? nt : count_tokens(&e->tok, r, len)};
  }
  return 0;
}

/* Score every row and write the output file (util/atomic_file.h: whole or not at all). */
static int score_rows(struct score_env *e, const struct reward_score_opts *o, char *err, size_t errlen) {
  long n = e->t.ds->n[TASK_TRAIN];
  struct task_prompt *tp = calloc_check((size_t)n, sizeof *tp);
  struct reward_item *it = calloc_check((size_t)n, sizeof *it);
  char **cmd_parts = calloc_check((size_t)n, sizeof *cmd_parts);
  double *rew = calloc_check((size_t)n, sizeof *rew);
  double (*parts)[REWARD_NCOMPONENTS] = calloc_check((size_t)n, sizeof *parts);
  struct reward_stats st;
  int rc = build_items(e, tp, it, n, err, errlen);
  e->rc.cmd_parts = cmd_parts;
  if (!rc && reward_score_batch(&e->rc, &e->t, it, (int)n, 1, rew, parts, &st)) rc = 1;
  struct atomic_file out = {0};
  if (!rc && atomic_file_open(&out, o->output)) {
    snprintf(err, errlen, "cannot create %s: %s", o->output, strerror(errno));
    rc = 2;
  }
  for (long i = 0; !rc && i < n; i++)
    write_line(out.f, &e->rc, &e->t.ds->rows[TASK_TRAIN][i], rew[i], parts[i], cmd_parts[i]);
  if (!rc && atomic_file_commit(&out)) {
    snprintf(err, errlen, "cannot write %s: %s", o->output, strerror(errno));
    rc = 2;
  }
  if (!rc)
    printf("reward-score: %ld rows of %s -> %s: reward mean %.4f, acc %.4f, reward_errors %ld, sandbox "
           "executions %ld (%.1f per s), command workers restarted %ld\n", n, o->input, o->output, st.mean, st.acc,
           st.errors, st.executions, st.exec_wall_s > 0 ? (double)st.executions / st.exec_wall_s : 0.0,
           reward_command_restarts(e->rc.cmd));
  for (long i = 0; i < n; i++) free(cmd_parts[i]);
  free(cmd_parts); free(tp); free(it); free(rew); free(parts);
  return rc;
}

int reward_score(const struct reward_score_opts *o) {
  struct config *cfg = malloc_check(sizeof *cfg);
  struct score_env *e = calloc_check(1, sizeof *e);
  char err[1024] = "";
  int rc = config_load_serial(cfg, o->deck, o->n_over, o->over);
  if (!rc) {
    rc = env_open(e, cfg, o, err, sizeof err);
    if (!rc) rc = score_rows(e, o, err, sizeof err);
    if (rc) fprintf(stderr, "rlpt: reward-score: %s: %s\n", o->deck, err);
    env_close(e);
  }
  free(e);
  free(cfg);
  return rc;
}
