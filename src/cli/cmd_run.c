/* cli/cmd_run.c: `rlpt run DECK [section.key=value ...]` under mpirun — the
 * training job (run/run.h): startup (deck, communicators, threads, task, reward,
 * model, the role state; every error collective, exit 2 on every rank for bad
 * input), then SFT, the post-SFT eval, the sync RL steps with their evals, and
 * the summary. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/gemm.h"
#include "io/ckpt.h"
#include "model/device.h"
#include "model/import.h"
#include "model/model.h"
#include "mpi/wait.h"
#include "rl/reward_model.h"
#include "run/reward_service.h"
#include "rollout/engine.h"
#include "run/eval.h"
#include "run/restart.h"
#include "run/run.h"
#include "run/signals.h"
#include "train/trainer.h"
#include "util/clock.h"
#include "util/error.h"

/* What this build's `run` supports; the same verdict on every rank (pure in cfg). */
static int run_supported(const struct config *cfg, const struct role_counts *c, char *err, size_t len) {
  if (cfg->run.mode != MODE_SYNC)
    snprintf(err, len, "[run] mode: rlpt run implements mode = sync; colocate_async and "
             "separate_async are not available in this build");
  else if (c->rollout_tp != 1 || c->train_tp != 1 || c->train_pp != 1)
    snprintf(err, len, "[ranks] rollout_tp = %d, train_tp = %d, train_pp = %d: rlpt run needs 1 for "
             "each (the CPU trainer and rollout engine are data-parallel only; use train_dp and more "
             "rollout ranks)", c->rollout_tp, c->train_tp, c->train_pp);
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

/* The deck-level pieces every rank builds the same way. Collective verdict. */
static int setup_common(struct run *r, char *err, size_t len) {
  int rc = run_supported(r->cfg, &r->comms.counts, err, len);
  if (!rc) rc = threads_setup(r->cfg, MPI_COMM_WORLD, &r->threads, err, len);
  /* init = gguf:PATH | hf:DIR: the model's own tokenizer and config (model/import.h) on every rank */
  if (!rc) rc = model_import_or_deck(r->cfg, &r->mc, &r->tok, err, len);
  else tokenizer_init_char(&r->tok);
  if (!rc) rc = task_init(&r->task, r->cfg, err, len);
  if (!rc) rc = reward_init(&r->rcfg, r->cfg, err, len);
  if (!rc) rc = reward_service_check(r, err, len);  /* rank 0: [reward] rm_path fits the policy */
  if (!rc) rc = check_lengths(r, err, len);
  if (!rc && build_maps(r) != 0) {
    snprintf(err, len, "out of memory");
    rc = 1;
  }
  return rc;
}

/* This rank's role state (trainer, rollout model and engine, metrics file). Local errors,
 * printed by the rank that has them, then agreed. */
static int setup_roles(struct run *r) {
  char err[1024] = "";
  int rc = 0;
  r->part_len = PS_LEN(metric_fields_len);
  r->part = calloc((size_t)r->part_len, sizeof(double));
  for (int b = 0; b < BOX_COUNT; b++) sample_batch_init(&r->box[b]);
  if (!r->part) rc = 1, snprintf(err, sizeof err, "out of memory");
  /* every rank, whatever its role, before any device memory: one GPU per rank of a node */
  const struct backend_ops *dev = device_backend(r->cfg->run.device, r->cfg->model.dtype, err,
                                                 sizeof err);
  if (dev && dev->upload) device_use(comms_node_rank(MPI_COMM_WORLD));
  err[0] = '\0';
  if (!rc && r->is_train) {
    r->trainer = calloc(1, sizeof *r->trainer);
    int max_tokens = (int)(r->cfg->ranks.micro_batch_seqs * r->mc.max_seq);
    rc = !r->trainer ? 1 : trainer_create(r->trainer, r->cfg, &r->mc, max_tokens, r->comms.dp_comm, err,
                                          sizeof err);
    if (rc && r->trainer && !r->trainer->cfg) { free(r->trainer); r->trainer = NULL; }
  }
  if (!rc && r->is_rollout) {
    /* the rollout model runs on [run] device like the trainer (model/device.h): NULL = refused */
    const struct backend_ops *ops = device_backend(r->cfg->run.device, r->cfg->model.dtype, err, sizeof err);
    r->rmodel = ops ? calloc(1, sizeof *r->rmodel) : NULL;
    int max_tokens = (int)r->cfg->rollout.max_batch_tokens;
    if (!ops) {
      rc = 2;
    } else if (!r->rmodel || model_create(r->rmodel, &r->mc, max_tokens, ops) != 0) {
      free(r->rmodel);
      r->rmodel = NULL;
      rc = 1;
      snprintf(err, sizeof err, "could not allocate the rollout model ([rollout] max_batch_tokens = %d)",
               max_tokens);
    } else {
      rc = rollout_create(&r->engine, r->rmodel, r->cfg, &r->tok, err, sizeof err);
    }
  }
  if (!rc) rc = reward_service_setup(r, err, sizeof err);  /* reward ranks, [reward] rm_path */
  if (!rc && r->is_ctl &&
      metrics_log_open(&r->mlog, r->cfg->log.metrics_path, NULL, r->cfg->run.steps,
                       r->cfg->run.restart[0] != 0, err, sizeof err) != 0)
    rc = 2;
  if (rc) fprintf(stderr, "rlpt: run: rank %d: %s\n", r->comms.world_rank, err);
  return error_agree(MPI_COMM_WORLD, rc);
}

static void teardown(struct run *r) {
  run_sync_free(r);
  if (r->trainer && r->trainer->cfg) trainer_free(r->trainer);
  free(r->trainer);
  rollout_free(r->engine);
  if (r->rm) reward_model_free(r->rm);
  free(r->rm);
  if (r->rmodel) model_free(r->rmodel);
  free(r->rmodel);
  for (int b = 0; b < BOX_COUNT; b++) sample_batch_free(&r->box[b]);
  free(r->part);
  free(r->rollout_world);
  free(r->reward_world);
  free(r->train_world);
  if (r->is_ctl) metrics_log_close(&r->mlog);
  tokenizer_free(&r->tok);
}

static void print_banner(struct run *r) {
  if (r->is_ctl) {
    const struct role_counts *c = &r->comms.counts;
    printf("rlpt run %s: %d ranks, mode sync, layout %s (controller %d, rollout %d, reward %d, train "
           "dp %d); %d BLAS thread(s) per rank%s, CPU GEMM %s\n", r->deck_path, c->world,
           c->colocated ? "colocated" : "separate", c->controller, c->rollout, c->reward, c->train_dp,
           r->threads.threads, r->threads.oversubscribed ? " (oversubscribed: waiting ranks yield)" : "",
           cpu_gemm_name());
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

/* After RL step `step` (0: the SFT -> RL boundary) and its eval, every rank: the
 * [checkpoint] every cadence, then stop when a rank got SIGTERM/SIGUSR1 or [run]
 * stop_after says so, with a checkpoint of this step. The checkpoint comes after
 * signals_agree, a world collective the controller enters only once it has logged the
 * step: a crash can then never leave a checkpoint whose step has no metrics line.
 * 1 = stop. */
static int run_stop_check(struct run *r, long step) {
  int sig = signals_agree(MPI_COMM_WORLD);
  int stop = sig || (step > 0 && step == r->cfg->run.stop_after);
  int due = step > 0 && run_ckpt_due(r, step);
  if (r->is_train && (due || (stop && step != r->cfg->run.steps))) run_checkpoint(r, step);
  if (!stop || step == r->cfg->run.steps) return 0;
  if (r->is_ctl) {
    char path[4200];
    ckpt_step_path(r->cfg->checkpoint.dir, step, path, sizeof path);
    printf("rlpt: run: %s after %s step %ld: checkpoint %s written; every rank exits 0 "
           "(resume: rlpt run DECK --restart latest)\n", sig ? signals_name(sig) : "[run] stop_after",
           step ? "RL" : "SFT (boundary), RL", step, path);
    fflush(stdout);
  }
  return 1;
}

/* Controller, resuming: the metrics file cut back to the checkpoint's step (a run killed
 * after it logged more), then reopened for appending. */
static void restart_metrics(struct run *r, const struct restart_point *rp) {
  const char *path = r->cfg->log.metrics_path;
  char err[512];
  metrics_log_close(&r->mlog);
  if (restart_trim_metrics(path, rp->step, rp->phase_rl) != 0)
    fprintf(stderr, "rlpt: run: WARNING: could not cut %s back to step %ld; appending\n", path, rp->step);
  if (metrics_log_open(&r->mlog, path, NULL, r->cfg->run.steps, 1, err, sizeof err) != 0)
    die_local("%s", err);
}

/* SFT, the post-SFT eval and the boundary check: a fresh run's start. 1 = stop. */
static int run_warm_start(struct run *r) {
  run_sft(r);
  run_sync_weights(r);
  r->sft_pass1 = run_eval(r, PHASE_SFT, 0);
  /* the train ranks put it into their checkpoints (run/restart.h) */
  wait_bcast(&r->sft_pass1, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return r->cfg->run.steps > 0 && run_stop_check(r, 0);
}

int run_loop(struct run *r) {
  struct restart_point rp;
  int rc = restart_load(r, &rp);
  if (rc) return rc;
  r->t_start = clock_seconds();
  r->sft_pass1 = r->rl_pass1 = NAN;
  long S = r->cfg->run.steps, every = r->cfg->eval.every;
  if (rp.active) {
    r->sft_pass1 = rp.sft_pass1;
    if (r->is_ctl) restart_metrics(r, &rp);
  } else if (run_warm_start(r)) {
    return 0;
  }
  if (S > 0) {
    if (r->is_train) trainer_begin_rl(r->trainer);
    if (r->is_train) restart_apply_rl(r, &rp);
    if (r->is_ctl) {
      r->mlog.total_steps = S;
      r->mlog.n_timed = 0;
      r->mlog.sum_step_s = 0;
    }
  }
  if (rp.active) run_sync_weights(r);  /* the restored policy to the rollout ranks */
  if (rp.active && rp.step == S && r->is_ctl) {
    printf("restart: the checkpoint is of the last RL step (%ld); nothing left to run\n", S);
    fflush(stdout);
  }
  if (rp.active && rp.step == S) return 0;
  for (long s = rp.step + 1; s <= S; s++) {
    run_rl_step(r, s);
    if (every > 0 && s % every == 0 && s < S) run_eval(r, PHASE_RL, s);
    if (run_stop_check(r, s)) return 0;
  }
  if (S > 0) r->rl_pass1 = run_eval(r, PHASE_RL, S);
  if (r->is_ctl) controller_summary(r);
  return 0;
}

static int run_mpi(struct run *r, const char *deck, int n_over, char **over) {
  struct config *cfg = malloc(sizeof *cfg);  /* too large for the stack */
  char err[2048] = "";
  int wr, rc = error_agree(MPI_COMM_WORLD, cfg ? 0 : 1);
  if (rc) {
    free(cfg);
    return rc;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  r->deck_path = deck;
  r->cfg = cfg;
  rc = config_load(cfg, deck, n_over, over, MPI_COMM_WORLD);
  if (!rc) {
    rc = comms_create(&r->comms, cfg, MPI_COMM_WORLD, err, sizeof err);
    if (rc && wr == 0) fprintf(stderr, "rlpt: run: %s\n", err);
  }
  if (rc) {
    free(cfg);
    return rc;
  }
  error_set_role(role_name(r->comms.place.role));
  rc = error_agree(MPI_COMM_WORLD, setup_common(r, err, sizeof err));
  if (rc && r->comms.world_rank == 0) fprintf(stderr, "rlpt: run: %s\n", err);
  if (!rc) {
    print_banner(r);
    rc = setup_roles(r);
  }
  if (!rc) rc = run_loop(r);
  teardown(r);
  comms_free(&r->comms);
  free(cfg);
  return rc;
}

static int usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: mpirun -np N rlpt run DECK [--restart latest|PATH] [section.key=value ...]\n"
          "  the training job: SFT warm start, then RL steps (sync mode); metrics to [log] metrics_path\n"
          "  --restart latest|PATH   resume from [checkpoint] dir/latest or a checkpoint file\n"
          "                          (the same as [run] restart)\n"
          "  SIGTERM / SIGUSR1: checkpoint at the next step boundary, every rank exits 0\n");
  return rc;
}

/* argv with `--restart X` / `--restart=X` turned into the override run.restart=X
 * (args[] owns the strings it made in made[]). -1: --restart without a value. */
static int restart_arg(int argc, char **argv, char **args, int *n, char **made) {
  *n = 0;
  for (int i = 0; i < argc; i++) {
    const char *v = NULL;
    if (!strcmp(argv[i], "--restart")) {
      if (i + 1 >= argc) return -1;
      v = argv[++i];
    } else if (!strncmp(argv[i], "--restart=", 10)) {
      v = argv[i] + 10;
    }
    if (!v) { args[(*n)++] = argv[i]; continue; }
    size_t len = strlen(v) + 16;
    if (!(*made = malloc(len))) return -1;
    snprintf(*made, len, "run.restart=%s", v);
    args[(*n)++] = *made;
  }
  return 0;
}

int cmd_run(int argc, char **argv) {
  char **over = calloc((size_t)argc + 1, sizeof *over), **rest = calloc((size_t)argc + 1, sizeof *rest);
  char **args = calloc((size_t)argc + 1, sizeof *args), *made = NULL;
  int n_over = 0, n_rest = 0, n_args = 0, rc;
  if (!over || !rest || !args) {
    fprintf(stderr, "rlpt: run: out of memory\n");
    free(over);
    free(rest);
    free(args);
    return 1;
  }
  if (restart_arg(argc, argv, args, &n_args, &made) != 0) {
    fprintf(stderr, "rlpt: run: --restart needs a value: latest or a checkpoint path\n");
    rc = 2;
  } else {
    config_split_args(n_args, args, over, &n_over, rest, &n_rest);
    if (n_rest == 1 && (!strcmp(rest[0], "-h") || !strcmp(rest[0], "--help"))) rc = usage(0);
    else if (n_rest != 1 || rest[0][0] == '-') rc = usage(2);
    else {
      struct run *r = calloc(1, sizeof *r);
      MPI_Init(NULL, NULL);
      signals_install();
      rc = r ? run_mpi(r, rest[0], n_over, over) : 1;
      free(r);
      MPI_Finalize();
    }
  }
  free(made);
  free(over);
  free(rest);
  free(args);
  return rc;
}
