/* model/score.c: logprobs and entropy of JSONL token lists (model/score.h).
 *
 * Lines are packed into batches of up to SCORE_BATCH_TOKENS tokens (or the
 * longest line, at most the model's max_seq) per forward, so short sequences
 * share their GEMMs. The batch is sized by the input, not by max_seq, which for a
 * gguf:/hf: model is its whole context. */
#include "model/score.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/device.h"
#include "model/model.h"
#include "model/source.h"
#include "util/alloc.h"
#include "util/atomic_file.h"

#define SCORE_BATCH_TOKENS 512

struct score_run {
  struct model m;
  const char *in_path;
  FILE *out;
  int budget;           /* tokens per forward */
  int *line_tok;        /* [max_seq] tokens of the line being parsed */
  int *tokens, *cu;     /* the pending batch: [budget], [budget + 1] */
  int nseq;
  float *lp, *ent, *val;
};

/* tokens of one JSONL line; 0, or 2 with a message naming in_path:lineno. */
static int parse_line(struct score_run *r, const char *line, long lineno, int *n) {
  cJSON *o = cJSON_Parse(line);
  const cJSON *arr = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "tokens") : NULL;
  int rc = 0, max = r->m.cfg.max_seq;
  *n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
  if (!o) {
    fprintf(stderr, "rlpt: %s:%ld: not valid JSON\n", r->in_path, lineno);
    rc = 2;
  } else if (*n < 1 || *n > max) {
    fprintf(stderr, "rlpt: %s:%ld: expected a JSON object with a \"tokens\" array of 1..%d "
            "token ids (max_seq of the model)\n", r->in_path, lineno, max);
    rc = 2;
  }
  for (int i = 0; !rc && i < *n; i++) {
    const cJSON *v = cJSON_GetArrayItem(arr, i);
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1.0;
    if (d != (int)d || d < 0 || d >= r->m.cfg.vocab_size) {
      fprintf(stderr, "rlpt: %s:%ld: tokens[%d] is not a token id in 0..%d\n", r->in_path, lineno,
              i, r->m.cfg.vocab_size - 1);
      rc = 2;
    } else {
      r->line_tok[i] = (int)d;
    }
  }
  cJSON_Delete(o);
  return rc;
}

static void write_array(FILE *f, const char *key, const float *x, int n, int comma) {
  fprintf(f, "\"%s\": [", key);
  for (int i = 0; i < n; i++) fprintf(f, i ? ", %.7g" : "%.7g", x[i]);
  fprintf(f, comma ? "], " : "]");
}

/* Forward of the pending batch and one output line per sequence. */
static int score_flush(struct score_run *r) {
  int vh = r->m.cfg.value_head;
  if (!r->nseq) return 0;
  if (model_forward(&r->m, r->tokens, r->cu, r->nseq, r->lp, r->ent, vh ? r->val : NULL)) return 1;
  for (int s = 0; s < r->nseq; s++) {
    int o = r->cu[s], n = r->cu[s + 1] - o;
    fputc('{', r->out);
    write_array(r->out, "logprobs", r->lp + o, n - 1, 1);
    write_array(r->out, "entropy", r->ent + o, n - 1, vh);
    if (vh) write_array(r->out, "values", r->val + o, n, 0);
    fputs("}\n", r->out);
  }
  r->nseq = 0;
  return 0;
}

static int score_line(struct score_run *r, const char *line, long lineno) {
  int n, rc;
  if (parse_line(r, line, lineno, &n)) return 2;
  if (r->cu[r->nseq] + n > r->budget && (rc = score_flush(r))) return rc;
  memcpy(r->tokens + r->cu[r->nseq], r->line_tok, sizeof(int) * n);
  r->cu[r->nseq + 1] = r->cu[r->nseq] + n;
  r->nseq++;
  return 0;
}

static int score_file(struct score_run *r, FILE *in) {
  char *line = NULL;
  size_t cap = 0;
  long lineno = 0;
  int rc = 0;
  ssize_t len;
  while (!rc && (len = getline(&line, &cap, in)) >= 0) {
    lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
    if (strspn(line, " \t") == (size_t)len) continue;
    rc = score_line(r, line, lineno);
  }
  free(line);
  return rc ? rc : score_flush(r);
}

/* The longest "tokens" array of in's lines (0 when none parses: the scoring pass
 * reports bad lines); in is rewound. */
static int longest_line(FILE *in) {
  char *line = NULL;
  size_t cap = 0;
  int best = 0;
  while (getline(&line, &cap, in) >= 0) {
    cJSON *o = cJSON_Parse(line);
    const cJSON *a = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "tokens") : NULL;
    int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
    if (n > best) best = n;
    cJSON_Delete(o);
  }
  free(line);
  rewind(in);
  return best;
}

/* The model (model/source.h) on the backend, with a batch for the longest line. */
static int score_load(struct score_run *r, const char *model_path, const char *device, int longest) {
  char err[256];
  const struct backend_ops *ops = device_backend_named(device, err, sizeof err);
  if (!ops) {
    fprintf(stderr, "rlpt: score: %s\n", err);
    return 2;
  }
  struct model_source ms;
  int rc = model_source_load(model_path, "score", "--model", &ms);
  const struct model_config *mc = &ms.mc;
  int need = longest < mc->max_seq ? longest : mc->max_seq;
  r->budget = need > SCORE_BATCH_TOKENS ? need : SCORE_BATCH_TOKENS;
  if (!rc && model_create_forward(&r->m, mc, r->budget, ops)) rc = 1;
  if (!rc) {
    size_t b = (size_t)r->budget;
    memcpy(r->m.params, ms.params, sizeof(float) * r->m.table.total);
    r->line_tok = malloc_check(sizeof(int) * mc->max_seq);
    r->tokens = malloc_check(sizeof(int) * b);
    r->cu = calloc_check(b + 1, sizeof(int));
    r->lp = malloc_check(sizeof(float) * b);
    r->ent = malloc_check(sizeof(float) * b);
    r->val = malloc_check(sizeof(float) * b);
  }
  model_source_free(&ms);
  return rc;
}

static void score_run_free(struct score_run *r) {
  free(r->line_tok);
  free(r->tokens);
  free(r->cu);
  free(r->lp);
  free(r->ent);
  free(r->val);
  if (r->m.params) model_free(&r->m);
}

/* The output: a regular file (or a new one) is written whole or not at all
 * (util/atomic_file.h), so a bad input line leaves an existing output as it was; a device
 * or pipe (/dev/stdout) is written directly. */
struct score_out {
  struct atomic_file a;
  int atomic;
};

static FILE *out_open(struct score_out *so, const char *path) {
  struct stat sb;
  so->atomic = stat(path, &sb) || S_ISREG(sb.st_mode);
  if (so->atomic) return atomic_file_open(&so->a, path) ? NULL : so->a.f;
  return fopen(path, "w");
}

/* The output closed: committed when rc is 0, else dropped (no partial output). */
static int out_close(struct score_out *so, FILE *out, const char *path, int rc) {
  int bad = 0;
  if (!so->atomic) bad = fclose(out) != 0;
  else if (rc) atomic_file_abort(&so->a);
  else bad = atomic_file_commit(&so->a) != 0;
  if (bad && !rc) {
    fprintf(stderr, "rlpt: %s: error writing the output: %s\n", path, strerror(errno));
    rc = 1;
  }
  return rc;
}

int model_score(const struct model_score_opts *o) {
  struct score_run r = {.in_path = o->input};
  struct score_out so = {0};
  FILE *in = fopen(o->input, "r");
  int rc = 0;
  if (!in) {
    fprintf(stderr, "rlpt: %s: cannot open the input\n", o->input);
    return 2;
  }
  rc = score_load(&r, o->model, o->device, longest_line(in));
  if (!rc && !(r.out = out_open(&so, o->output))) {
    fprintf(stderr, "rlpt: %s: cannot create the output: %s\n", o->output, strerror(errno));
    rc = 2;
  }
  if (!rc) rc = score_file(&r, in);
  if (r.out) rc = out_close(&so, r.out, o->output, rc);
  fclose(in);
  score_run_free(&r);
  return rc;
}
