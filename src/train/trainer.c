/* train/trainer.c: the train ranks' model, optimizer and SFT step (train/trainer.h): create
 * from the deck, phase starts, micro-batching, the shared update (DP gradient
 * sum, global-norm clip, non-finite skip, AdamW; or its ZeRO-1 form, train/zero.h)
 * and the SFT data path. The RL step lives in train/rl_step.c. */
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "env/demo.h"
#include "io/model_h5.h"
#include "model/device.h"
#include "model/import.h"
#include "mpi/allreduce.h"
#include "tasks/tasks.h"
#include "tokenizer/tokenizer.h"
#include "train/device_update.h"
#include "train/zero.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/rng.h"

/* ---- create / free ---------------------------------------------------------- */

int trainer_check_file(const struct model_config *mc, const char *path, const char *what, char *err,
                       size_t errlen) {
  struct model_config fmc;
  if (model_h5_read_config(path, &fmc)) {
    snprintf(err, errlen, "%s%s: not a readable rlpt model file (see above)", what, path);
    return 2;
  }
  fmc.init_std = mc->init_std;  /* a scratch-init knob, not part of the shape */
  char *a = model_config_to_json(&fmc), *b = model_config_to_json(mc);
  int same = a && b && !strcmp(a, b);
  if (!same)
    snprintf(err, errlen, "%s%s: the file's model %s differs from the deck's %s", what, path, a ? a : "?",
             b ? b : "?");
  free(a);
  free(b);
  return same ? 0 : 2;
}

/* h5_take_fn: this rank's shard of the full tensor i into the policy's weights. */
static void take_shard(void *ctx, int i, const float *x) {
  struct trainer *t = ctx;
  trainer_tensor_local(t, i, x, t->policy.params);
}

/* [model] init = ckpt:PATH of a model without adapters under a LoRA deck (model/lora.h):
 * the file's model must be the deck's base; its tensors fill the base part of the table
 * (the adapters sit after it, so the offsets agree) and the adapters start from the seed. */
static int init_lora_base(struct trainer *t, const char *path, char *err, size_t errlen) {
  struct model_config base = t->policy.cfg;
  base.lora_rank = 0;
  base.lora_alpha = 0;
  base.lora_targets = 0;
  int rc = trainer_check_file(&base, path, "[model] init = ckpt:", err, errlen);
  if (rc) return rc;
  struct param_table bt;
  param_table_build(&bt, &base);
  rc = model_h5_read_params(path, &bt, t->policy.params);
  param_table_free(&bt);
  if (rc) return snprintf(err, errlen, "[model] init = ckpt:%s: could not read /model (see above)",
                          path), 2;
  model_params_init_lora(&t->policy.table, t->policy.params, (uint64_t)t->cfg->run.seed);
  return 0;
}

/* [model] init = ckpt:PATH: the /model group of an rlpt model file (rlpt init) or
 * checkpoint; its /meta model config must equal the deck's. Every rank reads. */
static int init_from_file(struct trainer *t, const char *path, char *err, size_t errlen) {
  struct model_config fmc;
  if (t->policy.table.trainable && !model_h5_read_config(path, &fmc) && fmc.lora_rank == 0)
    return init_lora_base(t, path, err, errlen);
  int rc = trainer_check_file(&t->full_table_cfg, path, "[model] init = ckpt:", err, errlen);
  if (rc) return rc;
  if (trainer_tp(t)) rc = model_h5_read_each(path, &t->full_table, take_shard, t);
  else rc = model_h5_read_params(path, &t->policy.table, t->policy.params);
  if (rc) snprintf(err, errlen, "[model] init = ckpt:%s: could not read /model (see above)", path);
  return rc ? 2 : 0;
}

/* With tp: the full weights built or read tensor by tensor, this rank's shard of each kept
 * (a scratch of one tensor: the rank never holds the model whole). */
static int init_params_tp(struct trainer *t, char *err, size_t errlen) {
  const char *init = t->cfg->model.init;
  if (!strncmp(init, "ckpt:", 5)) return init_from_file(t, init + 5, err, errlen);
  if (strcmp(init, "scratch"))
    return snprintf(err, errlen, "[model] init = %s: with [ranks] train_tp > 1 the trainer loads "
                    "scratch or ckpt:PATH", init), 2;
  float *x = malloc(sizeof(float) * param_table_max_numel(&t->full_table));
  if (!x) return snprintf(err, errlen, "out of memory for one tensor of the initial weights"), 1;
  for (int i = 0; i < t->full_table.n; i++) {
    model_param_init_one(&t->full_table, i, x, t->full_table_cfg.init_std,
                         (uint64_t)t->cfg->run.seed);
    take_shard(t, i, x);
  }
  free(x);
  return 0;
}

static int init_params(struct trainer *t, char *err, size_t errlen) {
  const char *init = t->cfg->model.init;
  if (trainer_tp(t)) return init_params_tp(t, err, errlen);
  if (!strcmp(init, "scratch")) {
    model_init_params(&t->policy, (uint64_t)t->cfg->run.seed);
    return 0;
  }
  if (!strncmp(init, "ckpt:", 5)) return init_from_file(t, init + 5, err, errlen);
  if (!strncmp(init, "gguf:", 5) || !strncmp(init, "hf:", 3)) {
    int rc = model_import_params(&t->policy, init, err, errlen);
    if (!rc) model_params_init_lora(&t->policy.table, t->policy.params, (uint64_t)t->cfg->run.seed);
    return rc;
  }
  snprintf(err, errlen, "[model] init = %s: the trainer loads scratch, ckpt:PATH, gguf:PATH or "
           "hf:DIR", init);
  return 2;
}

/* AdamW state for the part of m this rank updates (train/zero.h zero_opt_range): with LoRA
 * the adapters alone (the table's trainable tail; ZeRO-1 is refused with LoRA). */
static int opt_init(const struct trainer *t, const struct model *m, struct adamw *o) {
  long lo, hi;
  zero_opt_range(t->zero, (long)(m->table.total - m->table.trainable), t->dp_rank, t->dp_size,
                 &lo, &hi);
  return adamw_init(o, hi - lo);
}

/* The PPO critic: the policy's shape plus a value head score.weight; its
 * weights are set from the policy at trainer_begin_rl. */
static int critic_create(struct trainer *t, char *err, size_t errlen) {
  struct model_config cm = t->policy.cfg;
  cm.value_head = 1;
  if (model_create(&t->critic, &cm, t->max_tokens, t->policy.ops) ||
      opt_init(t, &t->critic, &t->critic_opt)) {
    snprintf(err, errlen, "out of memory for the PPO critic (%zu parameters)",
             model_param_count(&cm));
    return 1;
  }
  t->critic.grads_on_device = device_update_on(&t->critic);
  t->has_critic = 1;
  return 0;
}

int trainer_create(struct trainer *t, const struct config *cfg, const struct model_config *mc,
                   int max_tokens, MPI_Comm dp, char *err, size_t errlen) {
  return trainer_create_tp(t, cfg, mc, max_tokens, dp, MPI_COMM_NULL, err, errlen);
}

/* The TP group of tp (none: a group of one) and the full table. */
static void tp_setup(struct trainer *t, const struct model_config *mc, MPI_Comm tp) {
  t->tp = (struct tp_group){.comm = MPI_COMM_SELF, .rank = 0, .size = 1};
  t->full_table_cfg = *mc;
  t->full_table_cfg.head_dim = mc->dim / mc->heads;
  if (tp == MPI_COMM_NULL) return;
  tp_group_init(&t->tp, tp);
  if (t->tp.size > 1) param_table_build(&t->full_table, mc);
}

int trainer_create_tp(struct trainer *t, const struct config *cfg, const struct model_config *mc,
                      int max_tokens, MPI_Comm dp, MPI_Comm tp, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  t->cfg = cfg;
  t->dp = dp;
  t->max_tokens = max_tokens;
  MPI_CHECK(MPI_Comm_rank(dp, &t->dp_rank));
  MPI_CHECK(MPI_Comm_size(dp, &t->dp_size));
  t->zero = cfg->optim.zero >= 1 && t->dp_size > 1;
  /* [run] device: every train rank sees the same deck, so a refusal is on every rank */
  const struct backend_ops *ops = device_backend(cfg->run.device, cfg->model.dtype, err, errlen);
  if (ops && ops->upload && mc->lora_rank > 0) { /* device = auto found a GPU */
    snprintf(err, errlen, "[model] lora_rank: LoRA is built and tested for the CPU backend, and "
             "[run] device = auto picked CUDA: set run.device = cpu");
    ops = NULL;
  }
  if (!ops) {
    trainer_free(t);
    return 2;
  }
  tp_setup(t, mc, tp);
  if (max_tokens < 1 ||
      model_create_tp(&t->policy, mc, max_tokens, ops, trainer_tp(t) ? &t->tp : NULL)) {
    snprintf(err, errlen, "could not allocate the policy model for %d tokens", max_tokens);
    trainer_free(t);
    return 1;
  }
  size_t n = (size_t)max_tokens;
  t->lp = malloc(sizeof(float) * n);
  t->ent = malloc(sizeof(float) * n);
  t->dlp = malloc(sizeof(float) * n);
  t->cu_mb = malloc(sizeof(int) * (n + 1));
  /* DPO and IPO compare with the reference in the loss itself */
  int dpo = cfg->algo.name == ALGO_DPO || cfg->algo.name == ALGO_IPO;
  int need_ref = cfg->run.steps > 0 && (cfg->algo.kl_coef > 0.0 || dpo);
  int ref_rc = need_ref ? weights_create(&t->ref, t->policy.table.total, ops) : 0;
  if (need_ref && !ref_rc) weights_track_host_writes(&t->ref);
  /* a device update reads the gradients where the backward leaves them */
  t->policy.grads_on_device = device_update_on(&t->policy);
  if (!t->lp || !t->ent || !t->dlp || !t->cu_mb || ref_rc || opt_init(t, &t->policy, &t->opt)) {
    snprintf(err, errlen, "out of memory for the trainer (%zu parameters)", t->policy.table.total);
    trainer_free(t);
    return 1;
  }
  int rc = init_params(t, err, errlen);
  if (!rc && cfg->run.steps > 0 && cfg->algo.adv_estimator == ADV_GAE)
    rc = critic_create(t, err, errlen);
  if (rc) trainer_free(t);
  return rc;
}

/* RLPT_TP_TRAFFIC set (bench/bench_tp.sh): what this TP rank's collectives moved (tp.h). */
static void tp_traffic_print(const struct trainer *t) {
  if (!trainer_tp(t) || !getenv("RLPT_TP_TRAFFIC")) return;
  struct tp_traffic x;
  tp_traffic_get(&x);
  printf("tp traffic: dp %d tp %d of %d: model %.0f bytes in %ld all-reduces, weight gathers %.0f "
         "bytes in %ld\n", t->dp_rank, t->tp.rank, t->tp.size, x.bytes[0], x.calls[0], x.bytes[1],
         x.calls[1]);
  fflush(stdout);
}

void trainer_free(struct trainer *t) {
  tp_traffic_print(t);
  device_update_free(t->dev);
  model_free(&t->policy);
  adamw_free(&t->opt);
  model_free(&t->critic);
  adamw_free(&t->critic_opt);
  weights_free(&t->ref);
  param_table_free(&t->full_table);
  free(t->lp);
  free(t->ent);
  free(t->dlp);
  free(t->cu_mb);
  memset(t, 0, sizeof *t);
}

/* ---- phases ----------------------------------------------------------------- */

static void adamw_reset(struct adamw *o) {
  memset(o->m, 0, sizeof(float) * (size_t)o->n);
  memset(o->v, 0, sizeof(float) * (size_t)o->n);
  o->t = 0;
}

static void reset_optimizer(struct trainer *t) {
  /* a phase starts from the host copies, made current first */
  trainer_sync_host(t, 0);
  trainer_host_changed(t);
  if (!t->restored) adamw_reset(&t->opt);
  t->update = 0;
  t->step = 0;
}

void trainer_begin_sft(struct trainer *t) {
  const struct config *cfg = t->cfg;
  reset_optimizer(t);
  t->restored = t->restored_ref = 0;
  t->sched.lr = cfg->sft.lr;
  t->sched.min_lr_ratio = cfg->optim.min_lr_ratio;
  t->sched.warmup = cfg->sft.warmup_steps;
  t->sched.total = cfg->sft.steps;
  t->sched.kind = cfg->optim.schedule;
}

void trainer_begin_rl(struct trainer *t) {
  int keep_ref = t->restored && t->restored_ref;
  reset_optimizer(t);
  t->restored = t->restored_ref = 0;
  optim_sched_from_config(t->cfg, &t->sched);
  if (t->ref.host) {
    if (!keep_ref) memcpy(t->ref.host, t->policy.params, sizeof(float) * t->policy.table.total);
    weights_host_written(&t->ref);
  }
  if (t->has_critic) {
    /* the critic starts as the policy's trunk with a zero value head (values 0):
     * the table is the policy's, then score.weight last (model/params.h layout) */
    size_t n = t->policy.table.total;
    memcpy(t->critic.params, t->policy.params, sizeof(float) * n);
    if (!t->policy.cfg.value_head)
      memset(t->critic.params + n, 0, sizeof(float) * (t->critic.table.total - n));
    weights_host_written(&t->critic.weights);
    adamw_reset(&t->critic_opt);
  }
}

/* ---- micro-batches and the update ------------------------------------------- */

int trainer_micro_end(const struct trainer *t, const int *cu, int s0, int nseq) {
  long max_seqs = t->cfg->ranks.micro_batch_seqs;
  int s1 = s0 + 1;  /* one sequence always goes (model_forward refuses it if too long) */
  while (s1 < nseq && s1 - s0 < max_seqs && cu[s1 + 1] - cu[s0] <= t->max_tokens) s1++;
  return s1;
}

int trainer_forward_micro(struct trainer *t, struct model *m, struct weights *w,
                          const int *tokens, const int *cu, int s0, int s1, float *lp, float *ent,
                          float *val) {
  int base = cu[s0];
  for (int s = s0; s <= s1; s++) t->cu_mb[s - s0] = cu[s] - base;
  return model_forward_with(m, w, tokens + base, t->cu_mb, s1 - s0, lp, ent, val);
}

/* The update of m on the host: 1 applied, 0 skipped (non-finite gradient norm). */
static int update_on_host(struct trainer *t, struct model *m, struct adamw *opt, double lr,
                          double *grad_norm) {
  const struct config *cfg = t->cfg;
  struct adamw_hparams h = { .lr = lr, .beta1 = cfg->optim.beta1, .beta2 = cfg->optim.beta2,
                             .eps = cfg->optim.eps, .weight_decay = cfg->optim.weight_decay };
  /* the trainable part: everything, or the LoRA adapters alone (the base is frozen) */
  size_t off = m->table.trainable, n = m->table.total - off;
  float *g = m->grads + off, *p = m->params + off;
  int rc;
  if (t->zero) {
    rc = zero_update(opt, p, g, (long)n, cfg->optim.grad_clip, &h, t->dp, grad_norm);
  } else {
    allreduce_sum_floats(g, n, 0, t->dp);
    /* after the sum every rank holds the same gradient: its norm is the global one (with tp,
     * the shards' squares summed over the group) */
    *grad_norm = sqrt(trainer_tp(t) ? tp_sumsq(&t->tp, &m->table, g) : optim_sumsq(g, (long)n));
    rc = optim_clip_scale(g, (long)n, *grad_norm, cfg->optim.grad_clip);
    if (rc == OPTIM_OK) adamw_step(opt, p, g, &h);
  }
  if (rc == OPTIM_NONFINITE) return 0;
  weights_host_written(&m->weights);
  return 1;
}

/* The index of m's moments in the device update. */
static int device_slot(const struct trainer *t, const struct model *m) {
  return m == &t->critic;
}

/* NaN/Inf values among m's parameters: one pass of the sum of squares (finite for any
 * finite float32 values), counted value by value only when it is not. */
static long count_nonfinite(struct model *m) {
  size_t n = m->table.total;
  if (device_update_on(m)) {
    if (device_update_params_finite(m)) return 0;
    weights_to_host(&m->weights);
  }
  if (isfinite(optim_sumsq(m->params, (long)n))) return 0;
  long bad = 0;
  for (size_t i = 0; i < n; i++) bad += !isfinite(m->params[i]);
  return bad;
}

int trainer_update_model(struct trainer *t, struct model *m, struct adamw *opt, double lr,
                         double *grad_norm) {
  int applied;
  if (device_update_on(m)) {
    if (!t->dev) t->dev = device_update_create(t->cfg, t->dp, t->zero);
    applied = device_update_step(t->dev, device_slot(t, m), m, opt, lr, grad_norm);
  } else {
    applied = update_on_host(t, m, opt, lr, grad_norm);
  }
  t->skipped_nonfinite += !applied;
  if (applied) {
    long bad = count_nonfinite(m);  /* with tp: over the whole model */
    if (trainer_tp(t)) allreduce_polite(&bad, 1, MPI_LONG, MPI_SUM, t->tp.comm);
    t->params_nonfinite[device_slot(t, m)] = bad;
  }
  return applied;
}

const struct param_table *trainer_full_table(const struct trainer *t) {
  return trainer_tp(t) ? &t->full_table : &t->policy.table;
}

void trainer_tensor_full(const struct trainer *t, const float *local, int i, float *out) {
  const struct param_entry *le = &t->policy.table.e[i];
  if (trainer_tp(t)) tp_gather_tensor(&t->tp, &t->full_table.e[i], out, le, local + le->offset);
  else memcpy(out, local + le->offset, sizeof(float) * le->numel);
}

void trainer_range_full(const struct trainer *t, const float *local, int i0, int i1, float *out) {
  const struct param_table *lt = &t->policy.table;
  if (trainer_tp(t)) tp_gather_range(&t->tp, &t->full_table, i0, i1, out, lt, local);
  else memcpy(out, local + lt->e[i0].offset, sizeof(float) * (lt->e[i1 - 1].offset + lt->e[i1 - 1].numel - lt->e[i0].offset));
}

void trainer_tensor_local(const struct trainer *t, int i, const float *full, float *local) {
  const struct param_entry *le = &t->policy.table.e[i];
  if (trainer_tp(t)) tp_scatter_tensor(&t->tp, &t->full_table.e[i], full, le, local + le->offset);
  else memcpy(local + le->offset, full, sizeof(float) * le->numel);
}

long trainer_params_nonfinite(const struct trainer *t) {
  return t->params_nonfinite[0] + t->params_nonfinite[1];
}

void trainer_sync_host(struct trainer *t, int with_optim) {
  struct model *models[2] = {&t->policy, &t->critic};
  struct adamw *opts[2] = {&t->opt, &t->critic_opt};
  for (int i = 0; i < 2; i++) {
    weights_to_host(&models[i]->weights);
    if (with_optim && t->dev)
      device_update_moments_to_host(t->dev, device_slot(t, models[i]), opts[i]);
  }
}

void trainer_host_changed(struct trainer *t) {
  weights_host_written(&t->policy.weights);
  weights_host_written(&t->critic.weights);
  if (t->dev) device_update_moments_written(t->dev);
}

int trainer_apply_update(struct trainer *t, double lr, double *grad_norm) {
  int applied = trainer_update_model(t, &t->policy, &t->opt, lr, grad_norm);
  t->update += applied;
  return applied;
}

int trainer_step_update(struct trainer *t, double t0, double n_tok, struct step_metrics *m) {
  double lr = optim_lr_at(&t->sched, t->step), norm;
  long skipped = t->skipped_nonfinite;
  int applied = trainer_apply_update(t, lr, &norm);
  t->step++;
  double dt = clock_seconds() - t0;
  m->grad_norm = norm;
  m->lr = lr;
  m->skipped_nonfinite = (double)(t->skipped_nonfinite - skipped);
  m->params_nonfinite = (double)trainer_params_nonfinite(t);
  m->t_train = dt;
  m->train_tok_per_s = dt > 0.0 ? n_tok / dt : NAN;
  return applied;
}

/* ---- SFT step ---------------------------------------------------------------- */

/* Forward + backward of one micro-batch; adds -sum m lp / n_glob and sum m H. */
static int sft_micro_pass(struct trainer *t, const int *tokens, const int *cu, const float *mask,
                          int s0, int s1, double n_glob, double sums[2]) {
  if (trainer_forward_micro(t, &t->policy, &t->policy.weights, tokens, cu, s0, s1, t->lp, t->ent,
                            NULL))
    return 1;
  int T = cu[s1] - cu[s0];
  const float *mk = mask + cu[s0];
  float inv = (float)(1.0 / n_glob);
  for (int i = 0; i < T; i++) {
    t->dlp[i] = -mk[i] * inv;
    sums[0] -= (double)mk[i] * t->lp[i] / n_glob;
    sums[1] += (double)mk[i] * t->ent[i];
  }
  model_backward(&t->policy, t->dlp, NULL, NULL);
  return 0;
}

/* No other logprob is compared with SFT's: its forward and backward take the faster
 * products (model/model.h, exact). */
static int sft_micro(struct trainer *t, const int *tokens, const int *cu, const float *mask,
                     int s0, int s1, double n_glob, double sums[2]) {
  t->policy.exact = 0;
  int rc = sft_micro_pass(t, tokens, cu, mask, s0, s1, n_glob, sums);
  t->policy.exact = 1;
  return rc;
}

int trainer_sft_step(struct trainer *t, const int *tokens, const int *cu_seqlens,
                     const float *loss_mask, int nseq, struct step_metrics *m) {
  double t0 = clock_seconds();
  double counts[2] = {0.0, nseq > 0 ? (double)cu_seqlens[nseq] : 0.0};
  for (int i = 0; nseq > 0 && i < cu_seqlens[nseq]; i++) counts[0] += loss_mask[i];
  allreduce_polite(counts, 2, MPI_DOUBLE, MPI_SUM, t->dp);
  double n_glob = counts[0] > 1.0 ? counts[0] : 1.0;
  model_zero_grad(&t->policy);
  double sums[2] = {0.0, 0.0};
  int rc = 0;
  for (int s0 = 0; s0 < nseq && !rc;) {
    int s1 = trainer_micro_end(t, cu_seqlens, s0, nseq);
    rc = sft_micro(t, tokens, cu_seqlens, loss_mask, s0, s1, n_glob, sums);
    s0 = s1;
  }
  /* every rank must reach the collectives below: agree on failure first */
  if (error_agree(t->dp, rc)) return 1;
  allreduce_polite(sums, 2, MPI_DOUBLE, MPI_SUM, t->dp);
  trainer_step_update(t, t0, counts[1], m);
  m->phase = PHASE_SFT;
  m->pg_loss = sums[0];
  m->entropy = sums[1] / n_glob;
  return 0;
}

/* ---- SFT data ---------------------------------------------------------------- */

void sft_batch_init(struct sft_batch *b) { memset(b, 0, sizeof *b); }

void sft_batch_free(struct sft_batch *b) {
  free(b->tokens);
  free(b->cu_seqlens);
  free(b->mask);
  memset(b, 0, sizeof *b);
}

uint64_t trainer_sft_example(const struct config *cfg, long step, long k) {
  if (cfg->sft.pool <= 0) return (uint64_t)step * (uint64_t)cfg->sft.batch_size + (uint64_t)k;
  struct rng_key key = { .seed = (uint64_t)cfg->run.seed, .stream = RNG_STREAM_SFT,
                         .step = (uint32_t)step, .prompt = 0, .sample = (uint32_t)k, .pos = 0 };
  return rng_below(&key, (uint64_t)cfg->sft.pool);
}

void trainer_sft_share(long batch, int rank, int size, long *k0, long *n) {
  long base = batch / size, extra = batch % size;
  *k0 = rank * base + (rank < extra ? rank : extra);
  *n = base + (rank < extra);
}

int sft_batch_reserve(struct sft_batch *b, int seqs, int toks) {
  if (seqs > b->cap_seq) {
    int *cu = realloc(b->cu_seqlens, sizeof(int) * ((size_t)seqs + 1));
    if (!cu) return 1;
    b->cu_seqlens = cu;
    b->cap_seq = seqs;
  }
  if (toks > b->cap_tok) {
    int *tk = realloc(b->tokens, sizeof(int) * (size_t)toks);
    if (tk) b->tokens = tk;
    float *mk = realloc(b->mask, sizeof(float) * (size_t)toks);
    if (mk) b->mask = mk;
    if (!tk || !mk) return 1;
    b->cap_tok = toks;
  }
  return 0;
}

/* Grows geometrically: rejection SFT appends one sequence at a time. */
int sft_batch_append(struct sft_batch *b, const int *ids, size_t n_prompt, size_t n_total) {
  int seqs = b->nseq + 1, toks = b->n_tok + (int)n_total;
  if (sft_batch_reserve(b, seqs > b->cap_seq ? seqs + b->cap_seq : seqs,
                        toks > b->cap_tok ? toks + b->cap_tok : toks)) return 1;
  if (b->nseq == 0) b->cu_seqlens[0] = 0;
  for (size_t i = 0; i < n_total; i++) {
    b->tokens[b->n_tok + (int)i] = ids[i];
    /* position i predicts token i+1: a completion target when i+1 >= n_prompt */
    b->mask[b->n_tok + (int)i] = (i + 1 >= n_prompt && i + 1 < n_total) ? 1.0f : 0.0f;
  }
  b->n_tok += (int)n_total;
  b->cu_seqlens[++b->nseq] = b->n_tok;
  return 0;
}

int trainer_sft_batch_from_task(struct sft_batch *b, const struct config *cfg,
                                const struct task *task, const struct tokenizer *tok, int max_seq,
                                long step, long k0, long n, char *err, size_t errlen) {
  b->nseq = b->n_tok = 0;
  if (sft_batch_reserve(b, (int)n, 0)) return 1;
  b->cu_seqlens[0] = 0;
  int ids[2 * TASK_TEXT_MAX + 4];
  unsigned char tool[2 * TASK_TEXT_MAX + 4];  /* [env]: tokens of the demonstration's tool turns */
  size_t cap = sizeof ids / sizeof ids[0];
  for (long k = k0; k < k0 + n; k++) {
    struct task_prompt p;
    uint64_t idx = trainer_sft_example(cfg, step, k);
    size_t n_prompt, n_total;
    if (task_prompt(task, idx, TASK_TRAIN, &p) ||
        (cfg->env.enabled ? env_sft_tokens(tok, &p, ids, tool, cap, &n_prompt, &n_total)
                          : task_sft_tokens(tok, &p, ids, cap, &n_prompt, &n_total))) {
      snprintf(err, errlen, "[task] %s: train example %llu could not be built or tokenized",
               task_name(task->kind), (unsigned long long)idx);
      return 2;
    }
    if (!p.answer[0]) {
      snprintf(err, errlen, "[task] %s: train example %llu has no answer (a label-free row): SFT on the "
               "dataset needs answers; set [sft] steps = 0 or [sft] source = rejection",
               task_name(task->kind), (unsigned long long)idx);
      return 2;
    }
    if ((int)n_total > max_seq) {
      snprintf(err, errlen, "[task] %s: train example %llu has %zu tokens, more than [model] "
               "max_seq = %d", task_name(task->kind), (unsigned long long)idx, n_total, max_seq);
      return 2;
    }
    int base = b->n_tok;
    if (sft_batch_append(b, ids, n_prompt, n_total)) return 1;
    for (size_t i = n_prompt; cfg->env.enabled && i < n_total; i++)
      if (tool[i]) b->mask[base + (int)i - 1] = 0.0f;  /* the tool wrote it: no loss */
  }
  return 0;
}
