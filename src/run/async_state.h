/* run/async_state.h: the state of [run] mode = separate_async shared by its two schedules,
 * the deterministic one (run/async_step.c, which also owns the checkpoint's /buffer) and
 * the free-running one (run/async_free.c). Private to those files. */
#ifndef RLPT_ASYNC_STATE_H
#define RLPT_ASYNC_STATE_H

#include <stddef.h>

#include "rl/experience.h"

struct run;
struct config;
struct async_free;

/* An update armed for the batch being generated ([async] in_flight, rollout ranks). */
struct inflight {
  struct run *r;
  int armed;                  /* the step's update is still to be taken */
  double t_taken;             /* seconds generation spent taking it (waiting included) */
};

struct async_state {
  long depth;                 /* D: batches in flight (deterministic schedule) */
  struct inflight fly;
  long trained, mixed;        /* train ranks: samples popped this step, those spanning versions */
  long next_gen;              /* the next batch to generate (the same on every rank) */
  struct exp_buffer buf;      /* train ranks: scored samples of batches not yet trained */
  struct sample_batch restored; /* train ranks, resuming: the checkpoint's /buffer */
  unsigned char *ckpt_bytes;  /* the last /buffer written */
  size_t ckpt_len;
  /* free-running schedule: each rollout instance's next batch (the checkpoint's cursor
   * records, run/async_free.c); n_cursor 0: none restored */
  long *cursor;
  int n_cursor;
  struct async_free *fr;      /* the free schedule's message state (run/async_free.c) */
};

/* [async] capacity in groups (auto: prompts_per_step x max_lag). */
long async_capacity_groups(const struct config *c);
/* r->async, made on first use. */
struct async_state *async_state_of(struct run *r);
/* Frees the free schedule's part (run/async_free.c; a no-op when a->fr is NULL). */
void async_free_release(struct async_state *a);

#endif
