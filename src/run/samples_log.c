/* run/samples_log.c: what the policy writes, for a person to read. Every [log]
 * samples_every RL steps the first train DP rank takes the samples of its first
 * [log] samples_groups groups (prompt, response, finish reason, reward and its parts, the advantages it
 * was trained with; a multi-turn episode also as its model and tool turns) and appends them to [log] samples_path as JSON lines, and with
 * [log] tensorboard_dir writes them as a text table (prompt, response, reward, finish
 * reason) to an event file of its own — reward hacking shows there before it shows in
 * the curves. */
#include "run/samples_log.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run.h"
#include "util/utf8.h"

#define SAMPLES_TB_TAG "samples/responses"
#define SAMPLES_TB_COLS 4    /* prompt, response, reward, finish reason */

/* The text of ids (padding rows past the tokenizer skipped) as valid UTF-8 (a response cut
 * inside a character gets U+FFFD: JSON and TensorBoard need UTF-8), or NULL (logged as "")
 * when it does not decode. */
static char *decode(const struct tokenizer *tok, const int32_t *ids, int n) {
  char *text = NULL, *valid = NULL;
  size_t len = 0;
  if (tokenizer_decode_generated(tok, (const int *)ids, (size_t)n, &text, &len) == TOK_OK && text &&
      (valid = malloc(UTF8_SANITIZED_MAX(len))))
    utf8_sanitize(text, len, valid);
  free(text);
  return valid;
}

/* A multi-turn episode's response as its turns: runs of model ("assistant") and tool tokens
 * ("tool": resp_mask 0), each decoded, in order. */
static void add_turns(cJSON *o, const struct tokenizer *tok, const struct sample *s) {
  cJSON *turns = cJSON_AddArrayToObject(o, "turns");
  for (int j = 0, e; j < s->n_resp; j = e) {
    for (e = j + 1; e < s->n_resp && s->resp_mask[e] == s->resp_mask[j];) e++;
    char *text = decode(tok, s->resp + j, e - j);
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "role", s->resp_mask[j] ? "assistant" : "tool");
    cJSON_AddStringToObject(t, "text", text ? text : "");
    cJSON_AddItemToArray(turns, t);
    free(text);
  }
}

static cJSON *sample_json(const struct tokenizer *tok, const struct sample *s, const char *prompt,
                          const char *resp, long step) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "step", (double)step);
  /* the prompt batch it was drawn from: step, unless a free-running async run dropped stale groups */
  cJSON_AddNumberToObject(o, "batch", (double)s->step);
  cJSON_AddNumberToObject(o, "weight_version", (double)s->weight_version);
  if (s->tok_version) {  /* an in-flight update split it: each response token's version */
    cJSON *tv = cJSON_AddArrayToObject(o, "token_versions");
    for (int k = 0; k < s->n_resp; k++) cJSON_AddItemToArray(tv, cJSON_CreateNumber((double)s->tok_version[k]));
  }
  cJSON_AddNumberToObject(o, "prompt_id", (double)s->prompt_id);
  cJSON_AddNumberToObject(o, "group", s->group);
  cJSON_AddNumberToObject(o, "index", s->index);
  cJSON_AddStringToObject(o, "prompt", prompt);
  cJSON_AddStringToObject(o, "response", resp);
  if (s->resp_mask) add_turns(o, tok, s);
  cJSON_AddStringToObject(o, "finish_reason", finish_reason_name(s->finish));
  cJSON_AddNumberToObject(o, "reward", s->reward);
  cJSON *parts = cJSON_AddObjectToObject(o, "reward_parts");
  for (int k = 0; k < s->n_parts; k++) cJSON_AddNumberToObject(parts, s->parts[k].name, s->parts[k].value);
  cJSON *adv = cJSON_AddArrayToObject(o, "advantages");
  for (int k = 0; k < s->n_adv; k++) cJSON_AddItemToArray(adv, cJSON_CreateNumber(s->adv[k]));
  return o;
}

/* The first n samples of b as JSON lines appended to [log] samples_path. */
static void write_jsonl(const struct run *r, const struct sample_batch *b, int n, char **text,
                        long step) {
  const char *path = r->cfg->log.samples_path;
  FILE *f = fopen(path, "a");
  if (!f) {
    fprintf(stderr, "rlpt: warning: cannot append to [log] samples_path = %s; samples not written\n",
            path);
    return;
  }
  for (int i = 0; i < n; i++) {
    cJSON *o = sample_json(&r->tok, &b->s[i], text[2 * i], text[2 * i + 1], step);
    char *line = cJSON_PrintUnformatted(o);
    if (line) fprintf(f, "%s\n", line);
    free(line);
    cJSON_Delete(o);
  }
  fclose(f);
}

/* The first n samples of b as one text table in the event file. */
static void write_tb(const struct run *r, const struct sample_batch *b, int n, char **text,
                     long step) {
  const char **cells = calloc((size_t)n * SAMPLES_TB_COLS + 1, sizeof *cells);
  char (*reward)[32] = calloc((size_t)n + 1, sizeof *reward);
  int rc = -1;
  if (cells && reward) {
    for (int i = 0; i < n; i++) {
      snprintf(reward[i], sizeof reward[i], "%.17g", b->s[i].reward);
      const char *row[SAMPLES_TB_COLS] = {text[2 * i], text[2 * i + 1], reward[i],
                                          finish_reason_name(b->s[i].finish)};
      memcpy(cells + (size_t)i * SAMPLES_TB_COLS, row, sizeof row);
    }
    rc = tb_events_text(&r->samples_tb, step, tb_wall_time(), SAMPLES_TB_TAG, n,
                        SAMPLES_TB_COLS, cells);
  }
  if (rc != 0)
    fprintf(stderr, "rlpt: warning: [log] tensorboard_dir: cannot append to %s; samples of "
            "step %ld not written\n", r->samples_tb.path, step);
  free(cells);
  free(reward);
}

void samples_log_write(const struct run *r, const struct sample_batch *b, long step) {
  const struct config *cfg = r->cfg;
  int to_jsonl = cfg->log.samples_path[0] != 0, to_tb = r->samples_tb.f != NULL;
  if ((!to_jsonl && !to_tb) || cfg->log.samples_every <= 0 || step % cfg->log.samples_every) return;
  if (r->comms.place.dp != 0 || r->comms.place.tp != 0 || b->n == 0) return;
  int n = 0;
  long groups = cfg->log.samples_groups;
  while (n < b->n && (groups == 0 || b->s[n].group < b->s[0].group + groups)) n++;
  char **text = calloc(2 * (size_t)n, sizeof *text); /* prompt, response of each sample */
  if (!text) return;
  for (int i = 0; i < n; i++) {
    char *p = decode(&r->tok, b->s[i].prompt, b->s[i].n_prompt);
    char *s = decode(&r->tok, b->s[i].resp, b->s[i].n_resp);
    text[2 * i] = p ? p : strdup("");
    text[2 * i + 1] = s ? s : strdup("");
  }
  int ok = 1;
  for (int i = 0; i < 2 * n; i++) ok &= text[i] != NULL;  /* out of memory: nothing written */
  if (ok && to_jsonl) write_jsonl(r, b, n, text, step);
  if (ok && to_tb) write_tb(r, b, n, text, step);
  for (int i = 0; i < 2 * n; i++) free(text[i]);
  free(text);
}

int samples_log_open(struct run *r, char *err, size_t len) {
  const struct config *cfg = r->cfg;
  if (!r->is_train || r->comms.place.dp != 0 || r->comms.place.tp != 0 || !cfg->log.tensorboard_dir[0] ||
      cfg->log.samples_every <= 0)
    return 0;
  char why[1024];
  if (tb_events_open(&r->samples_tb, cfg->log.tensorboard_dir, ".samples.rlpt", tb_wall_time(), why,
                     sizeof why) == 0)
    return 0;
  snprintf(err, len, "[log] tensorboard_dir: %s", why);
  return 2;
}

void samples_log_close(struct run *r) { tb_events_close(&r->samples_tb); }
