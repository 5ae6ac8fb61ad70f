/* run/sft_phase.h: the SFT warm start of a run ([sft] steps), before the RL steps. */
#ifndef RLPT_SFT_PHASE_H
#define RLPT_SFT_PHASE_H

struct run;
struct restart_point;

/* Every rank: the train ranks run [sft] steps SFT updates (after rp's SFT step when rp,
 * a restart, is given: the trainer's SFT state is taken from its checkpoint), train dp 0
 * reports each step and the controller logs it; every rank takes part in each step's
 * stop check. 0 when SFT ran to its end; 1 when a stop check ended it (exit code in *rc). */
int sft_phase_run(struct run *r, struct restart_point *rp, int *rc);

#endif
