/* run/reward_service.c: the reward ranks' reward model in a run (run/reward_service.h). */
#include "run/reward_service.h"

#include <stdio.h>
#include <stdlib.h>

#include "model/device.h"
#include "rl/reward_model.h"
#include "run/run.h"
#include "util/error.h"

int reward_service_check(const struct run *r, char *err, size_t errlen) {
  if (r->comms.world_rank != 0 || !r->cfg->reward.rm_path[0]) return 0;
  return reward_model_check(r->cfg->reward.rm_path, r->mc.vocab_size, r->mc.max_seq, NULL, err,
                            errlen);
}

int reward_service_setup(struct run *r, char *err, size_t errlen) {
  r->rm = NULL;
  if (!r->is_reward || !r->cfg->reward.rm_path[0]) return 0;
  struct reward_model *rm = calloc(1, sizeof *rm);
  if (!rm) {
    snprintf(err, errlen, "out of memory for the reward model");
    return 1;
  }
  const struct backend_ops *ops = device_backend(r->cfg->run.device, r->cfg->model.dtype, err, errlen);
  int rc = !ops ? 2 : reward_model_load_on(rm, ops, r->cfg->reward.rm_path, r->mc.vocab_size,
                                           r->mc.max_seq, (int)r->cfg->reward.rm_batch_tokens, err,
                                           errlen);
  if (rc) {
    free(rm);
    return rc;
  }
  r->rm = rm;
  if (r->comms.place.role_rank[ROLE_REWARD] == 0) {
    printf("reward model: %s (/%s, %zu parameters) on %d reward rank(s); reward = %g * rule + %g * rm\n",
           rm->path, rm->group, rm->m.table.total, r->comms.counts.reward, r->cfg->reward.rm_alpha,
           1.0 - r->cfg->reward.rm_alpha);
    fflush(stdout);
  }
  return 0;
}

double *reward_service_scores(struct run *r, const struct sample_batch *b) {
  if (!r->rm) return NULL;
  char err[512];
  double *out = reward_model_score_samples(r->rm, b, err, sizeof err);
  if (!out) die_local("%s", err);
  return out;
}
