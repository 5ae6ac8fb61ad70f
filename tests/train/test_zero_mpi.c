/* train/test_zero_mpi.c: ZeRO-1 ([optim] zero = 1) gives the replicated update (2 MPI ranks).
 * 1. zero_reduce_scatter / zero_allgather over buckets that cut the shards
 *    (exact sums of small integers; a rank with an empty shard).
 * 2. The same global batch, split over the 2 ranks, for 3 steps with zero = 0 and
 *    zero = 1 (SFT; GRPO with the KL in the loss; PPO with its critic, 2 mini-batches):
 *    every step's loss and grad_norm, the final parameters and the AdamW m and v
 *    (zero = 1's shards gathered) agree within 1e-6 relative (max |a - b| / max |a|):
 *    only the order of the fp64 sum of squares differs (the 2-rank float sums are
 *    the same a + b). The zero = 1 ranks hold identical parameters, and their m and
 *    v have the shard's length (printed: the memory per rank).
 * 3. A gradient with a NaN on one rank: both modes skip on both ranks (params, m,
 *    v and t unchanged, skipped_nonfinite + 1); the next finite update agrees.
 * 4. zero = 1 on one DP rank is zero = 0 (full m and v). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_fixture.h"
#include "testutil.h"
#include "train/zero.h"

#define REL_TOL 1e-6

/* dp_run_make with optim.zero = zero added to the overrides. */
static int run_make(struct dp_run *r, int n_over, char *const *over, int zero, MPI_Comm dp) {
  char zkey[32];
  char *all[8];
  for (int i = 0; i < n_over; i++) all[i] = over[i];
  snprintf(zkey, sizeof zkey, "optim.zero=%d", zero);
  all[n_over] = zkey;
  return dp_run_make(r, n_over + 1, all, dp);
}

static int rank_of(MPI_Comm c) {
  int r;
  MPI_Comm_rank(c, &r);
  return r;
}

/* Every rank holds rank 0's n floats of p. */
static int same_on_all_ranks(const float *p, size_t n) {
  float *other = malloc(sizeof(float) * n);
  memcpy(other, p, sizeof(float) * n);
  MPI_Bcast(other, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  int same = memcmp(other, p, sizeof(float) * n) == 0, all = 0;
  free(other);
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

/* A model's parameters and AdamW moments in both modes: zero = 1's moments
 * gathered from the shards; its m and v hold the shard only. */
static void compare_model(const char *name, MPI_Comm dp, const struct model *m0,
                          const struct model *m1, const struct adamw *o0, const struct adamw *o1) {
  int rank = rank_of(MPI_COMM_WORLD), size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t n = m0->table.total;
  long lo, hi;
  zero_shard((long)n, rank, size, &lo, &hi);
  CHECK(o0->n == (long)n && o1->n == hi - lo);
  long shard_max = o1->n;
  MPI_Allreduce(MPI_IN_PLACE, &shard_max, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  CHECK(same_on_all_ranks(m1->params, n));
  float *fm, *fv;
  CHECK(zero_gather_moments(o1, (long)n, dp, &fm, &fv) == 0);
  double dpar = dp_max_rel_diff(m0->params, m1->params, n), dm = dp_max_rel_diff(o0->m, fm, n);
  double dv = dp_max_rel_diff(o0->v, fv, n);
  if (rank == 0)
    printf("%s: %zu params; AdamW m+v per rank: zero=0 %zu floats (%.1f KB), zero=1 %ld floats "
           "(%.1f KB, largest shard); max rel diff params %.2e m %.2e v %.2e (tol %.0e)\n", name,
           n, 2 * n, 8.0 * (double)n / 1e3, 2 * shard_max, 8.0 * (double)shard_max / 1e3, dpar, dm,
           dv, REL_TOL);
  CHECK(dpar < REL_TOL && dm < REL_TOL && dv < REL_TOL);
  CHECK(o0->t == o1->t && o1->t > 0);
  free(fm);
  free(fv);
}

/* kind 0: SFT; 1: RL with the 6 groups split 3 + 3 over the two ranks. */
static void compare(const char *name, int kind, int n_over, char *const *over) {
  int rank = rank_of(MPI_COMM_WORLD), size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  struct dp_run r[2];
  int rc = 0, per = 6 / size;
  for (int z = 0; z < 2; z++) {
    rc |= run_make(&r[z], n_over, over, z, MPI_COMM_WORLD);
    rc |= kind == 0 ? dp_sft_steps(&r[z]) : dp_rl_steps(&r[z], rank * per, (rank + 1) * per);
  }
  CHECK(rc == 0);
  CHECK(r[0].t.zero == 0 && r[1].t.zero == 1);
  for (int s = 0; s < DP_STEPS; s++) {
    if (rank == 0)
      printf("%s: step %d: loss %.9g vs %.9g, grad_norm %.9g vs %.9g\n", name, s, r[0].loss[s],
             r[1].loss[s], r[0].norm[s], r[1].norm[s]);
    CHECK_NEAR(r[0].loss[s], r[1].loss[s], REL_TOL * fmax(fabs(r[0].loss[s]), 1e-3));
    CHECK_NEAR(r[0].norm[s], r[1].norm[s], REL_TOL * r[0].norm[s]);
  }
  compare_model(name, r[1].t.dp, &r[0].t.policy, &r[1].t.policy, &r[0].t.opt, &r[1].t.opt);
  if (r[0].t.has_critic)
    compare_model("  critic", r[1].t.dp, &r[0].t.critic, &r[1].t.critic, &r[0].t.critic_opt,
                  &r[1].t.critic_opt);
  CHECK(r[0].t.update == r[1].t.update && r[0].t.update > 0);
  for (int z = 0; z < 2; z++) dp_run_free(&r[z]);
}

/* A deterministic gradient of this rank (different on each), with a NaN at
 * index 3 (in rank 0's shard) on rank 1 when poison. */
static void fake_grads(struct model *m, int rank, int poison) {
  for (size_t i = 0; i < m->table.total; i++)
    m->grads[i] = (float)((double)((i * 7 + (size_t)rank * 13) % 29) - 14.0) * 1e-3f;
  if (poison && rank == 1) m->grads[3] = NAN;
}

/* Case 3 on fresh models: a finite update, a poisoned one (skipped alike), a finite one. */
static void nonfinite(void) {
  int rank = rank_of(MPI_COMM_WORLD);
  struct dp_run r[2];
  int rc = 0;
  for (int z = 0; z < 2; z++) rc |= run_make(&r[z], 0, NULL, z, MPI_COMM_WORLD);
  CHECK(rc == 0);
  if (rc) return;
  size_t n = r[0].t.policy.table.total;
  float *p0 = malloc(sizeof(float) * n);
  for (int z = 0; z < 2; z++) {
    struct trainer *t = &r[z].t;
    trainer_begin_sft(t);
    double norm;
    fake_grads(&t->policy, rank, 0);
    CHECK(trainer_update_model(t, &t->policy, &t->opt, 1e-3, &norm) == 1);
    memcpy(p0, t->policy.params, sizeof(float) * n);
    float m3 = t->opt.m[0], v3 = t->opt.v[0];
    long t0 = t->opt.t, sk = t->skipped_nonfinite;
    fake_grads(&t->policy, rank, 1);
    int applied = trainer_update_model(t, &t->policy, &t->opt, 1e-3, &norm);
    CHECK(applied == 0 && !isfinite(norm));
    CHECK(memcmp(p0, t->policy.params, sizeof(float) * n) == 0);
    CHECK(t->opt.m[0] == m3 && t->opt.v[0] == v3 && t->opt.t == t0);
    CHECK(t->skipped_nonfinite == sk + 1);
    fake_grads(&t->policy, rank, 0);
    CHECK(trainer_update_model(t, &t->policy, &t->opt, 1e-3, &norm) == 1);
    if (rank == 0) printf("non-finite: zero=%d skipped on both ranks; next norm %.9g\n", z, norm);
  }
  double d = dp_max_rel_diff(r[0].t.policy.params, r[1].t.policy.params, n);
  if (rank == 0) printf("non-finite: params after skip + 2 updates, max rel diff %.2e\n", d);
  CHECK(d < REL_TOL);
  CHECK(same_on_all_ranks(r[1].t.policy.params, n));
  free(p0);
  for (int z = 0; z < 2; z++) dp_run_free(&r[z]);
}

/* Case 1: n floats in buckets of `bucket` (0: the default). */
static void collectives(long n, size_t bucket) {
  int rank = rank_of(MPI_COMM_WORLD), size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  float *g = malloc(sizeof(float) * (size_t)(n + 1)), *p = malloc(sizeof(float) * (size_t)(n + 1));
  long lo, hi;
  zero_shard(n, rank, size, &lo, &hi);
  for (long i = 0; i < n; i++) {
    g[i] = (float)(i % 17 + rank);
    p[i] = i >= lo && i < hi ? (float)(3 * i + 1) : -1.0f;
  }
  zero_reduce_scatter(g, n, bucket, MPI_COMM_WORLD);
  zero_allgather(p, n, bucket, MPI_COMM_WORLD);
  int bad = 0;
  for (long i = lo; i < hi; i++) bad += g[i] != (float)(size * (i % 17) + size * (size - 1) / 2);
  for (long i = 0; i < n; i++) bad += p[i] != (float)(3 * i + 1);
  CHECK(bad == 0);
  free(g);
  free(p);
}

/* Case 4. */
static void one_rank(void) {
  struct dp_run r;
  CHECK(run_make(&r, 0, NULL, 1, MPI_COMM_SELF) == 0);
  CHECK(r.t.zero == 0 && r.t.opt.n == (long)r.t.policy.table.total);
  dp_run_free(&r);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  collectives(1000, 64);
  collectives(1000, 7);
  collectives(37, 0);
  collectives(5, 0);
  collectives(0, 0);
  compare("sft", 0, 0, NULL);
  char *grpo[] = {"algo.name=grpo", "algo.kl_coef=0.05", "algo.entropy_coef=0.01"};
  compare("grpo (kl in loss)", 1, 3, grpo);
  char *ppo[] = {"algo.name=ppo", "algo.mini_batches=2"};
  compare("ppo (critic, 2 mini-batches)", 1, 2, ppo);
  nonfinite();
  one_rank();
  int fails = tu_failures, all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rc = 0;
  if (rank_of(MPI_COMM_WORLD) == 0) rc = TEST_RESULT("test_zero_mpi");
  MPI_Finalize();
  return all ? 1 : rc;
}
