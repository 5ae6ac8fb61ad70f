/* run/async_free.c: [run] mode = separate_async with [async] deterministic = false, the
 * free-running schedule (run/mode.h). Inside an RL step no role waits for another's phase:
 *   rollout   generates batch after batch of its instance's prompts (batch b: the prompts
 *             sync mode trains at step b, built on the rollout rank itself) and sends each
 *             to its reward rank without waiting; it starts a batch only while its groups
 *             outstanding (generated, not yet trained or dropped) stay within its share of
 *             [async] capacity: the only wait, backpressure when the buffer is full
 *   reward    scores what arrives, from any of its instances, and sends each group to the
 *             train DP rank of its slot without waiting
 *   train     takes the oldest complete groups of its buffer (exp_buffer_pop_groups: stale
 *             ones dropped or flagged for TIS per [async] stale), receiving scored groups
 *             while it has fewer than its share, returns the consumed groups to their
 *             instances as credits, trains, and (train dp 0) posts the new weights to every
 *             rollout rank
 *   rollout   takes them between batches, or with [async] in_flight at the next decode-step
 *             boundary (a nonblocking probe: it never waits for them), and every token records
 *             its version
 * The loop's step boundary (signals, checkpoints, evals: run/loop.c) is a world collective,
 * so each step ends with a drain that leaves no message in flight: after the update each
 * train rank sends an end credit to every instance; an instance that has the step's weights
 * and every end credit finishes the batch it is generating, sends an end marker (an empty
 * batch) to its reward rank and its cursor (next batch, seconds stopped for the weights) to
 * train dp 0; a reward rank with every instance's end marker sends one to every train rank;
 * a train rank drains its groups until every reward rank's end marker. Every send is an
 * MPI_Isend completed before the boundary, and every wait is on a message its sender posts
 * without waiting for the waiter, so no cycle can form. At the boundary the buffer holds every
 * scored group not yet trained and the cursors every prompt not yet generated: the checkpoint
 * (run/async_step.c's /buffer, cursor records included) regenerates nothing finished and
 * skips no prompt on a restart, though the interleaving (and so the run) is not reproducible. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/model.h"
#include "mpi/wait.h"
#include "mpi/xfer.h"
#include "rl/dynsamp.h"
#include "rollout/engine.h"
#include "run/async_state.h"
#include "run/async_step.h"
#include "run/controller.h"
#include "run/difficulty_sync.h"
#include "run/mode.h"
#include "run/partial.h"
#include "run/route.h"
#include "run/run.h"
#include "run/step_parts.h"
#include "train/trainer.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/error.h"

/* Nonblocking sends not yet complete, each with the bytes it owns. */
struct sendq {
  int n, cap;
  MPI_Request *req;
  void **buf;
};

struct async_free {
  struct sendq q;
  /* rollout ranks */
  long outstanding, cap;       /* this instance's groups outstanding, and its share of capacity */
  int have_update, ends;       /* the step's weights taken; end credits received */
  double stall_s;              /* seconds generation stopped to take weights this step */
  long decode_delay_us;        /* test hook RLPT_TEST_DECODE_DELAY_US: a slowed rollout rank */
  /* train ranks */
  float *snap;                 /* train dp 0: the posted weights (owned until the send completes) */
  int64_t snap_version;
  double post_s;               /* seconds train dp 0 spent posting them */
};

/* ---- messages ---------------------------------------------------------------- */

/* A slot for one more send (its bytes buf, freed once it completes; NULL: not owned). */
static MPI_Request *q_slot(struct sendq *q, void *buf) {
  if (q->n == q->cap) {
    q->cap = q->cap ? 2 * q->cap : 16;
    q->req = realloc_check(q->req, sizeof *q->req * (size_t)q->cap);
    q->buf = realloc_check(q->buf, sizeof *q->buf * (size_t)q->cap);
  }
  q->buf[q->n] = buf;
  return &q->req[q->n++];
}

static void q_add(struct sendq *q, void *buf, size_t len, int dest, int tag, MPI_Comm c) {
  if (len > INT_MAX) die_local("a free-running async message of %zu bytes is too large", len);
  MPI_CHECK(MPI_Isend(buf, (int)len, MPI_BYTE, dest, tag, c, q_slot(q, buf)));
}

/* Drop the sends that completed (their bytes freed), keeping the rest in order. */
static void q_reap(struct sendq *q) {
  int k = 0;
  for (int i = 0; i < q->n; i++) {
    int done = 0;
    MPI_CHECK(MPI_Test(&q->req[i], &done, MPI_STATUS_IGNORE));
    if (done) free(q->buf[i]);
    else q->req[k] = q->req[i], q->buf[k++] = q->buf[i];
  }
  q->n = k;
}

static void q_drain(struct sendq *q) {
  for (int i = 0; i < q->n; i++) {
    wait_request(&q->req[i], MPI_STATUS_IGNORE);
    free(q->buf[i]);
  }
  q->n = 0;
}

/* b (emptied) to world rank dest, encoded, without waiting. */
static void send_batch(struct run *r, struct sample_batch *b, int dest, int tag) {
  unsigned char *bytes = NULL;
  size_t len = 0;
  if (xfer_encode_batch(b, &bytes, &len) != XFER_OK) die_local("out of memory encoding %d samples", b->n);
  q_add(&r->async->fr->q, bytes, len, dest, tag, r->comms.world);
  sample_batch_clear(b);
}

/* One batch from src (MPI_ANY_SOURCE: any), waited for politely, appended to out; returns
 * the samples it held (0: an end marker) and its sender in *from. */
static int recv_batch(struct run *r, int src, int tag, struct sample_batch *out, int *from) {
  MPI_Status st;
  wait_probe(src, tag, r->comms.world, &st);
  int len = 0;
  MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &len));
  unsigned char *bytes = malloc_check((size_t)len + 1);
  MPI_CHECK(MPI_Recv(bytes, len, MPI_BYTE, st.MPI_SOURCE, tag, r->comms.world, MPI_STATUS_IGNORE));
  int n0 = out->n;
  char err[256];
  if (xfer_decode_batch(bytes, (size_t)len, out, err, sizeof err) != XFER_OK)
    die_local("a batch from rank %d does not decode: %s", st.MPI_SOURCE, err);
  free(bytes);
  if (from) *from = st.MPI_SOURCE;
  return out->n - n0;
}

/* A few int64s to dest without waiting. */
static void send_longs(struct run *r, const int64_t *v, int n, int dest, int tag) {
  int64_t *copy = malloc_check(sizeof *copy * (size_t)n);
  memcpy(copy, v, sizeof *copy * (size_t)n);
  q_add(&r->async->fr->q, copy, sizeof *copy * (size_t)n, dest, tag, r->comms.world);
}

/* A short polite pause for the loops that poll more than one source. */
static void nap(int *idle) {
  struct timespec ts = {0, (*idle < 20 ? 50 : 1000) * 1000L};
  nanosleep(&ts, NULL);
  (*idle)++;
}

/* ---- rollout ------------------------------------------------------------------ */

/* The weights train dp 0 posted, if they have arrived (never waits for them to be sent). */
static int poll_weights(struct run *r) {
  struct async_free *f = r->async->fr;
  int found = 0, root = r->train_world[0];
  MPI_CHECK(MPI_Iprobe(root, XFER_TAG_FREE_WEIGHTS, r->comms.world, &found, MPI_STATUS_IGNORE));
  if (!found) return 0;
  double t0 = clock_seconds();
  int64_t v = 0;
  struct model *m = r->rmodel;
  MPI_CHECK(MPI_Recv(&v, 1, MPI_INT64_T, root, XFER_TAG_FREE_WEIGHTS, r->comms.world, MPI_STATUS_IGNORE));
  MPI_CHECK(MPI_Recv(m->params, (int)m->table.total, MPI_FLOAT, root, XFER_TAG_FREE_WEIGHTS, r->comms.world,
                     MPI_STATUS_IGNORE));
  rollout_weights_changed(r->engine, v);
  r->weight_version = v;
  f->have_update = 1;
  f->stall_s += clock_seconds() - t0;
  return 1;
}

/* The credits that have arrived: groups consumed, and the train ranks' end credits. */
static void poll_credits(struct run *r) {
  struct async_free *f = r->async->fr;
  for (;;) {
    int found = 0;
    MPI_Status st;
    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, XFER_TAG_FREE_CREDIT, r->comms.world, &found, &st));
    if (!found) return;
    int64_t c[2];
    MPI_CHECK(MPI_Recv(c, 2, MPI_INT64_T, st.MPI_SOURCE, XFER_TAG_FREE_CREDIT, r->comms.world, MPI_STATUS_IGNORE));
    f->outstanding -= c[0];
    f->ends += (int)c[1];
  }
}

/* rollout/scheduler.h update_fn: the step's weights at a decode-step boundary, if there. */
static int take_free_update(void *ctx, long steps, uint64_t *version) {
  struct run *r = ctx;
  (void)steps;
  long delay = r->async->fr->decode_delay_us;
  if (delay > 0) nanosleep(&(struct timespec){delay / 1000000, delay % 1000000 * 1000L}, NULL);
  if (r->async->fr->have_update || !poll_weights(r)) return 0;
  *version = (uint64_t)r->weight_version;
  return 1;
}

/* Batch b's prompts of this instance (as the controller builds them in sync mode). */
static void build_prompts(struct run *r, long b, struct sample_batch *out) {
  long P = r->cfg->algo.prompts_per_step;
  int R = r->comms.counts.rollout_instances, i = r->comms.place.instance;
  for (long g = route_slice_lo(P, R, i); g < route_slice_lo(P, R, i + 1); g++) {
    struct task_prompt tp;
    uint64_t id = difficulty_draw(r, b, 0, g, &tp);
    struct sample *s = sample_batch_add(out);
    if (!s) die_local("out of memory for the prompts of batch %ld", b);
    s->prompt_id = (int64_t)id;
    s->group = (int32_t)g;
    s->step = b;
    s->weight_version = r->weight_version;
    if (run_prompt_tokens(r, &tp, s) != 0) die_local("prompt '%s' does not encode", tp.text);
  }
}

/* Batch b of this instance generated and sent to its reward rank. */
static void generate_free(struct run *r, long b) {
  struct sample_batch prompts, out, sent;
  sample_batch_init(&prompts);
  sample_batch_init(&out);
  sample_batch_init(&sent);
  build_prompts(r, b, &prompts);
  struct rollout_prompt *rp = rollout_prompts_of(&prompts);
  char err[512];
  double t0 = clock_seconds(), stall0 = r->async->fr->stall_s;
  if (rollout_generate(r->engine, rp, prompts.n, (int)r->cfg->algo.group_size, b, r->weight_version, &out,
                       NULL, err, sizeof err))
    die_local("batch %ld: generation failed: %s", b, err);
  partial_time(r, RUN_PHASE_GEN, clock_seconds() - t0 - (r->async->fr->stall_s - stall0));
  r->partial[PS_GEN_TOK] += (double)sample_batch_resp_tokens(&out);
  /* the rollout-side logprob check on the first group (as run/sync_step.c does in async):
   * its tokens of the version now held against a model_forward with those weights */
  int measure = r->cfg->rollout.temperature == 1.0;
  for (int k = 0; measure && k < out.n && k < r->cfg->algo.group_size; k++) {
    struct sample *c = sample_batch_add(&sent);
    if (!c || sample_copy(c, &out.s[k]) != 0) die_local("out of memory");
  }
  send_batch(r, &out, r->reward_world[route_instance_reward(r, r->comms.place.instance)], XFER_TAG_FREE_SAMPLES);
  if (measure && sent.n) {
    double d = rollout_logprob_diff_max_of(r->rmodel, &sent, r->weight_version);
    double *q = &r->partial[PS_LPDIFF_ROLLOUT];
    *q = isfinite(*q) ? fmax(*q, d) : d;
  }
  sample_batch_free(&sent);
  sample_batch_free(&out);
  sample_batch_free(&prompts);
  free(rp);
}

/* This instance's groups per batch. */
static long instance_groups(const struct run *r) {
  long P = r->cfg->algo.prompts_per_step;
  int R = r->comms.counts.rollout_instances, i = r->comms.place.instance;
  return route_slice_lo(P, R, i + 1) - route_slice_lo(P, R, i);
}

static void rollout_step(struct run *r, long step) {
  struct async_state *a = r->async;
  struct async_free *f = a->fr;
  long n = instance_groups(r);
  int D = r->comms.counts.train_dp, idle = 0;
  f->have_update = f->ends = 0;
  f->stall_s = 0;
  if (r->cfg->async.in_flight != INFLIGHT_OFF)
    rollout_set_update(r->engine, take_free_update, r, (enum gen_in_flight)(r->cfg->async.in_flight - 1));
  for (;;) {
    poll_credits(r);
    if (!f->have_update) poll_weights(r);
    if (f->have_update && f->ends == D) break;
    if (n > 0 && !f->have_update && f->outstanding + n <= f->cap) {
      f->outstanding += n;
      generate_free(r, a->next_gen++);
      idle = 0;
    } else {
      q_reap(&f->q);
      nap(&idle);
    }
  }
  rollout_set_update(r->engine, NULL, NULL, GEN_INFLIGHT_CONTINUE);
  struct sample_batch end;
  sample_batch_init(&end);
  if (n > 0) send_batch(r, &end, r->reward_world[route_instance_reward(r, r->comms.place.instance)], XFER_TAG_FREE_SAMPLES);
  int64_t cur[3] = {r->comms.place.instance, a->next_gen, (int64_t)llround(f->stall_s * 1e9)};
  send_longs(r, cur, 3, r->train_world[0], XFER_TAG_FREE_CREDIT);
  q_drain(&f->q);
  (void)step;
}

/* ---- reward ------------------------------------------------------------------- */

/* The instances this reward rank scores that have prompts. */
static int reward_sources(const struct run *r) {
  long P = r->cfg->algo.prompts_per_step;
  int R = r->comms.counts.rollout_instances, j = r->comms.place.role_rank[ROLE_REWARD], n = 0;
  for (int i = 0; i < R; i++) n += route_instance_reward(r, i) == j && route_slice_lo(P, R, i) < route_slice_lo(P, R, i + 1);
  return n;
}

static void reward_step(struct run *r) {
  long P = r->cfg->algo.prompts_per_step;
  int D = r->comms.counts.train_dp, left = reward_sources(r);
  struct sample_batch b, part;
  sample_batch_init(&b);
  sample_batch_init(&part);
  while (left > 0) {
    if (recv_batch(r, MPI_ANY_SOURCE, XFER_TAG_FREE_SAMPLES, &b, NULL) == 0) {
      left--;
      continue;
    }
    double t0 = clock_seconds();
    run_score_batch(r, &b);
    partial_time(r, RUN_PHASE_REWARD, clock_seconds() - t0);
    qsort(b.s, (size_t)b.n, sizeof *b.s, sample_cmp_slot);
    for (int d = 0; d < D; d++) {
      for (int k = 0; k < b.n; k++)
        if (b.s[k].n_prompt && route_slot_dp(r, P, b.s[k].group) == d && sample_batch_push(&part, &b.s[k]))
          die_local("out of memory");
      if (part.n) send_batch(r, &part, r->train_world[d], XFER_TAG_FREE_REWARDS);
    }
    sample_batch_clear(&b);
    q_reap(&r->async->fr->q);
  }
  for (int d = 0; d < D; d++) send_batch(r, &part, r->train_world[d], XFER_TAG_FREE_REWARDS);
  q_drain(&r->async->fr->q);
  sample_batch_free(&b);
  sample_batch_free(&part);
}

/* ---- train -------------------------------------------------------------------- */

/* Groups of each rollout instance in this rank's buffer, into per[R]. */
static void buffered_per_instance(const struct run *r, const struct async_state *a, long *per) {
  int R = r->comms.counts.rollout_instances;
  long G = r->cfg->algo.group_size;
  long *samples = calloc_check((size_t)R, sizeof *samples);
  for (int i = 0; i < a->buf.n; i++) samples[route_group_instance(r, exp_buffer_peek(&a->buf, i)->group)]++;
  for (int i = 0; i < R; i++) per[i] = samples[i] / G;
  free(samples);
}

/* Scored groups into the buffer; returns the samples received (0: an end marker). */
static int receive_groups(struct run *r, struct async_state *a) {
  struct sample_batch in;
  sample_batch_init(&in);
  int n = recv_batch(r, MPI_ANY_SOURCE, XFER_TAG_FREE_REWARDS, &in, NULL);
  for (int k = 0; k < in.n; k++)
    if (exp_buffer_push(&a->buf, &in.s[k]) != 0)
      die_local("the async buffer is full (%d samples): a rollout rank overran its credits", a->buf.cap);
  sample_batch_free(&in);
  return n;
}

/* This DP rank's share of the step out of the buffer (receiving while it holds too few),
 * each consumed group credited back to its instance; the groups renumbered to this rank's
 * slots (groups of different batches may share a slot number). */
static void take_share(struct run *r, struct async_state *a, struct sample_batch *b) {
  long P = r->cfg->algo.prompts_per_step;
  int D = r->comms.counts.train_dp, dp = r->comms.place.dp, R = r->comms.counts.rollout_instances;
  long lo = route_slice_lo(P, D, dp), mine = route_slice_lo(P, D, dp + 1) - lo, got = 0;
  long *before = calloc_check((size_t)R, sizeof *before), *after = calloc_check((size_t)R, sizeof *after);
  int32_t *slot_of = malloc_check(sizeof *slot_of * (size_t)P);
  for (;;) {
    buffered_per_instance(r, a, before);
    int n0 = b->n, g = exp_buffer_pop_groups(&a->buf, r->trainer->weight_version, (int)(mine - got), b);
    if (g < 0) die_local("out of memory taking the step's groups");
    buffered_per_instance(r, a, after);
    for (int i = 0; i < R; i++)
      if (before[i] > after[i])
        send_longs(r, (int64_t[]){before[i] - after[i], 0}, 2, r->rollout_world[i], XFER_TAG_FREE_CREDIT);
    /* renumber the new groups: a run of equal (step, group) is one group */
    for (int k = n0; k < b->n; k++) {
      int first = k == n0 || b->s[k].step != b->s[k - 1].step || b->s[k].group != b->s[k - 1].group;
      if (first) slot_of[0] = (int32_t)(lo + got++);
      b->s[k].group = slot_of[0];
    }
    if (got >= mine) break;
    receive_groups(r, a);
  }
  free(before);
  free(after);
  free(slot_of);
}

/* Train dp 0: the new weights posted to every rollout rank (sent as they take them). */
static void post_weights(struct run *r) {
  struct async_free *f = r->async->fr;
  struct model *m = &r->trainer->policy;
  double t0 = clock_seconds();
  weights_to_host(&m->weights);
  if (!f->snap) f->snap = malloc_check(sizeof(float) * m->table.total);
  memcpy(f->snap, m->params, sizeof(float) * m->table.total);
  f->snap_version = r->trainer->weight_version;
  if (m->table.total > INT_MAX) die_local("free-running separate_async: %zu parameters are too many for one message", m->table.total);
  for (int i = 0; i < r->comms.counts.rollout_instances; i++) {
    int w = r->rollout_world[i];
    MPI_CHECK(MPI_Isend(&f->snap_version, 1, MPI_INT64_T, w, XFER_TAG_FREE_WEIGHTS, r->comms.world, q_slot(&f->q, NULL)));
    MPI_CHECK(MPI_Isend(f->snap, (int)m->table.total, MPI_FLOAT, w, XFER_TAG_FREE_WEIGHTS, r->comms.world,
                        q_slot(&f->q, NULL)));
  }
  f->post_s = clock_seconds() - t0;
}

/* After the update: end credits out, the step's last groups in, every send completed; train
 * dp 0 also takes the instances' cursors and weight stalls. */
static void train_drain(struct run *r, struct async_state *a, double *stall) {
  int R = r->comms.counts.rollout_instances, W = r->comms.counts.reward, ends = 0;
  for (int i = 0; i < R; i++) send_longs(r, (int64_t[]){0, 1}, 2, r->rollout_world[i], XFER_TAG_FREE_CREDIT);
  /* every reward rank sends one end marker to every train rank */
  while (ends < W) ends += receive_groups(r, a) == 0;
  *stall = 0;
  if (r->comms.place.dp == 0) {
    if (!a->cursor) a->cursor = calloc_check((size_t)R, sizeof *a->cursor), a->n_cursor = R;
    for (int i = 0; i < R; i++) {
      int64_t c[3];
      MPI_Status st;
      wait_probe(MPI_ANY_SOURCE, XFER_TAG_FREE_CREDIT, r->comms.world, &st);
      MPI_CHECK(MPI_Recv(c, 3, MPI_INT64_T, st.MPI_SOURCE, XFER_TAG_FREE_CREDIT, r->comms.world, MPI_STATUS_IGNORE));
      a->cursor[c[0]] = (long)c[1];
      *stall = fmax(*stall, (double)c[2] * 1e-9);
    }
  }
  q_drain(&r->async->fr->q);
}

/* The buffer's and the schedule's metrics, summed over the DP ranks, into dp 0's partial. */
static void report_free(struct run *r, struct async_state *a, double t_wait, double t0, double stall) {
  struct exp_stats st;
  exp_buffer_take_stats(&a->buf, &st);
  double v[6] = {(double)a->buf.n, (double)st.popped, (double)st.dropped, (double)a->trained,
                 (double)a->mixed, (double)st.stale_kept}, sum[6];
  MPI_CHECK(MPI_Allreduce(v, sum, 6, MPI_DOUBLE, MPI_SUM, r->comms.role_comm[ROLE_TRAIN]));
  if (r->comms.place.dp != 0) return;
  partial_set_train(r, "drop_ratio", sum[1] + sum[2] > 0 ? sum[2] / (sum[1] + sum[2]) : 0.0);
  partial_set_train(r, "buffer_groups", sum[0] / (double)r->cfg->algo.group_size);
  partial_set_train(r, "version_mixed_frac", sum[3] > 0 ? sum[4] / sum[3] : 0.0);
  partial_set_train(r, "stale_kept", sum[1] > 0 ? sum[5] / sum[1] : 0.0);
  double dt = clock_seconds() - t0, sync = a->fr->post_s + stall;
  partial_set_train(r, "idle_train", dt > 0 ? fmin(1.0, t_wait / dt) : 0.0);
  partial_time(r, RUN_PHASE_SYNC, sync);
  partial_set_train(r, "weight_sync_overlap_frac", sync > 0 ? a->fr->post_s / sync : 1.0);
  r->partial[PS_VERSION] = (double)r->trainer->weight_version;
}

static void train_step(struct run *r, struct async_state *a, struct dynsamp *ds, double t0) {
  struct sample_batch b;
  sample_batch_init(&b);
  take_share(r, a, &b);
  double t_wait = clock_seconds() - t0;
  async_partial_add_trained(r, &b);
  a->trained = b.n;
  a->mixed = 0;
  for (int k = 0; k < b.n; k++) a->mixed += b.s[k].tok_version != NULL;
  train_share(r, ds, &b);
  if (r->comms.place.dp == 0) post_weights(r);
  double t1 = clock_seconds(), stall = 0;
  train_drain(r, a, &stall);
  report_free(r, a, t_wait + (clock_seconds() - t1), t0, stall);
}

/* ---- the mode ------------------------------------------------------------------- */

void async_free_release(struct async_state *a) {
  if (!a->fr) return;
  q_drain(&a->fr->q);
  free(a->fr->q.req);
  free(a->fr->q.buf);
  free(a->fr->snap);
  free(a->fr);
  a->fr = NULL;
}

/* The controller's line on the schedule, and on a restart what it restored (at: free_begin's). */
static void print_begin(const struct run *r, const long *at) {
  const struct config *c = r->cfg;
  int R = r->comms.counts.rollout_instances;
  long groups = 0, resume = LONG_MAX;
  for (int i = 0; i < R; i++) groups += at[R + i], resume = at[i] < resume ? at[i] : resume;
  printf("separate_async: free-running (buffer %ld groups, max_lag %ld, stale = %s)", async_capacity_groups(c),
         c->async.max_lag, c->async.stale == STALE_TIS ? "tis" : "drop");
  if (at[2 * R] || groups > 0)
    printf("; restart: %ld group%s restored from the checkpoint's buffer, generation resumes at batch %ld",
           groups, groups == 1 ? "" : "s", resume);
  printf("\n");
  fflush(stdout);
}

/* Before the first RL step: the buffer (train ranks: the restored groups in it), and on
 * every rank each instance's cursor and groups outstanding, agreed from train dp 0. */
static void free_begin(struct run *r) {
  const struct config *c = r->cfg;
  struct async_state *a = async_state_of(r);
  a->fr = calloc_check(1, sizeof *a->fr);
  /* slows each decode step (with in_flight), so that updates land inside generation in tests */
  const char *delay = getenv("RLPT_TEST_DECODE_DELAY_US");
  a->fr->decode_delay_us = delay ? atol(delay) : 0;
  long P = c->algo.prompts_per_step, C = async_capacity_groups(c);
  int R = r->comms.counts.rollout_instances;
  /* [cursor..., restored groups..., resuming from a checkpoint] */
  long *at = calloc_check((size_t)(2 * R + 1), sizeof *at);
  if (r->is_train) {
    int cap = (int)(C * c->algo.group_size);
    if (exp_buffer_init(&a->buf, cap, c->async.max_lag, (enum stale_policy)c->async.stale) != 0)
      die_local("out of memory for the async buffer (%d samples)", cap);
    long next = r->trainer->step + 1;  /* without cursors: a deterministic checkpoint's schedule */
    for (int k = 0; k < a->restored.n; k++) {
      if (a->restored.s[k].step + 1 > next) next = a->restored.s[k].step + 1;
      if (exp_buffer_push(&a->buf, &a->restored.s[k]) != 0)
        die_local("restart: the checkpoint's /buffer exceeds [async] capacity");
    }
    at[2 * R] = a->n_cursor > 0;
    sample_batch_free(&a->restored);
    buffered_per_instance(r, a, at + R);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, at + R, R, MPI_LONG, MPI_SUM, r->comms.role_comm[ROLE_TRAIN]));
    for (int i = 0; i < R; i++) at[i] = i < a->n_cursor && a->cursor[i] > 0 ? a->cursor[i] : next;
  }
  wait_bcast(at, 2 * R + 1, MPI_LONG, r->train_world[0], MPI_COMM_WORLD);
  if (r->is_rollout) {
    int i = r->comms.place.instance;
    long n = instance_groups(r);
    a->next_gen = at[i];
    a->fr->outstanding = at[R + i];
    a->fr->cap = P > 0 ? C * n / P : 0;
  }
  if (r->is_ctl) print_begin(r, at);
  free(at);
}

static void free_step(struct run *r, long step) {
  struct async_state *a = r->async;
  double t0 = clock_seconds();
  long P = r->cfg->algo.prompts_per_step;
  partial_reset(r, step, PK_RL);
  struct dynsamp ds;  /* the trained groups: all P of the step */
  step_all_groups(&ds, P);
  if (r->is_rollout) rollout_step(r, step);
  if (r->is_reward) reward_step(r);
  if (r->is_train) train_step(r, a, &ds, t0);
  if (r->is_rollout || r->is_reward || r->is_train) partial_report(r);
  if (r->is_ctl) log_step(r, &ds, step, t0);
  dynsamp_free(&ds);
}

const struct mode_ops separate_async_free_mode_ops = {.name = "separate_async", .begin = free_begin,
                                                      .step = free_step};
