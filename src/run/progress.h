/* run/progress.h: where an RL step is, so that the watchdog (run/controller.c) names the
 * rank that stalls rather than one that waits for it.
 *
 * Every rank reports its metrics partial once its last data role of the step is done
 * (run/sync_step.c), so a rank waiting on a stalled one looks stalled too. The hand-offs
 * a partial cannot show send a marker to the controller instead (three doubles on
 * XFER_TAG_PROGRESS, small enough to be sent eagerly: the sender never waits for it):
 *   PROG_GEN      a rollout rank generated a round's samples (before handing them on)
 *   PROG_TRAINED  the weight root (train dp 0) trained the step (before the weight sync)
 *   PROG_SYNCED   a rollout rank received the step's weights (after the weight sync)
 * The controller counts the markers of its step and collects them all before it logs the
 * step, so none is left over for the next. Only in sync mode's separate layout: colocated
 * ranks do every role, rank 0 (the controller) sends none, and in separate_async the rollout
 * ranks work ahead of the step the controller logs (its watchdog names ranks by role).
 *
 * With them a rank that waits is told from one that works: a rollout that has handed its
 * samples on is waiting for the reward rank; one that reported but has not received the
 * weights of a trained step is the weight sync's laggard (rather than the train rank
 * blocked in the broadcast to it).
 *
 * Test hook: RLPT_TEST_STALL=ROLE:POINT:STEP (rollout:prompts, before it takes the step's
 * prompts; rollout:generate; rollout:sync, before the weight sync; reward:score;
 * train:train) makes the ranks of ROLE stop there in RL step STEP, sleeping until killed,
 * as a hung device or a stopped process would (tests/run/test_faults.sh, mode watchdog). */
#ifndef RLPT_PROGRESS_H
#define RLPT_PROGRESS_H

struct run;

enum progress_kind { PROG_GEN = 1, PROG_TRAINED, PROG_SYNCED };

/* A worker rank: marker k of RL step `step` (round: the generation round) to the
 * controller; nothing in the colocated layout or on rank 0. */
void progress_mark(struct run *r, enum progress_kind k, long step, int round);
/* A worker rank: the RLPT_TEST_STALL hook at `point` ("rollout:generate", ...) of RL step
 * `step`; returns at once unless the variable names this point and step for this rank. */
void progress_stall_point(struct run *r, const char *point, long step);

/* Controller: a new RL step (the counts cleared); `rounds` generation rounds started so far
 * (progress_rounds, from controller_send_prompts). */
void progress_begin(struct run *r, long step);
void progress_rounds(struct run *r, int rounds);
/* Controller: take the markers that arrived (never waits). */
void progress_poll(struct run *r);
/* Controller: the markers of the step still to come. */
int progress_missing(const struct run *r);

/* Controller, the watchdog: what world rank w is doing in the current RL step, given
 * whether its partial (or the message the watchdog waits for) arrived: the stage (smaller:
 * earlier in the pipeline) and a description, or -1 when it only waits on another rank or
 * is done. Separate layout only. */
int progress_stage(const struct run *r, int w, int reported, const char **what);

void progress_free(struct run *r);

#endif
