/* deck/test_plan.c: the arithmetic of `rlpt plan` (src/deck/plan.c) and the pure layout
 * functions (roles_resolve, roles_place) against numbers computed by hand.
 *
 * The model: vocab 64, dim 32, 2 layers, heads 4, kv_heads 2 (head_dim 8,
 * kv dim 16), ffn 64, tied embeddings.
 *   per layer: attn norm 32 + q 32*32 = 1024 + k 16*32 = 512 + v 512
 *              + o 1024 + ffn norm 32 + gate 64*32 = 2048 + up 2048 + down 2048
 *            = 9280
 *   total:     embed 64*32 = 2048 + 2 * 9280 + final norm 32 = 20640
 *   untied:    + lm_head 2048 = 22688
 * Byte counts are exact integers well below 2^53, so the tolerance is 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "deck/plan.h"
#include "io/model_h5.h"
#include "model/params.h"
#include "mpi/comm.h"
#include "run/threads.h"
#include "testutil.h"

static void small_config(struct config *cfg) {
  config_defaults(cfg);
  cfg->model.vocab_size = 64;
  cfg->model.dim = 32;
  cfg->model.layers = 2;
  cfg->model.heads = 4;
  cfg->model.kv_heads = 2;
  cfg->model.ffn_dim = 64;
  cfg->model.max_seq = 16;
  cfg->model.tie_embeddings = 1;
  cfg->model.dtype = DTYPE_FP32;
  cfg->algo.prompts_per_step = 5;
  cfg->algo.group_size = 3;
  cfg->algo.ppo_epochs = 2;
  cfg->optim.zero = 0;
  cfg->ranks.layout = LAYOUT_SEPARATE;
  cfg->ranks.controller = cfg->ranks.reward = cfg->ranks.rollout = cfg->ranks.train = -1;
  cfg->ranks.rollout_tp = 1;
  cfg->ranks.train_dp = 2;
  cfg->ranks.train_tp = cfg->ranks.train_pp = 1;
  cfg->ranks.micro_batch_seqs = 4;
  cfg->ranks.device_memory_gb = 0;
  cfg->rollout.max_batch_tokens = 48;
}

static void test_counts(void) {
  struct config cfg;
  struct model_config mc;
  char err[512];
  small_config(&cfg);
  CHECK(model_config_from_deck(&mc, &cfg, 0, err, sizeof err) == 0);
  CHECK(model_param_count(&mc) == 20640);
  /* 6 * 32 + 2 * 16 + 3 * 64 = 192 + 32 + 192 = 416 activation elements per token per layer */
  CHECK_NEAR(plan_act_elems_per_token_layer(&mc), 416, 0);
  CHECK_NEAR(plan_stage_params(&mc, 1), 20640, 0);
  /* pp 2: stage 0 = embed 2048 + layer 0 9280 = 11328; stage 1 = layer 1 9280
   * + final norm 32 + the tied embedding's copy as lm_head 2048 = 11360. */
  CHECK_NEAR(plan_stage_params(&mc, 2), 11360, 0);
  mc.tie_embeddings = 0;
  CHECK(model_param_count(&mc) == 22688);
  /* untied, pp 2: stage 1 = 9280 + 32 + lm_head 2048 = 11360, stage 0 = 11328 */
  CHECK_NEAR(plan_stage_params(&mc, 2), 11360, 0);
}

/* fp32, world 6 = controller 1 + reward 1 + rollout 2 (auto) + train 2 (dp 2). */
static void test_memory_fp32(void) {
  struct config cfg;
  struct plan p;
  char err[1024];
  small_config(&cfg);
  CHECK(plan_build(&p, &cfg, 6, err, sizeof err) == 0);
  CHECK(p.counts.rollout == 2 && p.counts.rollout_instances == 2 && p.counts.train == 2);
  CHECK_NEAR(p.params, 20640, 0);
  /* train rank: shard = 20640 (tp 1, pp 1)
   *   weights 20640*4 = 82560, master 0 (fp32 weights are the master),
   *   grads 20640*4 = 82560, Adam 20640*8 = 165120 (zero 0: not sharded),
   *   activations = micro_batch 4 * max_seq 16 = 64 tokens * 2 layers * 416 * 4 bytes = 212992,
   *   logits = 64 tokens * vocab 64 * 4 = 16384,
   *   total = 82560 + 82560 + 165120 + 212992 + 16384 = 559616 */
  CHECK_NEAR(p.train.weights, 82560, 0);
  CHECK_NEAR(p.train.master, 0, 0);
  CHECK_NEAR(p.train.grads, 82560, 0);
  CHECK_NEAR(p.train.adam, 165120, 0);
  CHECK_NEAR(p.train.activations, 212992, 0);
  CHECK_NEAR(p.train.logits, 16384, 0);
  CHECK_NEAR(p.train.total, 559616, 0);
  /* rollout rank: 2 instances, ceil(5 / 2) = 3 prompts * group 3 = 9 sequences;
   *   KV per token = 2 * 2 layers * 2 kv heads * 8 * 4 bytes = 256,
   *   KV = 9 * 16 tokens * 256 = 36864; weights 20640 * 4 = 82560;
   * forward activations (model/model.c model_carve, forward only) for max_batch_tokens
   * T = 48, in floats, each piece rounded up to 16: one layer set (every layer reuses it)
   * of res_in, q, att, res_mid 48 * 32 = 1536, k, v 48 * 16 = 768, gate, up 48 * 64 = 3072,
   * rstd1, rstd2 48, lse 48 * 4 = 192: 14112; res_final, xf, xn 1536, rstdf,
   * lse/ent/lp/val_out 48, h 3072, logits 48 rows * 64 = 3072 (10992); attention scratch
   * 2 * 16 * 16 + 16 = 528; 25632 floats = 102528 bytes; total 221952 */
  CHECK_NEAR(p.seqs_per_instance, 9, 0);
  CHECK_NEAR(p.kv_bytes_token, 256, 0);
  CHECK_NEAR(p.rollout.kv_cache, 36864, 0);
  CHECK_NEAR(p.rollout.activations, 102528, 0);
  CHECK_NEAR(p.rollout.total, 221952, 0);
  /* tokens = 5 prompts * 3 * 16 = 240; generation 2 * 20640 * 240 = 9907200;
   * training 6 * 20640 * 240 * 2 epochs = 59443200 */
  CHECK_NEAR(p.tokens_step, 240, 0);
  CHECK_NEAR(p.flops_gen, 9907200, 0);
  CHECK_NEAR(p.flops_train, 59443200, 0);
  /* Fit. The rollout engine's pool: kv_cache_mb 1 MiB = 1048576 bytes, so
   * weights + activations + pool = 82560 + 102528 + 1048576 = 1233664 bytes. */
  cfg.rollout.kv_cache_mb = 1;
  CHECK(plan_build(&p, &cfg, 6, err, sizeof err) == 0);
  cfg.ranks.device_memory_gb = 0.0005;  /* 500000 bytes: train (559616) and the pool do not fit */
  CHECK(plan_check_fit(&p, &cfg, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "train rank needs 0.6 MB") && !strstr(err, "rollout rank needs") &&
            strstr(err, "kv_cache_mb = 1 MiB = 1.2 MB"), "%s", err);
  cfg.ranks.device_memory_gb = 0.0011;  /* 1100000 bytes: only the pool does not fit */
  CHECK(plan_check_fit(&p, &cfg, err, sizeof err) == 2);
  CHECK_MSG(!strstr(err, "train rank") && strstr(err, "rollout rank: weights 0.1 MB + forward activations 0.1 MB"),
            "%s", err);
  cfg.ranks.device_memory_gb = 0.0013;  /* 1300000 bytes: everything fits */
  CHECK(plan_check_fit(&p, &cfg, err, sizeof err) == 0);
}

/* bf16, zero 1, train grid dp 2 x tp 2 x pp 2, rollout_tp 2: world 1 + 1 + 2 + 8 = 12. */
static void test_memory_bf16(void) {
  struct config cfg;
  struct plan p;
  char err[1024];
  small_config(&cfg);
  cfg.model.dtype = DTYPE_BF16;
  cfg.optim.zero = 1;
  cfg.ranks.train_tp = cfg.ranks.train_pp = 2;
  cfg.ranks.rollout_tp = 2;
  CHECK(plan_build(&p, &cfg, 12, err, sizeof err) == 0);
  CHECK(p.counts.train == 8 && p.counts.rollout == 2 && p.counts.rollout_instances == 1);
  /* shard = largest stage 11360 / tp 2 = 5680
   *   weights 5680*2 = 11360, master 5680*4 / dp 2 = 11360, grads 5680*4 = 22720,
   *   Adam 5680*8 / dp 2 = 22720,
   *   activations = 64 tokens * (pp 2 * ceil(2/2) = 2 layers) * 416 * 2 bytes / tp 2 = 53248,
   *   logits = 64 * 64 * 4 / tp 2 = 8192,
   *   total = 11360 + 11360 + 22720 + 22720 + 53248 + 8192 = 129600 */
  CHECK_NEAR(p.train.weights, 11360, 0);
  CHECK_NEAR(p.train.master, 11360, 0);
  CHECK_NEAR(p.train.grads, 22720, 0);
  CHECK_NEAR(p.train.adam, 22720, 0);
  CHECK_NEAR(p.train.activations, 53248, 0);
  CHECK_NEAR(p.train.logits, 8192, 0);
  CHECK_NEAR(p.train.total, 129600, 0);
  /* rollout: weights 20640 * 2 / 2 = 20640; 1 instance holds 5 * 3 = 15 sequences;
   * a TP rank keeps ceil(2 kv heads / 2) = 1 head: KV = 15 * 16 * (2 * 2 * 1 * 8 * 2) = 15360;
   * forward activations (fp32, as test_counts) 102528 / 2 = 51264; total 87264 */
  CHECK_NEAR(p.rollout.weights, 20640, 0);
  CHECK_NEAR(p.rollout.kv_cache, 15360, 0);
  CHECK_NEAR(p.rollout.activations, 51264, 0);
  CHECK_NEAR(p.rollout.total, 87264, 0);
}

static void test_plan_rejects(void) {
  struct config cfg;
  struct plan p;
  char err[1024];
  small_config(&cfg);
  cfg.ranks.train_tp = 3;  /* 3 does not divide heads 4 */
  CHECK(plan_build(&p, &cfg, 9, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "[ranks] train_tp = 3 must divide [model] heads = 4"), "%s", err);
  small_config(&cfg);
  cfg.ranks.train_pp = 4;  /* more stages than the 2 layers */
  cfg.ranks.train_dp = 1;
  CHECK(plan_build(&p, &cfg, 8, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "train_pp = 4 exceeds [model] layers = 2"), "%s", err);
}

/* roles_resolve / roles_place without MPI, at sizes the MPI test cannot reach. */
static void test_layouts(void) {
  struct config cfg;
  struct role_counts c;
  struct rank_place p;
  char err[1024];
  small_config(&cfg);
  cfg.ranks.train_dp = 1;
  cfg.ranks.rollout_tp = 2;
  /* 6 = 1 + 1 + train 1 + rollout auto 3, and 3 % 2 != 0 */
  CHECK(roles_resolve(&cfg, 6, &c, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "[ranks] rollout = 3 (auto: the ranks left) ranks do not divide into "
                        "engine instances of rollout_tp = 2 ranks"), "%s", err);
  cfg.ranks.threads_per_rank = 8;
  cfg.ranks.cores_per_node = 4;
  CHECK(roles_resolve(&cfg, 5, &c, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "threads_per_rank = 8 exceeds cores_per_node = 4"), "%s", err);
  /* The 1000-rank layout of inputs/llama70b_1000gpu.ini: 1 + 7 + 736 + 256. */
  small_config(&cfg);
  cfg.ranks.controller = 1;
  cfg.ranks.reward = 7;
  cfg.ranks.rollout = 736;
  cfg.ranks.train = 256;
  cfg.ranks.rollout_tp = 8;
  cfg.ranks.train_dp = 8;
  cfg.ranks.train_tp = 8;
  cfg.ranks.train_pp = 4;
  CHECK(roles_resolve(&cfg, 1000, &c, err, sizeof err) == 0);
  CHECK(c.rollout_instances == 92);
  CHECK(roles_resolve(&cfg, 999, &c, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "the layout needs 1000 ranks = controller 1 + reward 7 + rollout 736 + "
                        "train 256; the job has 999"), "%s", err);
  roles_resolve(&cfg, 1000, &c, err, sizeof err);
  roles_place(&c, 7, &p);   /* last reward rank */
  CHECK(p.role == ROLE_REWARD && p.role_rank[ROLE_REWARD] == 6 && p.weight_rank == -1);
  roles_place(&c, 8, &p);   /* first rollout rank: instance 0, after the 8 x 4 = 32 owners */
  CHECK(p.role == ROLE_ROLLOUT && p.instance == 0 && p.instance_rank == 0 && p.weight_rank == 32);
  roles_place(&c, 743, &p); /* rollout rank 735 = instance 91, tp 7; weight rank 32 + 735 */
  CHECK(p.instance == 91 && p.instance_rank == 7 && p.weight_rank == 767);
  roles_place(&c, 744, &p); /* train rank 0 */
  CHECK(p.role == ROLE_TRAIN && p.dp == 0 && p.tp == 0 && p.pp == 0 && p.weight_rank == 0);
  roles_place(&c, 999, &p); /* train rank 255 = tp 7 + 8 * (dp 7 + 8 * pp 3) */
  CHECK(p.tp == 7 && p.dp == 7 && p.pp == 3 && p.weight_rank == -1);
  roles_place(&c, 744 + 64 + 3, &p); /* train rank 67 = tp 3, dp 0, pp 1: owner 3 + 8 * 1 */
  CHECK(p.tp == 3 && p.dp == 0 && p.pp == 1 && p.weight_rank == 11);
  /* Colocated, 8 workers tp 2 x dp 2 x pp 2: worker 6 = tp 0, dp 1, pp 1. Owners
   * (dp 0) take weight ranks 0..3; the others follow in world order: workers 2, 3
   * (pp 0, dp 1) are 4, 5 and workers 6, 7 are 6, 7. */
  small_config(&cfg);
  cfg.ranks.layout = LAYOUT_COLOCATED;
  cfg.ranks.train_dp = cfg.ranks.train_tp = cfg.ranks.train_pp = 2;
  CHECK(roles_resolve(&cfg, 8, &c, err, sizeof err) == 0);
  CHECK(c.controller == 0 && c.train == 8 && c.rollout == 8 && c.reward == 8);
  roles_place(&c, 6, &p);
  CHECK(p.tp == 0 && p.dp == 1 && p.pp == 1 && p.weight_rank == 6);
  roles_place(&c, 2, &p);
  CHECK(p.dp == 1 && p.weight_rank == 4);
  roles_place(&c, 5, &p);   /* tp 1, dp 0, pp 1: owner 1 + 2 * 1 = 3 */
  CHECK(p.dp == 0 && p.weight_rank == 3);
  roles_place(&c, 0, &p);
  CHECK(p.roles == (ROLE_BIT(ROLE_CONTROLLER) | ROLE_BIT(ROLE_ROLLOUT) | ROLE_BIT(ROLE_REWARD) |
                    ROLE_BIT(ROLE_TRAIN)));
}

/* Threads policy (run/threads.h): 1 thread per rank always passes (oversubscription
 * is the launcher's); more threads must fit ranks x threads <= cores. */
static void test_threads(void) {
  char err[512];
  CHECK(threads_check(4, 1, 2, 0, "n0", err, sizeof err) == 0);
  CHECK(threads_check(2, 4, 8, 1, "n0", err, sizeof err) == 0);  /* 2 x 4 = 8 <= 8 */
  CHECK(threads_check(3, 4, 8, 1, "n0", err, sizeof err) == 2);  /* 3 x 4 = 12 > 8 */
  CHECK_MSG(strstr(err, "threads_per_rank = 4: 3 ranks on node n0 x 4 threads = 12 exceeds the "
                        "node's 8 cores (cores_per_node = from the deck); lower threads_per_rank "
                        "to 2"), "%s", err);
  CHECK(threads_detect_cores() >= 1);
}

/* PPO's critic on the train ranks, and a reward model on the reward rank. */
static void test_memory_critic_rm(void) {
  struct config cfg;
  struct plan p;
  char err[1024];
  small_config(&cfg);
  cfg.algo.adv_estimator = ADV_GAE;
  CHECK(plan_build(&p, &cfg, 6, err, sizeof err) == 0);
  /* critic = the policy's weights 82560 + grads 82560 + Adam 165120 + activations 212992
   *        + the value head's 32 weights x (4 + 4 + 8 bytes) = 512 -> 543744;
   * train total = 559616 (test_memory_fp32) + 543744 = 1103360 */
  CHECK_NEAR(p.train.critic, 543744, 0);
  CHECK_NEAR(p.train.total, 1103360, 0);
  CHECK_NEAR(p.reward.total, 0, 0);
  /* A reward model file: the same shape with a value head, 20640 + 32 = 20672 parameters.
   * Reward rank: weights 20672 * 4 = 82688 + the forward arena of max(rm_batch_tokens 8,
   * max_seq 16) = 16 tokens (as test_counts' at T = 16: the layer set 4704, the rest 3664,
   * attention scratch 528: 8896 floats) = 35584 -> 118272. */
  struct model_config rm;
  CHECK(model_config_from_deck(&rm, &cfg, 0, err, sizeof err) == 0);
  rm.value_head = 1;
  size_t n = model_param_count(&rm);
  float *w = calloc(n, sizeof(float));
  const char *file = "test_plan_rm.h5";
  CHECK(w && n == 20672 && model_h5_write(file, &rm, w) == 0);
  free(w);
  cfg.algo.adv_estimator = ADV_GRPO;
  snprintf(cfg.reward.rm_path, sizeof cfg.reward.rm_path, "%s", file);
  cfg.reward.rm_batch_tokens = 8;
  CHECK(plan_build(&p, &cfg, 6, err, sizeof err) == 0);
  CHECK_NEAR(p.reward.weights, 82688, 0);
  CHECK_NEAR(p.reward.activations, 35584, 0);
  CHECK_NEAR(p.reward.total, 118272, 0);
  CHECK_NEAR(p.train.critic, 0, 0);
  cfg.ranks.device_memory_gb = 0.0001;  /* 100000 bytes: the reward rank does not fit */
  CHECK(plan_check_fit(&p, &cfg, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "reward rank needs 0.1 MB"), "%s", err);
  /* colocated (world 2): a worker holds train + rollout + the reward model */
  cfg.ranks.layout = LAYOUT_COLOCATED;
  cfg.ranks.device_memory_gb = 0;
  CHECK(plan_build(&p, &cfg, 2, err, sizeof err) == 0);
  CHECK_NEAR(p.colocated_total, p.train.total + p.rollout.total + 118272, 0);
  /* a policy with another vocabulary: refused as rlpt run refuses it */
  cfg.model.vocab_size = 65;
  CHECK(plan_build(&p, &cfg, 2, err, sizeof err) == 2);
  CHECK_MSG(strstr(err, "rm_path") && strstr(err, "vocab_size 64"), "%s", err);
  remove(file);
}

int main(void) {
  test_threads();
  test_counts();
  test_memory_fp32();
  test_memory_bf16();
  test_memory_critic_rm();
  test_plan_rejects();
  test_layouts();
  return TEST_RESULT("test_plan");
}
