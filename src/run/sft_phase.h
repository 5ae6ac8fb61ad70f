/* run/sft_phase.h: the SFT warm start of a run ([sft] steps), before the RL steps. */
#ifndef RLPT_SFT_PHASE_H
#define RLPT_SFT_PHASE_H

struct run;

/* Every rank: the train ranks run [sft] steps SFT updates, train dp 0 reports each step
 * and the controller logs it; the other ranks return at once. */
void sft_phase_run(struct run *r);

#endif
