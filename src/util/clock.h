/* util/clock.h: the wall clock every phase timer and deadline of rlpt reads. */
#ifndef RLPT_CLOCK_H
#define RLPT_CLOCK_H

/* Monotonic wall-clock seconds since an arbitrary origin (CLOCK_MONOTONIC): only
 * differences mean something. */
double clock_seconds(void);

#endif
