/* test_trainer_dp.c: data parallelism gives the one-rank result (2 MPI ranks).
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

#include "allreduce.h"
#include "config.h"
#include "tasks.h"
#include "testutil.h"
#include "tokenizer.h"
#include "trainer.h"

#define STEPS 3
#define REL_TOL 1e-5

static const char *deck_tiny =
    "[run]\nseed = 11\nsteps = 5\n"
    "[model]\ndim = 32\nlayers = 2\nheads = 4\nkv_heads = 2\nffn_dim = 64\nmax_seq = 32\n"
    "[optim]\nlr = 3e-3\ngrad_clip = 1.0\n"
    "[task]\nname = arith\ndigits_min = 1\ndigits_max = 2\n"
    "[sft]\nsteps = 3\nbatch_size = 12\nlr = 3e-3\n"
    "[ranks]\nmicro_batch_seqs = 5\n";

struct run {
  struct config cfg;
  struct model_config mc;
  struct tokenizer tok;
  struct task task;
  struct trainer t;
  double loss[STEPS];
};

static int run_make(struct run *r, int n_over, char *const *over, MPI_Comm dp) {
  char err[512];
  memset(r, 0, sizeof *r);
  tokenizer_init_char(&r->tok);
  if (config_parse(&r->cfg, "tiny.ini", deck_tiny, n_over, over, err, sizeof err) ||
      model_config_from_deck(&r->mc, &r->cfg, r->tok.vocab_size, err, sizeof err) ||
      task_init(&r->task, &r->cfg, err, sizeof err) ||
      trainer_create(&r->t, &r->cfg, &r->mc, 256, dp, err, sizeof err)) {
    fprintf(stderr, "setup: %s\n", err);
    return 1;
  }
  return 0;
}

static void run_free(struct run *r) {
  trainer_free(&r->t);
  tokenizer_free(&r->tok);
}

static int sft_steps(struct run *r) {
  struct sft_batch b;
  sft_batch_init(&b);
  char err[256];
  long k0, n;
  trainer_sft_share(r->cfg.sft.batch_size, r->t.dp_rank, r->t.dp_size, &k0, &n);
  trainer_begin_sft(&r->t);
  int rc = 0;
  for (long s = 0; s < STEPS && !rc; s++) {
    struct step_metrics m;
    metrics_init(&m);
    rc = trainer_sft_batch_from_task(&b, &r->cfg, &r->task, &r->tok, r->mc.max_seq, s, k0, n, err,
                                     sizeof err) ||
         trainer_sft_step(&r->t, b.tokens, b.cu_seqlens, b.mask, b.nseq, &m);
    r->loss[s] = m.pg_loss;
  }
  sft_batch_free(&b);
  return rc;
}

/* Groups [g0, g1) of a fixed synthetic batch: G = 4 responses of 1-3 digits + EOS
 * to "g+1=", rewards varied within each group, rollout logprobs absent (the
 * trainer recomputes). */
static void rl_batch(struct sample_batch *b, int g0, int g1) {
  for (int g = g0; g < g1; g++)
    for (int i = 0; i < 4; i++) {
      struct sample *s = sample_batch_add(b);
      int32_t prompt[5] = {TOK_CHAR_BOS, '1' + g - 32, '+' - 32, '1' - 32, '=' - 32}, resp[4];
      int nr = 2 + (g + i) % 3;
      for (int j = 0; j < nr - 1; j++) resp[j] = '0' + (i * 3 + j * 7 + g) % 10 - 32;
      resp[nr - 1] = TOK_CHAR_EOS;
      sample_set_prompt(s, prompt, 5);
      sample_set_response(s, resp, NULL, nr);
      s->group = g;
      s->index = i;
      s->reward = (double)((g * 7 + i * 3) % 5) / 4.0;
    }
}

static int rl_steps(struct run *r, int g0, int g1) {
  struct sample_batch b;
  sample_batch_init(&b);
  rl_batch(&b, g0, g1);
  trainer_begin_rl(&r->t);
  int rc = 0;
  for (int s = 0; s < STEPS && !rc; s++) {
    struct step_metrics m;
    metrics_init(&m);
    rc = trainer_rl_step(&r->t, &b, &m);
    r->loss[s] = m.pg_loss;
    if (!isfinite(m.pg_loss) || !isfinite(m.grad_norm)) rc = 1;
  }
  sample_batch_free(&b);
  return rc;
}

static double max_rel_diff(const float *a, const float *b, size_t n) {
  double mx = 0.0, scale = 0.0;
  for (size_t i = 0; i < n; i++) {
    mx = fmax(mx, fabs((double)a[i] - b[i]));
    scale = fmax(scale, fabs((double)a[i]));
  }
  return mx / (scale > 0.0 ? scale : 1.0);
}

/* kind 0: SFT; 1: RL with the 6 groups split 3 + 3 over the two ranks; 2: RL
 * with every group on rank 0 (rank 1 has no samples but takes part). */
static void compare(const char *name, int kind, int n_over, char *const *over) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  struct run ref, dp;
  int rc = 0;
  if (rank == 0) {
    rc |= run_make(&ref, n_over, over, MPI_COMM_SELF);
    rc |= kind == 0 ? sft_steps(&ref) : rl_steps(&ref, 0, 6);
  }
  rc |= run_make(&dp, n_over, over, MPI_COMM_WORLD);
  int per = 6 / size, g0 = kind == 2 ? (rank ? 6 : 0) : rank * per;
  int g1 = kind == 2 ? 6 : (rank + 1) * per;
  rc |= kind == 0 ? sft_steps(&dp) : rl_steps(&dp, g0, g1);
  CHECK(rc == 0);
  /* every rank holds the same parameters after the update */
  size_t n = dp.t.policy.table.total;
  float *other = malloc(sizeof(float) * n);
  memcpy(other, dp.t.policy.params, sizeof(float) * n);
  MPI_Bcast(other, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  CHECK(memcmp(other, dp.t.policy.params, sizeof(float) * n) == 0);
  if (rank == 0) {
    double d = max_rel_diff(ref.t.policy.params, dp.t.policy.params, n);
    printf("%s: 1 rank vs %d ranks after %d steps: loss %.8g vs %.8g, params max rel diff %.2e "
           "(tol %.0e)\n", name, size, STEPS, ref.loss[STEPS - 1], dp.loss[STEPS - 1], d, REL_TOL);
    for (int s = 0; s < STEPS; s++)
      CHECK_NEAR(ref.loss[s], dp.loss[s], REL_TOL * fmax(fabs(ref.loss[s]), 1e-3));
    CHECK(d < REL_TOL);
    if (ref.t.has_critic) {
      double dc = max_rel_diff(ref.t.critic.params, dp.t.critic.params, ref.t.critic.table.total);
      printf("%s: critic params max rel diff %.2e\n", name, dc);
      CHECK(dc < REL_TOL);
    }
    CHECK(ref.t.update == dp.t.update && ref.t.update > 0);
    run_free(&ref);
  }
  free(other);
  run_free(&dp);
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
