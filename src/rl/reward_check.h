/* rl/reward_check.h: a deck's reward checked before any GPU time is spent. The task's
 * reference answers and deliberately wrong ones (off by one, empty, garbage) are scored
 * through the configured reward, and each component's distribution is printed; this
 * catches the miswired reward that makes a GRPO loss sit at 0. With [reward] rm_path the
 * reward model is loaded and scores [BOS] prompt + answer + EOS (what it sees in a run),
 * so its `rm` row shows its score distribution over the references and the wrong
 * answers, and the totals are the rm_alpha mix. */
#ifndef RLPT_REWARD_CHECK_H
#define RLPT_REWARD_CHECK_H

struct reward_check_opts {
  const char *deck;      /* the deck file */
  char *const *over;     /* n_over section.key=value overrides of it */
  int n_over;
  long n_prompts;        /* prompts scored (a dataset: at most the split's rows, each once) */
  int heldout;           /* 1: the held-out (eval) split's prompts; 0: the train split's */
};

/* Load the deck (no MPI), score, print the table on stdout. Returns 0 when the references
 * score and the wrong answers score less; 3 when they do not (with WARNING lines); 2 for a
 * bad deck (one message naming it); 1 internal. */
int reward_check(const struct reward_check_opts *o);

#endif
