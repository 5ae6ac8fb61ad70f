/* rl/reward_command.c: [reward] command's JSON-lines protocol (rl/reward_command.h) over
 * util/line_workers.h's worker processes. */
#define _GNU_SOURCE
#include "rl/reward_command.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rl/experience.h"
#include "tasks/dataset.h"
#include "tasks/tasks.h"
#include "util/line_workers.h"

struct reward_command {
  struct line_workers *lw;
};

int reward_command_open(struct reward_command **out, const struct config *cfg, char *err, size_t errlen) {
  struct reward_command *c = calloc(1, sizeof *c);
  *out = NULL;
  if (!c) return 1;
  int rc = line_workers_open(&c->lw, cfg->reward.command, (int)cfg->reward.command_workers,
                             cfg->reward.command_timeout_s, "reward", "scored 0 (reward_errors)", err, errlen);
  if (rc) { free(c); return rc; }
  *out = c;
  return 0;
}

void reward_command_close(struct reward_command *c) {
  if (!c) return;
  line_workers_close(c->lw);
  free(c);
}

long reward_command_restarts(const struct reward_command *c) { return c ? line_workers_restarts(c->lw) : 0; }

int reward_command_set_parts(struct sample *s, const char *parts) {
  cJSON *o = parts ? cJSON_Parse(parts) : NULL;
  int rc = 0;
  for (const cJSON *v = o ? o->child : NULL; v && !rc; v = v->next) {
    char name[160];
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || !v->string) continue;
    snprintf(name, sizeof name, "command.%.120s", v->string);
    rc = sample_set_part(s, name, v->valuedouble);
  }
  cJSON_Delete(o);
  return rc;
}

/* The request line of item i (NUL-free JSON + newline), malloc'd; NULL out of memory. */
static char *request_line(const struct task *t, const struct task_prompt *p, const char *resp, size_t len, int id,
                          size_t *out_len) {
  cJSON *o = cJSON_CreateObject(), *meta = NULL;
  char *r = strndup(resp, len), *text = NULL, *line = NULL;
  const struct data_row *row = t->kind == TASK_JSONL ? dataset_row(t->ds, (enum task_split)p->split, p->index) : NULL;
  if (row && row->json) meta = cJSON_Parse(row->json);
  else if (!row && t->kind == TASK_COUNTDOWN && (meta = cJSON_CreateObject())) {
    double nums[TASK_MAX_NUMS];
    for (int k = 0; k < p->n_nums; k++) nums[k] = (double)p->nums[k];
    cJSON_AddItemToObject(meta, "nums", cJSON_CreateDoubleArray(nums, p->n_nums));
    cJSON_AddNumberToObject(meta, "target", (double)p->target);
  }
  if (!meta) meta = cJSON_CreateObject();
  if (o && r && meta) {
    cJSON_AddNumberToObject(o, "id", id);
    cJSON_AddStringToObject(o, "prompt", p->text);
    cJSON_AddStringToObject(o, "response", r);
    cJSON_AddStringToObject(o, "answer", p->answer);
    cJSON_AddItemToObject(o, "metadata", meta);
    meta = NULL;
    text = cJSON_PrintUnformatted(o);
  }
  if (text && (line = malloc(strlen(text) + 2))) {
    *out_len = (size_t)sprintf(line, "%s\n", text);
  }
  cJSON_Delete(meta);
  cJSON_Delete(o);
  free(text);
  free(r);
  return line;
}

/* Score the batch's item with the reply line: 0, or -1 with why in msg. */
static int parse_reply(const char *line, int id, double *reward, char **parts, char *msg, size_t msglen) {
  cJSON *o = cJSON_Parse(line);
  const cJSON *jid = cJSON_GetObjectItemCaseSensitive(o, "id"), *jr = cJSON_GetObjectItemCaseSensitive(o, "reward");
  const cJSON *jp = cJSON_GetObjectItemCaseSensitive(o, "parts");
  int ok = cJSON_IsObject(o) && cJSON_IsNumber(jid) && jid->valuedouble == id && cJSON_IsNumber(jr) &&
           isfinite(jr->valuedouble) && (!jp || cJSON_IsObject(jp));
  if (ok) {
    *reward = jr->valuedouble;
    if (parts && jp) *parts = cJSON_PrintUnformatted(jp);
  } else {
    snprintf(msg, msglen, "answered garbage (not {\"id\": %d, \"reward\": <finite number>, \"parts\": {...}}): "
             "'%.120s'", id, line);
  }
  cJSON_Delete(o);
  return ok ? 0 : -1;
}

/* The batch being scored (util/line_workers.h's client). */
struct batch {
  const struct task *t;
  const struct task_prompt *const *p;
  const char *const *resp;
  const size_t *len;
  double *reward;
  char **parts;
  long *errors;
};

static char *batch_request(void *ctx, int i, size_t *len) {
  const struct batch *b = ctx;
  return request_line(b->t, b->p[i], b->resp[i], b->len[i], i, len);
}

static int batch_reply(void *ctx, int i, const char *line, char *msg, size_t msglen) {
  const struct batch *b = ctx;
  return parse_reply(line, i, &b->reward[i], b->parts ? &b->parts[i] : NULL, msg, msglen);
}

/* Item i failed: scored 0 and counted. */
static void batch_fail(void *ctx, int i, const char *why) {
  const struct batch *b = ctx;
  (void)why;
  b->reward[i] = 0.0;
  (*b->errors)++;
}

int reward_command_score(struct reward_command *c, const struct task *t, const struct task_prompt *const *p,
                         const char *const *resp, const size_t *len, int n, double *reward, char **parts,
                         long *errors) {
  struct batch b = {.t = t, .p = p, .resp = resp, .len = len, .reward = reward, .parts = parts, .errors = errors};
  const struct line_client cl = {.ctx = &b, .request = batch_request, .reply = batch_reply, .fail = batch_fail};
  for (int i = 0; parts && i < n; i++) parts[i] = NULL;
  return line_workers_run(c->lw, n, &cl);
}
