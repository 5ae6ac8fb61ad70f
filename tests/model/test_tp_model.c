/* model/test_tp_model.c: the tensor-parallel transformer (model/tp.h, model_create_tp) on
 * every rank of MPI_COMM_WORLD as one TP group, against the one-rank model on each rank.
 *
 * A tiny model (GQA with kv heads split across the group, q/k/v biases; tied and untied
 * embeddings; logit chunks smaller than the batch) with random weights, norms and biases
 * moved off their init values; the TP model gets its shards of the same weights
 * (tp_scatter). Checked:
 *   - tp_gather(tp_scatter(x)) == x exactly, and tp_sumsq == the full sum of squares
 *     within 1e-12 relative (double sums in another order);
 *   - forward logprobs and entropies of three packed sequences: max |tp - ref| / max |ref|
 *     <= 1e-5 (the all-reduces and the split reductions round differently in fp32);
 *   - the gradient of L = sum w lp + c H, gathered to the full layout, per tensor within
 *     1e-5 of the tensor's max |ref| (tu_rel_err); norms' gradients equal on every rank.
 * Run on 2 ranks (and 4 where the sizes divide: heads 4, kv_heads 2 do not split 4 ways, so
 * only 2). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/tp.h"
#include "testutil.h"
#include "util/rng.h"

#define TOL_FWD 1e-5
#define TOL_GRAD 1e-5

static const int cu[] = {0, 5, 12, 15};
enum { NSEQ = 3, T = 15 };

static struct model_config tiny(int tied) {
  struct model_config mc = { .vocab_size = 24, .dim = 16, .layers = 2, .heads = 4, .kv_heads = 2,
                             .ffn_dim = 24, .max_seq = 16, .rope_theta = 10000.0, .norm_eps = 1e-5,
                             .init_std = 0.3, .tie_embeddings = tied, .qkv_bias = 1 };
  mc.head_dim = mc.dim / mc.heads;
  return mc;
}

static void perturb(struct model *m, struct rng_seq *s) {
  for (int i = 0; i < m->table.n; i++) {
    const struct param_entry *e = &m->table.e[i];
    if (param_split(e->kind) == SPLIT_NONE || e->kind == P_BQ || e->kind == P_BK || e->kind == P_BV)
      for (size_t j = 0; j < e->numel; j++) m->params[e->offset + j] += 0.3f * (float)rng_seq_normal(s);
  }
}

static void check_maps(const struct tp_group *g, const struct model *ref, const struct model *tp) {
  size_t n = ref->table.total;
  float *back = malloc(sizeof(float) * n);
  tp_gather(g, &ref->table, back, &tp->table, tp->params);
  CHECK(memcmp(back, ref->params, sizeof(float) * n) == 0);
  double full = 0.0, part = tp_sumsq(g, &tp->table, tp->params);
  for (size_t i = 0; i < n; i++) full += (double)ref->params[i] * ref->params[i];
  CHECK_NEAR(part / full, 1.0, 1e-12);
  free(back);
}

static void check_grads(const struct tp_group *g, const struct model *ref, const struct model *tp,
                        int tied) {
  float *full = malloc(sizeof(float) * ref->table.total);
  tp_gather(g, &ref->table, full, &tp->table, tp->grads);
  double worst = 0.0;
  for (int i = 0; i < ref->table.n; i++) {
    const struct param_entry *e = &ref->table.e[i];
    double err = tu_rel_err(full + e->offset, ref->grads + e->offset, e->numel);
    CHECK_MSG(err <= TOL_GRAD, "tied %d: gradient of %s: relative error %.3g", tied, e->name, err);
    worst = err > worst ? err : worst;
    if (param_split(e->kind) != SPLIT_NONE) continue;
    /* a replicated tensor's gradient: the same bits on every rank */
    const struct param_entry *le = &tp->table.e[i];
    float *r0 = malloc(sizeof(float) * le->numel);
    memcpy(r0, tp->grads + le->offset, sizeof(float) * le->numel);
    MPI_Bcast(r0, (int)le->numel, MPI_FLOAT, 0, g->comm);
    CHECK_MSG(memcmp(r0, tp->grads + le->offset, sizeof(float) * le->numel) == 0,
              "%s: replicated gradient differs between ranks", e->name);
    free(r0);
  }
  if (g->rank == 0) printf("tied %d: worst gradient relative error %.3g\n", tied, worst);
  free(full);
}

static void run_case(const struct tp_group *g, int tied) {
  struct model_config mc = tiny(tied);
  struct model ref, tp;
  CHECK(model_create(&ref, &mc, T, &cpu_backend) == 0);
  CHECK(model_create_tp(&tp, &mc, T, &cpu_backend, g) == 0);
  ref.logit_chunk = tp.logit_chunk = 4;  /* several chunks: the held last one and recomputed ones */
  struct rng_seq s;
  rng_seq_init(&s, 11, RNG_STREAM_TEST, (uint32_t)tied, 0);
  model_init_params(&ref, 5);
  perturb(&ref, &s);
  tp_scatter(g, &ref.table, ref.params, &tp.table, tp.params);
  check_maps(g, &ref, &tp);
  int tokens[T];
  float w[T], c[T], lp[2][T], ent[2][T];
  for (int t = 0; t < T; t++) {
    tokens[t] = (int)rng_seq_below(&s, (uint64_t)mc.vocab_size);
    w[t] = (float)rng_seq_normal(&s);
    c[t] = 0.3f * (float)rng_seq_normal(&s);
  }
  CHECK(model_forward(&ref, tokens, cu, NSEQ, lp[0], ent[0], NULL) == 0);
  CHECK(model_forward(&tp, tokens, cu, NSEQ, lp[1], ent[1], NULL) == 0);
  double elp = tu_rel_err(lp[1], lp[0], T), eent = tu_rel_err(ent[1], ent[0], T);
  CHECK_MSG(elp <= TOL_FWD, "tied %d: logprob relative error %.3g", tied, elp);
  CHECK_MSG(eent <= TOL_FWD, "tied %d: entropy relative error %.3g", tied, eent);
  if (g->rank == 0) printf("tied %d: logprob error %.3g, entropy error %.3g\n", tied, elp, eent);
  model_zero_grad(&ref);
  model_zero_grad(&tp);
  model_backward(&ref, w, c, NULL);
  model_backward(&tp, w, c, NULL);
  check_grads(g, &ref, &tp, tied);
  model_free(&ref);
  model_free(&tp);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  struct tp_group g;
  tp_group_init(&g, MPI_COMM_WORLD);
  run_case(&g, 1);
  run_case(&g, 0);
  struct model bad;
  struct model_config mc = tiny(1);
  mc.kv_heads = 1;  /* one kv head does not split */
  if (g.size > 1) CHECK(model_create_tp(&bad, &mc, T, &cpu_backend, &g) == -1);
  int fails = tu_failures, all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  tu_failures = all;
  int rc = g.rank == 0 ? TEST_RESULT("test_tp_model") : (all ? 1 : 0);
  MPI_Finalize();
  return rc;
}
