/* model/test_smollm2.c: SmolLM2-135M-Instruct (Q4_1 GGUF) end to end against PyTorch
 * (label model; skips with 77 when the GGUF is absent).
 *
 * GGUF -> io/gguf.c (dequant, q/k un-permutation) -> src/model/model.c forward; the
 * prompts through src/tasks/chat.c (template detected from the GGUF) and the BPE
 * tokenizer. The reference (tests/ref/smollm2_ref.py, float64 PyTorch on
 * weights dequantized by the `gguf` package, llama.cpp's interleaved RoPE on the
 * stored q/k, prompts rendered by jinja2 and tokenized by HF tokenizers) gives
 * tests/ref/smollm2_golden.json. Checks, for 3 chat prompts:
 *   - the chat text and the prompt ids are identical;
 *   - at the last prompt position, 256 logits (top-64 + 192 fixed ids) and the
 *     log-sum-exp are within 1e-3;
 *   - greedy completion: one forward over prompt + reference completion
 *     (teacher forcing); at every step the argmax of our logits is the
 *     reference token and our log-probability of it (model_forward's own
 *     output) is within 1e-3. Every step's argmax agreeing is exactly the
 *     condition for step-by-step greedy decoding to produce the same tokens. */
#include <cblas.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "model/backend.h"
#include "model/model.h"
#include "tasks/chat.h"
#include "testutil.h"
#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"

#define SKIP 77
#define LOGIT_TOL 1e-3 /* fp32 C vs float64 PyTorch, 30 layers */

struct ctx {
  struct gguf_file f;
  struct model m;
  struct tokenizer tok;
  struct chat_template ct;
  const float *head;  /* lm_head rows [vocab, dim] */
  double max_logit_diff, max_lp_diff;
};

static char *read_file(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (fread(b, 1, (size_t)n, fp) != (size_t)n) n = 0;
  b[n] = 0;
  fclose(fp);
  return b;
}

/* logits[V] of packed row r from the model's final normed hidden state */
static void row_logits(const struct ctx *c, int r, float *logits) {
  int C = c->m.cfg.dim, V = c->m.cfg.vocab_size;
  cblas_sgemv(CblasRowMajor, CblasNoTrans, V, C, 1.0f, c->head, C, c->m.xf + (size_t)r * C, 1, 0.0f,
              logits, 1);
}

static int argmax(const float *x, int n) {
  int b = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[b]) b = i;
  return b;
}

static double lse(const float *x, int n) {
  double mx = x[argmax(x, n)], s = 0;
  for (int i = 0; i < n; i++) s += exp((double)x[i] - mx);
  return mx + log(s);
}

static void note(double *mx, double d) {
  if (d > *mx) *mx = d;
}

/* The 256 stored logits and the lse at the last prompt position. */
static void check_last_logits(struct ctx *c, const cJSON *p, const cJSON *fixed, int row, float *lg) {
  int V = c->m.cfg.vocab_size;
  row_logits(c, row, lg);
  const cJSON *ti = cJSON_GetObjectItem(p, "top_ids"), *tv = cJSON_GetObjectItem(p, "top_logits");
  const cJSON *fv = cJSON_GetObjectItem(p, "fixed_logits");
  for (int i = 0; i < cJSON_GetArraySize(ti); i++) {
    int id = cJSON_GetArrayItem(ti, i)->valueint;
    double d = fabs(lg[id] - cJSON_GetArrayItem(tv, i)->valuedouble);
    note(&c->max_logit_diff, d);
    CHECK_MSG(d <= LOGIT_TOL, "top logit %d (id %d) differs by %.3g", i, id, d);
  }
  for (int i = 0; i < cJSON_GetArraySize(fixed); i++) {
    int id = cJSON_GetArrayItem(fixed, i)->valueint;
    double d = fabs(lg[id] - cJSON_GetArrayItem(fv, i)->valuedouble);
    note(&c->max_logit_diff, d);
    CHECK_MSG(d <= LOGIT_TOL, "logit of id %d differs by %.3g", id, d);
  }
  CHECK_NEAR(lse(lg, V), cJSON_GetObjectItem(p, "lse")->valuedouble, LOGIT_TOL);
  CHECK(argmax(lg, V) == cJSON_GetArrayItem(ti, 0)->valueint);
}

/* Chat text and prompt ids equal the reference; returns the prompt ids (malloc'd). */
static int *check_prompt(struct ctx *c, const cJSON *p, int *n_out) {
  const cJSON *msgs = cJSON_GetObjectItem(p, "messages"), *want = cJSON_GetObjectItem(p, "ids");
  int n = cJSON_GetArraySize(msgs);
  struct chat_msg cm[8];
  for (int i = 0; i < n && i < 8; i++) {
    const cJSON *m = cJSON_GetArrayItem(msgs, i);
    cm[i].role = cJSON_GetObjectItem(m, "role")->valuestring;
    cm[i].content = cJSON_GetObjectItem(m, "content")->valuestring;
  }
  size_t len, nid = 0;
  char *text = chat_format(&c->ct, cm, n, 1, &len);
  CHECK(text && !strcmp(text, cJSON_GetObjectItem(p, "text")->valuestring));
  int *ids = malloc(sizeof(int) * (len + 1));
  CHECK(tokenizer_encode(&c->tok, text, len, ids, len + 1, &nid, NULL) == TOK_OK);
  int same = (int)nid == cJSON_GetArraySize(want);
  for (int i = 0; same && i < (int)nid; i++) same = ids[i] == cJSON_GetArrayItem(want, i)->valueint;
  CHECK_MSG(same, "prompt ids differ from HF tokenizers (%zu ids)", nid);
  free(text);
  *n_out = (int)nid;
  return ids;
}

static int run(struct ctx *c, const cJSON *g) {
  const cJSON *prompts = cJSON_GetObjectItem(g, "prompts"), *fixed = cJSON_GetObjectItem(g, "fixed_ids");
  int np = cJSON_GetArraySize(prompts), V = c->m.cfg.vocab_size;
  int *tokens = malloc(sizeof(int) * (size_t)c->m.max_tokens), cu[8] = {0}, plen[8];
  for (int s = 0; s < np && s < 7; s++) {  /* pack prompt + reference completion per sequence */
    const cJSON *p = cJSON_GetArrayItem(prompts, s), *gr = cJSON_GetObjectItem(p, "greedy");
    int n, *ids = check_prompt(c, p, &n), ng = cJSON_GetArraySize(gr);
    memcpy(tokens + cu[s], ids, sizeof(int) * n);
    for (int j = 0; j < ng; j++)
      tokens[cu[s] + n + j] = cJSON_GetObjectItem(cJSON_GetArrayItem(gr, j), "id")->valueint;
    plen[s] = n;
    cu[s + 1] = cu[s] + n + ng;
    free(ids);
  }
  float *lp = malloc(sizeof(float) * cu[np]), *ent = malloc(sizeof(float) * cu[np]);
  float *lg = malloc(sizeof(float) * V);
  int rc = model_forward(&c->m, tokens, cu, np, lp, ent, NULL);
  CHECK(rc == 0);
  for (int s = 0; rc == 0 && s < np; s++) {
    const cJSON *p = cJSON_GetArrayItem(prompts, s), *gr = cJSON_GetObjectItem(p, "greedy");
    int row = cu[s] + plen[s] - 1, ng = cJSON_GetArraySize(gr), agree = 0;
    check_last_logits(c, p, fixed, row, lg);
    for (int j = 0; j < ng; j++, row++) {  /* row predicts completion token j */
      const cJSON *st = cJSON_GetArrayItem(gr, j);
      row_logits(c, row, lg);
      agree += argmax(lg, V) == cJSON_GetObjectItem(st, "id")->valueint;
      /* model_forward's own log-probability of the next (reference) token */
      double d = fabs(lp[row] - cJSON_GetObjectItem(st, "logprob")->valuedouble);
      note(&c->max_lp_diff, d);
      CHECK_MSG(d <= LOGIT_TOL, "prompt %d step %d: logprob differs by %.3g", s, j, d);
    }
    CHECK_MSG(agree == ng, "prompt %d: greedy argmax agrees at %d of %d steps", s, agree, ng);
    char out[1024];
    size_t len;
    CHECK(tokenizer_decode(&c->tok, tokens + cu[s] + plen[s], (size_t)ng, out, sizeof out, &len) == TOK_OK);
    CHECK(!strcmp(out, cJSON_GetObjectItem(p, "completion")->valuestring));
    printf("prompt %d (%d tokens) greedy %d/%d steps agree: \"%s\"\n", s, plen[s], agree, ng, out);
  }
  printf("max |logit diff| %.3g, max |logprob diff| %.3g (tolerance %.0e)\n", c->max_logit_diff,
         c->max_lp_diff, LOGIT_TOL);
  free(tokens); free(lp); free(ent); free(lg);
  return 0;
}

static const char *smollm2_path(char *buf, size_t cap) {
  const char *p = getenv("RLPT_SMOLLM2_GGUF");
  if (p && *p) return p;
  const char *cache = getenv("RLPT_CACHE"), *home = getenv("HOME");
  if (cache && *cache) snprintf(buf, cap, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", cache);
  else snprintf(buf, cap, "%s/.cache/rlpt/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : ".");
  return buf;
}

int main(void) {
  char pbuf[1024], err[512], gpath[1024];
  const char *path = smollm2_path(pbuf, sizeof pbuf), *src = getenv("RLPT_SOURCE_DIR");
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    printf("SKIP: %s not found (run jobscripts/fetch-smollm2.sh or set RLPT_SMOLLM2_GGUF)\n", path);
    return SKIP;
  }
  fclose(fp);
  snprintf(gpath, sizeof gpath, "%s/tests/ref/smollm2_golden.json", src ? src : "..");
  char *js = read_file(gpath);
  cJSON *g = js ? cJSON_Parse(js) : NULL;
  if (!g) {
    fprintf(stderr, "cannot read %s\n", gpath);
    return 1;
  }
  static struct ctx c;
  struct model_config mc;
  struct param_table table;
  float *params;
  if (gguf_open(&c.f, path, err, sizeof err) || gguf_model_load(&c.f, &mc, &table, &params, err, sizeof err) ||
      tokenizer_bpe_from_gguf(&c.tok, &c.f, err, sizeof err) ||
      chat_template_from_gguf(&c.ct, &c.f, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  CHECK(mc.vocab_size == 49152 && mc.dim == 576 && mc.layers == 30 && mc.heads == 9 &&
        mc.kv_heads == 3 && mc.ffn_dim == 1536 && mc.tie_embeddings && mc.rope_theta == 100000.0);
  CHECK(c.ct.kind == CHAT_CHATML && strstr(c.ct.default_system, "SmolLM"));
  CHECK(model_create(&c.m, &mc, 256, &cpu_backend) == 0);
  memcpy(c.m.params, params, sizeof(float) * table.total);
  c.head = c.m.params + param_offset(&c.m.table, mc.tie_embeddings ? P_EMBED : P_LM_HEAD, -1);
  run(&c, g);
  model_free(&c.m);
  param_table_free(&table);
  free(params);
  tokenizer_free(&c.tok);
  gguf_close(&c.f);
  cJSON_Delete(g);
  free(js);
  return TEST_RESULT("test_smollm2");
}
