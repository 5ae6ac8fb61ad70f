/* run/samples_log.h: what the policy writes, for a person to read ([log] samples_path,
 * and [log] tensorboard_dir's text tables). */
#ifndef RLPT_SAMPLES_LOG_H
#define RLPT_SAMPLES_LOG_H

#include <stddef.h>

struct run;
struct sample_batch;

/* Train dp 0, with [log] tensorboard_dir and samples_every set: its own event file in
 * that directory (events.out.tfevents.<seconds>.<host>.samples.rlpt, beside the
 * controller's), in r->samples_tb. Other ranks: nothing. Returns 0, or 2 with the
 * reason (naming the key and path) in err. */
int samples_log_open(struct run *r, char *err, size_t len);
void samples_log_close(struct run *r);
/* Every [log] samples_every steps (train dp 0): the samples of this rank's first groups
 * appended to [log] samples_path as JSON lines, and as one text table (prompt,
 * response, reward, finish reason) at the step in the event file. */
void samples_log_write(const struct run *r, const struct sample_batch *b, long step);

#endif
