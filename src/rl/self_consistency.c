/* rl/self_consistency.c: majority-vote pseudo-labels (rl/self_consistency.h). */
#include "rl/self_consistency.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sc_majority(const char (*answers)[SC_ANSWER_MAX], int n, int *winner) {
  int best = -1, best_votes = 0;
  /* quadratic in the group size G (a few to a few dozen samples) */
  for (int i = 0; i < n; i++) {
    if (!answers[i][0]) continue;
    int votes = 0;
    for (int j = 0; j < n; j++) votes += !strcmp(answers[i], answers[j]);
    if (votes > best_votes || (votes == best_votes && strcmp(answers[i], answers[best]) < 0)) {
      best = i;
      best_votes = votes;
    }
  }
  *winner = best;
  return best_votes;
}

int sc_pseudo_correct(const char (*answers)[SC_ANSWER_MAX], const int *group, int n, int n_groups,
                      double min_agreement, double *correct, int *winner_of, double *agreement) {
  int *idx = malloc(sizeof(int) * (size_t)(n + 1));
  char (*mine)[SC_ANSWER_MAX] = malloc(sizeof *mine * (size_t)(n + 1));
  if (!idx || !mine) { free(idx); free(mine); return -1; }
  for (int g = 0; g < n_groups; g++) {
    int m = 0, winner;
    for (int i = 0; i < n; i++)
      if (group[i] == g) { idx[m] = i; memcpy(mine[m++], answers[i], SC_ANSWER_MAX); }
    int votes = sc_majority((const char (*)[SC_ANSWER_MAX])mine, m, &winner);
    double share = m ? (double)votes / m : NAN;
    if (agreement) agreement[g] = share;
    if (winner_of) winner_of[g] = winner >= 0 ? idx[winner] : -1;
    for (int k = 0; k < m; k++)
      correct[idx[k]] = winner >= 0 && share >= min_agreement && !strcmp(mine[k], mine[winner]);
  }
  free(idx);
  free(mine);
  return 0;
}
