/* deck/plan.c: the arithmetic of `rlpt plan` (assumptions in deck/plan.h and beside each
 * formula), its report and the plan without MPI. No MPI here: cli/cmd_plan.c adds the live
 * rank map. */
#include "deck/plan.h"
#include "deck/simulate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "io/rm_file.h"
#include "model/import.h"
#include "tokenizer/tokenizer.h"
#include "util/alloc.h"

/* Saved activations per token per layer for the backward pass, in elements.
 * What the block keeps (llm.c style), with d = dim, kv = kv_heads * head_dim,
 * f = ffn_dim:
 *   attention: residual input d, normed input d, q d, k kv, v kv, attention
 *              output (input of o_proj) d                       -> 4d + 2kv
 *   MLP:       residual input d, normed input d, gate f, up f,
 *              silu(gate)*up (input of down_proj) f               -> 2d + 3f
 * Total 6d + 2kv + 3f. Attention is assumed fused (flash-style): the T x T
 * score matrix is recomputed, not stored; RMSNorm statistics (1 per token) are
 * left out. Check: for Llama-70B (d 8192, kv 1024, f 28672) this is 137216
 * elements = 274 KB in bf16, Megatron's estimate (Korthikanti et al. 2022) is
 * 34 d bytes = 278 KB. */
double plan_act_elems_per_token_layer(const struct model_config *mc) {
  double kv = (double)mc->kv_heads * (mc->dim / mc->heads);
  return 6.0 * mc->dim + 2.0 * kv + 3.0 * mc->ffn_dim;
}

/* Layer l goes to stage l * pp / layers (stages differ by at most one layer).
 * Megatron's placement: the embedding on the first stage, the final norm and
 * lm_head (and a value head) on the last; tied embeddings with pp > 1 keep a
 * copy of the embedding on the last stage as the lm_head. */
double plan_stage_params(const struct model_config *mc, int pp) {
  struct param_table t;
  double stage[64] = {0}, *s = stage, best = 0;
  if (pp > 64) {
    s = calloc_check((size_t)pp, sizeof *s);
  }
  param_table_build(&t, mc);
  for (int i = 0; i < t.n; i++) {
    const struct param_entry *e = &t.e[i];
    double n = (double)e->numel;
    if (e->layer >= 0) s[(long)e->layer * pp / mc->layers] += n;
    else if (e->kind == P_EMBED) {
      s[0] += n;
      if (mc->tie_embeddings && pp > 1) s[pp - 1] += n;
    } else s[pp - 1] += n;
  }
  param_table_free(&t);
  for (int k = 0; k < pp; k++) best = s[k] > best ? s[k] : best;
  if (s != stage) free(s);
  return best;
}

/* A TP size must split the heads, the FFN and the KV heads (or replicate them). */
static int check_tp(const struct model_config *mc, int tp, const char *key, char *err,
                    size_t errlen) {
  if (mc->heads % tp || mc->ffn_dim % tp || (mc->kv_heads % tp && tp % mc->kv_heads)) {
    snprintf(err, errlen, "[ranks] %s = %d must divide [model] heads = %d and ffn_dim = %d, and "
             "divide or be a multiple of kv_heads = %d", key, tp, mc->heads, mc->ffn_dim,
             mc->kv_heads);
    return 2;
  }
  return 0;
}

/* Per train rank: the largest pipeline stage, split over TP. */
static void train_memory(struct plan *p, const struct config *cfg) {
  const struct role_counts *c = &p->counts;
  struct plan_memory *m = &p->train;
  double shard = p->stage_params / c->train_tp;
  double opt_div = cfg->optim.zero >= 1 ? c->train_dp : 1;
  double tokens = (double)cfg->ranks.micro_batch_seqs * p->mc.max_seq;
  /* 1F1B: the first stage holds pp micro-batches in flight, each through its
   * ceil(layers / pp) layers; pp = 1 is one micro-batch through all layers.
   * TP with sequence parallelism splits every saved tensor over tp. */
  double layers_held = (double)c->train_pp * ((p->mc.layers + c->train_pp - 1) / c->train_pp);
  memset(m, 0, sizeof *m);
  m->weights = shard * p->weight_bytes;
  m->master = p->weight_bytes == 4 ? 0 : shard * 4 / opt_div;
  m->grads = shard * 4;
  m->adam = shard * 8 / opt_div;
  if (p->mc.lora_rank > 0) { /* LoRA (model/lora.h, no TP/PP/ZeRO): the adapters' moments alone */
    struct model_config base = p->mc;
    base.lora_rank = 0;
    m->adam = (double)(model_param_count(&p->mc) - model_param_count(&base)) * 8;
  }
  m->activations = tokens * layers_held * p->act_elems_token_layer * p->weight_bytes / c->train_tp;
  /* fp32 logits of one micro-batch for logprobs and the loss (last stage; the
   * plan charges the worst stage with it too, an upper bound). */
  m->logits = tokens * p->mc.vocab_size * 4.0 / c->train_tp;
  /* PPO's critic (train/trainer.c critic_create): the policy's shape plus a value head of dim
   * weights, the same state per parameter and its own activations; no vocabulary logits */
  if (cfg->run.steps > 0 && cfg->algo.adv_estimator == ADV_GAE) {
    double head = p->mc.value_head ? 0.0 : (double)p->mc.dim / c->train_tp;
    m->critic = m->weights + m->master + m->grads + m->adam + m->activations +
                head * (p->weight_bytes + 4.0 + 8.0 / opt_div + (p->weight_bytes == 4 ? 0 : 4.0 / opt_div));
  }
  m->total = m->weights + m->master + m->grads + m->adam + m->activations + m->logits + m->critic;
}

/* Per reward rank with [reward] rm_path: the reward model (shape from the file's
 * metadata, checked against the policy as rlpt run does) in the run's precision, and
 * the activation arena of its forward over rm_batch_tokens (at least max_seq) as
 * model_create_forward allocates it. 0 or 2. */
static int reward_memory(struct plan *p, const struct config *cfg, char *err, size_t errlen) {
  struct plan_memory *m = &p->reward;
  memset(m, 0, sizeof *m);
  if (!cfg->reward.rm_path[0]) return 0;
  struct rm_file rf;
  if (rm_file_check(cfg->reward.rm_path, p->mc.vocab_size, p->mc.max_seq, &rf, err, errlen))
    return 2;
  p->rm_mc = rf.mc;
  double tokens = cfg->reward.rm_batch_tokens > p->mc.max_seq ? (double)cfg->reward.rm_batch_tokens
                                                              : (double)p->mc.max_seq;
  m->weights = (double)model_param_count(&p->rm_mc) * p->weight_bytes;
  m->activations = (double)model_forward_arena_bytes(&p->rm_mc, (int)tokens);  /* as it allocates */
  m->total = m->weights + m->activations;
  return 0;
}

/* Per rollout rank: the whole model split over rollout_tp, and the KV cache of
 * every sequence its instance holds in a step. Prompts are spread evenly over
 * the instances; each sequence is bounded by max_seq tokens (prompt +
 * max_new_tokens <= max_seq). KV per token = 2 (k, v) x layers x kv_heads x
 * head_dim x weight_bytes; a TP rank holds ceil(kv_heads / rollout_tp) heads
 * (kv heads are replicated when there are fewer than rollout_tp). The forward's activation
 * arena is what model_create_forward allocates for [rollout] max_batch_tokens (fp32; with
 * rollout_tp > 1, which rlpt run does not build yet, that over rollout_tp: an estimate). */
static void rollout_memory(struct plan *p, const struct config *cfg) {
  const struct role_counts *c = &p->counts;
  const struct model_config *mc = &p->mc;
  struct plan_memory *m = &p->rollout;
  double prompts = ceil((double)cfg->algo.prompts_per_step / c->rollout_instances);
  double heads_rank = ceil((double)mc->kv_heads / c->rollout_tp);
  memset(m, 0, sizeof *m);
  p->seqs_per_instance = prompts * cfg->algo.group_size;
  p->kv_bytes_token = 2.0 * mc->layers * mc->kv_heads * mc->head_dim * p->weight_bytes;
  m->weights = p->params * p->weight_bytes / c->rollout_tp;
  m->kv_cache = p->seqs_per_instance * mc->max_seq * 2.0 * mc->layers * heads_rank * mc->head_dim *
                p->weight_bytes;
  m->activations = (double)model_forward_arena_bytes(mc, (int)cfg->rollout.max_batch_tokens) / c->rollout_tp;
  m->total = m->weights + m->kv_cache + m->activations;
  p->kv_pool = (double)cfg->rollout.kv_cache_mb * 1048576.0;
}

int plan_build(struct plan *p, const struct config *cfg, int world, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  if (roles_resolve(cfg, world, &p->counts, err, errlen)) return 2;
  /* gguf:PATH / hf:DIR: the shape from the file (its header / config.json,
   * merged with the deck as the run does); vocab_size = auto with scratch: the
   * built-in character tokenizer. */
  int tok_vocab = 0;
  if (model_import_is_file(cfg)) {
    if (model_import_config(cfg, &p->mc, err, errlen)) return 2;
  } else if (cfg->model.vocab_size < 0 && !strcmp(cfg->model.init, "scratch")) {
    struct tokenizer tok;
    tokenizer_init_char(&tok);
    tok_vocab = tok.vocab_size;
    tokenizer_free(&tok);
  } else if (cfg->model.vocab_size < 0) {
    snprintf(err, errlen, "[model] vocab_size = auto with init = %s: plan does not open the "
             "checkpoint; set vocab_size (or override model.vocab_size=N)",
             cfg->model.init);
    return 2;
  }
  if (!model_import_is_file(cfg) && model_config_from_deck(&p->mc, cfg, tok_vocab, err, errlen))
    return 2;
  const struct role_counts *c = &p->counts;
  if (c->train_pp > p->mc.layers) {
    snprintf(err, errlen, "[ranks] train_pp = %d exceeds [model] layers = %d: a pipeline stage "
             "would hold no layer", c->train_pp, p->mc.layers);
    return 2;
  }
  if (check_tp(&p->mc, c->train_tp, "train_tp", err, errlen) ||
      check_tp(&p->mc, c->rollout_tp, "rollout_tp", err, errlen))
    return 2;
  p->params = (double)model_param_count(&p->mc);
  p->stage_params = plan_stage_params(&p->mc, c->train_pp);
  p->weight_bytes = cfg->model.dtype == DTYPE_BF16 ? 2 : 4; /* the target layout: see print_model */
  p->act_elems_token_layer = plan_act_elems_per_token_layer(&p->mc);
  train_memory(p, cfg);
  rollout_memory(p, cfg);
  if (reward_memory(p, cfg, err, errlen)) return 2;
  p->colocated_total = p->train.total + p->rollout.total + p->reward.total;
  /* Upper bound: every sequence of the step is max_seq tokens long. Generation
   * is a forward (2 FLOPs per parameter per token); training is forward +
   * backward (6 per parameter per token) for each of ppo_epochs passes. */
  p->tokens_step = (double)cfg->algo.prompts_per_step * cfg->algo.group_size * p->mc.max_seq;
  p->flops_gen = 2.0 * p->params * p->tokens_step;
  p->flops_train = 6.0 * p->params * p->tokens_step * cfg->algo.ppo_epochs;
  return 0;
}

/* "12.3 MB" below 1 GB, else "45.67 GB" (decimal units). */
static const char *bytes_str(double b, char *buf, size_t len) {
  if (b < 1e9) snprintf(buf, len, "%.1f MB", b / 1e6);
  else snprintf(buf, len, "%.2f GB", b / 1e9);
  return buf;
}

/* "3.52 PFLOP" etc. */
static const char *flops_str(double f, char *buf, size_t len) {
  static const char *unit[] = {"", "k", "M", "G", "T", "P", "E", "Z"};
  int u = 0;
  while (f >= 1000 && u < 7) { f /= 1000; u++; }
  snprintf(buf, len, "%.3g %sFLOP", f, unit[u]);
  return buf;
}

static void print_range(FILE *f, int first, int n, const char *what) {
  if (n <= 0) return;
  if (n == 1) fprintf(f, "  rank  %-13d %s\n", first, what);
  else {
    char r[32];
    snprintf(r, sizeof r, "%d-%d", first, first + n - 1);
    fprintf(f, "  ranks %-13s %s\n", r, what);
  }
}

void plan_print_ranks(const struct role_counts *c, FILE *f) {
  char w[160];
  int ctl = c->controller;
  print_range(f, 0, ctl, "controller");
  snprintf(w, sizeof w, "train grid dp %d x tp %d x pp %d (tp fastest, then dp, then pp)",
           c->train_dp, c->train_tp, c->train_pp);
  if (c->colocated) {
    char x[320];
    snprintf(x, sizeof x, "%d workers: rollout+reward+train%s; %d rollout instances x tp %d; %s",
             c->train, ctl ? "" : " (rank 0 also runs the controller)", c->rollout_instances,
             c->rollout_tp, w);
    print_range(f, ctl, c->train, x);
  } else {
    char x[320];
    snprintf(x, sizeof x, "reward (%d)", c->reward);
    print_range(f, ctl, c->reward, x);
    snprintf(x, sizeof x, "rollout (%d = %d instances x rollout_tp %d)", c->rollout,
             c->rollout_instances, c->rollout_tp);
    print_range(f, ctl + c->reward, c->rollout, x);
    snprintf(x, sizeof x, "train (%d = %s)", c->train, w);
    print_range(f, ctl + c->reward + c->rollout, c->train, x);
  }
  int owners = c->train_tp * c->train_pp;
  fprintf(f, "  weight_comm: %d ranks = %d train shard owners (dp 0) + %d %srollout ranks\n",
          c->colocated ? c->train : owners + c->rollout, owners,
          c->colocated ? c->train - owners : c->rollout, c->colocated ? "other " : "");
}

static void print_memory_line(FILE *f, const char *role, int ranks, const struct plan_memory *m,
                              int train) {
  char a[32], b[32], d[32], e[32], g[32], h[32], t[32];
  if (ranks <= 0) return;
  if (train) {
    fprintf(f, "  %-12s %s = weights %s + fp32 master %s + grads %s + Adam m,v %s + activations %s "
            "+ logits %s", role, bytes_str(m->total, t, sizeof t), bytes_str(m->weights, a, sizeof a),
            bytes_str(m->master, b, sizeof b), bytes_str(m->grads, d, sizeof d),
            bytes_str(m->adam, e, sizeof e), bytes_str(m->activations, g, sizeof g),
            bytes_str(m->logits, h, sizeof h));
    if (m->critic > 0) fprintf(f, " + PPO critic %s", bytes_str(m->critic, a, sizeof a));
    fputc('\n', f);
  } else
    fprintf(f, "  %-12s %s = weights %s + KV cache %s + forward activations %s\n", role,
            bytes_str(m->total, t, sizeof t), bytes_str(m->weights, a, sizeof a),
            bytes_str(m->kv_cache, b, sizeof b), bytes_str(m->activations, g, sizeof g));
}

static void print_model(const struct plan *p, const struct config *cfg, FILE *f) {
  const struct model_config *mc = &p->mc;
  fprintf(f, "model\n  %.0f parameters (%.3g %s): vocab %d, dim %d, layers %d, heads %d, kv_heads "
          "%d, ffn %d, max_seq %d, %s embeddings%s\n", p->params,
          p->params >= 1e9 ? p->params / 1e9 : p->params / 1e6, p->params >= 1e9 ? "B" : "M",
          mc->vocab_size,
          mc->dim, mc->layers, mc->heads, mc->kv_heads, mc->ffn_dim, mc->max_seq,
          mc->tie_embeddings ? "tied" : "untied", mc->value_head ? ", value head" : "");
  fprintf(f, "  dtype %s: weights %d bytes%s; grads fp32; Adam m,v fp32%s\n",
          p->weight_bytes == 2 ? "bf16" : "fp32", p->weight_bytes,
          p->weight_bytes == 2 ? " + fp32 master copy" : " (they are the master copy)",
          cfg->optim.zero >= 1 ? " (master and m,v sharded over DP: zero = 1)" : "");
  /* The figures assume bf16 storage throughout (Megatron's layout, the target); say what
   * this build allocates today so that a tight fit is read with care (cuda_backend.h). */
  if (p->weight_bytes == 2)
    fprintf(f, "  bf16 as implemented (CUDA backend): fp32 device weights + a bf16 working copy "
            "(6 bytes per parameter), bf16 GEMM inputs with fp32 accumulation, fp32 activations "
            "and KV cache; the figures below assume bf16 storage\n");
  fprintf(f, "  largest pipeline stage %.0f parameters (%d stages); %.0f activation elements per "
          "token per layer\n", p->stage_params, p->counts.train_pp, p->act_elems_token_layer);
}

static void print_memory(const struct plan *p, const struct config *cfg, FILE *f) {
  const struct role_counts *c = &p->counts;
  char b[32];
  fprintf(f, "memory per rank (MB = 1e6, GB = 1e9 bytes)\n");
  print_memory_line(f, c->colocated ? "train part" : "train", c->train, &p->train, 1);
  print_memory_line(f, c->colocated ? "rollout part" : "rollout", c->rollout, &p->rollout, 0);
  fprintf(f, "  %-12s train: micro_batch_seqs %ld x max_seq %d tokens; rollout: %.0f sequences per "
          "instance (%ld prompts over %d instances x group %ld) x max_seq %d, KV %.1f kB per token\n",
          "", cfg->ranks.micro_batch_seqs, p->mc.max_seq, p->seqs_per_instance,
          cfg->algo.prompts_per_step, c->rollout_instances, cfg->algo.group_size, p->mc.max_seq,
          p->kv_bytes_token / 1e3);
  const struct plan_memory *rw = &p->reward;
  char w[32], x[32];
  if (rw->total > 0)
    fprintf(f, "  %-12s %s = reward model weights %s (%zu parameters) + activations %s "
            "(rm_batch_tokens %ld)\n", c->colocated ? "reward part" : "reward",
            bytes_str(rw->total, b, sizeof b), bytes_str(rw->weights, w, sizeof w),
            model_param_count(&p->rm_mc), bytes_str(rw->activations, x, sizeof x),
            cfg->reward.rm_batch_tokens);
  if (c->colocated)
    fprintf(f, "  %-12s %s = train + rollout%s, all resident\n", "worker",
            bytes_str(p->colocated_total, b, sizeof b), rw->total > 0 ? " + reward model" : "");
  else if (rw->total <= 0) fprintf(f, "  %-12s ~0 (rule verifiers, no model)\n", "reward");
  if (c->controller) fprintf(f, "  %-12s ~0 (no model)\n", "controller");
  if (p->kv_pool < p->rollout.kv_cache)
    fprintf(f, "  %-12s [rollout] kv_cache_mb = %ld: the engine's pool holds %.0f%% of the step's "
            "KV cache at once; it generates in waves\n", "", cfg->rollout.kv_cache_mb,
            100.0 * p->kv_pool / p->rollout.kv_cache);
  else
    fprintf(f, "  %-12s [rollout] kv_cache_mb = %ld: the engine's pool holds the step's whole KV "
            "cache\n", "", cfg->rollout.kv_cache_mb);
}

void plan_print(const struct plan *p, const struct config *cfg, FILE *f) {
  const struct role_counts *c = &p->counts;
  char a[32], b[32], d[32], e[32];
  fprintf(f, "ranks: world %d, layout %s\n", c->world, c->colocated ? "colocated" : "separate");
  plan_print_ranks(c, f);
  fprintf(f, "  threads_per_rank %ld, cores_per_node ", cfg->ranks.threads_per_rank);
  if (cfg->ranks.cores_per_node > 0)
    fprintf(f, "%ld: at least %ld nodes\n", cfg->ranks.cores_per_node,
            ((long)c->world * cfg->ranks.threads_per_rank + cfg->ranks.cores_per_node - 1) /
                cfg->ranks.cores_per_node);
  else fprintf(f, "auto (checked on each node at run time)\n");
  print_model(p, cfg, f);
  print_memory(p, cfg, f);
  fprintf(f, "flops per step (bound: every sequence max_seq tokens)\n");
  fprintf(f, "  tokens      %.0f = prompts_per_step %ld x group_size %ld x max_seq %d\n",
          p->tokens_step, cfg->algo.prompts_per_step, cfg->algo.group_size, p->mc.max_seq);
  fprintf(f, "  generation  %s = 2 x params x tokens (%s per rollout rank)\n",
          flops_str(p->flops_gen, a, sizeof a), flops_str(p->flops_gen / c->rollout, b, sizeof b));
  fprintf(f, "  training    %s = 6 x params x tokens x ppo_epochs %ld (%s per train rank)\n",
          flops_str(p->flops_train, d, sizeof d), cfg->algo.ppo_epochs,
          flops_str(p->flops_train / c->train, e, sizeof e));
}

int plan_check_fit(const struct plan *p, const struct config *cfg, char *err, size_t errlen) {
  double limit = cfg->ranks.device_memory_gb * 1e9;
  const struct role_counts *c = &p->counts;
  const struct plan_memory *tr = &p->train, *ro = &p->rollout;
  size_t n = 0;
  char t[32], a[32], b[32], d[32];
  err[0] = '\0';
  if (limit <= 0) return 0;
  if (c->colocated && p->colocated_total > limit)
    n += (size_t)snprintf(err + n, errlen - n, "colocated worker needs %s (train %s + rollout %s) > "
                          "[ranks] device_memory_gb = %g; raise train_tp/train_pp or rollout_tp, "
                          "or lower [ranks] micro_batch_seqs (%ld)",
                          bytes_str(p->colocated_total, t, sizeof t),
                          bytes_str(tr->total, a, sizeof a), bytes_str(ro->total, b, sizeof b),
                          cfg->ranks.device_memory_gb, cfg->ranks.micro_batch_seqs);
  if (!c->colocated && tr->total > limit)
    n += (size_t)snprintf(err + n, errlen - n, "train rank needs %s (weights + master + grads + "
                          "Adam %s, activations + logits %s) > [ranks] device_memory_gb = %g; "
                          "lower [ranks] micro_batch_seqs (%ld), raise train_tp/train_pp, or set "
                          "[optim] zero = 1", bytes_str(tr->total, t, sizeof t),
                          bytes_str(tr->weights + tr->master + tr->grads + tr->adam, a, sizeof a),
                          bytes_str(tr->activations + tr->logits, b, sizeof b),
                          cfg->ranks.device_memory_gb, cfg->ranks.micro_batch_seqs);
  if (!c->colocated && ro->total > limit && n < errlen)
    n += (size_t)snprintf(err + n, errlen - n, "%srollout rank needs %s (weights %s + KV cache %s "
                          "for %.0f sequences x max_seq %d + forward activations %s for [rollout] "
                          "max_batch_tokens %ld) > [ranks] device_memory_gb = %g; raise rollout_tp or "
                          "the rollout instances, or lower prompts_per_step or max_batch_tokens",
                          n ? "\n" : "", bytes_str(ro->total, t, sizeof t),
                          bytes_str(ro->weights, a, sizeof a), bytes_str(ro->kv_cache, b, sizeof b),
                          p->seqs_per_instance, p->mc.max_seq, bytes_str(ro->activations, d, sizeof d),
                          cfg->rollout.max_batch_tokens, cfg->ranks.device_memory_gb);
  if (!c->colocated && p->reward.total > limit && n < errlen)
    n += (size_t)snprintf(err + n, errlen - n, "%sreward rank needs %s (reward model weights %s + "
                          "activations %s) > [ranks] device_memory_gb = %g; lower [reward] "
                          "rm_batch_tokens (%ld)", n ? "\n" : "",
                          bytes_str(p->reward.total, t, sizeof t),
                          bytes_str(p->reward.weights, a, sizeof a),
                          bytes_str(p->reward.activations, b, sizeof b),
                          cfg->ranks.device_memory_gb, cfg->reward.rm_batch_tokens);
  double pool_total = ro->weights + ro->activations + p->kv_pool +
                      (c->colocated ? tr->total + p->reward.total : 0);
  if (pool_total > limit && n < errlen)
    n += (size_t)snprintf(err + n, errlen - n, "%s%s rank: weights %s + forward activations %s + "
                          "[rollout] kv_cache_mb = %ld MiB%s = %s > [ranks] device_memory_gb = %g; "
                          "lower kv_cache_mb", n ? "\n" : "", c->colocated ? "colocated worker" : "rollout",
                          bytes_str(ro->weights, a, sizeof a), bytes_str(ro->activations, d, sizeof d),
                          cfg->rollout.kv_cache_mb,
                          c->colocated ? " + train" : "", bytes_str(pool_total, t, sizeof t),
                          cfg->ranks.device_memory_gb);
  return n ? 2 : 0;
}

static void print_rank_lines(const struct role_counts *c, FILE *f) {
  char line[256];
  struct rank_place p;
  fprintf(f, "rank map\n");
  for (int r = 0; r < c->world; r++) {
    roles_place(c, r, &p);
    roles_place_str(&p, line, sizeof line);
    fprintf(f, "  rank %5d  %s\n", r, line);
  }
}

int plan_report(const struct config *cfg, int world, int print, int per_rank) {
  struct plan p;
  char err[2048];
  int rc = plan_build(&p, cfg, world, err, sizeof err);
  if (rc) {
    if (print) fprintf(stderr, "rlpt: plan: %s\n", err);
    return rc;
  }
  if (print) {
    plan_print(&p, cfg, stdout);
    if (per_rank) print_rank_lines(&p.counts, stdout);
  }
  rc = plan_check_fit(&p, cfg, err, sizeof err);
  if (print && rc) fprintf(stderr, "rlpt: plan: does not fit:\n%s\n", err);
  if (print && !rc)
    printf("plan: OK (%s)\n", cfg->ranks.device_memory_gb > 0 ? "every role fits device_memory_gb"
                                                              : "device_memory_gb = 0: not checked");
  fflush(stdout);
  return rc;
}

int plan_without_mpi(const char *deck, int n_over, char *const *over, int world, int per_rank,
                     const char *simulate, const char *split) {
  struct config *cfg = malloc_check(sizeof *cfg);
  int rc = config_load_serial(cfg, deck, n_over, over);
  if (!rc) {
    printf("rlpt plan %s --world %d (no MPI)\n", deck, world);
    rc = plan_report(cfg, world, 1, per_rank || world <= PLAN_PER_RANK_MAX);
  }
  struct plan p;
  char err[2048];
  if (!rc && simulate) rc = plan_build(&p, cfg, world, err, sizeof err);  /* it did in the report */
  if (!rc && simulate) rc = plan_simulate(cfg, &p, simulate, split);
  free(cfg);
  return rc;
}
