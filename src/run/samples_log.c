/* run/samples_log.c: what the policy writes, for a person to read. Every [log]
 * samples_every RL steps the first train DP rank appends the samples of its first
 * groups (prompt, response, finish reason, reward and its parts, the advantages it
 * was trained with) to [log] samples_path as JSON lines — reward hacking shows
 * there before it shows in the curves. */
#include "run/samples_log.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "run/run.h"

#define SAMPLES_LOG_GROUPS 2 /* groups written per logged step */

/* The text of ids (padding rows past the tokenizer skipped), or NULL (logged as "") when
 * it does not decode. */
static char *decode(const struct tokenizer *tok, const int32_t *ids, int n) {
  char *text = NULL;
  size_t len = 0;
  tokenizer_decode_generated(tok, (const int *)ids, (size_t)n, &text, &len);
  return text;
}

static cJSON *sample_json(const struct run *r, const struct sample *s, long step) {
  cJSON *o = cJSON_CreateObject();
  char *prompt = decode(&r->tok, s->prompt, s->n_prompt), *resp = decode(&r->tok, s->resp, s->n_resp);
  cJSON_AddNumberToObject(o, "step", (double)step);
  cJSON_AddNumberToObject(o, "weight_version", (double)s->weight_version);
  cJSON_AddNumberToObject(o, "prompt_id", (double)s->prompt_id);
  cJSON_AddNumberToObject(o, "group", s->group);
  cJSON_AddNumberToObject(o, "index", s->index);
  cJSON_AddStringToObject(o, "prompt", prompt ? prompt : "");
  cJSON_AddStringToObject(o, "response", resp ? resp : "");
  cJSON_AddStringToObject(o, "finish_reason", finish_reason_name(s->finish));
  cJSON_AddNumberToObject(o, "reward", s->reward);
  cJSON *parts = cJSON_AddObjectToObject(o, "reward_parts");
  for (int k = 0; k < s->n_parts; k++) cJSON_AddNumberToObject(parts, s->parts[k].name, s->parts[k].value);
  cJSON *adv = cJSON_AddArrayToObject(o, "advantages");
  for (int k = 0; k < s->n_adv; k++) cJSON_AddItemToArray(adv, cJSON_CreateNumber(s->adv[k]));
  free(prompt);
  free(resp);
  return o;
}

void samples_log_write(const struct run *r, const struct sample_batch *b, long step) {
  const struct config *cfg = r->cfg;
  if (!cfg->log.samples_path[0] || cfg->log.samples_every <= 0 || step % cfg->log.samples_every)
    return;
  if (r->comms.place.dp != 0 || b->n == 0) return;
  FILE *f = fopen(cfg->log.samples_path, "a");
  if (!f) {
    fprintf(stderr, "rlpt: warning: cannot append to [log] samples_path = %s; samples not written\n",
            cfg->log.samples_path);
    return;
  }
  int32_t first = b->s[0].group;
  for (int i = 0; i < b->n && b->s[i].group < first + SAMPLES_LOG_GROUPS; i++) {
    cJSON *o = sample_json(r, &b->s[i], step);
    char *line = cJSON_PrintUnformatted(o);
    if (line) fprintf(f, "%s\n", line);
    free(line);
    cJSON_Delete(o);
  }
  fclose(f);
}
