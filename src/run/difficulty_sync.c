/* run/difficulty_sync.c: the difficulty filter in a run (run/difficulty_sync.h). */
#include "run/difficulty_sync.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/wait.h"
#include "rl/dynsamp.h"
#include "run/run.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/rng.h"

int difficulty_run_init(struct run *r) {
  const struct config *c = r->cfg;
  return difficulty_init(&r->diff, c->algo.difficulty_filter, c->algo.difficulty_window,
                         c->algo.difficulty_low, c->algo.difficulty_high) != 0;
}

/* Replacement k (>= 1) for group g of (step, round): from the top quarter of the id space,
 * apart from the train stream's ids and dynamic sampling's. */
static uint64_t replacement_id(const struct run *r, long step, int round, long g, int k) {
  uint32_t w[5] = {(uint32_t)step, (uint32_t)((uint64_t)step >> 32), (uint32_t)round, (uint32_t)g,
                   (uint32_t)k};
  uint64_t h = rng_hash_words((uint64_t)r->cfg->run.seed, RNG_STREAM_DIFFICULTY, w, 5);
  return (UINT64_C(3) << 62) | (h >> 2);
}

static void train_prompt(const struct run *r, uint64_t id, struct task_prompt *tp) {
  if (task_prompt(&r->task, id, TASK_TRAIN, tp) != 0)
    die_local("task: no train problem found for prompt %llu (problem space too small for "
              "[task] heldout_frac)", (unsigned long long)id);
}

uint64_t difficulty_draw(struct run *r, long step, int round, long g, struct task_prompt *tp) {
  const struct config *c = r->cfg;
  uint64_t first = dynsamp_prompt_id(step, round, g, c->algo.prompts_per_step,
                                     c->algo.max_resample_rounds), id = first;
  train_prompt(r, first, tp);
  for (int k = 1; difficulty_skip(&r->diff, difficulty_key(tp->text)); k++) {
    if (k == DIFFICULTY_MAX_DRAWS) {  /* every draw filtered: take the first */
      if (!r->diff_warned)
        printf("rlpt: WARNING: step %ld: the difficulty filter skipped %d draws in a row; drawing "
               "filtered prompts (said once)\n", step, DIFFICULTY_MAX_DRAWS - 1);
      r->diff_warned = 1;
      train_prompt(r, first, tp);
      return first;
    }
    r->diff_skipped++;
    id = replacement_id(r, step, round, g, k);
    train_prompt(r, id, tp);
  }
  return id;
}

void difficulty_group_pass(const struct run *r, const struct sample_batch *b, int64_t *pass) {
  long P = r->cfg->algo.prompts_per_step;
  for (int k = 0; k < b->n; k++) {
    const struct sample *s = &b->s[k];
    double ok = 0;
    if (s->group < 0 || s->group >= P) die_local("sample with group %d outside 0..%ld", s->group, P - 1);
    if (sample_get_part(s, "correct", &ok) != 0) die_local("a scored sample has no correct part");
    pass[3 * s->group] = s->prompt_id;
    pass[3 * s->group + 1] += ok >= 0.5;
    pass[3 * s->group + 2] += 1;
  }
}

void difficulty_round_sync(struct run *r, int64_t *pass) {
  long P = r->cfg->algo.prompts_per_step;
  MPI_Request req;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, pass, (int)(3 * P), MPI_INT64_T, MPI_SUM, r->comms.world, &req));
  MPI_CHECK(wait_request(&req, MPI_STATUS_IGNORE));
  for (long g = 0; g < P; g++) {
    if (pass[3 * g + 2] == 0) continue;  /* a group nobody scored (no rollout instance had it) */
    struct task_prompt tp;
    train_prompt(r, (uint64_t)pass[3 * g], &tp);
    if (difficulty_record(&r->diff, difficulty_key(tp.text), (int)pass[3 * g + 1], (int)pass[3 * g + 2]))
      die_local("out of memory in the difficulty filter");
  }
}

int difficulty_restore(struct run *r, const unsigned char *bytes, uint64_t len) {
  if (!r->diff.on) return 0;
  uint64_t n = r->is_train ? len : 0;
  MPI_CHECK(MPI_Bcast(&n, 1, MPI_UINT64_T, r->train_world[0], MPI_COMM_WORLD));
  if (n == 0) {
    if (r->is_ctl) printf("restart: the checkpoint has no difficulty filter state; it starts empty\n");
    return 0;
  }
  if (n > INT_MAX) die_local("restart: a difficulty filter state of %llu bytes", (unsigned long long)n);
  unsigned char *buf = malloc_check((size_t)n);
  if (r->comms.world_rank == r->train_world[0]) memcpy(buf, bytes, (size_t)n);
  MPI_CHECK(MPI_Bcast(buf, (int)n, MPI_BYTE, r->train_world[0], MPI_COMM_WORLD));
  char err[256];
  int rc = difficulty_load(&r->diff, buf, (size_t)n, err, sizeof err);
  free(buf);
  if (rc && r->is_ctl) fprintf(stderr, "rlpt: run: restart: %s\n", err);
  return error_agree(MPI_COMM_WORLD, rc);
}
