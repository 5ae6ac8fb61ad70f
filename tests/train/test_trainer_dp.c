/* train/test_trainer_dp.c: data parallelism gives the one-rank result (2 MPI ranks).
 * Rank 0 first computes the reference alone (MPI_COMM_SELF, the full batch);
 * then both ranks train the same initial model over MPI_COMM_WORLD with half of
 * each batch. After 3 steps the losses and every parameter must agree within
 * 1e-5 relative (max |a - b| / max |a|): the global divisors make the gradient
 * sum equal to the big batch's gradient; only fp32 summation order differs.
 * Cases: SFT (micro_batch_seqs 5 so micro-batches differ from the halves), GRPO
 * with the KL in the loss (whole groups per rank), REINFORCE++ with the KL in the
 * reward and batch-global whitening, 2 mini-batches x 2 epochs; PPO with its
 * critic (GAE, whitened advantages; the critic's parameters compared too). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_fixture.h"
#include "mpi/allreduce.h"
#include "testutil.h"

#define STEPS DP_STEPS
#define REL_TOL 1e-5

/* kind 0: SFT; 1: RL with the 6 groups split 3 + 3 over the two ranks; 2: RL
 * with every group on rank 0 (rank 1 has no samples but takes part). */
static void compare(const char *name, int kind, int n_over, char *const *over) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  struct dp_run ref, dp;
  int rc = 0;
  if (rank == 0) {
    rc |= dp_run_make(&ref, n_over, over, MPI_COMM_SELF);
    rc |= kind == 0 ? dp_sft_steps(&ref) : dp_rl_steps(&ref, 0, 6);
  }
  rc |= dp_run_make(&dp, n_over, over, MPI_COMM_WORLD);
  int per = 6 / size, g0 = kind == 2 ? (rank ? 6 : 0) : rank * per;
  int g1 = kind == 2 ? 6 : (rank + 1) * per;
  rc |= kind == 0 ? dp_sft_steps(&dp) : dp_rl_steps(&dp, g0, g1);
  CHECK(rc == 0);
  /* every rank holds the same parameters after the update */
  size_t n = dp.t.policy.table.total;
  float *other = malloc(sizeof(float) * n);
  memcpy(other, dp.t.policy.params, sizeof(float) * n);
  MPI_Bcast(other, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  CHECK(memcmp(other, dp.t.policy.params, sizeof(float) * n) == 0);
  if (rank == 0) {
    double d = dp_max_rel_diff(ref.t.policy.params, dp.t.policy.params, n);
    printf("%s: 1 rank vs %d ranks after %d steps: loss %.8g vs %.8g, params max rel diff %.2e "
           "(tol %.0e)\n", name, size, STEPS, ref.loss[STEPS - 1], dp.loss[STEPS - 1], d, REL_TOL);
    for (int s = 0; s < STEPS; s++)
      CHECK_NEAR(ref.loss[s], dp.loss[s], REL_TOL * fmax(fabs(ref.loss[s]), 1e-3));
    CHECK(d < REL_TOL);
    if (ref.t.has_critic) {
      double dc = dp_max_rel_diff(ref.t.critic.params, dp.t.critic.params, ref.t.critic.table.total);
      printf("%s: critic params max rel diff %.2e\n", name, dc);
      CHECK(dc < REL_TOL);
    }
    CHECK(ref.t.update == dp.t.update && ref.t.update > 0);
    dp_run_free(&ref);
  }
  free(other);
  dp_run_free(&dp);
}

/* allreduce_sum_floats over several buckets (1000 floats in buckets of 64, the
 * last one short): every element is the exact sum of small integers. */
static void test_buckets(void) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  float g[1000];
  for (int i = 0; i < 1000; i++) g[i] = (float)(i % 17 + rank);
  allreduce_sum_floats(g, 1000, 64, MPI_COMM_WORLD);
  int bad = 0;
  for (int i = 0; i < 1000; i++) bad += g[i] != (float)(size * (i % 17) + size * (size - 1) / 2);
  CHECK(bad == 0);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  test_buckets();
  char *grpo[] = {"algo.name=grpo", "algo.kl_coef=0.05", "algo.entropy_coef=0.01"};
  char *rpp[] = {"algo.name=reinforce_pp", "algo.kl_coef=0.05", "algo.mini_batches=2",
                 "algo.ppo_epochs=2", "ranks.micro_batch_seqs=4"};
  compare("sft", 0, 0, NULL);
  compare("grpo (kl in loss, entropy bonus)", 1, 3, grpo);
  compare("reinforce++ (kl in reward, global whitening, 2x2 updates)", 1, 5, rpp);
  char *ppo[] = {"algo.name=ppo", "algo.mini_batches=2"};
  compare("ppo (critic, gae, whitened)", 1, 2, ppo);
  compare("reinforce++ with every group on rank 0", 2, 5, rpp);
  int fails = tu_failures, all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  if (rank == 0) rc = TEST_RESULT("test_trainer_dp");
  MPI_Finalize();
  return all ? 1 : rc;
}
