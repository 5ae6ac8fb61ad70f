/* run/pregen.c: [run] mode = colocate_async's overlap (run/pregen.h). The deterministic
 * async schedule (run/async_step.c) with one step in flight trains batch k while batch
 * k + 1 is generated; on colocated ranks both are this rank's work, so the generation runs
 * on a second thread while the main thread trains:
 *   main     the controller sends batch k + 1's prompts, each rollout instance receives its
 *            slice (every MPI call stays on the main thread)
 *   thread   rollout_generate of the slice with the weights the engine holds (version
 *            k - 1), on a pool of its own: ceil(threads_per_rank / 2) threads
 *   main     trains batch k on a pool of the other threads, joins the thread, then runs
 *            the batch's hand-off as sync mode does (run_rounds: the samples to the reward
 *            role, scored, to the train ranks' buffer), the generation already done
 * The generation touches only the engine and its model (the trainer's weights are another
 * copy until the step's weight sync), and its seconds and tokens reach the step's partial
 * after the join, so the two threads share no mutable state. What is computed is what the
 * schedule without the thread computes, so a run is as reproducible. */
#include "run/pregen.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/thread_pool.h"
#include "mpi/xfer.h"
#include "rollout/engine.h"
#include "run/controller.h"
#include "run/route.h"
#include "run/step_parts.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/error.h"

struct pregen {
  pthread_t thread;
  int running;                /* the thread was started and not yet joined */
  long batch;                 /* the batch generated ahead (its prompts sent); 0: none */
  struct run *r;
  struct sample_batch prompts, out;
  struct rollout_prompt *rp;
  int rc;                     /* rollout_generate's */
  char err[512];
  double t_gen;               /* seconds the thread generated */
  struct thread_pool *gen_pool, *train_pool;
  struct thread_pool *main_before;  /* the main thread's pool while it trains */
};

static void *generate_thread(void *arg) {
  struct pregen *g = arg;
  thread_pool_use(g->gen_pool);
  double t0 = clock_seconds();
  g->rc = rollout_generate(g->r->engine, g->rp, g->prompts.n, (int)g->r->cfg->algo.group_size, g->batch,
                           g->r->weight_version, &g->out, NULL, g->err, sizeof g->err);
  g->t_gen = clock_seconds() - t0;
  return NULL;
}

/* The two pools, made once: the rank's threads split between generation and training. */
static void make_pools(struct pregen *g, int threads) {
  if (g->gen_pool) return;
  int gen = (threads + 1) / 2, train = threads - gen > 0 ? threads - gen : 1;
  g->gen_pool = thread_pool_create(gen - 1, 200);  /* workers besides the calling thread */
  g->train_pool = thread_pool_create(train - 1, 200);
  if (!g->gen_pool || !g->train_pool) die_local("out of memory for colocate_async's thread pools");
}

void pregen_start(struct run *r, long b, int threads) {
  if (!r->pregen) r->pregen = calloc_check(1, sizeof *r->pregen);
  struct pregen *g = r->pregen;
  make_pools(g, threads);
  g->r = r;
  g->batch = b;
  if (r->is_ctl) controller_send_prompts(r, b, 0);
  long P = r->cfg->algo.prompts_per_step;
  int R = r->comms.counts.rollout_instances, i = r->comms.place.instance;
  if (r->is_rollout && route_slice_lo(P, R, i) < route_slice_lo(P, R, i + 1)) {
    sample_batch_init(&g->prompts);
    sample_batch_init(&g->out);
    route_recv(r, &g->prompts, 0, BOX_PROMPTS, XFER_TAG_PROMPTS);
    g->rp = rollout_prompts_of(&g->prompts);
    if (pthread_create(&g->thread, NULL, generate_thread, g) != 0)
      die_local("batch %ld: cannot start colocate_async's generation thread", b);
    g->running = 1;
  }
  g->main_before = thread_pool_use(g->train_pool);
}

void pregen_join(struct run *r) {
  struct pregen *g = r->pregen;
  thread_pool_use(g->main_before);
  if (!g->running) return;
  if (pthread_join(g->thread, NULL) != 0) die_local("batch %ld: the generation thread did not join", g->batch);
  g->running = 0;
  if (g->rc) die_local("step %ld: generation failed: %s", g->batch, g->err);
}

int pregen_prompts_sent(const struct run *r, long b) {
  const struct pregen *g = r->pregen;
  return r->is_ctl && g && g->batch == b;
}

int pregen_take(struct run *r, long b, struct sample_batch *prompts, struct sample_batch *out, double *t_gen) {
  struct pregen *g = r->pregen;
  if (!g || g->batch != b || g->running || !g->rp) return 0;
  *prompts = g->prompts;
  *out = g->out;
  *t_gen = g->t_gen;
  sample_batch_init(&g->prompts);
  sample_batch_init(&g->out);
  free(g->rp);
  g->rp = NULL;
  return 1;
}

void pregen_done(struct run *r) {
  if (r->pregen) r->pregen->batch = 0;
}

void pregen_free(struct run *r) {
  struct pregen *g = r->pregen;
  if (!g) return;
  if (g->running) pthread_join(g->thread, NULL);
  sample_batch_free(&g->prompts);
  sample_batch_free(&g->out);
  free(g->rp);
  thread_pool_free(g->gen_pool);
  thread_pool_free(g->train_pool);
  free(g);
  r->pregen = NULL;
}
