/* rollout/scheduler.c: the rollout engine's scheduler (see rollout/scheduler.h): decode slots,
 * preemption, admission with prefix sharing, one forward per step, keyed sampling. */
#include "rollout/scheduler.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"
#include "util/rng.h"

struct gseq {
  int kv;      /* kv_cache slot, -1 while not in the cache */
  int n_gen;
  int done;
  int *ctx;    /* [prompt_len + max_new_tokens]: the prompt, then the generated tokens */
};

struct engine {
  const struct gen_config *g;
  const struct lm_ops *lm;
  struct kv_cache *kv;
  const struct gen_request *req;
  int n_req, n_done, max_seqs;
  uint32_t step;
  struct gen_result *out;
  struct gen_stats *st;
  char *err;
  size_t errlen;
  struct gseq *s;
  int *queue, q_head, q_len;  /* circular over n_req slots: waiting and preempted requests */
  int *running, n_running;    /* request ids in admission order, oldest first */
  /* the step being built */
  struct lm_seq *bseq;
  int *brow, *bleader, nb, n_tokens, n_decode;  /* batch row -> request; prefix leader flag */
  int *fol_r, *fol_b, n_fol;  /* followers: request, batch row of its prompt's leader */
  int *hit_r, n_hit;          /* prefix-cache hits with nothing to compute */
  float *hit_logits;          /* [max_seqs][vocab] */
  float *logits;              /* [max_seqs][vocab] forward output; [vocab] with lm->sample */
  struct sampler sm;
  /* the step's draws, in recording order: request, logits source (lm_ops.sample's src), uniform */
  int *draw_r, *draw_src, *draw_tok;
  double *draw_u, *draw_lp;
};

static int fail(struct engine *e, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->err, e->errlen, fmt, ap);
  va_end(ap);
  return code;
}

const char *gen_finish_name(int finish) {
  static const char *names[] = { "running", "eos", "stop", "length" };
  return finish >= 0 && finish <= GEN_LENGTH ? names[finish] : "?";
}

int gen_stop_text(void *ctx, const int *tokens, int n) {
  const struct gen_stop_text *st = ctx;
  size_t ls = strlen(st->stop), len = 0;
  if (ls == 0) return 0;
  char buf[8192];
  int k = n < (int)ls + 8 ? n : (int)ls + 8;
  if (tokenizer_decode(st->tok, tokens + n - k, (size_t)k, buf, sizeof buf, &len) != TOK_OK) {
    k = n < (int)ls ? n : (int)ls;  /* long tokens: the shortest tail that can hold the stop */
    if (tokenizer_decode(st->tok, tokens + n - k, (size_t)k, buf, sizeof buf, &len) != TOK_OK) return 0;
  }
  len = strlen(buf);
  return len >= ls && memcmp(buf + len - ls, st->stop, ls) == 0;
}

void gen_config_from_deck(struct gen_config *g, const struct config *cfg) {
  memset(g, 0, sizeof *g);
  g->sp.temperature = cfg->rollout.temperature;
  g->sp.top_k = cfg->rollout.top_k;
  g->sp.top_p = cfg->rollout.top_p;
  g->max_new_tokens = (int)cfg->rollout.max_new_tokens;
  g->max_num_seqs = (int)cfg->rollout.max_num_seqs;
  g->max_batch_tokens = (int)cfg->rollout.max_batch_tokens;
  g->scheduling = cfg->rollout.scheduling;
  g->prefix_sharing = cfg->rollout.prefix_sharing;
  g->eos_id = -1;
  g->seed = (uint64_t)cfg->run.seed;
}

/* ---- queue and running list ------------------------------------------------ */

static void q_pop(struct engine *e) {
  e->q_head = (e->q_head + 1) % e->n_req;
  e->q_len--;
}

static void q_push_front(struct engine *e, int r) {
  e->q_head = (e->q_head + e->n_req - 1) % e->n_req;
  e->queue[e->q_head] = r;
  e->q_len++;
}

struct order_ent { int len, idx; };

static int longest_cmp(const void *a, const void *b) {
  const struct order_ent *x = a, *y = b;
  if (x->len != y->len) return x->len > y->len ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);  /* stable: request order on ties */
}

static int queue_init(struct engine *e) {
  struct order_ent *o = malloc((size_t)e->n_req * sizeof *o);
  if (!o) return -1;
  for (int i = 0; i < e->n_req; i++) o[i] = (struct order_ent){ e->req[i].prompt_len, i };
  if (e->g->scheduling == ROLLOUT_LONGEST_FIRST) qsort(o, (size_t)e->n_req, sizeof *o, longest_cmp);
  for (int i = 0; i < e->n_req; i++) e->queue[i] = o[i].idx;
  free(o);
  e->q_head = 0;
  e->q_len = e->n_req;
  return 0;
}

/* Free r's blocks and put it back at the front of the queue; its tokens are kept. */
static void preempt(struct engine *e, int r) {
  kv_seq_free(e->kv, e->s[r].kv);
  e->s[r].kv = -1;
  q_push_front(e, r);
  e->st->preemptions++;
}

static void batch_add(struct engine *e, int r, int cached, int feed, int leader) {
  e->bseq[e->nb] = (struct lm_seq){ .seq = e->s[r].kv, .tokens = e->s[r].ctx + cached,
                                     .n = feed, .pos0 = cached, .block_table = NULL };
  e->brow[e->nb] = r;
  e->bleader[e->nb] = leader;
  e->nb++;
  e->n_tokens += feed;
}

/* ---- scheduling ------------------------------------------------------------ */

/* One KV slot per running sequence for its last sampled token. Out of blocks: evict prefix
 * entries, then preempt the newest running sequence (possibly the one asking). Returns 1
 * when something was preempted. */
static int schedule_decodes(struct engine *e) {
  int preempted = 0;
  for (int i = 0; i < e->n_running; i++) {
    int r = e->running[i], victim = -1;
    while (kv_seq_append(e->kv, e->s[r].kv, 1) != 0) {
      if (kv_prefix_evict_lru(e->kv)) continue;
      victim = e->running[--e->n_running];
      preempt(e, victim);
      preempted = 1;
      if (victim == r) break;
    }
    if (victim == r) break;
    int pos = e->req[r].prompt_len + e->s[r].n_gen - 1;
    batch_add(e, r, pos, 1, 0);
  }
  e->n_decode = e->nb;
  return preempted;
}

static int same_prompt(const struct gen_request *a, const struct gen_request *b) {
  return a->prompt_len == b->prompt_len &&
         (a->prompt == b->prompt || memcmp(a->prompt, b->prompt, (size_t)a->prompt_len * sizeof(int)) == 0);
}

/* Batch row of this step's prefix leader for r's prompt, or -1. */
static int leader_row(const struct engine *e, int r) {
  for (int b = e->n_decode; b < e->nb; b++)
    if (e->bleader[b] && same_prompt(&e->req[e->brow[b]], &e->req[r])) return b;
  return -1;
}

static void admitted(struct engine *e, int r, int total, int feed) {
  e->running[e->n_running++] = r;
  e->st->prefill_requested += total;
  e->st->prefill_computed += feed;
}

/* Admit request r (prompt + its n_gen tokens, n_gen > 0 after a preemption). 1 admitted,
 * 0 cannot now (admission stops: the queue order is kept). */
static int admit_one(struct engine *e, int r) {
  struct gseq *q = &e->s[r];
  const struct gen_request *rq = &e->req[r];
  int P = rq->prompt_len, total = P + q->n_gen, share = e->g->prefix_sharing;
  if (share) {
    int lb = leader_row(e, r);
    if (lb >= 0) {  /* forks the leader's blocks after the forward */
      if (q->n_gen > 0) return 0;
      e->fol_r[e->n_fol] = r;
      e->fol_b[e->n_fol++] = lb;
      admitted(e, r, total, 0);
      return 1;
    }
  }
  int cached = (share && kv_prefix_has(e->kv, rq->prompt, P)) ? P : 0, feed = total - cached;
  if (feed > e->g->max_batch_tokens - e->n_tokens) return 0;
  int slot;
  if (cached) {
    const float *lg;
    if ((slot = kv_prefix_lookup(e->kv, rq->prompt, P, &lg)) < 0) return 0;
    if (feed == 0) {
      memcpy(e->hit_logits + (size_t)e->n_hit * e->lm->vocab, lg, (size_t)e->lm->vocab * sizeof *lg);
      e->hit_r[e->n_hit++] = r;
    }
  } else if ((slot = kv_seq_new(e->kv)) < 0) {
    return 0;
  }
  q->kv = slot;
  if (feed > 0) {
    while (kv_seq_blocks_needed(e->kv, slot, feed) > kv_blocks_free(e->kv) && kv_prefix_evict_lru(e->kv)) {}
    if (kv_seq_append(e->kv, slot, feed) != 0) {
      kv_seq_free(e->kv, slot);
      q->kv = -1;
      return 0;
    }
    batch_add(e, r, cached, feed, share && q->n_gen == 0);
  }
  admitted(e, r, total, feed);
  return 1;
}

static void admit(struct engine *e) {
  while (e->q_len > 0 && e->n_running < e->max_seqs && admit_one(e, e->queue[e->q_head])) q_pop(e);
}

/* ---- forward and sampling ---------------------------------------------------- */

static int run_forward(struct engine *e) {
  const struct lm_ops *lm = e->lm;
  for (int b = 0; b < e->nb; b++) e->bseq[b].block_table = e->kv->seqs[e->bseq[b].seq].blocks;
  struct lm_batch batch = { .kv = e->kv, .n_seqs = e->nb, .n_tokens = e->n_tokens,
                            .seqs = e->bseq, .all_logits = 0 };
  if (lm->forward(lm->ctx, &batch, lm->sample ? NULL : e->logits) != 0)
    return fail(e, 1, "rollout: the model's forward failed on a batch of %d sequences, %d tokens",
                e->nb, e->n_tokens);
  /* Leaders publish their prompt; same-step followers fork it. */
  for (int b = e->n_decode; b < e->nb; b++) {
    if (!e->bleader[b]) continue;
    const struct gen_request *rq = &e->req[e->brow[b]];
    const float *row = e->logits + (lm->sample ? 0 : (size_t)b * lm->vocab);
    if (lm->sample && lm->logits_row(lm->ctx, b, e->logits) != 0)
      return fail(e, 1, "rollout: copying the logits of prompt %u to the host failed", rq->prompt_id);
    if (kv_prefix_insert(e->kv, e->bseq[b].seq, rq->prompt, rq->prompt_len, row) != 0)
      return fail(e, 1, "rollout: out of memory in the prefix cache");
  }
  for (int f = 0; f < e->n_fol; f++)
    if ((e->s[e->fol_r[f]].kv = kv_seq_fork(e->kv, e->bseq[e->fol_b[f]].seq)) < 0)
      return fail(e, 1, "rollout: no free KV sequence slot for a fork");
  return 0;
}

static int finish_reason(const struct engine *e, const int *gen, int n) {
  const struct gen_config *g = e->g;
  if (g->eos_id >= 0 && gen[n - 1] == g->eos_id) return GEN_EOS;
  for (int k = 0; k < g->n_stop; k++) {
    int L = g->stop_len[k];
    if (L > 0 && n >= L && memcmp(gen + n - L, g->stop[k], (size_t)L * sizeof *gen) == 0) return GEN_STOP;
  }
  if (g->stop_fn && g->stop_fn(g->stop_ctx, gen, n)) return GEN_STOP;
  if (n >= g->max_new_tokens) return GEN_LENGTH;
  return GEN_RUNNING;
}

/* Queue a draw for request r from logits source src (lm_ops.sample's src), with the uniform
 * of its key: a sample's tokens never depend on what shares its step. */
static void draw_add(struct engine *e, int *n, int r, int src) {
  const struct gen_request *rq = &e->req[r];
  struct rng_key key = { .seed = e->g->seed, .stream = RNG_STREAM_SAMPLE, .step = e->step,
                         .prompt = rq->prompt_id, .sample = rq->sample,
                         .pos = (uint32_t)e->s[r].n_gen };
  e->draw_r[*n] = r;
  e->draw_src[*n] = src;
  e->draw_u[*n] = rng_uniform(&key);
  (*n)++;
}

/* Record r's drawn token; finish (and free) when it ends the response. */
static int record(struct engine *e, int r, int tok, double lp) {
  struct gseq *q = &e->s[r];
  const struct gen_request *rq = &e->req[r];
  if (tok < 0)
    return fail(e, 1, "rollout: non-finite logits for prompt %u sample %u at response position %d",
                rq->prompt_id, rq->sample, q->n_gen);
  size_t o = (size_t)r * e->g->max_new_tokens + q->n_gen;
  e->out->tokens[o] = tok;
  e->out->logprobs[o] = (float)lp;
  q->ctx[rq->prompt_len + q->n_gen++] = tok;
  int fin = finish_reason(e, q->ctx + rq->prompt_len, q->n_gen);
  if (fin != GEN_RUNNING) {
    e->out->finish[r] = fin;
    e->out->len[r] = q->n_gen;
    q->done = 1;
    kv_seq_free(e->kv, q->kv);
    q->kv = -1;
    e->n_done++;
  }
  return 0;
}

/* Every scheduled sequence draws its next token: batch rows, followers (from their
 * leader's row), prefix hits (from the cached host row); on the model's side when it
 * samples there (lm_ops.sample), else here. */
static int sample_step(struct engine *e) {
  const struct lm_ops *lm = e->lm;
  int V = lm->vocab, rc = 0, nd = 0;
  for (int b = 0; b < e->nb; b++) draw_add(e, &nd, e->brow[b], b);
  for (int f = 0; f < e->n_fol; f++) draw_add(e, &nd, e->fol_r[f], e->fol_b[f]);
  for (int h = 0; h < e->n_hit; h++) draw_add(e, &nd, e->hit_r[h], -1 - h);
  if (lm->sample) {
    if (nd > 0 && lm->sample(lm->ctx, nd, e->draw_src, e->hit_logits, &e->g->sp, e->draw_u,
                             e->draw_tok, e->draw_lp) != 0)
      return fail(e, 1, "rollout: the model's sampling failed on %d sequences", nd);
  } else {
    for (int i = 0; i < nd; i++) {
      int src = e->draw_src[i];
      const float *lg = src >= 0 ? e->logits + (size_t)src * V : e->hit_logits + (size_t)(-1 - src) * V;
      e->draw_tok[i] = sampler_sample(&e->sm, lg, &e->g->sp, e->draw_u[i], &e->draw_lp[i]);
    }
  }
  for (int i = 0; i < nd && !rc; i++) rc = record(e, e->draw_r[i], e->draw_tok[i], e->draw_lp[i]);
  int n = 0;  /* finished sequences leave the running list, order kept */
  for (int i = 0; i < e->n_running; i++)
    if (!e->s[e->running[i]].done) e->running[n++] = e->running[i];
  e->n_running = n;
  return rc;
}

/* ---- setup and the step loop ------------------------------------------------- */

/* Requests that could never run (pool or token budget too small for one alone) are bad input. */
static int check_requests(struct engine *e) {
  const struct gen_config *g = e->g;
  const struct kv_cache *kv = e->kv;
  if (g->max_new_tokens < 1 || g->max_num_seqs < 1 || g->max_batch_tokens < 1)
    return fail(e, 2, "rollout: max_new_tokens, max_num_seqs and max_batch_tokens must be >= 1");
  if (kv->max_seqs < e->max_seqs)
    return fail(e, 1, "rollout: KV cache has %d sequence slots, the engine needs %d", kv->max_seqs, e->max_seqs);
  if (g->prefix_sharing && kv->n_logits != e->lm->vocab)
    return fail(e, 1, "rollout: prefix cache keeps %d logits, the model has vocab %d", kv->n_logits, e->lm->vocab);
  for (int r = 0; r < e->n_req; r++) {
    /* Longest recompute after a preemption: the prompt and all but the last generated token. */
    int P = e->req[r].prompt_len, most = P + g->max_new_tokens - 1;
    int blocks = (most + kv->L.block_size - 1) / kv->L.block_size;
    if (P < 1)
      return fail(e, 2, "rollout: prompt %u has no tokens", e->req[r].prompt_id);
    if (most > g->max_batch_tokens)
      return fail(e, 2, "rollout: prompt %u (%d tokens) + max_new_tokens %d - 1 exceeds "
                  "[rollout] max_batch_tokens = %d", e->req[r].prompt_id, P, g->max_new_tokens,
                  g->max_batch_tokens);
    if (blocks > kv->n_blocks)
      return fail(e, 2, "rollout: prompt %u (%d tokens) + max_new_tokens %d needs %d KV blocks, "
                  "the pool ([rollout] kv_cache_mb) holds %d", e->req[r].prompt_id, P,
                  g->max_new_tokens, blocks, kv->n_blocks);
  }
  return 0;
}

static void engine_free(struct engine *e) {
  if (e->s)
    for (int r = 0; r < e->n_req; r++) {
      if (e->s[r].kv >= 0) kv_seq_free(e->kv, e->s[r].kv);
      free(e->s[r].ctx);
    }
  free(e->s);
  free(e->queue);
  free(e->running);
  free(e->bseq);
  free(e->brow);
  free(e->bleader);
  free(e->fol_r);
  free(e->fol_b);
  free(e->hit_r);
  free(e->hit_logits);
  free(e->logits);
  free(e->draw_r);
  free(e->draw_src);
  free(e->draw_tok);
  free(e->draw_u);
  free(e->draw_lp);
  sampler_free(&e->sm);
}

static int engine_alloc(struct engine *e) {
  size_t m = (size_t)e->max_seqs, V = (size_t)e->lm->vocab;
  e->s = calloc((size_t)e->n_req, sizeof *e->s);
  e->queue = malloc((size_t)e->n_req * sizeof *e->queue);
  e->running = malloc(m * sizeof *e->running);
  e->bseq = malloc(m * sizeof *e->bseq);
  e->brow = malloc(m * sizeof *e->brow);
  e->bleader = malloc(m * sizeof *e->bleader);
  e->fol_r = malloc(m * sizeof *e->fol_r);
  e->fol_b = malloc(m * sizeof *e->fol_b);
  e->hit_r = malloc(m * sizeof *e->hit_r);
  e->hit_logits = malloc(m * V * sizeof *e->hit_logits);
  e->logits = malloc((e->lm->sample ? 1 : m) * V * sizeof *e->logits);
  e->draw_r = malloc(m * sizeof *e->draw_r);
  e->draw_src = malloc(m * sizeof *e->draw_src);
  e->draw_tok = malloc(m * sizeof *e->draw_tok);
  e->draw_u = malloc(m * sizeof *e->draw_u);
  e->draw_lp = malloc(m * sizeof *e->draw_lp);
  if ((!e->lm->sample && sampler_init(&e->sm, e->lm->vocab) != 0) || !e->s || !e->queue ||
      !e->running || !e->bseq || !e->brow || !e->bleader || !e->fol_r || !e->fol_b || !e->hit_r ||
      !e->hit_logits || !e->logits || !e->draw_r || !e->draw_src || !e->draw_tok || !e->draw_u ||
      !e->draw_lp)
    return -1;
  for (int r = 0; r < e->n_req; r++) {
    const struct gen_request *rq = &e->req[r];
    e->s[r].kv = -1;
    if (!(e->s[r].ctx = malloc((size_t)(rq->prompt_len + e->g->max_new_tokens) * sizeof(int)))) return -1;
    memcpy(e->s[r].ctx, rq->prompt, (size_t)rq->prompt_len * sizeof(int));
  }
  return queue_init(e);
}

static int engine_loop(struct engine *e) {
  while (e->n_done < e->n_req) {
    e->nb = e->n_tokens = e->n_fol = e->n_hit = 0;
    int preempted = schedule_decodes(e);
    if (!preempted) admit(e);
    if (e->nb + e->n_fol + e->n_hit == 0 && !preempted)
      return fail(e, 1, "rollout: no request could be scheduled (%d waiting, %d running, %d free blocks)",
                  e->q_len, e->n_running, kv_blocks_free(e->kv));
    int rc = e->nb > 0 ? run_forward(e) : 0;
    if (rc) return rc;
    e->st->steps++;
    e->st->decode_tokens += e->n_decode;
    if ((rc = sample_step(e)) != 0) return rc;
  }
  return 0;
}

int gen_run(const struct gen_config *g, const struct lm_ops *lm, struct kv_cache *kv,
            uint64_t weight_version, uint32_t step, const struct gen_request *req, int n_req,
            struct gen_result *out, struct gen_stats *st, char *err, size_t errlen) {
  struct engine e = { .g = g, .lm = lm, .kv = kv, .req = req, .n_req = n_req, .step = step,
                      .out = out, .st = st, .err = err, .errlen = errlen };
  e.max_seqs = g->max_num_seqs < g->max_batch_tokens ? g->max_num_seqs : g->max_batch_tokens;
  memset(st, 0, sizeof *st);
  if (n_req == 0) return 0;
  int rc = check_requests(&e);
  if (rc) return rc;
  kv_set_version(kv, weight_version);
  struct kv_stats k0 = kv->stats;
  kv->stats.blocks_used_max = kv->n_blocks - kv_blocks_free(kv);
  if (engine_alloc(&e) != 0) rc = fail(&e, 1, "rollout: out of memory for %d requests", n_req);
  if (!rc) rc = engine_loop(&e);
  st->prefix_hits = kv->stats.prefix_hits - k0.prefix_hits;
  st->cow_copies = kv->stats.cow_copies - k0.cow_copies;
  st->blocks_used_max = kv->stats.blocks_used_max;
  st->n_blocks = kv->n_blocks;
  engine_free(&e);
  return rc;
}
