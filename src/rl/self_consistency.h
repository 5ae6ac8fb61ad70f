/* rl/self_consistency.h: self-consistency pseudo-labels ([reward] self_consistency; TTRL):
 * without a reference answer, a sample is `correct` when its final answer (task_answer, the
 * verifier's canonical form) is the most frequent one among the samples of its group.
 *
 *   votes       the samples of the group that give an answer (an answer-less sample abstains
 *               and is never correct)
 *   majority    the answer with the most votes; a tie goes to the smallest canonical text
 *               (strcmp), so the label does not depend on the samples' order
 *   agreement   majority votes / samples of the group (abstainers count in the divisor)
 *   correct_i   1 when sample i gives the majority answer and agreement >= min_agreement
 *               ([reward] sc_min_agreement), else 0; a group without votes is all 0
 * Held-out evals keep the reference answers. */
#ifndef RLPT_SELF_CONSISTENCY_H
#define RLPT_SELF_CONSISTENCY_H

#include <stddef.h>

#define SC_ANSWER_MAX 128  /* longest canonical answer that votes (longer ones abstain) */

/* The majority of n answers (answers[i] the canonical text, "" = abstains): its index
 * into *winner (-1 when nobody votes); returns its votes. */
int sc_majority(const char (*answers)[SC_ANSWER_MAX], int n, int *winner);

/* The pseudo-labels of n scored samples in n_groups groups (group[i] in [0, n_groups)):
 * correct[i] per the rules above from answers[i]; winner[g] gets a sample of group g that
 * gives its majority answer (-1: no votes) and agreement[g] its share (NaN for an empty
 * group); both may be NULL. 0, or -1 when out of memory. */
int sc_pseudo_correct(const char (*answers)[SC_ANSWER_MAX], const int *group, int n, int n_groups,
                      double min_agreement, double *correct, int *winner, double *agreement);

#endif
