/* deck/config_check.c: the deck checks that involve more than one key (config_parse runs them
 * after the deck and the overrides), the reward's checks, and `rlpt check` (deck/config.h).
 * Each cross-key check names the keys involved and points at the line or override that set
 * one of them. Checks that need the world size live in mpi/comm.c.
 * To add one: an `if` below with cross_fail(section, key, other section, other key, message). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deck/config.h"
#include "env/tools.h"
#include "model/lora.h"
#include "util/alloc.h"

struct cross {
  const struct config *cfg;
  const char *path;
  char *const *over;
  char *err;
  size_t errlen;
};

/* Location of row r: its deck line, its override, or the deck itself (a default). */
static void row_loc(const struct cross *x, int r, char *loc, size_t len) {
  int s = r >= 0 ? x->cfg->src[r] : 0;
  if (s > 0) snprintf(loc, len, "%s:%d", x->path, s);
  else if (s < 0) snprintf(loc, len, "override '%s'", x->over[-s - 1]);
  else snprintf(loc, len, "%s", x->path);
}

/* Fails naming key a or b, located where that key was set. */
__attribute__((format(printf, 6, 7)))
static int cross_fail(const struct cross *x, const char *sa, const char *ka, const char *sb, const char *kb,
                      const char *fmt, ...) {
  char msg[512], loc[CFG_STR_MAX + 64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* name the key the user touched last: an override, else a deck line, else a */
  int ra = config_find(sa, ka), rb = kb ? config_find(sb, kb) : -1;
  int s_a = ra >= 0 ? x->cfg->src[ra] : 0, s_b = rb >= 0 ? x->cfg->src[rb] : 0;
  int r = (s_b < 0 && s_a >= 0) || (s_a == 0 && s_b > 0) ? rb : ra;
  int use_b = rb >= 0 && r == rb;
  row_loc(x, r, loc, sizeof loc);
  snprintf(x->err, x->errlen, "%s: [%s] %s: %s", loc, use_b ? sb : sa, use_b ? kb : ka, msg);
  return 2;
}

/* The model's shape: heads, head size, and the sequence and sampling limits it sets. */
static int cross_model(const struct cross *x) {
  const struct config *c = x->cfg;
  if (c->model.kv_heads < 1 || c->model.heads < 1) /* the ranges forbid it; keep the divisions safe */
    return cross_fail(x, "model", "heads", "model", "kv_heads", "heads and kv_heads must be >= 1");
  if (c->model.heads % c->model.kv_heads)
    return cross_fail(x, "model", "heads", "model", "kv_heads",
                      "model.heads (%ld) must be divisible by model.kv_heads (%ld)", c->model.heads,
                      c->model.kv_heads);
  if (c->model.dim % c->model.heads)
    return cross_fail(x, "model", "dim", "model", "heads", "model.dim (%ld) must be divisible by model.heads (%ld)",
                      c->model.dim, c->model.heads);
  if ((c->model.dim / c->model.heads) % 2)
    return cross_fail(x, "model", "dim", "model", "heads",
                      "head size model.dim / model.heads = %ld must be even (RoPE rotates pairs)",
                      c->model.dim / c->model.heads);
  if (c->rollout.max_new_tokens >= c->model.max_seq)
    return cross_fail(x, "rollout", "max_new_tokens", "model", "max_seq",
                      "rollout.max_new_tokens (%ld) must be less than model.max_seq (%ld): the prompt "
                      "needs room", c->rollout.max_new_tokens, c->model.max_seq);
  if (c->model.vocab_size > 0 && c->rollout.top_k > c->model.vocab_size)
    return cross_fail(x, "rollout", "top_k", "model", "vocab_size",
                      "rollout.top_k (%ld) must not exceed model.vocab_size (%ld)", c->rollout.top_k,
                      c->model.vocab_size);
  return 0;
}

/* Pairs of keys that bound each other, and values a range cannot express. */
static int cross_ranges(const struct cross *x) {
  const struct config *c = x->cfg;
  if (c->eval.k > c->eval.samples)
    return cross_fail(x, "eval", "k", "eval", "samples", "eval.k (%ld) must not exceed eval.samples (%ld)",
                      c->eval.k, c->eval.samples);
  if (c->task.digits_min > c->task.digits_max)
    return cross_fail(x, "task", "digits_min", "task", "digits_max",
                      "task.digits_min (%ld) must not exceed task.digits_max (%ld)", c->task.digits_min,
                      c->task.digits_max);
  if (c->sft.target_band.n != 2 || c->sft.target_band.v[0] > c->sft.target_band.v[1])
    return cross_fail(x, "sft", "target_band", NULL, NULL, "expected two items lo, hi with lo <= hi");
  if (c->rollout.temperature < 0)
    return cross_fail(x, "rollout", "temperature", NULL, NULL, "must be >= 0");
  if (c->sft.source == SFT_SOURCE_REJECTION && c->sft.pool > 0)
    return cross_fail(x, "sft", "pool", "sft", "source", "sft.pool draws from the dataset's examples; "
                      "sft.source = rejection trains on the model's own samples instead");
  if (c->sft.source == SFT_SOURCE_REJECTION && c->sft.steps < c->sft.rejection_rounds)
    return cross_fail(x, "sft", "steps", "sft", "rejection_rounds", "sft.steps (%ld) must be at least "
                      "sft.rejection_rounds (%ld): every round trains", c->sft.steps, c->sft.rejection_rounds);
  return 0;
}

/* A step's samples split into mini-batches and data-parallel train ranks. */
static int cross_batches(const struct cross *x) {
  const struct config *c = x->cfg;
  if (c->algo.mini_batches > c->algo.prompts_per_step * c->algo.group_size)
    return cross_fail(x, "algo", "mini_batches", "algo", "prompts_per_step",
                      "algo.mini_batches (%ld) exceeds the samples of a step (prompts_per_step x group_size "
                      "= %ld)", c->algo.mini_batches, c->algo.prompts_per_step * c->algo.group_size);
  if (c->algo.prompts_per_step % c->ranks.train_dp)
    return cross_fail(x, "algo", "prompts_per_step", "ranks", "train_dp",
                      "algo.prompts_per_step (%ld) must be divisible by ranks.train_dp (%ld): each data-parallel "
                      "train rank gets whole groups", c->algo.prompts_per_step, c->ranks.train_dp);
  if ((c->algo.prompts_per_step * c->algo.group_size) % (c->algo.mini_batches * c->ranks.train_dp))
    return cross_fail(x, "algo", "mini_batches", "algo", "prompts_per_step",
                      "the samples of a step, prompts_per_step x group_size = %ld x %ld = %ld, must be "
                      "divisible by algo.mini_batches x ranks.train_dp = %ld x %ld",
                      c->algo.prompts_per_step, c->algo.group_size,
                      c->algo.prompts_per_step * c->algo.group_size, c->algo.mini_batches, c->ranks.train_dp);
  return 0;
}

/* An estimator whose baseline is the prompt's group (its mean, or the others' mean) gives
 * every sample of a group of one an advantage of exactly 0: such a run would train on
 * nothing. DPO does not use the estimator; an RL-free deck (run.steps = 0) neither. */
static int cross_group(const struct cross *x) {
  const struct config *c = x->cfg;
  static const char *const group_est[] = {[ADV_GRPO] = "grpo", [ADV_DR_GRPO] = "dr_grpo",
                                          [ADV_RLOO] = "rloo",
                                          [ADV_REINFORCE_PP_BASELINE] = "reinforce_pp_baseline"};
  int e = c->algo.adv_estimator;
  const char *name = e >= 0 && e < (int)(sizeof group_est / sizeof *group_est) ? group_est[e] : NULL;
  if (c->algo.group_size != 1 || !name || c->run.steps == 0 || c->algo.name == ALGO_DPO) return 0;
  return cross_fail(x, "algo", "group_size", "algo", "adv_estimator",
                    "group_size = 1 with adv_estimator = %s: the advantage is a sample's reward minus "
                    "its group's baseline over the group_size samples of its prompt, always 0 with one "
                    "sample, so no update would learn anything; use group_size >= 2, or an estimator "
                    "without a group baseline (adv_estimator = reinforce_pp, or algo.name = ppo)", name);
}

/* The files a deck names (logs, data, the reward model) and the prompt template. */
static int cross_files(const struct cross *x) {
  const struct config *c = x->cfg;
  if (c->log.samples_every > 0 && !c->log.samples_path[0] && !c->log.tensorboard_dir[0])
    return cross_fail(x, "log", "samples_every", "log", "samples_path",
                      "log.samples_every = %ld needs log.samples_path or log.tensorboard_dir",
                      c->log.samples_every);
  if (c->log.samples_every <= 0 && c->log.samples_groups != 2)
    return cross_fail(x, "log", "samples_groups", "log", "samples_every", "is read only when samples are "
                      "written: set log.samples_every > 0, or leave samples_groups out");
  if (!strcmp(c->task.name, "jsonl") && !c->data.train_path[0])
    return cross_fail(x, "data", "train_path", "task", "name", "[task] name = jsonl needs [data] train_path");
  if (!strcmp(c->task.name, "jsonl") && access(c->data.train_path, R_OK))
    return cross_fail(x, "data", "train_path", NULL, NULL, "cannot read '%s': %s", c->data.train_path,
                      strerror(errno));
  if (!strcmp(c->task.name, "jsonl") && c->data.eval_path[0] && access(c->data.eval_path, R_OK))
    return cross_fail(x, "data", "eval_path", NULL, NULL, "cannot read '%s': %s", c->data.eval_path,
                      strerror(errno));
  if (c->reward.rm_path[0] && access(c->reward.rm_path, R_OK))
    return cross_fail(x, "reward", "rm_path", NULL, NULL, "cannot read the reward model '%s': %s",
                      c->reward.rm_path, strerror(errno));
  if (!strstr(c->data.prompt_template, "{prompt}"))
    return cross_fail(x, "data", "prompt_template", NULL, NULL, "\"%s\" has no {prompt} (where the row's prompt "
                      "goes)", c->data.prompt_template);
  return 0;
}

/* The [algo] keys a preference run reads (run/pref_mode.c, train/pref_step.c); kl_coef is
 * checked to be 0 below. Any other [algo] key set in a preference deck would be ignored. */
static const char *const pref_algo_keys[] = {"name", "prompts_per_step", "dpo_beta", "dpo_loss",
                                             "dpo_ref", "rm_train_body", "kl_coef", NULL};

static int pref_reads(const char *key) {
  for (int i = 0; pref_algo_keys[i]; i++)
    if (!strcmp(pref_algo_keys[i], key)) return 1;
  return 0;
}

/* An RL-only [algo] key set (deck line or override) in a preference run. */
static int cross_pref_unread(const struct cross *x) {
  for (int r = 0; r < cfg_schema_len; r++) {
    const struct cfg_key *k = &cfg_schema[r];
    if (strcmp(k->section, "algo") || pref_reads(k->name) || x->cfg->src[r] == 0) continue;
    const char *name = x->cfg->algo.name == ALGO_RM ? "rm" : x->cfg->algo.name == ALGO_IPO ? "ipo" : "dpo";
    return cross_fail(x, "algo", k->name, "algo", "name",
                      "[algo] %s is an RL knob that a preference run (name = %s) does not read: remove it",
                      k->name, name);
  }
  return 0;
}

/* Preference runs ([algo] name = dpo | ipo | rm) and their data keys. */
static int cross_pref(const struct cross *x) {
  const struct config *c = x->cfg;
  int pref = config_is_pref(c);
  const char *name = c->algo.name == ALGO_RM ? "rm" : c->algo.name == ALGO_IPO ? "ipo" : "dpo";
  if (pref && !c->data.pref_path[0])
    return cross_fail(x, "data", "pref_path", "algo", "name",
                      "[algo] name = %s trains on preference pairs: set [data] pref_path", name);
  if (!pref && (c->data.pref_path[0] || c->data.pref_eval_path[0]))
    return cross_fail(x, "data", c->data.pref_path[0] ? "pref_path" : "pref_eval_path", "algo", "name",
                      "preference data is read by [algo] name = dpo | ipo | rm only");
  if (c->algo.dpo_ref[0] && c->algo.name != ALGO_DPO && c->algo.name != ALGO_IPO)
    return cross_fail(x, "algo", "dpo_ref", "algo", "name", "a DPO/IPO reference needs [algo] name = dpo or ipo");
  if (!pref) return 0;
  if (access(c->data.pref_path, R_OK))
    return cross_fail(x, "data", "pref_path", NULL, NULL, "cannot read '%s': %s", c->data.pref_path,
                      strerror(errno));
  if (c->data.pref_eval_path[0] && access(c->data.pref_eval_path, R_OK))
    return cross_fail(x, "data", "pref_eval_path", NULL, NULL, "cannot read '%s': %s", c->data.pref_eval_path,
                      strerror(errno));
  if (c->algo.kl_coef > 0)
    return cross_fail(x, "algo", "kl_coef", "algo", "name",
                      "a preference run has no KL term (DPO and IPO hold the reference in the loss): "
                      "kl_coef must be 0");
  if (c->ranks.micro_batch_seqs < 2)
    return cross_fail(x, "ranks", "micro_batch_seqs", "algo", "name",
                      "a preference micro-batch holds whole pairs: micro_batch_seqs must be >= 2");
  if (c->algo.name == ALGO_RM && !c->model.value_head)
    return cross_fail(x, "model", "value_head", "algo", "name",
                      "[algo] name = rm trains the value head: set [model] value_head = true");
  if (c->algo.name == ALGO_RM && !c->algo.rm_train_body && c->optim.weight_decay > 0)
    return cross_fail(x, "algo", "rm_train_body", "optim", "weight_decay",
                      "rm_train_body = false freezes the body, which weight decay would still shrink: "
                      "set [optim] weight_decay = 0");
  return cross_pref_unread(x);
}

int config_is_pref(const struct config *c) {
  return c->algo.name == ALGO_DPO || c->algo.name == ALGO_IPO || c->algo.name == ALGO_RM;
}

/* 1 when row r of c holds another value than its default (d: the defaults). Values, not
 * sources: a canonical deck sets every key, to its default where the deck did not. */
static int off_default(const struct config *c, const struct config *d, int r) {
  const struct cfg_key *k = &cfg_schema[r];
  const char *a = (const char *)c + k->offset, *b = (const char *)d + k->offset;
  switch (k->type) {
    case CFG_INT: return *(const long *)a != *(const long *)b;
    case CFG_FLOAT: return *(const double *)a != *(const double *)b;
    case CFG_BOOL: case CFG_ENUM: return *(const int *)a != *(const int *)b;
    case CFG_STRING: case CFG_PATH: return strcmp(a, b) != 0;
    case CFG_LIST: return memcmp(a, b, sizeof(struct cfg_list)) != 0;
  }
  return 0;
}

/* The first key of section off its default (NULL: none). */
static const char *first_changed(const struct config *c, const struct config *d, const char *section) {
  for (int i = 0; i < cfg_schema_len; i++)
    if (!strcmp(cfg_schema[i].section, section) && off_default(c, d, i)) return cfg_schema[i].name;
  return NULL;
}

/* [run] mode = colocate_async: the colocated layout, one step in flight by construction. */
static int cross_colocate_async(const struct cross *x) {
  const struct config *c = x->cfg;
  if (c->ranks.layout != LAYOUT_COLOCATED)
    return cross_fail(x, "run", "mode", "ranks", "layout", "colocate_async overlaps generation and "
                      "training on the same ranks: set ranks.layout = colocated (with disjoint role "
                      "ranks, use mode = separate_async)");
  if (c->async.max_lag != 1 || c->async.capacity >= 0)
    return cross_fail(x, "async", c->async.max_lag != 1 ? "max_lag" : "capacity", "run", "mode",
                      "colocate_async keeps one step in flight, max_lag 1 by construction (batch "
                      "k + 1 is generated while batch k trains): leave [async] max_lag and capacity out");
  if (!c->async.deterministic)
    return cross_fail(x, "async", "deterministic", "run", "mode", "colocate_async has one schedule, "
                      "the deterministic one; the free-running schedule is separate_async's");
  if (c->run.device == DEVICE_CUDA)
    return cross_fail(x, "run", "device", "run", "mode", "colocate_async is built for the CPU backend "
                      "(the rank's threads split between generation and training); on a GPU it needs "
                      "a second stream, not built: use run.device = cpu or mode = sync");
  return 0;
}

/* [run] weight_sync_dtype = bf16: the paths that send it (run/weight_sync.c's broadcast). */
static int cross_weight_sync(const struct cross *x) {
  const struct config *c = x->cfg;
  if (c->run.weight_sync_dtype != WSYNC_BF16) return 0;
  if (c->run.mode == MODE_SEPARATE_ASYNC && !c->async.deterministic)
    return cross_fail(x, "run", "weight_sync_dtype", "async", "deterministic", "bf16 is built for the "
                      "collective weight broadcast; the free-running schedule posts fp32 weights with "
                      "point-to-point sends: use weight_sync_dtype = fp32 or deterministic = true");
  if (c->ranks.train_tp > 1)
    return cross_fail(x, "run", "weight_sync_dtype", "ranks", "train_tp", "bf16 is built for the "
                      "one-rank broadcast; with train_tp > 1 the TP group sends fp32 tensor by tensor: "
                      "use weight_sync_dtype = fp32");
  return 0;
}

/* [async] against [run] mode = separate_async: what its schedule needs (run/async_step.c;
 * what `rlpt run` builds of the other async mode is its set-up's verdict, run/setup.c). */
static int cross_async(const struct cross *x) {
  const struct config *c = x->cfg;
  if (c->run.mode != MODE_SEPARATE_ASYNC && c->async.in_flight != INFLIGHT_OFF)
    return cross_fail(x, "async", "in_flight", "run", "mode", "needs mode = separate_async (weights "
                      "change during generation only when rollout and training overlap)");
  if (c->async.in_flight == INFLIGHT_OFF && c->async.in_flight_step != 1)
    return cross_fail(x, "async", "in_flight_step", "async", "in_flight", "is read only with in-flight "
                      "updates; set in_flight = continue | recompute | abort, or leave it out");
  if (!c->async.deterministic && c->async.in_flight_step != 1)
    return cross_fail(x, "async", "in_flight_step", "async", "deterministic", "places the update in the "
                      "deterministic schedule; the free-running one (deterministic = false) takes each "
                      "update at the first decode-step boundary after it arrives: leave in_flight_step out");
  if (c->run.mode != MODE_SEPARATE_ASYNC && c->async.stale != 0)
    return cross_fail(x, "async", "stale", "run", "mode", "tis needs mode = separate_async (only its "
                      "samples lag the trainer)");
  if (c->run.mode == MODE_COLOCATE_ASYNC) return cross_colocate_async(x);
  if (c->run.mode != MODE_SEPARATE_ASYNC) return 0;
  long cap = c->async.capacity >= 0 ? c->async.capacity : c->algo.prompts_per_step * c->async.max_lag;
  if (c->async.stale != 0 && cap / c->algo.prompts_per_step <= c->async.max_lag)
    return cross_fail(x, "async", "stale", "async", "capacity", "tis keeps samples past max_lag, but "
                      "capacity %ld groups / prompts_per_step %ld = %ld steps in flight never lag one "
                      "past max_lag %ld; raise capacity above prompts_per_step x max_lag", cap,
                      c->algo.prompts_per_step, cap / c->algo.prompts_per_step, c->async.max_lag);
  if (c->async.in_flight != INFLIGHT_OFF && c->run.device == DEVICE_CUDA)
    return cross_fail(x, "async", "in_flight", "run", "device", "in-flight weight updates are built "
                      "and tested on the CPU backend only; use run.device = cpu or in_flight = off");
  if (c->async.max_lag == 0)
    return cross_fail(x, "async", "max_lag", "run", "mode", "0 in separate_async drops every sample "
                      "generated before the last update, so nothing overlaps; use mode = sync");
  if (c->async.capacity >= 0 && c->async.capacity < c->algo.prompts_per_step)
    return cross_fail(x, "async", "capacity", "algo", "prompts_per_step", "async.capacity (%ld groups) "
                      "is smaller than a step (algo.prompts_per_step = %ld groups)", c->async.capacity,
                      c->algo.prompts_per_step);
  return 0;
}

/* [env] command and the command tool come together; command_timeout_s needs them. */
static int env_command_keys(const struct cross *x, unsigned mask) {
  const struct config *c = x->cfg;
  int listed = (mask & ENV_TOOL_BIT(ENV_TOOL_COMMAND)) != 0;
  if (listed && !c->env.command[0])
    return cross_fail(x, "env", "tools", "env", "command", "[env] tools lists command, but [env] command is "
                      "empty: set it to the worker's PROGRAM ARGS");
  if (!listed && c->env.command[0])
    return cross_fail(x, "env", "command", "env", "tools", "[env] command is set, but [env] tools does not "
                      "list command: it would do nothing");
  struct config *d = malloc_check(sizeof *d);
  config_defaults(d);
  int timeout = off_default(c, d, config_find("env", "command_timeout_s"));
  free(d);
  if (!listed && timeout)
    return cross_fail(x, "env", "command_timeout_s", "env", "tools", "[env] command_timeout_s applies to the command "
                      "tool, and [env] tools does not list command");
  return 0;
}

/* [env]: its keys need enabled = true; multi-turn rollouts need the CPU engine, rollouts
 * (not preference steps), sync steps and SFT on the dataset's demonstrations. */
static int cross_env(const struct cross *x) {
  const struct config *c = x->cfg;
  struct config *d = malloc_check(sizeof *d);
  config_defaults(d);
  const char *k = first_changed(c, d, "env");
  free(d);
  char msg[256];
  unsigned mask;
  if (!c->env.enabled)
    return k ? cross_fail(x, "env", k, "env", "enabled", "[env] %s is set, but [env] enabled = false: "
                          "it would do nothing", k) : 0;
  if (env_tools_parse(c->env.tools, &mask, msg, sizeof msg) != 0)
    return cross_fail(x, "env", "tools", NULL, NULL, "%s", msg);
  int rc = env_command_keys(x, mask);
  if (rc) return rc;
  if (c->run.device == DEVICE_CUDA)
    return cross_fail(x, "env", "enabled", "run", "device", "multi-turn rollouts run on the CPU "
                      "rollout engine only (not yet checked on a GPU): set run.device = cpu or auto");
  if (config_is_pref(c))
    return cross_fail(x, "env", "enabled", "algo", "name", "preference steps have no rollouts");
  if (c->run.mode != MODE_SYNC)
    return cross_fail(x, "env", "enabled", "run", "mode", "multi-turn rollouts run in mode = sync");
  if (c->algo.adv_estimator == ADV_REINFORCE_PP)
    return cross_fail(x, "env", "enabled", "algo", "adv_estimator", "REINFORCE++'s return restarts after "
                      "a masked token (src/rl/README.md §1), so the model turns before a tool turn would "
                      "get none: use grpo, rloo, reinforce_pp_baseline or gae");
  if (c->sft.source == SFT_SOURCE_REJECTION)
    return cross_fail(x, "env", "enabled", "sft", "source", "rejection SFT would train on tool turns "
                      "unmasked: use sft.source = dataset (demonstrations with tool calls)");
  return 0;
}

/* LoRA (model/lora.h): what it is built and tested with; the rest refused. */
static int cross_lora(const struct cross *x) {
  const struct config *c = x->cfg;
  if (c->model.lora_rank == 0) { /* another value than the default would be read by nothing */
    const char *alpha = cfg_schema[config_find("model", "lora_alpha")].def;
    const char *targets = cfg_schema[config_find("model", "lora_targets")].def;
    const char *key = c->model.lora_alpha != strtod(alpha, NULL) ? "lora_alpha"
                      : strcmp(c->model.lora_targets, targets) ? "lora_targets" : NULL;
    if (key)
      return cross_fail(x, "model", key, "model", "lora_rank", "is read only with LoRA adapters: "
                        "set lora_rank > 0, or leave it out");
    return 0;
  }
  unsigned mask;
  char msg[256];
  if (lora_targets_parse(c->model.lora_targets, &mask, msg, sizeof msg))
    return cross_fail(x, "model", "lora_targets", "model", "lora_rank", "%s", msg);
  static const char *const built = "LoRA is built and tested for";
  if (c->ranks.train_tp > 1 || c->ranks.rollout_tp > 1 || c->ranks.train_pp > 1)
    return cross_fail(x, "model", "lora_rank", "ranks", c->ranks.train_tp > 1 ? "train_tp" :
                      c->ranks.rollout_tp > 1 ? "rollout_tp" : "train_pp", "%s unsplit models: "
                      "set train_tp, rollout_tp and train_pp to 1", built);
  if (c->run.device == DEVICE_CUDA)
    return cross_fail(x, "model", "lora_rank", "run", "device", "%s the CPU backend: use run.device "
                      "= cpu", built);
  if (c->model.dtype != DTYPE_FP32)
    return cross_fail(x, "model", "lora_rank", "model", "dtype", "%s fp32 compute", built);
  if (c->optim.zero)
    return cross_fail(x, "model", "lora_rank", "optim", "zero", "%s replicated AdamW state (the "
                      "adapters are small): set optim.zero = 0", built);
  if (c->run.mode != MODE_SYNC)
    return cross_fail(x, "model", "lora_rank", "run", "mode", "%s run.mode = sync", built);
  if (c->run.weight_sync_dtype != WSYNC_FP32)
    return cross_fail(x, "model", "lora_rank", "run", "weight_sync_dtype", "%s the fp32 weight "
                      "broadcast", built);
  if (config_is_pref(c) || c->algo.name == ALGO_PPO || c->algo.adv_estimator == ADV_GAE)
    return cross_fail(x, "model", "lora_rank", "algo", c->algo.name == ALGO_PPO || config_is_pref(c)
                      ? "name" : "adv_estimator", "%s SFT and the critic-free policy-gradient "
                      "algorithms (grpo, dr_grpo, dapo, gspo, rloo, reinforce_pp): no PPO critic, "
                      "DPO/IPO or reward-model training", built);
  if (c->model.value_head)
    return cross_fail(x, "model", "lora_rank", "model", "value_head", "%s models without a value "
                      "head", built);
  return 0;
}

int config_cross_check(const struct config *c, const char *path, char *const *over, char *err, size_t errlen) {
  const struct cross x = {.cfg = c, .path = path, .over = over, .err = err, .errlen = errlen};
  int rc = cross_model(&x);
  if (!rc) rc = cross_ranges(&x);
  if (!rc) rc = cross_batches(&x);
  if (!rc) rc = cross_group(&x);
  if (!rc) rc = cross_files(&x);
  if (!rc) rc = cross_pref(&x);
  if (!rc) rc = cross_async(&x);
  if (!rc) rc = cross_weight_sync(&x);
  if (!rc) rc = cross_env(&x);
  if (!rc) rc = cross_lora(&x);
  if (!rc && c->model.dtype == DTYPE_BF16 && c->run.device == DEVICE_CPU)
    rc = cross_fail(&x, "model", "dtype", "run", "device", "bf16 needs run.device = cuda or auto");
  return rc;
}

/* ---- the reward's checks ------------------------------------------------------------- */

int config_format_tags(const char *tags, char *open, char *close, char *err, size_t errlen) {
  open[0] = close[0] = '\0';
  if (tags[0] == '\0') return 0;
  const char *comma = strchr(tags, ',');
  size_t ol = comma ? (size_t)(comma - tags) : 0, cl = comma ? strlen(comma + 1) : 0;
  if (!comma || ol == 0 || cl == 0 || strchr(comma + 1, ',') || ol >= CFG_TAG_MAX || cl >= CFG_TAG_MAX) {
    snprintf(err, errlen, "[reward] format_tags: '%s' is not \"OPEN,CLOSE\" (two non-empty tags, one comma, "
             "each under %d characters), e.g. <answer>,</answer>", tags, CFG_TAG_MAX);
    return 2;
  }
  memcpy(open, tags, ol);
  open[ol] = '\0';
  memcpy(close, comma + 1, cl + 1);
  if (strstr(open, close) || strstr(close, open)) {
    snprintf(err, errlen, "[reward] format_tags: '%s': one tag contains the other, so a block cannot be "
             "delimited; use distinct tags such as <answer>,</answer>", tags);
    return 2;
  }
  return 0;
}

/* Keys of the code sandbox and of [reward] command mean something only where those are used. */
static int code_keys_check(const struct config *c, char *err, size_t errlen) {
  struct config *d = malloc_check(sizeof *d);
  config_defaults(d);
  int code = !strcmp(c->task.name, "jsonl") && c->data.verifier == DATA_VERIFY_CODE, rc = 2;
  unsigned tools = 0;
  char terr[128];
  if (c->env.enabled && env_tools_parse(c->env.tools, &tools, terr, sizeof terr) != 0) tools = 0;
  int python = (tools & ENV_TOOL_BIT(ENV_TOOL_PYTHON)) != 0;
  const char *k = first_changed(c, d, "sandbox");
  int score = off_default(c, d, config_find("data", "code_score"));
  const char *ck = off_default(c, d, config_find("reward", "command_workers")) ? "command_workers"
                   : off_default(c, d, config_find("reward", "command_timeout_s")) ? "command_timeout_s" : NULL;
  free(d);
  if (k && !code && !python)
    snprintf(err, errlen, "[sandbox] %s: [sandbox] runs the code task's programs and the python tool: it "
             "needs [task] name = jsonl with [data] verifier = code, or [env] tools with python", k);
  else if (score && !code)
    snprintf(err, errlen, "[data] code_score: needs [data] verifier = code");
  else if (ck && !c->reward.command[0])
    snprintf(err, errlen, "[reward] %s: applies to [reward] command workers, and [reward] command is empty", ck);
  else
    rc = 0;
  return rc;
}

int config_reward_check(const struct config *cfg, char *err, size_t errlen) {
  long buffer = cfg->algo.overlong_buffer, max_new = cfg->rollout.max_new_tokens;
  if (!cfg->reward.rm_path[0] && cfg->reward.rm_alpha < 1.0) {
    snprintf(err, errlen, "[reward] rm_alpha = %g mixes in a reward model, but [reward] rm_path is empty "
             "(set rm_path to a model file with a value head, or rm_alpha = 1)", cfg->reward.rm_alpha);
    return 2;
  }
  int countdown = !strcmp(cfg->task.name, "countdown") ||
                  (!strcmp(cfg->task.name, "jsonl") && cfg->data.verifier == DATA_VERIFY_COUNTDOWN);
  if (cfg->reward.self_consistency && countdown) {
    snprintf(err, errlen, "[reward] self_consistency votes on final answers, but the countdown verifier "
             "checks an expression against the target: there is no answer to vote on");
    return 2;
  }
  int code = !strcmp(cfg->task.name, "jsonl") && cfg->data.verifier == DATA_VERIFY_CODE;
  if (cfg->reward.self_consistency && (code || cfg->reward.command[0])) {
    snprintf(err, errlen, "[reward] self_consistency votes on final answers; %s gives a score, not an answer "
             "to vote on", code ? "the code verifier" : "[reward] command");
    return 2;
  }
  if (buffer >= max_new && buffer > 0) {
    snprintf(err, errlen, "[algo] overlong_buffer: %ld must be smaller than [rollout] max_new_tokens = %ld "
             "(the shaping starts max_new_tokens - overlong_buffer tokens in)", buffer, max_new);
    return 2;
  }
  char open[CFG_TAG_MAX], close[CFG_TAG_MAX];
  int rc = config_format_tags(cfg->reward.format_tags, open, close, err, errlen);
  return rc ? rc : code_keys_check(cfg, err, errlen);
}

/* ---- rlpt check ------------------------------------------------------------------------ */

int config_check_deck(const char *path, int n_over, char *const *over, FILE *out) {
  struct config *cfg = malloc_check(sizeof *cfg);
  char err[1024];
  int rc = config_load_serial(cfg, path, n_over, over);
  if (!rc && (rc = config_reward_check(cfg, err, sizeof err)) != 0)
    fprintf(stderr, "rlpt: %s: %s\n", path, err);
  if (!rc) config_write_canonical(cfg, out);
  free(cfg);
  return rc;
}
