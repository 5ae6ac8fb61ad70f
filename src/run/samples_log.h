/* run/samples_log.h: what the policy writes, for a person to read ([log] samples_path). */
#ifndef RLPT_SAMPLES_LOG_H
#define RLPT_SAMPLES_LOG_H

struct run;
struct sample_batch;

/* Append the first groups of this rank's trained samples to [log] samples_path every
 * [log] samples_every steps (train DP rank 0). */
void samples_log_write(const struct run *r, const struct sample_batch *b, long step);

#endif
