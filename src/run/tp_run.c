/* run/tp_run.c: tensor-parallel training in `rlpt run` (run/tp_run.h). */
#include "run/tp_run.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/device.h"
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

int tp_run_supported(const struct run *r, char *err, size_t len) {
  const struct role_counts *c = &r->comms.counts;
  const struct model_config *mc = &r->mc;
  int n = c->train_tp;
  if (n == 1) return 0;
  const char *why = tp_conflict(r);
  if (why) return snprintf(err, len, "[ranks] train_tp = %d: %s", n, why), 2;
  char derr[256];
  const struct backend_ops *ops = device_backend(r->cfg->run.device, r->cfg->model.dtype, derr, sizeof derr);
  if (ops && ops->upload)
    return snprintf(err, len, "[ranks] train_tp = %d: tensor-parallel training runs on the CPU only; set "
                    "[run] device = cpu", n), 2;
  const char *names[4] = {"heads", "kv_heads", "ffn_dim", "vocab_size"};
  int sizes[4] = {mc->heads, mc->kv_heads, mc->ffn_dim, mc->vocab_size};
  for (int i = 0; i < 4; i++)
    if (sizes[i] % n)
      return snprintf(err, len, "[ranks] train_tp = %d: [model] %s = %d is not divisible by it (each TP "
                      "rank holds %s / train_tp of them)", n, names[i], sizes[i], names[i]), 2;
  return 0;
}

void tp_bcast_batch(struct run *r, struct sample_batch *b) {
  if (r->comms.counts.train_tp == 1) return;
  MPI_Comm tc = r->comms.tp_comm;
  unsigned char *buf = NULL;
  size_t len = 0;
  int root = r->comms.place.tp == 0;
  if (root && xfer_encode_batch(b, &buf, &len) != XFER_OK) die_local("out of memory");
  unsigned long long n = len;
  wait_bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, tc);
  if (n > (unsigned long long)INT_MAX) die_local("a train batch of %llu bytes is too large for the TP group", n);
  if (!root && !(buf = malloc(n ? n : 1))) die_local("out of memory");
  wait_bcast(buf, (int)n, MPI_BYTE, 0, tc);
  char err[256];
  if (!root && xfer_decode_batch(buf, n, b, err, sizeof err) != XFER_OK)
    die_local("the train batch broadcast in the TP group does not decode: %s", err);
  free(buf);
}
