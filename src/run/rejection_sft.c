/* run/rejection_sft.c: rejection-sampling fine-tuning (run/rejection_sft.h). */
#include "run/rejection_sft.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi/wait.h"
#include "mpi/xfer.h"
#include "run/eval.h"
#include "run/route.h"
#include "run/run.h"
#include "run/weight_sync.h"
#include "train/trainer.h"
#include "util/alloc.h"
#include "util/error.h"

struct rejection_pool *rejection_pool_new(const struct run *r) {
  if (r->cfg->sft.source != SFT_SOURCE_REJECTION) return NULL;
  struct rejection_pool *p = calloc_check(1, sizeof *p);
  sample_batch_init(&p->kept);
  return p;
}

void rejection_pool_free(struct rejection_pool *p) {
  if (!p) return;
  sample_batch_free(&p->kept);
  free(p);
}

/* The round whose first 0-based step is s, or -1: round k starts at k * steps / rounds. */
static long round_at(const struct config *c, long s) {
  for (long k = 0; k < c->sft.rejection_rounds; k++)
    if (k * c->sft.steps / c->sft.rejection_rounds == s) return k;
  return -1;
}

static int keep(int keep_mode, int correct) {
  return keep_mode == SFT_KEEP_ALL || correct == (keep_mode == SFT_KEEP_CORRECT);
}

/* Rollout ranks: this instance's samples of round k, the kept ones into out. */
static void generate_filter(struct run *r, long k, struct sample_batch *out) {
  const struct config *c = r->cfg;
  long N = c->sft.rejection_prompts;
  int R = r->comms.counts.rollout_instances, i = r->comms.place.instance;
  long lo = route_slice_lo(N, R, i), hi = route_slice_lo(N, R, i + 1);
  if (lo == hi) return;
  struct task_prompt *tps = calloc_check((size_t)(hi - lo), sizeof *tps);
  struct sample_batch gen;
  sample_batch_init(&gen);
  eval_generate_split(r, TASK_TRAIN, k * N + lo, k * N + hi, (int)c->sft.rejection_samples,
                      REJECTION_STEP_KEY(k), tps, &gen);
  int *ok = calloc_check((size_t)gen.n + 1, sizeof *ok);
  eval_correct(r, tps, &gen, ok);
  for (int j = 0; j < gen.n; j++)
    if (keep(c->sft.rejection_keep, ok[j]) && sample_batch_push(out, &gen.s[j]) != 0)
      die_local("out of memory keeping rejection samples");
  free(ok);
  free(tps);
  sample_batch_free(&gen);
}

/* Train ranks: train dp 0's pool to every train rank. */
static void pool_bcast(struct run *r, struct sample_batch *pool) {
  MPI_Comm tc = r->comms.role_comm[ROLE_TRAIN];
  int root = r->comms.world_rank == r->train_world[0];
  unsigned char *buf = NULL;
  size_t len = 0;
  if (root && xfer_encode_batch(pool, &buf, &len) != XFER_OK) die_local("out of memory");
  uint64_t n = len;
  wait_bcast(&n, 1, MPI_UINT64_T, 0, tc);
  if (n > INT_MAX) die_local("a rejection-sampling pool of %llu bytes", (unsigned long long)n);
  if (!root) buf = malloc_check((size_t)n);
  wait_bcast(buf, (int)n, MPI_BYTE, 0, tc);
  char err[256];
  if (!root && xfer_decode_batch(buf, (size_t)n, pool, err, sizeof err) != XFER_OK)
    die_local("the rejection-sampling pool: %s", err);
  free(buf);
}

void rejection_sft_round(struct run *r, struct rejection_pool *p, long s) {
  long k = p ? round_at(r->cfg, s) : -1;
  if (k < 0) return;
  run_sync_weights(r);  /* the policy as it is now generates the round */
  struct sample_batch mine;
  sample_batch_init(&mine);
  long N = r->cfg->sft.rejection_prompts;
  int R = r->comms.counts.rollout_instances, i = r->comms.place.instance;
  if (r->is_rollout && route_slice_lo(N, R, i) < route_slice_lo(N, R, i + 1)) {
    generate_filter(r, k, &mine);
    route_send(r, &mine, r->train_world[0], BOX_SAMPLES, XFER_TAG_SAMPLES);
  }
  if (r->is_train) {
    sample_batch_clear(&p->kept);
    for (int j = 0; r->comms.world_rank == r->train_world[0] && j < R; j++)
      if (route_slice_lo(N, R, j) < route_slice_lo(N, R, j + 1))
        route_recv(r, &p->kept, r->rollout_world[j], BOX_SAMPLES, XFER_TAG_SAMPLES);
    pool_bcast(r, &p->kept);
    p->generated = N * r->cfg->sft.rejection_samples;
    p->fresh = 1;
  }
  if (r->comms.world_rank == r->train_world[0]) {
    const char *kept = (const char *[]){"accepted", "rejected", "generated"}[r->cfg->sft.rejection_keep];
    printf("sft: rejection round %ld of %ld (SFT step %ld): kept %d of %ld samples (the %s ones)\n", k + 1,
           r->cfg->sft.rejection_rounds, s + 1, p->kept.n, p->generated, kept);
    if (p->kept.n == 0 && !p->warned)
      printf("rlpt: WARNING: rejection round %ld kept no sample; its steps train nothing (said once)\n", k + 1);
    p->warned |= p->kept.n == 0;
    fflush(stdout);
  }
  sample_batch_free(&mine);
}

int rejection_sft_batch(const struct rejection_pool *p, struct sft_batch *b, long batch_size, long s,
                        long k0, long n, int max_seq, char *err, size_t errlen) {
  b->nseq = b->n_tok = 0;
  for (long k = k0; p->kept.n > 0 && k < k0 + n; k++) {
    const struct sample *x = &p->kept.s[(s * batch_size + k) % p->kept.n];
    size_t total = (size_t)x->n_prompt + (size_t)x->n_resp;
    if ((long)total > max_seq) {
      snprintf(err, errlen, "a rejection sample of prompt %lld has %zu tokens, more than [model] "
               "max_seq = %d", (long long)x->prompt_id, total, max_seq);
      return 2;
    }
    int *ids = malloc_check(sizeof(int) * (total ? total : 1));
    for (int t = 0; t < x->n_prompt; t++) ids[t] = x->prompt[t];
    for (int t = 0; t < x->n_resp; t++) ids[x->n_prompt + t] = x->resp[t];
    int rc = sft_batch_append(b, ids, (size_t)x->n_prompt, total);
    free(ids);
    if (rc) return 1;
  }
  return 0;
}

void rejection_sft_metrics(struct rejection_pool *p, struct step_metrics *m) {
  if (!p || !p->fresh) return;
  m->sft_generated = (double)p->generated;
  m->sft_kept = (double)p->kept.n;
  p->fresh = 0;
}
