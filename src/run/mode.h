/* run/mode.h: the schedule of a step, one struct mode_ops per [run] mode. The loop
 * (run/loop.c) knows only this interface: it calls begin before the first RL step, step
 * for each RL step and end after the last, so a mode plugs in here without touching the
 * loop. */
#ifndef RLPT_MODE_H
#define RLPT_MODE_H

struct run;

struct mode_ops {
  const char *name;                        /* the [run] mode value */
  /* Optional (NULL: nothing to do): before the first RL step of this process (a fresh
   * run or a restart) and after the last. */
  void (*begin)(struct run *r);
  void (*end)(struct run *r);
  /* One RL step on every rank: prompts -> rollout -> reward -> train -> weight sync ->
   * the metrics line. */
  void (*step)(struct run *r, long step);
};

/* The sync mode: every step generates with the weights of the previous update
 * (run/sync_step.c). */
extern const struct mode_ops sync_mode_ops;
/* Preference runs, [algo] name = dpo | ipo | rm (run/pref_mode.c): no rollouts. */
extern const struct mode_ops pref_mode_ops;
/* separate_async: rollout generates the groups of later steps while train ranks train
 * (run/async_step.c). */
extern const struct mode_ops separate_async_mode_ops;
extern const struct mode_ops colocate_async_mode_ops;
/* separate_async with [async] deterministic = false: the free-running schedule
 * (run/async_free.c). */
extern const struct mode_ops separate_async_free_mode_ops;

/* The ops of the deck's [run] mode (enum run_mode, deck/config.h; a preference [algo] name
 * runs pref_mode_ops), or NULL when rlpt run does not implement it. */
struct config;
const struct mode_ops *mode_ops_for(const struct config *cfg);

#endif
