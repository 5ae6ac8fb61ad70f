/* rollout/engine.c: the rollout engine on the real transformer (rollout/engine.h).
 *
 * lm_ops.forward packs the engine's step (decodes and prefills) into one
 * model_forward_kv call. The model hands each layer's new K (after RoPE) and V
 * to a callback that scatters them into the sequences' paged blocks; on the CPU
 * backend attention then reads the blocks in place (rollout_paged); on a device
 * backend the blocks live in device memory and the callback stores and attends there
 * (rollout_attend, rollout/kv_device.h); elsewhere every sequence's whole context is gathered
 * back into contiguous rows for the attention op (rollout_exchange). The engine
 * (rollout/scheduler.c) owns scheduling, prefix sharing, preemption and keyed sampling; this
 * file turns requests into samples. */
#include "rollout/engine.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "model/device.h"
#include "model/model.h"
#include "rollout/kv_device.h"
#include "rollout/sample_device.h"
#include "tokenizer/tokenizer.h"

_Static_assert(sizeof(int) == sizeof(int32_t), "token ids are int in the engine, int32_t in samples");

struct rollout_engine {
  struct model *m;
  struct kv_cache kv;
  struct kv_device *kvd;            /* the pool's device side; NULL: the pool is host memory */
  struct gen_config g;
  struct sampling_params deck_sp;   /* the deck's sampling, restored by negative overrides */
  struct lm_ops lm;
  struct model_kv_io io;
  struct sample_device *sd;         /* device backend: the logits stay there and are sampled there */
  struct rollout_env env;           /* turn NULL: single-turn */
  char stop[CFG_STR_MAX];
  struct gen_stop_text stop_text;
  /* the step being run */
  const struct lm_batch *batch;
  int *tokens, *cu_new, *pos0;      /* [max_batch_tokens], [max_seqs + 1] x 2 */
  const int **tables;               /* [max_seqs] block tables of the step, for paged attention */
  float *k_ctx, *v_ctx;             /* contiguous contexts, [ctx_cap][kv_heads * head_dim] */
  size_t ctx_cap;
};

static int rfail(char *err, size_t errlen, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return code;
}

/* ---- lm_ops over model_forward_kv -------------------------------------------- */

/* Per layer: new rows into the paged blocks, every context back out as contiguous rows
 * laid out by b->cu_kv (the model's attention takes [ctx][kv_heads * head_dim] spans). */
static int rollout_exchange(void *ctx, int layer, const struct attn_batch *b, const float *k_new,
                            const float *v_new, const float **k_ctx, const float **v_ctx) {
  struct rollout_engine *re = ctx;
  const struct lm_batch *lb = re->batch;
  size_t KV = (size_t)re->kv.L.kv_heads * re->kv.L.head_dim;
  for (int s = 0; s < b->nseq; s++) {
    const struct lm_seq *q = &lb->seqs[s];
    size_t qo = (size_t)b->cu_q[s] * KV, co = (size_t)b->cu_kv[s] * KV;
    kv_scatter(&re->kv, q->block_table, q->pos0, q->n, layer, KV_K, k_new + qo);
    kv_scatter(&re->kv, q->block_table, q->pos0, q->n, layer, KV_V, v_new + qo);
    kv_gather(&re->kv, q->block_table, q->pos0 + q->n, layer, KV_K, re->k_ctx + co);
    kv_gather(&re->kv, q->block_table, q->pos0 + q->n, layer, KV_V, re->v_ctx + co);
  }
  *k_ctx = re->k_ctx;
  *v_ctx = re->v_ctx;
  return 0;
}

/* Per layer: new rows into the paged blocks; attention reads the contexts there. */
static int rollout_paged(void *ctx, int layer, const struct attn_batch *b, const float *k_new,
                         const float *v_new, struct attn_paged *kv) {
  struct rollout_engine *re = ctx;
  const struct lm_batch *lb = re->batch;
  const struct kv_layout *L = &re->kv.L;
  size_t KV = (size_t)L->kv_heads * L->head_dim;
  for (int s = 0; s < b->nseq; s++) {
    const struct lm_seq *q = &lb->seqs[s];
    size_t qo = (size_t)b->cu_q[s] * KV;
    kv_scatter(&re->kv, q->block_table, q->pos0, q->n, layer, KV_K, k_new + qo);
    kv_scatter(&re->kv, q->block_table, q->pos0, q->n, layer, KV_V, v_new + qo);
    re->tables[s] = q->block_table;
  }
  size_t layer_k = (size_t)(2 * layer + KV_K) * L->block_size * KV;
  size_t layer_v = (size_t)(2 * layer + KV_V) * L->block_size * KV;
  *kv = (struct attn_paged){ .k = re->kv.data + layer_k, .v = re->kv.data + layer_v,
                             .tables = re->tables, .block_size = L->block_size,
                             .block_stride = re->kv.block_floats };
  return 0;
}

/* Per layer on a device backend: new rows into the device blocks, attention there. */
static int rollout_attend(void *ctx, int layer, const struct attn_batch *b, const float *q,
                          const float *k_new, const float *v_new, float *out, float *lse, int H,
                          float scale) {
  struct rollout_engine *re = ctx;
  return kv_device_attend(re->kvd, layer, b, q, k_new, v_new, out, lse, H, scale);
}

/* Grow the context buffers to hold n rows. 0 or -1. */
static int ctx_reserve(struct rollout_engine *re, size_t n) {
  if (n <= re->ctx_cap) return 0;
  size_t KV = (size_t)re->kv.L.kv_heads * re->kv.L.head_dim, cap = n + n / 2;
  float *k = realloc(re->k_ctx, cap * KV * sizeof(float));
  if (k) re->k_ctx = k;
  float *v = k ? realloc(re->v_ctx, cap * KV * sizeof(float)) : NULL;
  if (v) re->v_ctx = v;
  if (!k || !v) return -1;
  re->ctx_cap = cap;
  return 0;
}

static int rollout_forward(void *ctx, const struct lm_batch *b, float *logits) {
  struct rollout_engine *re = ctx;
  size_t ctx_rows = 0;
  re->cu_new[0] = 0;
  for (int s = 0; s < b->n_seqs; s++) {
    const struct lm_seq *q = &b->seqs[s];
    memcpy(re->tokens + re->cu_new[s], q->tokens, sizeof(int) * (size_t)q->n);
    re->cu_new[s + 1] = re->cu_new[s] + q->n;
    re->pos0[s] = q->pos0;
    ctx_rows += (size_t)q->pos0 + (size_t)q->n;
  }
  if (!re->m->on_device && re->m->ops->attention_paged_fwd) ctx_rows = 0; /* read in place */
  if (re->kvd) { /* the step's block tables go up once, for every layer */
    if (kv_device_prepare(re->kvd, b) != 0) return -1;
    ctx_rows = 0;
  }
  if (ctx_reserve(re, ctx_rows) != 0) {
    fprintf(stderr, "rlpt: rollout: out of memory for %zu context rows\n", ctx_rows);
    return -1;
  }
  re->batch = b;
  int rc = logits ? model_forward_kv(re->m, re->tokens, re->cu_new, re->pos0, b->n_seqs, &re->io,
                                     b->all_logits, logits)
         : b->all_logits ? -1 /* the device buffer holds one row per sequence */
         : model_forward_kv_dev(re->m, re->tokens, re->cu_new, re->pos0, b->n_seqs, &re->io, 0,
                                sample_device_logits(re->sd));
  re->batch = NULL;
  return rc;
}

/* lm_ops.sample / logits_row on the device logits (rollout/sample_device.h). */
static int rollout_sample(void *ctx, int n, const int *src, const float *host,
                          const struct sampling_params *sp, const double *u, int *tokens,
                          double *logprob) {
  return sample_device_sample(((struct rollout_engine *)ctx)->sd, n, src, host, sp, u, tokens,
                              logprob);
}

static int rollout_logits_row(void *ctx, int row, float *dst) {
  return sample_device_row(((struct rollout_engine *)ctx)->sd, row, dst);
}

/* ---- engine ------------------------------------------------------------------ */

int rollout_create(struct rollout_engine **out, struct model *m, const struct config *cfg,
                   const struct tokenizer *tok, char *err, size_t errlen) {
  *out = NULL;
  /* [run] device = cuda without a GPU is refused here too, so rollout-only ranks exit 2
   * with the same message as the train ranks; the model's backend is the caller's */
  if (!device_backend(cfg->run.device, cfg->model.dtype, err, errlen)) return 2;
  struct rollout_engine *re = calloc(1, sizeof *re);
  if (!re) return rfail(err, errlen, 1, "rollout: out of memory");
  re->m = m;
  /* the engine's callers write m->params only before a rollout_weights_changed: on a
   * device backend the weights stay resident between weight syncs (model/weights.h) */
  weights_track_host_writes(&m->weights);
  gen_config_from_deck(&re->g, cfg);
  /* one forward never exceeds the model's token budget (its activations are sized by it) */
  if (re->g.max_batch_tokens > m->max_tokens) re->g.max_batch_tokens = m->max_tokens;
  re->g.eos_id = tok ? tok->eos_id : -1;
  re->deck_sp = re->g.sp;
  snprintf(re->stop, sizeof re->stop, "%s", cfg->rollout.stop);
  if (tok && re->stop[0]) {
    re->stop_text = (struct gen_stop_text){ .tok = tok, .stop = re->stop };
    re->g.stop_fn = gen_stop_text;
    re->g.stop_ctx = &re->stop_text;
  }
  int max_seqs = re->g.max_num_seqs < re->g.max_batch_tokens ? re->g.max_num_seqs
                                                             : re->g.max_batch_tokens;
  struct kv_layout L = { .layers = m->cfg.layers, .kv_heads = m->cfg.kv_heads,
                         .head_dim = m->cfg.head_dim, .block_size = (int)cfg->rollout.block_size };
  size_t bytes = (size_t)cfg->rollout.kv_cache_mb << 20;
  char kerr[256];
  const struct kv_storage *st = kv_device_storage(m); /* device memory on a device backend */
  if (kv_create_on(&re->kv, &L, bytes, max_seqs, max_seqs, m->vocab_full, st, kerr,
                   sizeof kerr) != 0) {
    free(re);
    return rfail(err, errlen, 2, "rollout: [rollout] kv_cache_mb = %ld: %s", cfg->rollout.kv_cache_mb,
                 kerr);
  }
  re->tokens = malloc(sizeof(int) * (size_t)re->g.max_batch_tokens);
  re->cu_new = malloc(sizeof(int) * ((size_t)max_seqs + 1));
  re->pos0 = malloc(sizeof(int) * ((size_t)max_seqs + 1));
  re->tables = malloc(sizeof *re->tables * (size_t)max_seqs);
  if (!re->tokens || !re->cu_new || !re->pos0 || !re->tables ||
      (st && kv_device_create(&re->kvd, m, &re->kv) != 0)) {
    rollout_free(re);
    return rfail(err, errlen, 1, "rollout: out of memory");
  }
  int rc = sample_device_create(&re->sd, m, max_seqs, err, errlen);
  if (rc) {
    rollout_free(re);
    return rc;
  }
  re->lm = (struct lm_ops){ .ctx = re, .vocab = m->vocab_full, .forward = rollout_forward,
                            .sample = re->sd ? rollout_sample : NULL,
                            .logits_row = re->sd ? rollout_logits_row : NULL };
  re->io = (struct model_kv_io){ .ctx = re, .exchange = rollout_exchange, .paged = rollout_paged,
                                 .attend = re->kvd ? rollout_attend : NULL };
  *out = re;
  return 0;
}

void rollout_free(struct rollout_engine *re) {
  if (!re) return;
  kv_device_free(re->kvd);
  kv_destroy(&re->kv);
  sample_device_free(re->sd);
  free(re->tokens);
  free(re->cu_new);
  free(re->pos0);
  free(re->tables);
  free(re->k_ctx);
  free(re->v_ctx);
  free(re);
}

void rollout_set_sampling(struct rollout_engine *re, double temperature, double top_p, int top_k) {
  re->g.sp.temperature = temperature >= 0 ? temperature : re->deck_sp.temperature;
  re->g.sp.top_p = top_p >= 0 ? top_p : re->deck_sp.top_p;
  re->g.sp.top_k = top_k >= 0 ? top_k : re->deck_sp.top_k;
}

void rollout_set_update(struct rollout_engine *re, int (*fn)(void *ctx, long steps, uint64_t *version),
                        void *ctx, enum gen_in_flight in_flight) {
  re->g.update_fn = fn;
  re->g.update_ctx = ctx;
  re->g.in_flight = in_flight;
}

void rollout_weights_changed(struct rollout_engine *re, int64_t weight_version) {
  kv_set_version(&re->kv, (uint64_t)weight_version);
  weights_host_written(&re->m->weights); /* the next forward uploads them */
}

void rollout_weights_on_device(struct rollout_engine *re, int64_t weight_version) {
  kv_set_version(&re->kv, (uint64_t)weight_version);
  weights_device_written(&re->m->weights, WEIGHTS_BF16_STALE);
}

int rollout_set_env(struct rollout_engine *re, const struct rollout_env *env, char *err,
                    size_t errlen) {
  if (env && re->m->on_device)
    return rfail(err, errlen, 2, "rollout: [env] multi-turn rollouts run on the CPU engine only "
                 "(set [run] device = cpu)");
  re->env = env ? *env : (struct rollout_env){ .turn = NULL };
  re->g.env_fn = re->env.turn;
  re->g.env_ctx = re->env.ctx;
  return 0;
}

static enum finish_reason finish_of(int gen_finish) {
  return gen_finish == GEN_EOS ? FINISH_EOS : gen_finish == GEN_STOP ? FINISH_STOP : FINISH_LENGTH;
}

/* The tokens' versions v[n_resp] from an in-flight update: weight_version the oldest, and
 * tok_version kept only when they differ. 0 or -1. */
static int set_versions(struct sample *s, const uint64_t *v) {
  int mixed = 0;
  for (int j = 0; j < s->n_resp; j++) {
    mixed |= v[j] != v[0];
    if (j == 0 || (int64_t)v[j] < s->weight_version) s->weight_version = (int64_t)v[j];
  }
  if (!mixed) return 0;
  int64_t *tv = malloc(sizeof *tv * (size_t)s->n_resp);
  if (!tv) return -1;
  for (int j = 0; j < s->n_resp; j++) tv[j] = (int64_t)v[j];
  int rc = sample_set_tok_versions(s, tv);
  free(tv);
  return rc;
}

/* Append request r's result as a sample. 0 or -1 (out of memory). */
static int push_sample(struct sample_batch *out, const struct rollout_prompt *p, int index,
                       const struct gen_result *res, int r, int max_new, long step,
                       int64_t weight_version) {
  struct sample *s = sample_batch_add(out);
  if (!s) return -1;
  s->prompt_id = p->prompt_id;
  s->group = p->group;
  s->index = index;
  s->weight_version = weight_version;
  s->step = step;
  s->finish = finish_of(res->finish[r]);
  size_t o = (size_t)r * (size_t)max_new;
  if (sample_set_prompt(s, (const int32_t *)p->tokens, p->n_tokens) != 0 ||
      sample_set_response(s, (const int32_t *)res->tokens + o, res->logprobs + o, res->len[r]) != 0)
    return -1;
  if (res->mask && sample_set_resp_mask(s, res->mask + o) != 0) return -1;
  return res->versions ? set_versions(s, res->versions + o) : 0;
}

static int check_prompts(const struct rollout_engine *re, const struct rollout_prompt *prompts,
                         int n, int group_size, char *err, size_t errlen) {
  if (n < 0 || group_size < 1)
    return rfail(err, errlen, 2, "rollout: %d prompts x group size %d", n, group_size);
  const struct model_config *mc = &re->m->cfg;
  for (int i = 0; i < n; i++) {
    const struct rollout_prompt *p = &prompts[i];
    if (p->n_tokens < 1)
      return rfail(err, errlen, 2, "rollout: prompt %lld has no tokens", (long long)p->prompt_id);
    if (p->n_tokens + re->g.max_new_tokens > mc->max_seq)
      return rfail(err, errlen, 2, "rollout: prompt %lld (%d tokens) + [rollout] max_new_tokens %d "
                   "exceeds [model] max_seq = %d", (long long)p->prompt_id, p->n_tokens,
                   re->g.max_new_tokens, mc->max_seq);
    /* a whole sample must fit one forward: rollout_logprob_diff_max and the trainer run it */
    if (p->n_tokens + re->g.max_new_tokens > re->g.max_batch_tokens)
      return rfail(err, errlen, 2, "rollout: prompt %lld (%d tokens) + [rollout] max_new_tokens %d "
                   "exceeds [rollout] max_batch_tokens = %d (or the model's token budget)",
                   (long long)p->prompt_id, p->n_tokens, re->g.max_new_tokens,
                   re->g.max_batch_tokens);
    for (int t = 0; t < p->n_tokens; t++)
      if (p->tokens[t] < 0 || p->tokens[t] >= re->m->vocab_full)
        return rfail(err, errlen, 2, "rollout: prompt %lld: token %d at %d is outside the "
                     "vocabulary (0..%d)", (long long)p->prompt_id, p->tokens[t], t,
                     re->m->vocab_full - 1);
  }
  return 0;
}

int rollout_generate(struct rollout_engine *re, const struct rollout_prompt *prompts, int n,
                     int group_size, long step, int64_t weight_version,
                     struct sample_batch *out, struct gen_stats *stats, char *err, size_t errlen) {
  int rc = check_prompts(re, prompts, n, group_size, err, errlen);
  if (rc) return rc;
  int n_req = n * group_size, max_new = re->g.max_new_tokens;
  struct gen_stats st_local;
  struct gen_request *req = malloc(sizeof *req * (size_t)(n_req > 0 ? n_req : 1));
  struct gen_result res = {
    .tokens = malloc(sizeof(int) * (size_t)n_req * (size_t)max_new + 1),
    .logprobs = malloc(sizeof(float) * (size_t)n_req * (size_t)max_new + 1),
    .versions = re->g.update_fn ? malloc(sizeof(uint64_t) * (size_t)n_req * (size_t)max_new + 1) : NULL,
    .len = calloc((size_t)n_req + 1, sizeof(int)),
    .finish = calloc((size_t)n_req + 1, sizeof(int)),
    .mask = re->env.turn ? malloc((size_t)n_req * (size_t)max_new + 1) : NULL };
  if (!req || !res.tokens || !res.logprobs || !res.len || !res.finish ||
      (re->env.turn && !res.mask) || (re->g.update_fn && !res.versions)) {
    rc = rfail(err, errlen, 1, "rollout: out of memory for %d requests", n_req);
    goto done;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < group_size; j++)
      req[i * group_size + j] = (struct gen_request){
        .prompt_id = (uint32_t)prompts[i].prompt_id, .sample = (uint32_t)j,
        .prompt = prompts[i].tokens, .prompt_len = prompts[i].n_tokens };
  if (re->env.begin && re->env.begin(re->env.ctx, prompts, n, group_size) != 0) {
    rc = rfail(err, errlen, 1, "rollout: out of memory for %d episodes", n_req);
    goto done;
  }
  rc = gen_run(&re->g, &re->lm, &re->kv, (uint64_t)weight_version, (uint32_t)step, req, n_req, &res,
               stats ? stats : &st_local, err, errlen);
  if (rc) goto done;
  int n0 = out->n;
  if (sample_batch_reserve(out, n0 + n_req) != 0) {
    rc = rfail(err, errlen, 1, "rollout: out of memory for %d samples", n_req);
    goto done;
  }
  for (int r = 0; r < n_req && !rc; r++)
    if (push_sample(out, &prompts[r / group_size], r % group_size, &res, r, max_new, step,
                    weight_version) != 0) {
      sample_batch_truncate(out, n0);
      rc = rfail(err, errlen, 1, "rollout: out of memory for %d samples", n_req);
    }
done:
  free(req);
  free(res.tokens);
  free(res.logprobs);
  free(res.versions);
  free(res.len);
  free(res.finish);
  free(res.mask);
  return rc;
}

/* ---- check against the trainer's forward -------------------------------------- */

/* Recompute with model_forward over packed prompt+response runs of samples [i0, i1) and
 * fold |recorded - recomputed| into *worst. 0 or -1. */
static int diff_chunk(struct model *m, const struct sample_batch *b, int i0, int i1, int *tok,
                      int *cu, float *lp, int64_t only, double *worst) {
  cu[0] = 0;
  for (int i = i0; i < i1; i++) {
    const struct sample *s = &b->s[i];
    int *t = tok + cu[i - i0];
    memcpy(t, s->prompt, sizeof(int) * (size_t)s->n_prompt);
    memcpy(t + s->n_prompt, s->resp, sizeof(int) * (size_t)s->n_resp);
    cu[i - i0 + 1] = cu[i - i0] + s->n_prompt + s->n_resp;
  }
  if (model_forward(m, tok, cu, i1 - i0, lp, NULL, NULL) != 0) return -1;
  for (int i = i0; i < i1; i++) {
    const struct sample *s = &b->s[i];
    /* logprob of response token j sits at the position before it */
    const float *row = lp + cu[i - i0] + s->n_prompt - 1;
    for (int j = 0; j < s->n_resp && s->logprobs; j++) {
      if (!sample_tok_trained(s, j)) continue;  /* a tool token was never sampled */
      int64_t v = s->tok_version ? s->tok_version[j] : s->weight_version;
      if (only >= 0 && v != only) continue;
      double d = fabs((double)s->logprobs[j] - (double)row[j]);
      if (!(d <= *worst)) *worst = d;  /* NaN propagates */
    }
  }
  return 0;
}

double rollout_logprob_diff_max(struct model *m, const struct sample_batch *b) {
  return rollout_logprob_diff_max_of(m, b, -1);
}

double rollout_logprob_diff_max_of(struct model *m, const struct sample_batch *b, int64_t version) {
  int budget = m->max_tokens;
  int *tok = malloc(sizeof(int) * (size_t)budget);
  int *cu = malloc(sizeof(int) * ((size_t)budget + 1));
  float *lp = malloc(sizeof(float) * (size_t)budget);
  double worst = 0;
  if (!tok || !cu || !lp) worst = INFINITY;
  for (int i0 = 0; i0 < b->n && isfinite(worst);) {
    int i1 = i0, used = 0;
    while (i1 < b->n && used + b->s[i1].n_prompt + b->s[i1].n_resp <= budget) {
      used += b->s[i1].n_prompt + b->s[i1].n_resp;
      i1++;
    }
    if (i1 == i0 || diff_chunk(m, b, i0, i1, tok, cu, lp, version, &worst) != 0) worst = INFINITY;
    i0 = i1;
  }
  free(tok);
  free(cu);
  free(lp);
  return worst;
}
