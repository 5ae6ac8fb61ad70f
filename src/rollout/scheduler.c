/* rollout/scheduler.c: the continuous-batching scheduler that the rollout engine
 * (rollout/engine.c) drives (see rollout/scheduler.h): decode slots, preemption,
 * admission with prefix sharing, one forward per scheduler step, keyed sampling. */
#include "rollout/scheduler.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"
#include "util/rng.h"

/* One request's sequence. */
struct gseq {
  int kv;      /* kv_cache slot, -1 while not in the cache */
  int n_gen;
  int done;
  int *ctx;    /* [prompt_len + max_new_tokens]: the prompt, then the generated tokens */
};

/* The state of one gen_run call: its requests, the waiting queue, the running
 * sequences, the scheduler step being built and its draws. */
struct scheduler {
  const struct gen_config *g;
  const struct lm_ops *lm;
  struct kv_cache *kv;
  const struct gen_request *req;
  int n_req, n_done, max_seqs;
  uint32_t step;
  uint64_t version;           /* of the weights in use (changes with in-flight updates) */
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

static int fail(struct scheduler *sc, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sc->err, sc->errlen, fmt, ap);
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

static void q_pop(struct scheduler *sc) {
  sc->q_head = (sc->q_head + 1) % sc->n_req;
  sc->q_len--;
}

static void q_push_front(struct scheduler *sc, int r) {
  sc->q_head = (sc->q_head + sc->n_req - 1) % sc->n_req;
  sc->queue[sc->q_head] = r;
  sc->q_len++;
}

struct order_ent { int len, idx; };

static int longest_cmp(const void *a, const void *b) {
  const struct order_ent *x = a, *y = b;
  if (x->len != y->len) return x->len > y->len ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);  /* stable: request order on ties */
}

static int queue_init(struct scheduler *sc) {
  struct order_ent *o = malloc((size_t)sc->n_req * sizeof *o);
  if (!o) return -1;
  for (int i = 0; i < sc->n_req; i++)
    o[i] = (struct order_ent){ .len = sc->req[i].prompt_len, .idx = i };
  if (sc->g->scheduling == ROLLOUT_LONGEST_FIRST)
    qsort(o, (size_t)sc->n_req, sizeof *o, longest_cmp);
  for (int i = 0; i < sc->n_req; i++) sc->queue[i] = o[i].idx;
  free(o);
  sc->q_head = 0;
  sc->q_len = sc->n_req;
  return 0;
}

/* Free r's blocks and put it back at the front of the queue; its tokens are kept. */
static void requeue(struct scheduler *sc, int r) {
  kv_seq_free(sc->kv, sc->s[r].kv);
  sc->s[r].kv = -1;
  q_push_front(sc, r);
}

static void preempt(struct scheduler *sc, int r) {
  requeue(sc, r);
  sc->st->preemptions++;
}

/* At a step boundary: new weights from g->update_fn, and what happens to the sequences in
 * flight (scheduler.h, enum gen_in_flight). Newest first back to the queue's front keeps
 * their admission order. */
static int apply_update(struct scheduler *sc) {
  const struct gen_config *g = sc->g;
  uint64_t v = sc->version;
  int got = g->update_fn(g->update_ctx, sc->st->steps, &v);
  if (got < 0) return fail(sc, 1, "rollout: the in-flight weight update failed");
  if (got == 0 || v == sc->version) return 0;
  sc->version = v;
  sc->st->updates++;
  kv_set_version(sc->kv, v);  /* the prefix cache of the old weights is never reused */
  if (g->in_flight == GEN_INFLIGHT_CONTINUE) return 0;
  while (sc->n_running > 0) {
    requeue(sc, sc->running[--sc->n_running]);
    sc->st->requeued++;
  }
  for (int r = 0; g->in_flight == GEN_INFLIGHT_ABORT && r < sc->n_req; r++)
    if (!sc->s[r].done) sc->s[r].n_gen = 0;  /* waiting ones too: no token of the old weights */
  return 0;
}

static void batch_add(struct scheduler *sc, int r, int cached, int feed, int leader) {
  sc->bseq[sc->nb] = (struct lm_seq){ .seq = sc->s[r].kv, .tokens = sc->s[r].ctx + cached,
                                     .n = feed, .pos0 = cached, .block_table = NULL };
  sc->brow[sc->nb] = r;
  sc->bleader[sc->nb] = leader;
  sc->nb++;
  sc->n_tokens += feed;
}

/* ---- scheduling ------------------------------------------------------------ */

/* One KV slot per running sequence for its last sampled token. Out of blocks: evict prefix
 * entries, then preempt the newest running sequence (possibly the one asking). Returns 1
 * when something was preempted. */
static int schedule_decodes(struct scheduler *sc) {
  int preempted = 0;
  for (int i = 0; i < sc->n_running; i++) {
    int r = sc->running[i], victim = -1;
    /* the last sampled token, and after an environment turn its tokens too */
    int have = sc->kv->seqs[sc->s[r].kv].len;
    int feed = sc->req[r].prompt_len + sc->s[r].n_gen - have;
    if (sc->n_tokens + feed > sc->g->max_batch_tokens) continue;  /* waits for a later step */
    while (kv_seq_append(sc->kv, sc->s[r].kv, feed) != 0) {
      if (kv_prefix_evict_lru(sc->kv)) continue;
      victim = sc->running[--sc->n_running];
      preempt(sc, victim);
      preempted = 1;
      if (victim == r) break;
    }
    if (victim == r) break;
    batch_add(sc, r, have, feed, 0);
  }
  sc->n_decode = sc->nb;
  return preempted;
}

static int same_prompt(const struct gen_request *a, const struct gen_request *b) {
  return a->prompt_len == b->prompt_len &&
         (a->prompt == b->prompt || memcmp(a->prompt, b->prompt, (size_t)a->prompt_len * sizeof(int)) == 0);
}

/* Batch row of this step's prefix leader for r's prompt, or -1. */
static int leader_row(const struct scheduler *sc, int r) {
  for (int b = sc->n_decode; b < sc->nb; b++)
    if (sc->bleader[b] && same_prompt(&sc->req[sc->brow[b]], &sc->req[r])) return b;
  return -1;
}

static void admitted(struct scheduler *sc, int r, int total, int feed) {
  sc->running[sc->n_running++] = r;
  sc->st->prefill_requested += total;
  sc->st->prefill_computed += feed;
}

/* Admit request r (prompt + its n_gen tokens, n_gen > 0 after a preemption). 1 admitted,
 * 0 cannot now (admission stops: the queue order is kept). */
static int admit_one(struct scheduler *sc, int r) {
  struct gseq *q = &sc->s[r];
  const struct gen_request *rq = &sc->req[r];
  int P = rq->prompt_len, total = P + q->n_gen, share = sc->g->prefix_sharing;
  if (share) {
    int lb = leader_row(sc, r);
    if (lb >= 0) {  /* forks the leader's blocks after the forward */
      if (q->n_gen > 0) return 0;
      sc->fol_r[sc->n_fol] = r;
      sc->fol_b[sc->n_fol++] = lb;
      admitted(sc, r, total, 0);
      return 1;
    }
  }
  int cached = (share && kv_prefix_has(sc->kv, rq->prompt, P)) ? P : 0, feed = total - cached;
  if (feed > sc->g->max_batch_tokens - sc->n_tokens) return 0;
  int slot;
  if (cached) {
    const float *lg;
    if ((slot = kv_prefix_lookup(sc->kv, rq->prompt, P, &lg)) < 0) return 0;
    if (feed == 0) {
      size_t V = (size_t)sc->lm->vocab;
      memcpy(sc->hit_logits + (size_t)sc->n_hit * V, lg, V * sizeof *lg);
      sc->hit_r[sc->n_hit++] = r;
    }
  } else if ((slot = kv_seq_new(sc->kv)) < 0) {
    return 0;
  }
  q->kv = slot;
  if (feed > 0) {
    while (kv_seq_blocks_needed(sc->kv, slot, feed) > kv_blocks_free(sc->kv) &&
           kv_prefix_evict_lru(sc->kv)) {}
    if (kv_seq_append(sc->kv, slot, feed) != 0) {
      kv_seq_free(sc->kv, slot);
      q->kv = -1;
      return 0;
    }
    batch_add(sc, r, cached, feed, share && q->n_gen == 0);
  }
  admitted(sc, r, total, feed);
  return 1;
}

static void admit(struct scheduler *sc) {
  while (sc->q_len > 0 && sc->n_running < sc->max_seqs && admit_one(sc, sc->queue[sc->q_head]))
    q_pop(sc);
}

/* ---- forward and sampling ---------------------------------------------------- */

static int run_forward(struct scheduler *sc) {
  const struct lm_ops *lm = sc->lm;
  for (int b = 0; b < sc->nb; b++) sc->bseq[b].block_table = sc->kv->seqs[sc->bseq[b].seq].blocks;
  struct lm_batch batch = { .kv = sc->kv, .n_seqs = sc->nb, .n_tokens = sc->n_tokens,
                            .seqs = sc->bseq, .all_logits = 0 };
  if (lm->forward(lm->ctx, &batch, lm->sample ? NULL : sc->logits) != 0)
    return fail(sc, 1, "rollout: the model's forward failed on a batch of %d sequences, %d tokens",
                sc->nb, sc->n_tokens);
  /* Leaders publish their prompt; same-step followers fork it. */
  for (int b = sc->n_decode; b < sc->nb; b++) {
    if (!sc->bleader[b]) continue;
    const struct gen_request *rq = &sc->req[sc->brow[b]];
    const float *row = sc->logits + (lm->sample ? 0 : (size_t)b * lm->vocab);
    if (lm->sample && lm->logits_row(lm->ctx, b, sc->logits) != 0)
      return fail(sc, 1, "rollout: copying the logits of prompt %u to the host failed",
                  rq->prompt_id);
    if (kv_prefix_insert(sc->kv, sc->bseq[b].seq, rq->prompt, rq->prompt_len, row) != 0)
      return fail(sc, 1, "rollout: out of memory in the prefix cache");
  }
  for (int f = 0; f < sc->n_fol; f++)
    if ((sc->s[sc->fol_r[f]].kv = kv_seq_fork(sc->kv, sc->bseq[sc->fol_b[f]].seq)) < 0)
      return fail(sc, 1, "rollout: no free KV sequence slot for a fork");
  return 0;
}

static int finish_reason(const struct scheduler *sc, const int *gen, int n) {
  const struct gen_config *g = sc->g;
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
static void draw_add(struct scheduler *sc, int *n, int r, int src) {
  const struct gen_request *rq = &sc->req[r];
  struct rng_key key = { .seed = sc->g->seed, .stream = RNG_STREAM_SAMPLE, .step = sc->step,
                         .prompt = rq->prompt_id, .sample = rq->sample,
                         .pos = (uint32_t)sc->s[r].n_gen };
  sc->draw_r[*n] = r;
  sc->draw_src[*n] = src;
  sc->draw_u[*n] = rng_uniform(&key);
  (*n)++;
}

/* The environment's turn after r's token: its tokens appended to the response unsampled
 * (mask 0). The finish it implies (GEN_RUNNING: go on), or -1 on failure. */
static int env_turn(struct scheduler *sc, int r) {
  struct gseq *q = &sc->s[r];
  int max_new = sc->g->max_new_tokens, *resp = q->ctx + sc->req[r].prompt_len;
  int k = sc->g->env_fn(sc->g->env_ctx, r, resp, q->n_gen, resp + q->n_gen, max_new - q->n_gen);
  if (k == GEN_ENV_END) return GEN_STOP;
  if (k < 0 || k > max_new - q->n_gen) return -1;
  size_t o = (size_t)r * (size_t)max_new + (size_t)q->n_gen;
  for (int i = 0; i < k; i++) {
    sc->out->tokens[o + (size_t)i] = resp[q->n_gen + i];
    sc->out->logprobs[o + (size_t)i] = 0.0f;
    sc->out->mask[o + (size_t)i] = 0;
    if (sc->out->versions) sc->out->versions[o + (size_t)i] = sc->version;  /* unused: masked */
  }
  q->n_gen += k;
  return q->n_gen >= max_new ? GEN_LENGTH : GEN_RUNNING;
}

/* Record r's drawn token; finish (and free) when it ends the response. */
static int record(struct scheduler *sc, int r, int tok, double lp) {
  struct gseq *q = &sc->s[r];
  const struct gen_request *rq = &sc->req[r];
  if (tok < 0)
    return fail(sc, 1, "rollout: non-finite logits for prompt %u sample %u at response position %d",
                rq->prompt_id, rq->sample, q->n_gen);
  size_t o = (size_t)r * sc->g->max_new_tokens + q->n_gen;
  sc->out->tokens[o] = tok;
  sc->out->logprobs[o] = (float)lp;
  if (sc->out->mask) sc->out->mask[o] = 1;
  if (sc->out->versions) sc->out->versions[o] = sc->version;
  q->ctx[rq->prompt_len + q->n_gen++] = tok;
  int fin = finish_reason(sc, q->ctx + rq->prompt_len, q->n_gen);
  if (fin == GEN_RUNNING && sc->g->env_fn && (fin = env_turn(sc, r)) < 0)
    return fail(sc, 1, "rollout: the environment failed after prompt %u sample %u's token %d",
                rq->prompt_id, rq->sample, q->n_gen);
  if (fin != GEN_RUNNING) {
    sc->out->finish[r] = fin;
    sc->out->len[r] = q->n_gen;
    q->done = 1;
    kv_seq_free(sc->kv, q->kv);
    q->kv = -1;
    sc->n_done++;
  }
  return 0;
}

/* Every scheduled sequence draws its next token: batch rows, followers (from their
 * leader's row), prefix hits (from the cached host row); on the model's side when it
 * samples there (lm_ops.sample), else here. */
static int sample_step(struct scheduler *sc) {
  const struct lm_ops *lm = sc->lm;
  int V = lm->vocab, rc = 0, nd = 0;
  for (int b = 0; b < sc->nb; b++) draw_add(sc, &nd, sc->brow[b], b);
  for (int f = 0; f < sc->n_fol; f++) draw_add(sc, &nd, sc->fol_r[f], sc->fol_b[f]);
  for (int h = 0; h < sc->n_hit; h++) draw_add(sc, &nd, sc->hit_r[h], -1 - h);
  if (lm->sample) {
    if (nd > 0 && lm->sample(lm->ctx, nd, sc->draw_src, sc->hit_logits, &sc->g->sp, sc->draw_u,
                             sc->draw_tok, sc->draw_lp) != 0)
      return fail(sc, 1, "rollout: the model's sampling failed on %d sequences", nd);
  } else {
    for (int i = 0; i < nd; i++) {
      int src = sc->draw_src[i];
      const float *lg = src >= 0 ? sc->logits + (size_t)src * V
                                 : sc->hit_logits + (size_t)(-1 - src) * V;
      sc->draw_tok[i] = sampler_sample(&sc->sm, lg, &sc->g->sp, sc->draw_u[i], &sc->draw_lp[i]);
    }
  }
  for (int i = 0; i < nd && !rc; i++)
    rc = record(sc, sc->draw_r[i], sc->draw_tok[i], sc->draw_lp[i]);
  int n = 0;  /* finished sequences leave the running list, order kept */
  for (int i = 0; i < sc->n_running; i++)
    if (!sc->s[sc->running[i]].done) sc->running[n++] = sc->running[i];
  sc->n_running = n;
  return rc;
}

/* ---- setup and the step loop ------------------------------------------------- */

/* Requests that could never run (pool or token budget too small for one alone) are bad input. */
static int check_requests(struct scheduler *sc) {
  const struct gen_config *g = sc->g;
  const struct kv_cache *kv = sc->kv;
  if (g->max_new_tokens < 1 || g->max_num_seqs < 1 || g->max_batch_tokens < 1)
    return fail(sc, 2, "rollout: max_new_tokens, max_num_seqs and max_batch_tokens must be >= 1");
  if (g->env_fn && !sc->out->mask)
    return fail(sc, 1, "rollout: an environment needs the result's token mask");
  if (kv->max_seqs < sc->max_seqs)
    return fail(sc, 1, "rollout: KV cache has %d sequence slots, the scheduler needs %d",
                kv->max_seqs, sc->max_seqs);
  if (g->prefix_sharing && kv->n_logits != sc->lm->vocab)
    return fail(sc, 1, "rollout: prefix cache keeps %d logits, the model has vocab %d",
                kv->n_logits, sc->lm->vocab);
  for (int r = 0; r < sc->n_req; r++) {
    /* Longest recompute after a preemption: the prompt and all but the last generated token. */
    int P = sc->req[r].prompt_len, most = P + g->max_new_tokens - 1;
    int blocks = (most + kv->L.block_size - 1) / kv->L.block_size;
    if (P < 1)
      return fail(sc, 2, "rollout: prompt %u has no tokens", sc->req[r].prompt_id);
    if (most > g->max_batch_tokens)
      return fail(sc, 2, "rollout: prompt %u (%d tokens) + max_new_tokens %d - 1 exceeds "
                  "[rollout] max_batch_tokens = %d", sc->req[r].prompt_id, P, g->max_new_tokens,
                  g->max_batch_tokens);
    if (blocks > kv->n_blocks)
      return fail(sc, 2, "rollout: prompt %u (%d tokens) + max_new_tokens %d needs %d KV blocks, "
                  "the pool ([rollout] kv_cache_mb) holds %d", sc->req[r].prompt_id, P,
                  g->max_new_tokens, blocks, kv->n_blocks);
  }
  return 0;
}

static void scheduler_free(struct scheduler *sc) {
  if (sc->s)
    for (int r = 0; r < sc->n_req; r++) {
      if (sc->s[r].kv >= 0) kv_seq_free(sc->kv, sc->s[r].kv);
      free(sc->s[r].ctx);
    }
  free(sc->s);
  free(sc->queue);
  free(sc->running);
  free(sc->bseq);
  free(sc->brow);
  free(sc->bleader);
  free(sc->fol_r);
  free(sc->fol_b);
  free(sc->hit_r);
  free(sc->hit_logits);
  free(sc->logits);
  free(sc->draw_r);
  free(sc->draw_src);
  free(sc->draw_tok);
  free(sc->draw_u);
  free(sc->draw_lp);
  sampler_free(&sc->sm);
}

static int scheduler_alloc(struct scheduler *sc) {
  size_t m = (size_t)sc->max_seqs, V = (size_t)sc->lm->vocab;
  sc->s = calloc((size_t)sc->n_req, sizeof *sc->s);
  sc->queue = malloc((size_t)sc->n_req * sizeof *sc->queue);
  sc->running = malloc(m * sizeof *sc->running);
  sc->bseq = malloc(m * sizeof *sc->bseq);
  sc->brow = malloc(m * sizeof *sc->brow);
  sc->bleader = malloc(m * sizeof *sc->bleader);
  sc->fol_r = malloc(m * sizeof *sc->fol_r);
  sc->fol_b = malloc(m * sizeof *sc->fol_b);
  sc->hit_r = malloc(m * sizeof *sc->hit_r);
  sc->hit_logits = malloc(m * V * sizeof *sc->hit_logits);
  sc->logits = malloc((sc->lm->sample ? 1 : m) * V * sizeof *sc->logits);
  sc->draw_r = malloc(m * sizeof *sc->draw_r);
  sc->draw_src = malloc(m * sizeof *sc->draw_src);
  sc->draw_tok = malloc(m * sizeof *sc->draw_tok);
  sc->draw_u = malloc(m * sizeof *sc->draw_u);
  sc->draw_lp = malloc(m * sizeof *sc->draw_lp);
  if ((!sc->lm->sample && sampler_init(&sc->sm, sc->lm->vocab) != 0) || !sc->s || !sc->queue ||
      !sc->running || !sc->bseq || !sc->brow || !sc->bleader || !sc->fol_r || !sc->fol_b ||
      !sc->hit_r || !sc->hit_logits || !sc->logits || !sc->draw_r || !sc->draw_src ||
      !sc->draw_tok || !sc->draw_u || !sc->draw_lp)
    return -1;
  for (int r = 0; r < sc->n_req; r++) {
    const struct gen_request *rq = &sc->req[r];
    sc->s[r].kv = -1;
    sc->s[r].ctx = malloc((size_t)(rq->prompt_len + sc->g->max_new_tokens) * sizeof(int));
    if (!sc->s[r].ctx) return -1;
    memcpy(sc->s[r].ctx, rq->prompt, (size_t)rq->prompt_len * sizeof(int));
  }
  return queue_init(sc);
}

static int scheduler_loop(struct scheduler *sc) {
  while (sc->n_done < sc->n_req) {
    int rc = sc->g->update_fn ? apply_update(sc) : 0;
    if (rc) return rc;
    sc->nb = sc->n_tokens = sc->n_fol = sc->n_hit = 0;
    int preempted = schedule_decodes(sc);
    if (!preempted) admit(sc);
    if (sc->nb + sc->n_fol + sc->n_hit == 0 && !preempted)
      return fail(sc, 1,
                  "rollout: no request could be scheduled (%d waiting, %d running, %d free blocks)",
                  sc->q_len, sc->n_running, kv_blocks_free(sc->kv));
    rc = sc->nb > 0 ? run_forward(sc) : 0;
    if (rc) return rc;
    sc->st->steps++;
    sc->st->decode_tokens += sc->n_decode;
    if ((rc = sample_step(sc)) != 0) return rc;
  }
  return 0;
}

int gen_run(const struct gen_config *g, const struct lm_ops *lm, struct kv_cache *kv,
            uint64_t weight_version, uint32_t step, const struct gen_request *req, int n_req,
            struct gen_result *out, struct gen_stats *st, char *err, size_t errlen) {
  struct scheduler sc = { .g = g, .lm = lm, .kv = kv, .req = req, .n_req = n_req, .step = step,
                      .version = weight_version, .out = out, .st = st, .err = err, .errlen = errlen };
  sc.max_seqs = g->max_num_seqs < g->max_batch_tokens ? g->max_num_seqs : g->max_batch_tokens;
  memset(st, 0, sizeof *st);
  if (n_req == 0) return 0;
  int rc = check_requests(&sc);
  if (rc) return rc;
  kv_set_version(kv, weight_version);
  struct kv_stats k0 = kv->stats;
  kv->stats.blocks_used_max = kv->n_blocks - kv_blocks_free(kv);
  if (scheduler_alloc(&sc) != 0) rc = fail(&sc, 1, "rollout: out of memory for %d requests", n_req);
  if (!rc) rc = scheduler_loop(&sc);
  st->prefix_hits = kv->stats.prefix_hits - k0.prefix_hits;
  st->cow_copies = kv->stats.cow_copies - k0.cow_copies;
  st->blocks_used_max = kv->stats.blocks_used_max;
  st->n_blocks = kv->n_blocks;
  scheduler_free(&sc);
  return rc;
}
