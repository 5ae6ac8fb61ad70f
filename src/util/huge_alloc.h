/* util/huge_alloc.h: zeroed host memory for the large flat float buffers (weights,
 * gradients, AdamW moments) that every step streams end to end. The block is 2 MiB
 * aligned and marked for transparent huge pages (madvise), so a pass over 0.5 GB of
 * weights does not take a TLB miss every 4 KiB: the batch-1 decode of SmolLM2 went
 * from 72% to 87-92% of the measured read bandwidth with it (bench_generate). Where
 * THP is off the advice is ignored and the pages stay 4 KiB. Free with free(). */
#ifndef RLPT_HUGE_ALLOC_H
#define RLPT_HUGE_ALLOC_H

#include <stddef.h>

/* n zeroed floats (at least one), or NULL when out of memory. */
float *huge_floats(size_t n);

#endif
