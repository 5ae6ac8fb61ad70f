/* run/async_step.c: one RL step of [run] mode = separate_async (run/mode.h), the
 * deterministic schedule ([async] deterministic = true). The prompts of "batch" b are
 * those sync mode trains at step b; D = min([async] max_lag, capacity / prompts_per_step)
 * batches are in flight:
 *   begin    (a fresh run: batches 1..D; a restart: those the checkpoint's /buffer lacks)
 *            generated, scored and sent to the train ranks' buffer, with the weights the
 *            rollout ranks hold
 *   step k   train   takes batch k, the oldest complete groups of its buffer (each DP
 *                    rank its slots; exp_buffer_pop_groups), and trains on it  } at once,
 *            others  batch k + D (if k + D <= [run] steps): controller -> rollout }  on
 *                    -> reward -> the train ranks, who buffer it after their  } disjoint
 *                    update (run/sync_step.c's run_rounds)                    } ranks
 *            then the weight sync of version k and the metrics line, as in sync mode.
 * Batch b is generated during step b - D under weight version b - D - 1 (version 0 for
 * the first D) and trained at version b - 1: its lag is min(D, b - 1) <= max_lag, so no
 * group is ever stale (stale = drop: D <= max_lag) and the buffer's drop count
 * (drop_ratio) stays 0. Every message of
 * a step has a fixed sender, receiver and content whatever the timing, so a run is
 * reproducible to the bit, and a checkpoint after step k holds batches k+1..k+D (the
 * buffer), so a restart regenerates nothing finished and skips no prompt. Rollout and
 * train overlap; the rollout ranks still wait at each step's weight sync (with [async]
 * in_flight = off weights change between batches, never inside one: every sample is of one
 * version). With in_flight the update of step k reaches the rollout ranks inside batch
 * k + D's generation, at a fixed decode step (generate_batch_in_flight): still a fixed
 * interleaving, so still bit-exact across a restart. With [async] stale = tis, D =
 * capacity / prompts_per_step may exceed max_lag: the samples lagging past it are kept
 * flagged SAMPLE_STALE (the trainer weights them by truncated importance sampling). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/ckpt.h"
#include "model/device.h"
#include "mpi/wait.h"
#include "mpi/xfer.h"
#include "rl/dynsamp.h"
#include "rollout/engine.h"
#include "run/async_state.h"
#include "run/async_step.h"
#include "run/mode.h"
#include "run/partial.h"
#include "run/pregen.h"
#include "run/route.h"
#include "run/run.h"
#include "run/step_parts.h"
#include "run/weight_sync.h"
#include "train/trainer.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/error.h"

long async_capacity_groups(const struct config *c) {
  return c->async.capacity >= 0 ? c->async.capacity : c->algo.prompts_per_step * c->async.max_lag;
}

/* 1 when a rank holds more than one of the rollout, reward and train roles. */
static int async_roles_shared(const struct run *r) {
  for (int w = 0; w < r->comms.world_size; w++) {
    struct rank_place p;
    roles_place(&r->comms.counts, w, &p);
    unsigned m = p.roles & (ROLE_BIT(ROLE_ROLLOUT) | ROLE_BIT(ROLE_REWARD) | ROLE_BIT(ROLE_TRAIN));
    if (m & (m - 1)) return 1;
  }
  return 0;
}

int async_supported(const struct run *r, char *err, size_t len) {
  const struct config *c = r->cfg;
  int colocate = c->run.mode == MODE_COLOCATE_ASYNC;
  char why[256];
  const struct backend_ops *dev = colocate ? device_backend(c->run.device, c->model.dtype, why, sizeof why) : NULL;
  if (!colocate && r->comms.counts.colocated)
    snprintf(err, len, "[ranks] layout = colocated: separate_async overlaps rollout and train on "
             "disjoint ranks; use layout = separate, or mode = colocate_async to overlap them on "
             "the same ranks");
  else if (colocate && !r->comms.counts.colocated)
    snprintf(err, len, "[run] mode = colocate_async overlaps generation and training on the same "
             "ranks: set [ranks] layout = colocated (with disjoint role ranks use separate_async)");
  else if (colocate && dev && dev->upload)
    snprintf(err, len, "[run] mode = colocate_async is built for the CPU backend (the rank's threads "
             "split between generation and training); on a GPU it needs a second stream, not built: "
             "use run.device = cpu or mode = sync");
  else if (colocate && c->env.enabled)
    snprintf(err, len, "[env] enabled: multi-turn rollouts are not built for colocate_async (their "
             "tools would run on the generation thread); use mode = sync");
  else if (c->algo.dynamic_sampling)
    snprintf(err, len, "[algo] dynamic_sampling: not built for %s (its resampling rounds wait for "
             "the scores of the step being trained); use mode = sync", r->mode->name);
  else if (c->algo.difficulty_filter)
    snprintf(err, len, "[algo] difficulty_filter: not built for %s (prompts are drawn max_lag "
             "steps before the rates of the batches in flight are known); use mode = sync", r->mode->name);
  else if (!c->async.deterministic && async_roles_shared(r))
    snprintf(err, len, "[async] deterministic = false: the free-running schedule needs the rollout, "
             "reward and train roles on distinct ranks (a rank holds two of them here); give each "
             "role ranks of its own in [ranks] or use deterministic = true");
  else if (config_is_pref(c))
    snprintf(err, len, "[algo] name = dpo | ipo | rm trains on preference pairs without rollouts: "
             "there is nothing to overlap; use mode = sync");
  else return 0;
  return 2;
}

struct async_state *async_state_of(struct run *r) {
  if (r->async) return r->async;
  struct async_state *a = calloc_check(1, sizeof *a);
  sample_batch_init(&a->restored);
  r->async = a;
  return a;
}

void async_free(struct run *r) {
  struct async_state *a = r->async;
  if (!a) return;
  if (a->buf.ring) exp_buffer_free(&a->buf);
  sample_batch_free(&a->restored);
  free(a->ckpt_bytes);
  async_free_release(a);
  free(a->cursor);
  free(a);
  r->async = NULL;
}

/* (step, slot, index) order: a batch's groups whole, oldest batch first. */
static int cmp_buffered(const void *a, const void *b) {
  const struct sample *x = a, *y = b;
  if (x->step != y->step) return x->step < y->step ? -1 : 1;
  return sample_cmp_slot(a, b);
}

/* This train rank's buffered samples, oldest first, encoded (*len bytes, malloc'd); with
 * cursors (train rank 0, free-running schedule) one record per rollout instance after
 * them: group -1, index the instance, step its next batch, no tokens. */
static unsigned char *encode_local(const struct async_state *a, int cursors, size_t *len) {
  /* a shallow view of the ring: the samples stay the buffer's */
  int nc = cursors ? a->n_cursor : 0;
  struct sample_batch view = { .n = a->buf.n + nc, .cap = a->buf.n + nc };
  view.s = calloc_check((size_t)(view.n + 1), sizeof *view.s);
  for (int i = 0; i < a->buf.n; i++) view.s[i] = *exp_buffer_peek(&a->buf, i);
  for (int i = 0; i < nc; i++)
    view.s[a->buf.n + i] = (struct sample){ .group = -1, .index = i, .step = a->cursor[i] };
  unsigned char *bytes = NULL;
  if (xfer_encode_batch(&view, &bytes, len) != XFER_OK)
    die_local("out of memory encoding the async buffer for the checkpoint");
  free(view.s);
  return bytes;
}

/* Train rank 0: every train rank's encoded share (n[i] bytes each, back to back in all)
 * merged into one batch in (step, slot, index) order, encoded into a->ckpt_bytes. */
static void merge_shares(struct async_state *a, const unsigned char *all, const int *n, int ranks) {
  struct sample_batch b;
  sample_batch_init(&b);
  char err[256];
  for (int i = 0, off = 0; i < ranks; off += n[i++])
    if (xfer_decode_batch(all + off, (size_t)n[i], &b, err, sizeof err) != XFER_OK)
      die_local("the async buffer of train rank %d does not decode: %s", i, err);
  qsort(b.s, (size_t)b.n, sizeof *b.s, cmp_buffered);
  if (xfer_encode_batch(&b, &a->ckpt_bytes, &a->ckpt_len) != XFER_OK)
    die_local("out of memory encoding the async buffer for the checkpoint");
  sample_batch_free(&b);
}

void async_ckpt_fill(const struct run *r, struct ckpt_state *st) {
  struct async_state *a = r->async;
  if (!a || !a->buf.ring) return;
  MPI_Comm tc = r->comms.role_comm[ROLE_TRAIN];
  int rank = 0, ranks = 1;
  MPI_CHECK(MPI_Comm_rank(tc, &rank));
  MPI_CHECK(MPI_Comm_size(tc, &ranks));
  size_t len = 0;
  unsigned char *mine = encode_local(a, rank == 0, &len);
  if (len > INT_MAX) die_local("the async buffer (%zu bytes) is too large to gather", len);
  int n_mine = (int)len, *n = calloc_check((size_t)ranks, sizeof *n), *off = calloc_check((size_t)ranks, sizeof *off);
  MPI_CHECK(MPI_Gather(&n_mine, 1, MPI_INT, n, 1, MPI_INT, 0, tc));
  long total = 0;
  for (int i = 0; i < ranks; i++) off[i] = (int)total, total += n[i];
  if (rank == 0 && total > INT_MAX) die_local("the async buffer (%ld bytes) is too large to gather", total);
  unsigned char *all = rank == 0 ? malloc_check((size_t)total + 1) : NULL;
  MPI_CHECK(MPI_Gatherv(mine, n_mine, MPI_BYTE, all, n, off, MPI_BYTE, 0, tc));
  free(a->ckpt_bytes);
  a->ckpt_bytes = NULL;
  if (rank == 0) merge_shares(a, all, n, ranks);
  free(all);
  free(mine);
  free(n);
  free(off);
  st->has_buffer = rank == 0;  /* train rank 0's is written (io/ckpt.h) */
  st->buffer = a->ckpt_bytes;
  st->buffer_len = a->ckpt_len;
}

void async_ckpt_restore(struct run *r, const struct ckpt_state *st) {
  if (r->cfg->run.mode == MODE_SYNC || !st->has_buffer) return;
  struct async_state *a = async_state_of(r);
  struct sample_batch all;
  sample_batch_init(&all);
  char err[256];
  if (xfer_decode_batch(st->buffer, st->buffer_len, &all, err, sizeof err) != XFER_OK)
    die_local("restart: the checkpoint's /buffer does not decode: %s", err);
  /* every train rank reads the whole buffer and keeps its DP share, whatever the layout
   * that wrote it */
  long P = r->cfg->algo.prompts_per_step;
  int R = r->comms.counts.rollout_instances;
  for (int k = 0; k < all.n; k++) {
    if (all.s[k].group >= 0) continue;  /* a cursor record (encode_local) */
    if (r->cfg->async.deterministic)
      die_local("restart: the checkpoint is of a free-running separate_async run ([async] "
                "deterministic = false); its schedule cannot resume the deterministic one: restart "
                "with async.deterministic=false");
    if (!a->cursor) a->cursor = calloc_check((size_t)R, sizeof *a->cursor), a->n_cursor = R;
    if (all.s[k].index < R) a->cursor[all.s[k].index] = (long)all.s[k].step;
  }
  for (int k = 0; k < all.n; k++)
    if (all.s[k].group >= 0 && route_slot_dp(r, P, all.s[k].group) == r->comms.place.dp && sample_batch_push(&a->restored, &all.s[k]))
      die_local("out of memory");
  sample_batch_free(&all);
}

static void generate_batch(struct run *r, struct async_state *a, long b);

/* rollout/scheduler.h update_fn: the step's update at decode step in_flight_step. */
static int take_update(void *ctx, long steps, uint64_t *version) {
  struct inflight *f = ctx;
  if (!f->armed || steps < f->r->cfg->async.in_flight_step) return 0;
  f->armed = 0;
  double t0 = clock_seconds();
  run_sync_weights(f->r);  /* rollout_weights_changed inside: the engine's next step uses them */
  f->t_taken = clock_seconds() - t0;
  *version = (uint64_t)f->r->weight_version;
  return 1;
}

double async_after_generate(struct run *r) {
  struct async_state *a = r->async;
  if (!a) return 0.0;
  double taken = a->fly.t_taken;
  a->fly.t_taken = 0.0;
  if (a->fly.armed) {
    a->fly.armed = 0;
    run_sync_weights(r);  /* generation ended before in_flight_step (or had nothing to do) */
  }
  return taken;
}

/* Every rank of step `step`: batch b generated while the step's update reaches the rollout
 * ranks ([async] in_flight): train dp 0 sends it at once after its update (it waits for
 * nobody), each rollout rank takes it inside generation (take_update) or right after it
 * (async_after_generate, before it scores or sends anything), so no rank waits for one
 * that waits for it. */
static void generate_batch_in_flight(struct run *r, struct async_state *a, long b) {
  if (r->is_train) run_sync_weights(r);
  if (r->is_rollout) {
    a->fly = (struct inflight){ .r = r, .armed = 1 };
    rollout_set_update(r->engine, take_update, &a->fly, (enum gen_in_flight)(r->cfg->async.in_flight - 1));
  }
  generate_batch(r, a, b);
  if (r->is_rollout) {
    if (a->fly.armed) die_local("batch %ld: the in-flight update was never taken", b);
    rollout_set_update(r->engine, NULL, NULL, GEN_INFLIGHT_CONTINUE);
  }
}

/* Every rank: batch b generated, scored and (train ranks) buffered. */
static void generate_batch(struct run *r, struct async_state *a, long b) {
  struct dynsamp ds;
  if (dynsamp_init(&ds, r->cfg->algo.prompts_per_step, 0, 0) != 0) die_local("out of memory");
  struct sample_batch in;
  sample_batch_init(&in);
  run_rounds(r, b, &ds, &in);
  qsort(in.s, (size_t)in.n, sizeof *in.s, sample_cmp_slot);  /* whole groups, in slot order */
  for (int k = 0; r->is_train && k < in.n; k++)
    if (exp_buffer_push(&a->buf, &in.s[k]) != 0)
      die_local("batch %ld: the async buffer is full (%d samples)", b, a->buf.cap);
  sample_batch_free(&in);
  dynsamp_free(&ds);
}

/* Controller: the schedule on the console, and a warning when lagged samples would be
 * trained as if on-policy (the e2e deck learns markedly worse so: tests/run/tests.cmake). */
static void say_schedule(const struct run *r, const struct async_state *a, long restored) {
  const struct config *c = r->cfg;
  printf("%s: %ld step%s in flight (buffer %ld groups, max_lag %ld)", r->mode->name, a->depth,
         a->depth == 1 ? "" : "s", async_capacity_groups(c), c->async.max_lag);
  if (c->async.stale == STALE_TIS)
    printf("; stale = tis: samples lagging more than %ld version%s weighted by truncated importance "
           "sampling", c->async.max_lag, c->async.max_lag == 1 ? "" : "s");
  if (restored > 0) printf("; %ld batch%s restored from the checkpoint's buffer", restored, restored == 1 ? "" : "es");
  printf("\n");
  if (c->algo.tis == TIS_OFF && c->algo.old_logprobs == OLDLP_RECOMPUTE)
    printf("rlpt: WARNING: separate_async trains samples up to %ld weight versions old without an "
           "off-policy correction ([algo] tis = off, old_logprobs = recompute); set [algo] tis (e.g. "
           "token_truncate) or old_logprobs = rollout\n",
           c->async.stale == STALE_TIS ? c->async.max_lag : a->depth);
  fflush(stdout);
}

/* Before the first RL step of this process: the buffer made (train ranks: the restored
 * groups in it), where the schedule stands agreed from the train root, and the batches in
 * flight that are missing generated. */
static void async_begin(struct run *r) {
  const struct config *c = r->cfg;
  struct async_state *a = async_state_of(r);
  long P = c->algo.prompts_per_step, S = c->run.steps;
  /* stale = drop: no sample lags past max_lag; tis: as deep as the buffer, the stale ones weighted */
  a->depth = async_capacity_groups(c) / P;
  if (c->async.stale == STALE_DROP && a->depth > c->async.max_lag) a->depth = c->async.max_lag;
  if (r->mode == &colocate_async_mode_ops) a->depth = 1;  /* max_lag 1 by construction */
  long at[2] = {0, 1};  /* RL steps done, the next batch to generate */
  if (r->is_train) {
    int cap = (int)(async_capacity_groups(c) * c->algo.group_size);
    if (exp_buffer_init(&a->buf, cap, c->async.max_lag, (enum stale_policy)c->async.stale) != 0)
      die_local("out of memory for the async buffer (%d samples)", cap);
    at[0] = r->trainer->step;
    at[1] = at[0] + 1;
    for (int k = 0; k < a->restored.n; k++) {
      at[1] = a->restored.s[k].step + 1;
      if (exp_buffer_push(&a->buf, &a->restored.s[k]) != 0)
        die_local("restart: the checkpoint's /buffer exceeds [async] capacity");
    }
    sample_batch_free(&a->restored);
  }
  wait_bcast(at, 2, MPI_LONG, r->train_world[0], MPI_COMM_WORLD);
  a->next_gen = at[1];
  if (r->is_ctl) say_schedule(r, a, at[1] - 1 - at[0]);
  for (; a->next_gen <= S && a->next_gen <= at[0] + a->depth; a->next_gen++)
    generate_batch(r, a, a->next_gen);
}

/* Train rank: batch `step` out of the buffer, its statistics, the update. */
static void train_batch(struct run *r, struct async_state *a, const struct dynsamp *ds, long step) {
  struct sample_batch b;
  sample_batch_init(&b);
  long P = r->cfg->algo.prompts_per_step;
  int D = r->comms.counts.train_dp, dp = r->comms.place.dp;
  long mine = route_slice_lo(P, D, dp + 1) - route_slice_lo(P, D, dp);  /* this DP rank's slots */
  int got = exp_buffer_pop_groups(&a->buf, r->trainer->weight_version, (int)mine, &b);
  if (got < 0) die_local("out of memory taking step %ld's groups", step);
  for (int k = 0; k < b.n; k++)
    if (b.s[k].step != step) got = -1;
  if (got != mine)
    die_local("step %ld: the async buffer does not hold this DP rank's %ld groups of the step (a "
              "restart with a smaller [async] max_lag than the checkpoint's?)", step, mine);
  async_partial_add_trained(r, &b);
  a->trained = b.n;
  a->mixed = 0;
  for (int k = 0; k < b.n; k++) a->mixed += b.s[k].tok_version != NULL;
  train_share(r, ds, &b);
}

/* Train ranks, after the update and the batch they buffered: the buffer's metrics, summed
 * over the DP ranks, into train dp 0's partial. */
static void report_buffer(struct run *r, struct async_state *a, double t_wait, double t0) {
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
  double dt = clock_seconds() - t0;
  partial_set_train(r, "idle_train", dt > 0 ? t_wait / dt : 0.0);
}

static void async_step(struct run *r, long step) {
  struct async_state *a = r->async;
  double t0 = clock_seconds();
  long P = r->cfg->algo.prompts_per_step;
  partial_reset(r, step, PK_RL);
  struct dynsamp ds;  /* the trained groups: all P of the batch */
  step_all_groups(&ds, P);
  /* colocate_async: the next batch generated on a second thread while this one trains */
  int ahead = r->mode == &colocate_async_mode_ops && a->next_gen <= r->cfg->run.steps &&
              a->next_gen <= step + a->depth;
  if (ahead) pregen_start(r, a->next_gen, r->threads.threads);
  if (r->is_train) train_batch(r, a, &ds, step);
  if (ahead) pregen_join(r);
  double t1 = clock_seconds();  /* the train ranks wait from here for batch step + D */
  int synced = 0;
  for (; a->next_gen <= r->cfg->run.steps && a->next_gen <= step + a->depth; a->next_gen++) {
    if (r->cfg->async.in_flight != INFLIGHT_OFF && !synced++) generate_batch_in_flight(r, a, a->next_gen);
    else generate_batch(r, a, a->next_gen);
    pregen_done(r);
  }
  if (r->is_train) report_buffer(r, a, clock_seconds() - t1, t0);
  int worker = r->is_rollout || r->is_reward || r->is_train;
  if (worker && !r->is_train) partial_report(r);
  if (!synced) run_sync_weights(r);
  if (r->is_train) partial_report(r);
  if (r->is_ctl) log_step(r, &ds, step, t0);
  dynsamp_free(&ds);
}

const struct mode_ops separate_async_mode_ops = {.name = "separate_async", .begin = async_begin,
                                                 .step = async_step};
/* The same schedule with one step in flight on colocated ranks, generation and training at
 * once on two threads of each rank (run/pregen.h). */
const struct mode_ops colocate_async_mode_ops = {.name = "colocate_async", .begin = async_begin,
                                                 .step = async_step};
