/* run/setup.h: a run's state from its validated deck and communicators, and back:
 * the pieces every rank builds the same way (threads, tokenizer and model config, task,
 * reward, the rank maps; every error collective: exit 2 on every rank for bad input),
 * the banner, then each rank's role state (trainer, rollout model and engine, reward
 * model, metrics writers). */
#ifndef RLPT_SETUP_H
#define RLPT_SETUP_H

#include <stddef.h>

struct run;

/* Collective over the world, after r->cfg, r->deck_path and r->comms are set. 0, or the
 * agreed exit code (2 bad input, 1 internal; the message printed once). */
int run_setup(struct run *r);
/* A rollout rank's [env] (no-op when disabled): the tools, python's sandbox probed, the
 * engine's episode hooks on r->engine. 0, or 2/1 with a message in err; run_env_free
 * releases it. rlpt run and rlpt eval both call it. */
int run_env_setup(struct run *r, char *err, size_t len);
void run_env_free(struct run *r);
/* Everything run_setup made (safe after a failed setup). */
void run_teardown(struct run *r);

#endif
