/* run/setup.c: a run's state from its deck and communicators, and its teardown
 * (run/setup.h). */
#include "run/setup.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu/gemm.h"
#include "env/episode.h"
#include "model/device.h"
#include "model/import.h"
#include "model/model.h"
#include "monitor/watch.h"
#include "rl/reward_model.h"
#include "rollout/engine.h"
#include "run/async_step.h"
#include "run/checkpoint.h"
#include "run/difficulty_sync.h"
#include "run/mode.h"
#include "run/partial.h"
#include "run/pref_mode.h"
#include "run/pregen.h"
#include "run/progress.h"
#include "run/reward_service.h"
#include "run/run.h"
#include "run/samples_log.h"
#include "run/tp_run.h"
#include "run/weight_sync.h"
#include "sandbox/sandbox.h"
#include "train/trainer.h"
#include "util/error.h"

/* What this build's `run` supports, and r->mode; the same verdict on every rank (pure in
 * the deck). */
static int run_supported(struct run *r, char *err, size_t len) {
  const struct role_counts *c = &r->comms.counts;
  r->mode = mode_ops_for(r->cfg);
  if (!r->mode)
    snprintf(err, len, "[run] mode %d has no schedule in this build", r->cfg->run.mode);
  else if (c->train_pp != 1)
    snprintf(err, len, "[ranks] train_pp = %d: rlpt run needs 1 (pipeline-parallel training is not "
             "built; use train_dp and train_tp)", c->train_pp);
  else if (r->cfg->run.mode != MODE_SYNC) return async_supported(r, err, len);
  else return 0;
  return 2;
}

/* Prompts (and with [sft] steps, SFT examples) must fit [model] max_seq with the response:
 * task_check_fit on the first TASK_FIT_PROMPTS prompts of both splits, or every row of a
 * dataset in tokens (FILE:LINE when one does not fit). */
static int check_lengths(const struct run *r, char *err, size_t len) {
  struct fit_limits l = { .max_seq = r->mc.max_seq, .max_new = r->cfg->rollout.max_new_tokens,
                          .sft = r->cfg->sft.steps > 0, .where = r->deck_path, .limit = "[model] max_seq" };
  return task_check_fit(&r->task, &r->tok, &l, TASK_FIT_PROMPTS, TASK_FIT_PROMPTS, err, len);
}

/* World rank of every rollout, reward and train (tp 0, pp 0, by dp) rank. */
static int build_maps(struct run *r) {
  const struct role_counts *c = &r->comms.counts;
  r->rollout_world = calloc((size_t)c->rollout + 1, sizeof(int));
  r->reward_world = calloc((size_t)c->reward + 1, sizeof(int));
  r->train_world = calloc((size_t)c->train_dp + 1, sizeof(int));
  if (!r->rollout_world || !r->reward_world || !r->train_world) return 1;
  for (int w = 0; w < c->world; w++) {
    struct rank_place p;
    roles_place(c, w, &p);
    if (p.roles & ROLE_BIT(ROLE_ROLLOUT)) r->rollout_world[p.role_rank[ROLE_ROLLOUT]] = w;
    if (p.roles & ROLE_BIT(ROLE_REWARD)) r->reward_world[p.role_rank[ROLE_REWARD]] = w;
    if ((p.roles & ROLE_BIT(ROLE_TRAIN)) && p.tp == 0 && p.pp == 0) r->train_world[p.dp] = w;
  }
  struct rank_place *me = &r->comms.place;
  r->is_ctl = r->comms.world_rank == 0;
  r->is_rollout = (me->roles & ROLE_BIT(ROLE_ROLLOUT)) != 0;
  r->is_reward = (me->roles & ROLE_BIT(ROLE_REWARD)) != 0;
  r->is_train = (me->roles & ROLE_BIT(ROLE_TRAIN)) != 0;
  return 0;
}

/* Controller: the metrics writers of [log] (run/metrics_log.h); a resumed run appends to
 * the JSONL. 0, or 2 with the reason in err. */
static int open_metrics_log(struct run *r, char *err, size_t len) {
  const struct config *cfg = r->cfg;
  struct metrics_log_paths paths = {.jsonl = cfg->log.metrics_path,
                                    .tb_dir = cfg->log.tensorboard_dir,
                                    .prom = cfg->log.prometheus_path};
  int append = cfg->run.restart[0] != 0;
  return metrics_log_open(&r->mlog, &paths, cfg->run.steps, append, err, len) ? 2 : 0;
}

/* The deck-level pieces every rank builds the same way, and the controller's metrics
 * writers (before the banner: a bad [log] path is the one message). Collective verdict. */
static int setup_common(struct run *r, char *err, size_t len) {
  int rc = run_supported(r, err, len);
  if (!rc) rc = threads_setup(r->cfg, MPI_COMM_WORLD, &r->threads, err, len);
  /* init = gguf:PATH | hf:DIR: the model's own tokenizer and config (model/import.h) on every rank */
  if (!rc) rc = model_import_or_deck(r->cfg, &r->mc, &r->tok, err, len);
  else tokenizer_init_char(&r->tok);
  if (!rc) rc = tp_run_supported(r, err, len);  /* [ranks] train_tp, rollout_tp > 1 */
  if (!rc) rc = task_init(&r->task, r->cfg, err, len);
  if (!rc) rc = reward_init(&r->rcfg, r->cfg, err, len);
  if (!rc) rc = reward_service_check(r, err, len);  /* rank 0: [reward] rm_path fits the policy */
  if (!rc) rc = check_lengths(r, err, len);
  if (!rc && difficulty_run_init(r) != 0) rc = 1, snprintf(err, len, "out of memory");
  if (!rc && config_is_pref(r->cfg)) rc = pref_mode_setup(r, err, len);  /* [data] pref_path */
  if (!rc && build_maps(r) != 0) {
    snprintf(err, len, "out of memory");
    rc = 1;
  }
  if (!rc && r->is_ctl) rc = open_metrics_log(r, err, len);
  return rc;
}

/* Train ranks: the trainer. 0, or 2/1 with a message in err. */
static int setup_trainer(struct run *r, char *err, size_t len) {
  r->trainer = calloc(1, sizeof *r->trainer);
  if (!r->trainer) return snprintf(err, len, "out of memory"), 1;
  int max_tokens = (int)(r->cfg->ranks.micro_batch_seqs * r->mc.max_seq);
  int rc = trainer_create_tp(r->trainer, r->cfg, &r->mc, max_tokens, r->comms.dp_comm,
                             r->comms.tp_comm, err, len);
  if (rc && !r->trainer->cfg) {
    free(r->trainer);
    r->trainer = NULL;
  }
  return rc;
}

int run_env_setup(struct run *r, char *err, size_t len) {
  const struct config *cfg = r->cfg;
  if (!cfg->env.enabled) return 0;
  struct env_tools tools = { .enabled = 0 };
  if (env_tools_parse(cfg->env.tools, &tools.enabled, err, len) != 0) return 2;
  if (tools.enabled & ENV_TOOL_BIT(ENV_TOOL_PYTHON)) {
    struct sandbox_opts o;
    sandbox_opts_from_config(&o, cfg);
    char serr[768];
    if (!(r->env_sandbox = calloc(1, sizeof *r->env_sandbox))) return snprintf(err, len, "out of memory"), 1;
    if (sandbox_init(r->env_sandbox, &o, serr, sizeof serr) != 0)
      return snprintf(err, len, "[env] tools = %.200s: the python tool needs the sandbox: %.400s", cfg->env.tools,
                      serr), 2;
    tools.sb = r->env_sandbox;
  }
  if (tools.enabled & ENV_TOOL_BIT(ENV_TOOL_COMMAND)) {
    int rc = env_tools_open_command(&tools, cfg->env.command, cfg->env.command_timeout_s, err, len);
    if (rc) return rc;
  }
  if (!(r->env = calloc(1, sizeof *r->env))) {
    env_tools_close(&tools);
    return snprintf(err, len, "out of memory"), 1;
  }
  enum env_wrap wrap = !r->task.chat ? ENV_WRAP_PLAIN
                       : r->task.chat_tpl.kind == CHAT_LLAMA3 ? ENV_WRAP_LLAMA3 : ENV_WRAP_CHATML;
  env_init(r->env, &tools, (int)cfg->env.max_turns, wrap, &r->tok);
  struct rollout_env hooks = env_rollout_hooks(r->env);
  return rollout_set_env(r->engine, &hooks, err, len);
}

void run_env_free(struct run *r) {
  if (r->env) {
    env_tools_close(&r->env->tools);
    env_free(r->env);
  }
  free(r->env);
  free(r->env_sandbox);
  r->env = NULL;
  r->env_sandbox = NULL;
}

/* Rollout ranks: the rollout model on [run] device, like the trainer's, and its engine.
 * 0, or 2/1 with a message in err. */
static int setup_rollout(struct run *r, char *err, size_t len) {
  const struct backend_ops *ops = device_backend(r->cfg->run.device, r->cfg->model.dtype, err, len);
  if (!ops) return 2;
  int max_tokens = (int)r->cfg->rollout.max_batch_tokens;
  r->rmodel = calloc(1, sizeof *r->rmodel);
  if (!r->rmodel || rollout_tp_create(r, max_tokens, ops) != 0) {
    free(r->rmodel);
    r->rmodel = NULL;
    snprintf(err, len, "could not allocate the rollout model ([rollout] max_batch_tokens = %d)",
             max_tokens);
    return 1;
  }
  int rc = rollout_create(&r->engine, r->rmodel, r->cfg, &r->tok, err, len);
  return rc ? rc : run_env_setup(r, err, len);
}

/* This rank's role state (trainer, rollout model and engine, train dp 0's samples event
 * file). Local errors, printed by the rank that has them, then agreed. */
static int setup_roles(struct run *r) {
  char err[1024] = "";
  int rc = 0;
  r->partial_len = PS_LEN(metric_fields_len);
  r->partial = calloc((size_t)r->partial_len, sizeof(double));
  for (int b = 0; b < BOX_COUNT; b++) sample_batch_init(&r->box[b]);
  if (!r->partial) rc = 1, snprintf(err, sizeof err, "out of memory");
  /* every rank, whatever its role, before any device memory: one GPU per rank of a node */
  const struct backend_ops *dev = device_backend(r->cfg->run.device, r->cfg->model.dtype, err,
                                                 sizeof err);
  if (dev && dev->upload) device_use(comms_node_rank(MPI_COMM_WORLD));
  err[0] = '\0';
  if (!rc && r->is_train) rc = setup_trainer(r, err, sizeof err);
  if (!rc && r->is_rollout) rc = setup_rollout(r, err, sizeof err);
  if (!rc) rc = reward_service_setup(r, err, sizeof err);  /* reward ranks, [reward] rm_path */
  if (rc) fprintf(stderr, "rlpt: run: rank %d: %s\n", r->comms.world_rank, err);
  rc = error_agree(MPI_COMM_WORLD, rc);
  /* after the controller's (setup_common): an unwritable tensorboard_dir is reported once */
  if (!rc && samples_log_open(r, err, sizeof err) != 0) {
    fprintf(stderr, "rlpt: run: rank %d: %s\n", r->comms.world_rank, err);
    rc = 2;
  }
  return error_agree(MPI_COMM_WORLD, rc);
}

static void print_banner(struct run *r) {
  if (r->is_ctl) {
    const struct role_counts *c = &r->comms.counts;
    printf("rlpt run %s: %d ranks, mode %s, layout %s (controller %d, rollout %d, reward %d, train "
           "dp %d x tp %d); %d BLAS thread(s) per rank%s, CPU GEMM %s\n", r->deck_path, c->world,
           r->mode->name, c->colocated ? "colocated" : "separate", c->controller, c->rollout,
           c->reward, c->train_dp, c->train_tp, r->threads.threads,
           r->threads.oversubscribed ? " (oversubscribed: waiting ranks yield)" : "", cpu_gemm_name());
    printf("rank map (host, role, coordinates)\n");
    fflush(stdout);
  }
  comms_print_map(&r->comms, stdout);
  if (r->is_ctl) {
    printf("---- deck (canonical) ----\n");
    config_write_canonical(r->cfg, stdout);
    printf("---- end of deck ----\n");
    printf("model: %zu parameters; metrics -> %s\n", model_param_count(&r->mc), r->cfg->log.metrics_path);
    fflush(stdout);
  }
}

int run_setup(struct run *r) {
  char err[2048] = "";
  error_set_role(role_name(r->comms.place.role));
  int rc = error_agree(MPI_COMM_WORLD, setup_common(r, err, sizeof err));
  if (rc && r->comms.world_rank == 0) fprintf(stderr, "rlpt: run: %s\n", err);
  if (rc) return rc;
  print_banner(r);
  rc = setup_roles(r);
  /* before any work: an unwritable [checkpoint] dir is found now, not after SFT */
  return rc ? rc : run_ckpt_dir_check(r);
}

void run_teardown(struct run *r) {
  run_sync_free(r);
  pregen_free(r);
  async_free(r);
  if (r->trainer && r->trainer->cfg) trainer_free(r->trainer);
  free(r->trainer);
  rollout_free(r->engine);
  run_env_free(r);
  if (r->rm) reward_model_free(r->rm);
  free(r->rm);
  if (r->rmodel) model_free(r->rmodel);
  free(r->rmodel);
  for (int b = 0; b < BOX_COUNT; b++) sample_batch_free(&r->box[b]);
  free(r->partial);
  free(r->rollout_world);
  free(r->reward_world);
  free(r->train_world);
  if (r->is_ctl) metrics_log_close(&r->mlog);
  samples_log_close(r);
  difficulty_free(&r->diff);
  watch_free(r->watch);
  pref_mode_free(r);
  reward_free(&r->rcfg);
  task_free(&r->task);
  progress_free(r);
  tokenizer_free(&r->tok);
}
