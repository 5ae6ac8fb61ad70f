/* monitor/watch.c: the doctor's checks, step by step, in a running job (monitor/watch.h). */
#include "monitor/watch.h"

#include <stdlib.h>

#include "monitor/checks.h"
#include "util/alloc.h"

struct doctor_watch *watch_new(void) {
  struct doctor_watch *w = malloc_check(sizeof *w);
  *w = (struct doctor_watch){.seen = 0};
  rows_init(&w->rl);
  return w;
}

void watch_free(struct doctor_watch *w) {
  if (!w) return;
  rows_free(&w->rl);
  free(w);
}

/* One line: the kind's title, the evidence and the keys to look at. */
static void print_finding(FILE *out, long step, enum doctor_kind k, const struct check_hit *h) {
  const struct finding_kind *fk = &finding_kinds[k];
  fprintf(out, "doctor: step %ld: %s: %s; deck keys:", step, fk->title, h->evidence);
  for (int j = 0; j < FINDING_KEYS_MAX && fk->keys[j]; j++) fprintf(out, " %s", fk->keys[j]);
  fprintf(out, " (rlpt doctor RUN_DIR for more)\n");
}

unsigned watch_step(struct doctor_watch *w, const struct step_metrics *m, FILE *out) {
  /* the rows between the head and the lookback are never read again */
  rows_keep_ends(&w->rl, CHECK_HEAD, CHECK_LOOKBACK - 1);
  rows_add_metrics(&w->rl, m);
  long t = w->rl.n - 1;
  unsigned fresh = 0;
  for (int k = 0; k < DK_COUNT; k++) {
    struct check_hit h;
    if ((w->seen >> k & 1u) || !check_at((enum doctor_kind)k, &w->rl, t, &h)) continue;
    w->seen |= 1u << k;
    fresh |= 1u << k;
    if (out) print_finding(out, m->step, (enum doctor_kind)k, &h);
  }
  if (fresh && out) fflush(out);
  return fresh;
}
