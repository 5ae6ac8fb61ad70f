/* train/test_gpu_trainer.c: the trainer's update on the device (src/train/device_update.c)
 * against the host update, on a tiny model: two trainers on the same deck, one
 * with [run] device = cpu and one with cuda, take the same SFT steps over the
 * ranks of MPI_COMM_WORLD (each rank its share of the batch: on more than one
 * rank the device trainer averages with NCCL, the host one sums with MPI):
 *   step 0: no clipping;  step 1: [optim] grad_clip at a quarter of step 0's
 *   norm (clipping active);  step 2: a NaN loss weight makes the gradient
 *   non-finite: skipped on both (params, moments and AdamW t unchanged,
 *   skipped_nonfinite 1);  step 3: no clipping;  then the host copies of both
 *   are rewritten (as a restart does: params scaled by 1.01, the host moments
 *   copied) and step 4 runs from them (trainer_host_changed uploads them).
 * After every step: grad_norm within 1e-5 relative, and the device trainer's
 * params and AdamW m, v (trainer_sync_host) within 1e-5 of the host's (max
 * |cuda - cpu| / max |cpu| over the buffer; only the GEMM and reduction orders
 * differ, ~1e-6 per gradient element). Also: the device trainer's host params
 * stay as they were until trainer_sync_host (no per-step download).
 * Arguments: deck overrides for both trainers (test_gpu_trainer_zero: optim.zero=1 on
 * 2 ranks, ZeRO-1 on both sides; m and v are then compared over this rank's slice).
 * Skips (exit 77) without the CUDA backend, without a device, or on more ranks
 * than a node has devices (NCCL refuses shared devices). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "model/device.h"
#include "mpi/comm.h"
#include "tasks/tasks.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "train/trainer.h"

static const char *deck_tiny =
    "[run]\nseed = 11\nsteps = 0\n"
    "[model]\ndim = 32\nlayers = 2\nheads = 4\nkv_heads = 2\nffn_dim = 48\nmax_seq = 32\n"
    "[optim]\ngrad_clip = 0\n"
    "[task]\nname = arith\ndigits_min = 1\ndigits_max = 2\n"
    "[sft]\nsteps = 5\nbatch_size = 8\nlr = 3e-3\nwarmup_steps = 0\n"
    "[ranks]\nmicro_batch_seqs = 3\n";

struct side {
  struct config cfg;
  struct model_config mc;
  struct tokenizer tok;
  struct task task;
  struct trainer t;
};

/* The tiny deck on `device` with the command line's overrides (argv[1..]). */
static int side_make(struct side *s, const char *device, int argc, char **argv) {
  char err[512], over[64];
  char *ov[8] = {over};
  int n_ov = 1;
  snprintf(over, sizeof over, "run.device=%s", device);
  for (int i = 1; i < argc && n_ov < 8; i++) ov[n_ov++] = argv[i];
  memset(s, 0, sizeof *s);
  tokenizer_init_char(&s->tok);
  if (config_parse(&s->cfg, "tiny.ini", deck_tiny, n_ov, ov, err, sizeof err) ||
      model_config_from_deck(&s->mc, &s->cfg, s->tok.vocab_size, err, sizeof err) ||
      task_init(&s->task, &s->cfg, err, sizeof err) ||
      trainer_create(&s->t, &s->cfg, &s->mc, 256, MPI_COMM_WORLD, err, sizeof err)) {
    fprintf(stderr, "setup (%s): %s\n", device, err);
    return 1;
  }
  trainer_begin_sft(&s->t);
  return 0;
}

static int is_root(void) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
}

/* SFT step `step` of this rank's share; nan_mask: one loss weight NaN. */
static int sft_step(struct side *s, long step, int nan_mask, struct step_metrics *m) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long k0, n;
  trainer_sft_share(s->cfg.sft.batch_size, rank, size, &k0, &n);
  struct sft_batch b;
  sft_batch_init(&b);
  char err[256];
  int rc = trainer_sft_batch_from_task(&b, &s->cfg, &s->task, &s->tok, s->mc.max_seq, step, k0, n,
                                       err, sizeof err);
  if (!rc && nan_mask && b.nseq > 0) b.mask[b.cu_seqlens[1] - 2] = NAN;
  metrics_init(m);
  if (!rc) rc = trainer_sft_step(&s->t, b.tokens, b.cu_seqlens, b.mask, b.nseq, m);
  sft_batch_free(&b);
  return rc;
}

/* params in full; m and v of this rank's part (all, or the ZeRO-1 slice on both) */
static void compare(struct side *cpu, struct side *gpu, const char *when) {
  size_t n = cpu->t.policy.table.total, no = (size_t)cpu->t.opt.n;
  trainer_sync_host(&gpu->t, 1);
  CHECK(gpu->t.opt.n == cpu->t.opt.n);
  double ep = tu_rel_err(gpu->t.policy.params, cpu->t.policy.params, n);
  double em = tu_rel_err(gpu->t.opt.m, cpu->t.opt.m, no);
  double ev = tu_rel_err(gpu->t.opt.v, cpu->t.opt.v, no);
  if (is_root())
    printf("%s: params %.3g, adam m %.3g, v %.3g (relative; m, v: %zu of %zu values), "
           "t %ld / %ld\n", when, ep, em, ev, no, n, gpu->t.opt.t, cpu->t.opt.t);
  CHECK_MSG(ep <= 1e-5, "%s: params relative error %.3g", when, ep);
  CHECK_MSG(em <= 1e-5, "%s: adam m relative error %.3g", when, em);
  CHECK_MSG(ev <= 1e-5, "%s: adam v relative error %.3g", when, ev);
  CHECK(gpu->t.opt.t == cpu->t.opt.t);
}

/* One step on both; returns the host path's grad norm. */
static double both_step(struct side *cpu, struct side *gpu, long step, int nan_mask) {
  struct step_metrics mc, mg;
  CHECK(sft_step(cpu, step, nan_mask, &mc) == 0);
  CHECK(sft_step(gpu, step, nan_mask, &mg) == 0);
  if (is_root())
    printf("step %ld: grad_norm cpu %.9g cuda %.9g, clip %g, skipped %g / %g\n", step,
           mc.grad_norm, mg.grad_norm, cpu->cfg.optim.grad_clip, mc.skipped_nonfinite,
           mg.skipped_nonfinite);
  CHECK(mc.skipped_nonfinite == (double)nan_mask && mg.skipped_nonfinite == (double)nan_mask);
  if (!nan_mask)
    CHECK_MSG(fabs(mg.grad_norm - mc.grad_norm) <= 1e-5 * mc.grad_norm,
              "step %ld: grad_norm %.9g vs %.9g", step, mg.grad_norm, mc.grad_norm);
  else
    CHECK(!isfinite(mc.grad_norm) && !isfinite(mg.grad_norm));
  double norm = mc.grad_norm;
  metrics_free(&mc);
  metrics_free(&mg);
  return norm;
}

static void set_clip(struct side *cpu, struct side *gpu, double clip) {
  cpu->cfg.optim.grad_clip = clip;
  gpu->cfg.optim.grad_clip = clip;
}

/* As a restart: the host copies rewritten, the device trainer told. */
static void rewrite_host(struct side *cpu, struct side *gpu) {
  size_t n = cpu->t.policy.table.total, no = (size_t)cpu->t.opt.n;
  trainer_sync_host(&gpu->t, 1);
  for (size_t i = 0; i < n; i++) cpu->t.policy.params[i] *= 1.01f;
  memcpy(gpu->t.policy.params, cpu->t.policy.params, sizeof(float) * n);
  memcpy(gpu->t.opt.m, cpu->t.opt.m, sizeof(float) * no);
  memcpy(gpu->t.opt.v, cpu->t.opt.v, sizeof(float) * no);
  trainer_host_changed(&gpu->t);
}

static void run_all(int argc, char **argv) {
  struct side *cpu = malloc(sizeof *cpu), *gpu = malloc(sizeof *gpu);
  CHECK(cpu && gpu);
  if (!cpu || !gpu || side_make(cpu, "cpu", argc, argv) || side_make(gpu, "cuda", argc, argv)) {
    CHECK(0);
    return;
  }
  size_t n = cpu->t.policy.table.total;
  float *before = malloc(sizeof(float) * n);
  CHECK(before != NULL);
  if (!before) return;
  double norm0 = both_step(cpu, gpu, 0, 0);
  CHECK(gpu->t.policy.weights.state == RESIDENCY_DEVICE);  /* the device update took over */
  CHECK(gpu->t.zero == cpu->t.zero);
  compare(cpu, gpu, "after step 0 (no clipping)");

  set_clip(cpu, gpu, 0.25 * norm0);
  memcpy(before, gpu->t.policy.params, sizeof(float) * n);
  double norm1 = both_step(cpu, gpu, 1, 0);
  CHECK(norm1 > 0.25 * norm0);  /* clipping was active */
  /* no per-step download: the host copy is as trainer_sync_host left it */
  CHECK(memcmp(before, gpu->t.policy.params, sizeof(float) * n) == 0);
  compare(cpu, gpu, "after step 1 (clipped)");

  memcpy(before, cpu->t.policy.params, sizeof(float) * n);
  long t_before = gpu->t.opt.t;
  both_step(cpu, gpu, 2, 1);
  CHECK(cpu->t.skipped_nonfinite == 1 && gpu->t.skipped_nonfinite == 1);
  CHECK(gpu->t.opt.t == t_before);
  trainer_sync_host(&gpu->t, 1);
  CHECK(memcmp(before, cpu->t.policy.params, sizeof(float) * n) == 0);
  compare(cpu, gpu, "after step 2 (non-finite, skipped)");

  set_clip(cpu, gpu, 0.0);
  both_step(cpu, gpu, 3, 0);
  compare(cpu, gpu, "after step 3");

  rewrite_host(cpu, gpu);
  both_step(cpu, gpu, 4, 0);
  compare(cpu, gpu, "after step 4 (from rewritten host copies)");
  free(before);
  trainer_free(&cpu->t);
  trainer_free(&gpu->t);
  tokenizer_free(&cpu->tok);
  tokenizer_free(&gpu->tok);
  free(cpu);
  free(gpu);
}

/* 1 when every rank has a device of its own (0: skip on every rank). */
static int devices_enough(void) {
  int ok = device_cuda_built() && device_cuda_count() > 0, all = 0, size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (ok && size > 1) {
    MPI_Comm node;
    int nlocal = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nlocal);
    MPI_Comm_free(&node);
    ok = device_cuda_count() >= nlocal;
  }
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, rc = 77;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!devices_enough()) {
    if (rank == 0)
      printf("test_gpu_trainer: no CUDA backend, no device, or fewer devices than ranks on a "
             "node: skipped\n");
  } else {
    device_use(comms_node_rank(MPI_COMM_WORLD));  /* as rlpt run: one GPU per rank of the node */
    for (int i = 1; i < argc && rank == 0; i++) printf("override %s\n", argv[i]);
    run_all(argc, argv);
    int mine = tu_failures, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    tu_failures = all;
    rc = rank == 0 ? TEST_RESULT("test_gpu_trainer") : (all ? 1 : 0);
  }
  MPI_Finalize();
  return rc;
}
