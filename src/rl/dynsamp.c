/* rl/dynsamp.c: the bookkeeping of DAPO dynamic sampling (rl/dynsamp.h): which groups
 * a round keeps, when a step stops generating, and where each kept group sits in
 * the trained batch. No MPI here: the step loop (run/sync_step.c, run/controller.c) moves the
 * numbers between ranks; every rank then runs the same functions on the same data. */
#include "rl/dynsamp.h"

#include <stdlib.h>
#include <string.h>

#include "rl/algo.h"

int dynsamp_init(struct dynsamp *d, long P, int on, long max_resample_rounds) {
  memset(d, 0, sizeof *d);
  d->P = P;
  d->on = on;
  d->max_rounds = on ? 1 + max_resample_rounds : 1;
  /* rounds stop once P are kept, so at most P - 1 + P codes are ever recorded */
  d->kept = malloc(sizeof(int64_t) * (size_t)(2 * P));
  return d->kept ? 0 : -1;
}

void dynsamp_free(struct dynsamp *d) {
  free(d->kept);
  d->kept = NULL;
}

uint64_t dynsamp_prompt_id(long step, int round, long g, long P, long max_resample_rounds) {
  uint64_t s = (uint64_t)(step - 1), p = (uint64_t)P;
  if (round == 0) return s * p + (uint64_t)g;
  return DYNSAMP_ID_BASE + (s * (uint64_t)max_resample_rounds + (uint64_t)(round - 1)) * p + (uint64_t)g;
}

struct group_reward {
  int32_t group;
  double reward;
};

static int cmp_group(const void *a, const void *b) {
  const struct group_reward *x = a, *y = b;
  return (x->group > y->group) - (x->group < y->group);
}

int dynsamp_round_groups(const struct dynsamp *d, const struct sample_batch *b, int32_t *groups) {
  int n = b->n, kept = 0;
  struct group_reward *gr = malloc(sizeof *gr * (size_t)(n + 1));
  double *r = malloc(sizeof *r * (size_t)(n + 1));
  if (!gr || !r) {
    free(gr);
    free(r);
    return -1;
  }
  for (int k = 0; k < n; k++) {
    gr[k] = (struct group_reward){.group = b->s[k].group, .reward = b->s[k].reward};
    if (gr[k].group < 0 || gr[k].group >= d->P) kept = -1;
  }
  if (kept == 0) qsort(gr, (size_t)n, sizeof *gr, cmp_group);
  for (int k = 0; k < n && kept >= 0;) {
    int e = k;
    while (e < n && gr[e].group == gr[k].group) {
      r[e - k] = gr[e].reward;
      e++;
    }
    if (!d->on || algo_group_keep(r, e - k)) groups[kept++] = gr[k].group;
    k = e;
  }
  free(gr);
  free(r);
  return kept;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

void dynsamp_sort_groups(int32_t *groups, int n) { qsort(groups, (size_t)n, sizeof *groups, cmp_i32); }

int dynsamp_has_group(const int32_t *groups, int n, int32_t g) {
  return bsearch(&g, groups, (size_t)n, sizeof *groups, cmp_i32) != NULL;
}

void dynsamp_add_round(struct dynsamp *d, const int32_t *groups, int n) {
  for (int k = 0; k < n && d->n_kept < 2 * d->P; k++)
    d->kept[d->n_kept++] = (int64_t)d->rounds * d->P + groups[k];
  d->n_filtered += d->P - n;
  d->rounds++;
}

int dynsamp_done(const struct dynsamp *d) {
  return d->n_kept >= d->P || d->rounds >= d->max_rounds;
}

long dynsamp_selected(const struct dynsamp *d) {
  return d->n_kept < d->P ? d->n_kept : d->P;
}

static int cmp_code(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

long dynsamp_slot(const struct dynsamp *d, int round, long g) {
  int64_t code = (int64_t)round * d->P + g;
  const int64_t *at = bsearch(&code, d->kept, (size_t)dynsamp_selected(d), sizeof *d->kept, cmp_code);
  return at ? (long)(at - d->kept) : -1;
}
