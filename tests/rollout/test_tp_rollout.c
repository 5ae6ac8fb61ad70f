/* rollout/test_tp_rollout.c: the rollout engine on a tensor-parallel model
 * (model_create_forward_tp: every rank of MPI_COMM_WORLD one TP rank of one engine) against
 * the same engine on the one-rank model, on each rank.
 *
 * A tiny model (GQA, kv heads split across the group, q/k/v biases, untied embeddings) with
 * random weights; the TP model holds its shards of the same weights (tp_scatter). Six
 * prompts x G = 3, 8 new tokens, greedy and at temperature 1 (keyed sampling: the same
 * random numbers on every rank and in the reference). Checked:
 *   - the same tokens as the one-rank engine, greedy and sampled (the logits differ by
 *     all-reduce rounding, ~1e-7, far from any tie here), and on every rank of the group;
 *   - recorded logprobs within 1e-5 of the one-rank engine's (the bound);
 *   - rollout_logprob_diff_max of the TP engine's samples against the TP model's own
 *     forward (vocabulary-parallel logprob) <= 1e-5. */
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "model/model.h"
#include "model/tp.h"
#include "rollout/engine.h"
#include "testutil.h"

#define LP_TOL 1e-5
enum { N_PROMPTS = 6, G = 3, MAX_NEW = 8 };

static struct model_config tiny(void) {
  struct model_config mc = { .vocab_size = 48, .dim = 32, .layers = 2, .heads = 4, .kv_heads = 2,
                             .ffn_dim = 48, .max_seq = 32, .rope_theta = 10000.0, .norm_eps = 1e-5,
                             .init_std = 0.4, .tie_embeddings = 0, .qkv_bias = 1 };
  mc.head_dim = mc.dim / mc.heads;
  return mc;
}

static void deck(struct config *cfg) {
  config_defaults(cfg);
  cfg->run.seed = 5;
  cfg->rollout.max_new_tokens = MAX_NEW;
  cfg->rollout.max_num_seqs = 64;
  cfg->rollout.kv_cache_mb = 4;
  cfg->rollout.max_batch_tokens = 512;
  cfg->rollout.block_size = 8;
  cfg->rollout.temperature = 1.0;
  cfg->rollout.top_p = 1.0;
  cfg->rollout.top_k = 0;
  cfg->rollout.stop[0] = '\0';
}

static void generate(struct model *m, const struct config *cfg, const struct rollout_prompt *p,
                     double temperature, struct sample_batch *out) {
  struct rollout_engine *re;
  char err[512] = "";
  CHECK_MSG(rollout_create(&re, m, cfg, NULL, err, sizeof err) == 0, "%s", err);
  rollout_set_sampling(re, temperature, -1, -1);
  CHECK_MSG(rollout_generate(re, p, N_PROMPTS, G, 3, 1, out, NULL, err, sizeof err) == 0, "%s", err);
  rollout_free(re);
}

/* tp's samples against ref's: tokens equal, logprobs within LP_TOL; and equal on every rank. */
static void compare(const struct tp_group *g, const struct sample_batch *ref, const struct sample_batch *tp,
                    const char *what) {
  CHECK(ref->n == tp->n);
  double worst = 0;
  int same = 1;
  for (int i = 0; i < ref->n && i < tp->n; i++) {
    const struct sample *a = &ref->s[i], *b = &tp->s[i];
    same &= a->n_resp == b->n_resp && !memcmp(a->resp, b->resp, sizeof(int32_t) * (size_t)a->n_resp);
    for (int j = 0; j < a->n_resp && j < b->n_resp; j++) {
      double d = fabs((double)a->logprobs[j] - (double)b->logprobs[j]);
      worst = d > worst ? d : worst;
    }
    int32_t first[MAX_NEW + 1] = {0};
    memcpy(first, b->resp, sizeof(int32_t) * (size_t)b->n_resp);
    first[MAX_NEW] = b->n_resp;
    MPI_Bcast(first, MAX_NEW + 1, MPI_INT32_T, 0, g->comm);
    CHECK_MSG(first[MAX_NEW] == b->n_resp && !memcmp(first, b->resp, sizeof(int32_t) * (size_t)b->n_resp),
              "%s: sample %d differs between the group's ranks", what, i);
  }
  CHECK_MSG(same, "%s: TP tokens differ from the one-rank engine's", what);
  CHECK_MSG(worst <= LP_TOL, "%s: logprobs %.3g from the one-rank engine's", what, worst);
  if (g->rank == 0) printf("%s: %d samples, the same tokens, max |logprob diff| %.3g\n", what, tp->n, worst);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  struct tp_group g;
  tp_group_init(&g, MPI_COMM_WORLD);
  struct model_config mc = tiny();
  struct model ref, tp;
  CHECK(model_create_forward(&ref, &mc, 512, &cpu_backend) == 0);
  CHECK(model_create_forward_tp(&tp, &mc, 512, &cpu_backend, &g) == 0);
  model_init_params(&ref, 99);
  tp_scatter(&g, &ref.table, ref.params, &tp.table, tp.params);
  struct config *cfg = calloc(1, sizeof *cfg);
  deck(cfg);
  int tok[N_PROMPTS][6];
  struct rollout_prompt p[N_PROMPTS];
  for (int i = 0; i < N_PROMPTS; i++) {
    for (int t = 0; t < 6; t++) tok[i][t] = (7 * i + 5 * t + 1) % mc.vocab_size;
    p[i] = (struct rollout_prompt){ .prompt_id = 40 + i, .group = i, .tokens = tok[i], .n_tokens = 2 + i % 4 };
  }
  double temps[2] = {0.0, 1.0};
  const char *names[2] = {"greedy", "temperature 1"};
  for (int k = 0; k < 2; k++) {
    struct sample_batch a, b;
    sample_batch_init(&a);
    sample_batch_init(&b);
    generate(&ref, cfg, p, temps[k], &a);
    generate(&tp, cfg, p, temps[k], &b);
    compare(&g, &a, &b, names[k]);
    if (temps[k] == 1.0) {
      double d = rollout_logprob_diff_max(&tp, &b);
      CHECK_MSG(d <= LP_TOL, "TP engine against the TP model's forward: %.3g", d);
    }
    sample_batch_free(&a);
    sample_batch_free(&b);
  }
  free(cfg);
  model_free(&ref);
  model_free(&tp);
  int fails = tu_failures, all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  tu_failures = all;
  int rc = g.rank == 0 ? TEST_RESULT("test_tp_rollout") : (all ? 1 : 0);
  MPI_Finalize();
  return rc;
}
