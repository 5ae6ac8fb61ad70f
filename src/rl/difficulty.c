/* rl/difficulty.c: the difficulty filter's per-prompt running pass rates (rl/difficulty.h). */
#include "rl/difficulty.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int difficulty_init(struct difficulty *d, int on, long window, double low, double high) {
  memset(d, 0, sizeof *d);
  if (window < 1) return -1;
  *d = (struct difficulty){.on = on, .window = window, .low = low, .high = high};
  return 0;
}

void difficulty_free(struct difficulty *d) {
  free(d->key), free(d->seen), free(d->correct), free(d->total);
  d->key = NULL, d->seen = NULL, d->correct = d->total = NULL;
  d->n = d->cap = 0;
}

uint64_t difficulty_key(const char *text) {
  uint64_t h = UINT64_C(14695981039346656037);
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) h = (h ^ *p) * UINT64_C(1099511628211);
  return h;
}

/* Index of key, or -(insertion point) - 1. */
static long find(const struct difficulty *d, uint64_t key) {
  long lo = 0, hi = d->n;
  while (lo < hi) {
    long mid = lo + (hi - lo) / 2;
    if (d->key[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < d->n && d->key[lo] == key ? lo : -lo - 1;
}

long difficulty_rate(const struct difficulty *d, uint64_t key, double *rate) {
  long i = find(d, key);
  *rate = NAN;
  if (i < 0) return 0;
  long groups = d->seen[i] < d->window ? (long)d->seen[i] : d->window;
  double c = 0, t = 0;
  for (long k = 0; k < groups; k++) {
    c += d->correct[i * d->window + k];
    t += d->total[i * d->window + k];
  }
  *rate = t > 0 ? c / t : NAN;
  return groups;
}

int difficulty_skip(const struct difficulty *d, uint64_t key) {
  double rate;
  if (!d->on || difficulty_rate(d, key, &rate) == 0 || !isfinite(rate)) return 0;
  return rate <= d->low || rate >= d->high;
}

static int grow(struct difficulty *d) {
  long cap = d->cap ? 2 * d->cap : 64, w = d->window;
  uint64_t *key = realloc(d->key, sizeof *key * (size_t)cap);
  if (key) d->key = key;
  int64_t *seen = key ? realloc(d->seen, sizeof *seen * (size_t)cap) : NULL;
  if (seen) d->seen = seen;
  int32_t *c = seen ? realloc(d->correct, sizeof *c * (size_t)(cap * w)) : NULL;
  if (c) d->correct = c;
  int32_t *t = c ? realloc(d->total, sizeof *t * (size_t)(cap * w)) : NULL;
  if (t) d->total = t;
  if (!t) return -1;
  d->cap = cap;
  return 0;
}

/* Make room for a new record at index at (shifting the later ones up). */
static int insert(struct difficulty *d, long at, uint64_t key) {
  if (d->n == d->cap && grow(d) != 0) return -1;
  long w = d->window, later = d->n - at;
  memmove(d->key + at + 1, d->key + at, sizeof *d->key * (size_t)later);
  memmove(d->seen + at + 1, d->seen + at, sizeof *d->seen * (size_t)later);
  memmove(d->correct + (at + 1) * w, d->correct + at * w, sizeof *d->correct * (size_t)(later * w));
  memmove(d->total + (at + 1) * w, d->total + at * w, sizeof *d->total * (size_t)(later * w));
  d->key[at] = key;
  d->seen[at] = 0;
  memset(d->correct + at * w, 0, sizeof *d->correct * (size_t)w);
  memset(d->total + at * w, 0, sizeof *d->total * (size_t)w);
  d->n++;
  return 0;
}

int difficulty_record(struct difficulty *d, uint64_t key, int n_correct, int n) {
  long i = find(d, key);
  if (i < 0) {
    i = -i - 1;
    if (insert(d, i, key) != 0) return -1;
  }
  long slot = i * d->window + (long)(d->seen[i] % d->window);
  d->correct[slot] = n_correct;
  d->total[slot] = n;
  d->seen[i]++;
  return 0;
}

/* ---- the checkpoint's bytes ---------------------------------------------------------- */

static void put64(unsigned char *p, uint64_t v) {
  for (int b = 0; b < 8; b++) p[b] = (unsigned char)(v >> (8 * b));
}

static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int b = 0; b < 8; b++) v |= (uint64_t)p[b] << (8 * b);
  return v;
}

int difficulty_save(const struct difficulty *d, unsigned char **buf, size_t *len) {
  size_t words = 2 + (size_t)d->n * (2 + 2 * (size_t)d->window);
  unsigned char *p = malloc(8 * words);
  if (!p) return -1;
  put64(p, (uint64_t)d->window);
  put64(p + 8, (uint64_t)d->n);
  unsigned char *q = p + 16;
  for (long i = 0; i < d->n; i++) {
    put64(q, d->key[i]);
    put64(q + 8, (uint64_t)d->seen[i]);
    q += 16;
    for (long k = 0; k < d->window; k++, q += 16) {
      put64(q, (uint64_t)(int64_t)d->correct[i * d->window + k]);
      put64(q + 8, (uint64_t)(int64_t)d->total[i * d->window + k]);
    }
  }
  *buf = p;
  *len = 8 * words;
  return 0;
}

int difficulty_load(struct difficulty *d, const unsigned char *buf, size_t len, char *err,
                    size_t errlen) {
  uint64_t w = len >= 16 ? get64(buf) : 0, n = len >= 16 ? get64(buf + 8) : 0;
  if (len < 16 || w < 1 || w > (1u << 20) || n > (len - 16) / 16 ||
      len != 16 + n * 16 * (1 + w)) {
    snprintf(err, errlen, "the difficulty filter state (%zu bytes) is not one rlpt wrote", len);
    return 2;
  }
  if ((long)w != d->window) {
    snprintf(err, errlen, "its difficulty filter used [algo] difficulty_window = %llu, the deck "
             "says %ld", (unsigned long long)w, d->window);
    return 2;
  }
  difficulty_free(d);
  const unsigned char *q = buf + 16;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t key = get64(q);
    if (i > 0 && key <= d->key[d->n - 1]) {
      snprintf(err, errlen, "the difficulty filter state has its prompts out of order");
      return 2;
    }
    if (insert(d, d->n, key) != 0) return 1;
    d->seen[d->n - 1] = (int64_t)get64(q + 8);
    q += 16;
    for (long k = 0; k < d->window; k++, q += 16) {
      d->correct[(d->n - 1) * d->window + k] = (int32_t)(int64_t)get64(q);
      d->total[(d->n - 1) * d->window + k] = (int32_t)(int64_t)get64(q + 8);
    }
  }
  return 0;
}
