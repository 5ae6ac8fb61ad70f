/* rl/difficulty.h: the difficulty filter ([algo] difficulty_filter): a prompt whose
 * running pass rate is at or below difficulty_low or at or above difficulty_high (0 and
 * 1 by default: never or always solved) has advantage 0 in every group and teaches
 * nothing, so the controller stops drawing it.
 *
 * A prompt is known by its text (difficulty_key: FNV-1a 64 of the prompt as the model
 * sees it), so repeated draws of one problem under different prompt ids share a record.
 * Its running pass rate is the share of correct samples ([reward] verifier, reward part
 * `correct` >= 0.5) over its last `window` groups. A prompt never seen passes. A
 * filtered prompt is never drawn again, so its rate never changes: the filter is
 * monotone, and a run's state is a pure function of its groups, the same on every rank
 * (run/difficulty_sync.h) and saved in the checkpoint (difficulty_save). */
#ifndef RLPT_DIFFICULTY_H
#define RLPT_DIFFICULTY_H

#include <stddef.h>
#include <stdint.h>

struct difficulty {
  int on;
  long window;          /* groups per prompt in the running rate */
  double low, high;     /* skip when rate <= low or rate >= high */
  long n, cap;          /* prompts recorded; room */
  uint64_t *key;        /* [cap], ascending */
  int64_t *seen;        /* [cap] groups recorded per prompt (the ring slot is seen % window) */
  int32_t *correct, *total; /* [cap * window] the ring of each prompt's last groups */
};

/* Empty filter. 0, or -1 for window < 1. */
int difficulty_init(struct difficulty *d, int on, long window, double low, double high);
void difficulty_free(struct difficulty *d);

/* FNV-1a 64 of text: the prompt's identity. */
uint64_t difficulty_key(const char *text);

/* Groups counted in key's running rate (0: never seen, *rate = NaN), the rate into *rate. */
long difficulty_rate(const struct difficulty *d, uint64_t key, double *rate);
/* 1 when the filter is on and key's running rate is <= low or >= high. */
int difficulty_skip(const struct difficulty *d, uint64_t key);
/* One group of key: n samples, n_correct of them correct. 0, or -1 when out of memory. */
int difficulty_record(struct difficulty *d, uint64_t key, int n_correct, int n);

/* The state as bytes (little-endian int64 words: window, n, then per prompt key, seen
 * and the window (correct, total) pairs); *buf malloc'd. 0, or -1 when out of memory. */
int difficulty_save(const struct difficulty *d, unsigned char **buf, size_t *len);
/* Replace d's records by saved bytes (d's window must be the saved one). 0, or 2 with a
 * message in err (not a filter state, another window, records out of order), 1 when out
 * of memory. */
int difficulty_load(struct difficulty *d, const unsigned char *buf, size_t len, char *err,
                    size_t errlen);

#endif
