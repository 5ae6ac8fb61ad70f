/* run/offline_eval.c: `rlpt eval`, a run's held-out evaluation alone (run/offline_eval.h,
 * run/eval.h):
 * greedy pass@1, sampled pass@1 and unbiased pass@k on the deck's [eval]
 * prompts of its task's held-out split, scored by its reward's `correct` part.
 *
 * MODEL is an rlpt model file (`rlpt init`, `rlpt convert`), a checkpoint file,
 * a checkpoint directory (its `latest`, as a restart picks it), or gguf:PATH /
 * hf:DIR as `[model] init` takes them (model/source.h). The model file's config
 * wins: its architecture is the model evaluated, whatever the deck's [model]
 * section says (a note says when they differ); the deck gives the task, reward,
 * sampling ([rollout]) and [eval] keys, and the tokenizer unless the model is a
 * gguf:/hf: one, which brings its own (and is evaluated at the deck's max_seq). What
 * cannot work is refused with exit 2: a vocabulary smaller than the
 * tokenizer's, a max_seq too short for a held-out prompt + [rollout]
 * max_new_tokens, a deck whose task has no held-out problems.
 *
 * A checkpoint's step keys the sampled pass's RNG and names the phase (step 0:
 * sft, as the post-SFT eval; else rl), so the numbers equal that run's own eval
 * line for the same weights; a model file is step 0. Single process, or under
 * mpirun: every rank is a rollout instance with a contiguous slice of the
 * prompts (the run's routing) and rank 0 merges. The eval line's fields are a
 * run's metrics line's: --json prints it on stdout (human lines then go to
 * stderr), --output appends it to a JSONL file. */
#include "run/offline_eval.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/import.h"
#include "model/model.h"
#include "model/source.h"
#include "mpi/wait.h"
#include "rollout/engine.h"
#include "run/eval.h"
#include "run/partial.h"
#include "run/run.h"
#include "run/setup.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/error.h"

/* The model as rank 0 loaded it (then broadcast; the GGUF handle stays on rank 0). */
struct eval_model {
  struct model_source src;
  char init[4200];  /* "hf:DIR" / "gguf:PATH" when the model brings its own tokenizer, else "" */
};

/* Rank 0: the model of --model (model/source.h). 0, 2 (one message printed) or 1. */
static int load_model(const char *in, struct eval_model *em) {
  int rc = model_source_load(in, "eval", "--model", &em->src);
  model_source_init(&em->src, em->init, sizeof em->init);
  return rc;
}

/* Rank 0's model to every rank (params in chunks: counts are ints). */
static void bcast_model(struct eval_model *em, int rank) {
  struct model_source *ms = &em->src;
  long hdr[2] = { ms->step, ms->weight_version };
  wait_bcast(&ms->mc, (int)sizeof ms->mc, MPI_BYTE, 0, MPI_COMM_WORLD);
  wait_bcast(hdr, 2, MPI_LONG, 0, MPI_COMM_WORLD);
  wait_bcast(ms->from, (int)sizeof ms->from, MPI_CHAR, 0, MPI_COMM_WORLD);
  wait_bcast(em->init, (int)sizeof em->init, MPI_CHAR, 0, MPI_COMM_WORLD);
  ms->step = hdr[0];
  ms->weight_version = hdr[1];
  size_t n = model_param_count(&ms->mc), chunk = (size_t)1 << 28;
  if (rank != 0) ms->params = malloc_check(n * sizeof *ms->params);
  for (size_t o = 0; o < n; o += chunk)
    wait_bcast(ms->params + o, (int)(n - o < chunk ? n - o : chunk), MPI_FLOAT, 0, MPI_COMM_WORLD);
}

/* The tokenizer: a gguf:/hf: model's own (init), else the deck's (the model's for its
 * init = gguf:PATH | hf:DIR, else the character one, as rlpt run); the task and reward;
 * the deck's own model config into deck_mc (for the "differs" note). An imported model
 * evaluates at the deck's [model] max_seq, as a run with it as init does. */
static int setup_deck(struct run *r, const char *init, struct model_config *deck_mc, char *err, size_t len) {
  const struct config *cfg = r->cfg;
  int rc = model_import_or_deck(cfg, deck_mc, &r->tok, err, len);
  if (!rc && init[0] && cfg->model.max_seq > r->mc.max_seq) {
    snprintf(err, len, "[model] max_seq = %ld exceeds %.1000s's context length %d", cfg->model.max_seq, init,
             r->mc.max_seq);
    rc = 2;
  } else if (!rc && init[0]) {
    r->mc.max_seq = (int)cfg->model.max_seq;
    if (strcmp(init, cfg->model.init)) {  /* another model than the deck's init: its tokenizer */
      tokenizer_free(&r->tok);
      rc = model_import_tokenizer(cfg, init, &r->mc, &r->tok, err, len);
      if (rc) tokenizer_init_char(&r->tok);
    }
  }
  if (!rc) rc = task_init(&r->task, r->cfg, err, len);
  if (!rc) rc = reward_init(&r->rcfg, r->cfg, err, len);
  return rc;
}

/* The model must take the tokenizer's ids and the task's prompts (every held-out prompt the
 * eval uses) plus [rollout] max_new_tokens (task_check_fit, as rlpt run checks its deck). */
static int check_fit(const struct run *r, const char *model, long n_prompts, char *err, size_t len) {
  if (r->mc.vocab_size < r->tok.vocab_size) {
    snprintf(err, len, "%s: the model's vocabulary (%d) is smaller than the deck's tokenizer's (%d ids): "
             "the model was not trained with this deck's tokenizer", model, r->mc.vocab_size, r->tok.vocab_size);
    return 2;
  }
  struct fit_limits l = { .max_seq = r->mc.max_seq, .max_new = r->cfg->rollout.max_new_tokens, .sft = 0,
                          .where = model, .limit = "the model's max_seq" };
  return task_check_fit(&r->task, &r->tok, &l, 0, n_prompts, err, len);
}

/* Every rank a rollout instance of its own slice; rank 0 also the controller. */
static int setup_ranks(struct run *r) {
  int W, me;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  struct comms *c = &r->comms;
  c->world = MPI_COMM_WORLD;
  c->world_rank = me;
  c->world_size = W;
  c->counts = (struct role_counts){ .world = W, .colocated = 1, .controller = 0, .rollout = W, .reward = W,
                                    .train = W, .rollout_tp = 1, .rollout_instances = W, .train_dp = W,
                                    .train_tp = 1, .train_pp = 1 };
  roles_place(&c->counts, me, &c->place);
  r->is_ctl = me == 0;
  r->is_rollout = 1;
  r->rollout_world = malloc(sizeof(int) * (size_t)W);
  r->partial_len = PS_LEN(metric_fields_len);
  r->partial = calloc((size_t)r->partial_len, sizeof(double));
  if (!r->rollout_world || !r->partial) return 1;
  for (int i = 0; i < W; i++) r->rollout_world[i] = i;
  return 0;
}

/* The rollout model and engine over em's weights (adopted). Local errors, then agreed. */
static int setup_engine(struct run *r, struct eval_model *em) {
  char err[1024] = "";
  int rc = 0, max_tokens = (int)r->cfg->rollout.max_batch_tokens;
  r->rmodel = calloc(1, sizeof *r->rmodel);
  if (!r->rmodel || model_create_forward(r->rmodel, &r->mc, max_tokens, &cpu_backend) != 0) {
    free(r->rmodel);
    r->rmodel = NULL;
    rc = 1;
    snprintf(err, sizeof err, "could not allocate the model ([rollout] max_batch_tokens = %d)", max_tokens);
  } else {
    memcpy(r->rmodel->params, em->src.params, sizeof(float) * r->rmodel->table.total);
    rc = rollout_create(&r->engine, r->rmodel, r->cfg, &r->tok, err, sizeof err);
    if (!rc) rc = run_env_setup(r, err, sizeof err);  /* [env]: episodes with the deck's tools */
    if (!rc) rollout_weights_changed(r->engine, r->weight_version);
  }
  if (rc) fprintf(stderr, "rlpt: eval: rank %d: %s\n", r->comms.world_rank, err);
  return error_agree(MPI_COMM_WORLD, rc);
}

/* One eval: each rank's share (with a progress line per pass from rank 0), merged on
 * rank 0 into m. */
static void eval_once(struct run *r, enum metrics_phase phase, long step, FILE *con, struct step_metrics *m) {
  const struct config *cfg = r->cfg;
  double t0 = clock_seconds();
  int W = r->comms.world_size;
  partial_reset(r, step, PK_EVAL);
  if (r->is_ctl)
    fprintf(con, "eval: greedy pass on %ld held-out prompts (%d rank(s))...\n", cfg->eval.prompts, W);
  fflush(con);
  eval_greedy_share(r, phase, step);
  if (r->is_ctl)
    fprintf(con, "eval: greedy pass done (%.1f s); sampled pass, %ld x %ld samples at T = %g...\n",
            clock_seconds() - t0, cfg->eval.prompts, cfg->eval.samples, cfg->rollout.temperature);
  fflush(con);
  eval_sampled_share(r, step);
  partial_report(r);
  if (!r->is_ctl) return;
  double *q = eval_collect(r, step);
  eval_metrics(r, q, phase, step, clock_seconds() - t0, m);
  fprintf(con, "eval: %s: greedy pass@1 %.3f (%.0f of %.0f held-out prompts); sampled pass@1 %.3f, pass@%ld "
          "%.3f (n = %ld, T = %g); phase %s, step %ld; %.1f s on %d rank(s)\n", r->deck_path, m->eval_pass1,
          q[PS_EV_GREEDY_OK], q[PS_EV_GREEDY_N], m->acc, cfg->eval.k, m->eval_passk, cfg->eval.samples,
          cfg->rollout.temperature, metrics_phase_name(phase), step, m->t_gen, W);
  free(q);
}

/* Rank 0: the eval line to stdout (--json) and appended to --output. */
static int write_line(const struct offline_eval_args *a, const struct step_metrics *m) {
  int rc = 0;
  if (a->json && metrics_write_jsonl(stdout, m) != 0) rc = 1;
  if (a->output) {
    FILE *f = fopen(a->output, "a");
    if (!f || metrics_write_jsonl(f, m) != 0) rc = 1;
    if (f && fclose(f) != 0) rc = 1;
    if (rc) fprintf(stderr, "rlpt: eval: writing %s failed\n", a->output);
  }
  return rc;
}

/* Rank 0 checks that --output can be appended to before any work. */
static int check_output(const char *path) {
  FILE *f = path ? fopen(path, "a") : NULL;
  if (path && !f) {
    fprintf(stderr, "rlpt: eval: --output %s: cannot open for appending\n", path);
    return 2;
  }
  if (f) fclose(f);
  return 0;
}

static void teardown(struct run *r, struct eval_model *em) {
  rollout_free(r->engine);
  run_env_free(r);
  if (r->rmodel) model_free(r->rmodel);
  free(r->rmodel);
  free(r->partial);
  free(r->rollout_world);
  model_source_free(&em->src);
  reward_free(&r->rcfg);
  task_free(&r->task);
  tokenizer_free(&r->tok);
}

/* Rank 0: what is evaluated, and a note when the deck's [model] is another shape. */
static void print_model(const struct run *r, const struct eval_model *em, const struct model_config *deck_mc,
                        FILE *con) {
  const struct model_config *mc = &r->mc;
  fprintf(con, "rlpt eval %s: model %s: %zu parameters (vocab %d, dim %d, layers %d, heads %d/%d, ffn %d, "
          "max_seq %d); tokenizer: %s (%d ids)\n", r->deck_path, em->src.from, model_param_count(mc),
          mc->vocab_size, mc->dim, mc->layers, mc->heads, mc->kv_heads, mc->ffn_dim, mc->max_seq,
          em->init[0] ? "the model's" : "the deck's", r->tok.vocab_size);
  char *file_js = model_config_to_json(mc), *deck_js = model_config_to_json(deck_mc);
  if (file_js && deck_js && strcmp(file_js, deck_js))
    fprintf(con, "eval: note: the deck's [model] section describes another model; the model file's config "
            "is used\n");
  free(file_js);
  free(deck_js);
}

/* Everything after the deck: model, setup, checks, the eval, the output. Collective. */
static int eval_mpi(struct run *r, const struct offline_eval_args *a) {
  struct eval_model em;
  struct model_config deck_mc;
  memset(&em, 0, sizeof em);
  memset(&deck_mc, 0, sizeof deck_mc);
  char err[2048] = "";
  FILE *con = a->json ? stderr : stdout;
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int rc = error_agree(MPI_COMM_WORLD, me == 0 ? check_output(a->output) : 0);
  if (!rc) rc = error_agree(MPI_COMM_WORLD, me == 0 ? load_model(a->model, &em) : 0);
  if (!rc) bcast_model(&em, me);
  r->mc = em.src.mc;
  r->weight_version = em.src.weight_version;
  enum metrics_phase phase = em.src.step > 0 ? PHASE_RL : PHASE_SFT;
  long n_prompts = r->cfg->eval.prompts;
  if (phase == PHASE_SFT && r->cfg->sft.eval_prompts > n_prompts) n_prompts = r->cfg->sft.eval_prompts;
  if (!rc) {  /* the same verdict on every rank (pure in the deck and the model) but memory */
    int lrc = setup_deck(r, em.init, &deck_mc, err, sizeof err);
    if (!lrc) lrc = check_fit(r, a->model, n_prompts, err, sizeof err);
    if (!lrc && setup_ranks(r) != 0) lrc = 1, snprintf(err, sizeof err, "out of memory");
    if (lrc && (me == 0 || lrc == 1)) fprintf(stderr, "rlpt: eval: %s\n", err);
    rc = error_agree(MPI_COMM_WORLD, lrc);
  }
  if (!rc) rc = setup_engine(r, &em);
  if (!rc && me == 0) print_model(r, &em, &deck_mc, con);
  struct step_metrics m;
  metrics_init(&m);
  if (!rc) eval_once(r, phase, em.src.step, con, &m);
  if (!rc) rc = error_agree(MPI_COMM_WORLD, me == 0 ? write_line(a, &m) : 0);
  metrics_free(&m);
  teardown(r, &em);
  return rc;
}

int offline_eval_run(const struct offline_eval_args *a, int n_over, char **over) {
  struct config *cfg = malloc(sizeof *cfg);  /* too large for the stack */
  struct run *r = calloc(1, sizeof *r);
  int rc = 1;
  if (!cfg || !r) {
    fprintf(stderr, "rlpt: eval: out of memory\n");
    free(cfg);
    free(r);
    return rc;
  }
  MPI_Init(NULL, NULL);
  error_set_role("eval");
  r->cfg = cfg;
  r->deck_path = a->deck;
  rc = config_load(cfg, a->deck, n_over, over, MPI_COMM_WORLD);
  if (!rc) rc = eval_mpi(r, a);
  MPI_Finalize();
  free(r);
  free(cfg);
  return rc;
}
