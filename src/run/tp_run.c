/* run/tp_run.c: tensor parallelism in `rlpt run` (run/tp_run.h): training over each TP group
 * of train ranks, and rollout engines of rollout_tp ranks. */
#include "run/tp_run.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/device.h"
#include "model/model.h"
#include "model/tp.h"
#include "mpi/wait.h"
#include "mpi/xfer.h"
#include "run/run.h"
#include "util/error.h"

/* The first unsupported companion of train_tp > 1, or NULL. */
static const char *tp_conflict(const struct run *r) {
  const struct config *cfg = r->cfg;
  const struct role_counts *c = &r->comms.counts;
  if (cfg->run.mode != MODE_SYNC) return "[run] mode must be sync (the async modes are not built with it)";
  if (c->colocated) return "[ranks] layout must be separate";
  if (config_is_pref(cfg)) return "[algo] name = dpo | ipo | rm (preference training) is not built with it";
  if (cfg->run.steps > 0 && cfg->algo.adv_estimator == ADV_GAE)
    return "[algo] adv_estimator = gae (the PPO critic) is not built with it";
  if (cfg->model.value_head) return "[model] value_head must be false";
  if (cfg->sft.steps > 0 && cfg->sft.source == SFT_SOURCE_REJECTION)
    return "[sft] source = rejection is not built with it";
  if (cfg->optim.zero != 0) return "[optim] zero must be 0";
  if (strncmp(cfg->model.init, "scratch", 8) && strncmp(cfg->model.init, "ckpt:", 5))
    return "[model] init must be scratch or ckpt:PATH (convert gguf/hf models with rlpt convert)";
  return NULL;
}

/* The first unsupported companion of rollout_tp > 1, or NULL. */
static const char *rollout_tp_conflict(const struct run *r) {
  const struct config *cfg = r->cfg;
  if (cfg->run.mode != MODE_SYNC) return "[run] mode must be sync (the async modes are not built with it)";
  if (r->comms.counts.colocated) return "[ranks] layout must be separate";
  if (cfg->env.enabled) return "[env] multi-turn rollouts are not built with it";
  if (cfg->sft.steps > 0 && cfg->sft.source == SFT_SOURCE_REJECTION)
    return "[sft] source = rejection is not built with it";
  if (cfg->run.weight_sync_dtype != WSYNC_FP32) return "[run] weight_sync_dtype must be fp32";
  return NULL;
}

/* The CPU backend and the shapes a TP size n splits (key: train_tp or rollout_tp). */
static int tp_shape_ok(const struct run *r, const char *key, int n, const char *what, char *err, size_t len) {
  const struct model_config *mc = &r->mc;
  char derr[256];
  const struct backend_ops *ops = device_backend(r->cfg->run.device, r->cfg->model.dtype, derr, sizeof derr);
  if (ops && ops->upload)
    return snprintf(err, len, "[ranks] %s = %d: tensor-parallel %s runs on the CPU only; set "
                    "[run] device = cpu", key, n, what), 2;
  const char *names[4] = {"heads", "kv_heads", "ffn_dim", "vocab_size"};
  int sizes[4] = {mc->heads, mc->kv_heads, mc->ffn_dim, mc->vocab_size};
  for (int i = 0; i < 4; i++)
    if (sizes[i] % n)
      return snprintf(err, len, "[ranks] %s = %d: [model] %s = %d is not divisible by it (each TP "
                      "rank holds %s / %s of them)", key, n, names[i], sizes[i], names[i], key), 2;
  return 0;
}

int tp_run_supported(const struct run *r, char *err, size_t len) {
  const struct role_counts *c = &r->comms.counts;
  const char *why;
  if (c->train_tp > 1 && (why = tp_conflict(r)))
    return snprintf(err, len, "[ranks] train_tp = %d: %s", c->train_tp, why), 2;
  if (c->train_tp > 1 && tp_shape_ok(r, "train_tp", c->train_tp, "training", err, len)) return 2;
  if (c->rollout_tp > 1 && (why = rollout_tp_conflict(r)))
    return snprintf(err, len, "[ranks] rollout_tp = %d: %s", c->rollout_tp, why), 2;
  if (c->rollout_tp > 1 && tp_shape_ok(r, "rollout_tp", c->rollout_tp, "rollout", err, len)) return 2;
  return 0;
}

/* Rank 0 of comm's batch b to the others (b appended to there). */
static void bcast_batch(MPI_Comm tc, struct sample_batch *b, const char *group) {
  unsigned char *buf = NULL;
  size_t len = 0;
  int me;
  MPI_CHECK(MPI_Comm_rank(tc, &me));
  int root = me == 0;
  if (root && xfer_encode_batch(b, &buf, &len) != XFER_OK) die_local("out of memory");
  unsigned long long n = len;
  wait_bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, tc);
  if (n > (unsigned long long)INT_MAX) die_local("a batch of %llu bytes is too large for the %s", n, group);
  if (!root && !(buf = malloc(n ? n : 1))) die_local("out of memory");
  wait_bcast(buf, (int)n, MPI_BYTE, 0, tc);
  char err[256];
  if (!root && xfer_decode_batch(buf, n, b, err, sizeof err) != XFER_OK)
    die_local("the batch broadcast in the %s does not decode: %s", group, err);
  free(buf);
}

void tp_bcast_batch(struct run *r, struct sample_batch *b) {
  if (r->comms.counts.train_tp > 1) bcast_batch(r->comms.tp_comm, b, "train TP group");
}

/* ---- rollout ----------------------------------------------------------------- */

int rollout_tp_create(struct run *r, int max_tokens, const struct backend_ops *ops) {
  if (r->comms.counts.rollout_tp == 1) return model_create_forward(r->rmodel, &r->mc, max_tokens, ops);
  tp_group_init(&r->rtp, r->comms.instance_comm);
  return model_create_forward_tp(r->rmodel, &r->mc, max_tokens, ops, &r->rtp);
}

int rollout_tp_leader(const struct run *r) {
  return r->comms.place.instance_rank <= 0;
}

void rollout_tp_bcast_prompts(struct run *r, struct sample_batch *b) {
  if (r->comms.counts.rollout_tp > 1) bcast_batch(r->comms.instance_comm, b, "rollout engine's TP group");
}
