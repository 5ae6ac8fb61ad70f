/* util/rng.c: Philox4x32-10 and the keyed helpers built on it (see util/rng.h for the key layout). */
#include "util/rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u  /* golden ratio */
#define PHILOX_W1 0xBB67AE85u  /* sqrt(3) - 1 */
#define RLPT_TAG 0x726c7074u   /* "rlpt": domain tag of the sub-key derivation */

void rng_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    if (r > 0) { k0 += PHILOX_W0; k1 += PHILOX_W1; }
    uint64_t p0 = (uint64_t)PHILOX_M0 * x0;
    uint64_t p1 = (uint64_t)PHILOX_M1 * x2;
    uint32_t y0 = (uint32_t)(p1 >> 32) ^ x1 ^ k0;
    uint32_t y2 = (uint32_t)(p0 >> 32) ^ x3 ^ k1;
    x1 = (uint32_t)p1;
    x3 = (uint32_t)p0;
    x0 = y0;
    x2 = y2;
  }
  out[0] = x0; out[1] = x1; out[2] = x2; out[3] = x3;
}

static void subkey(uint64_t seed, uint32_t stream, uint32_t key[2]) {
  const uint32_t ctr[4] = {stream, 0, 0, RLPT_TAG};
  const uint32_t sk[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t out[4];
  rng_philox4x32_10(ctr, sk, out);
  key[0] = out[0];
  key[1] = out[1];
}

void rng_block(const struct rng_key *k, uint32_t out[4]) {
  uint32_t key[2];
  subkey(k->seed, k->stream, key);
  const uint32_t ctr[4] = {k->pos, k->sample, k->prompt, k->step};
  rng_philox4x32_10(ctr, key, out);
}

uint32_t rng_u32(const struct rng_key *k) {
  uint32_t o[4];
  rng_block(k, o);
  return o[0];
}

static uint64_t join64(uint32_t lo, uint32_t hi) { return (uint64_t)lo | ((uint64_t)hi << 32); }

uint64_t rng_u64(const struct rng_key *k) {
  uint32_t o[4];
  rng_block(k, o);
  return join64(o[0], o[1]);
}

/* Top 53 bits of a 64-bit word, scaled to [0, 1). */
static double u64_to_unit(uint64_t x) { return (double)(x >> 11) * 0x1.0p-53; }

double rng_uniform(const struct rng_key *k) { return u64_to_unit(rng_u64(k)); }

float rng_uniform_f(const struct rng_key *k) {
  return (float)(rng_u32(k) >> 8) * 0x1.0p-24f;
}

/* u1 in (0, 1] so the log is finite; u2 in [0, 1). */
static double box_muller(uint64_t a, uint64_t b) {
  double u1 = ((double)(a >> 11) + 1.0) * 0x1.0p-53;
  double u2 = u64_to_unit(b);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

double rng_normal(const struct rng_key *k) {
  uint32_t o[4];
  rng_block(k, o);
  return box_muller(join64(o[0], o[1]), join64(o[2], o[3]));
}

static uint64_t mulhi64(uint64_t x, uint64_t n) {
  __extension__ typedef unsigned __int128 u128;
  return (uint64_t)(((u128)x * n) >> 64);
}

uint64_t rng_below(const struct rng_key *k, uint64_t n) { return mulhi64(rng_u64(k), n); }

uint64_t rng_hash_words(uint64_t seed, uint32_t stream, const uint32_t *w, size_t n) {
  uint32_t key[2], h[4] = {0, 0, 0, 0};
  subkey(seed, stream, key);
  for (size_t i = 0; i < n; i++) {
    const uint32_t ctr[4] = {w[i], h[0], h[1], (uint32_t)i};
    rng_philox4x32_10(ctr, key, h);
  }
  const uint32_t fin[4] = {(uint32_t)n, h[0], h[1], 0xffffffffu};
  rng_philox4x32_10(fin, key, h);
  return join64(h[0], h[1]);
}

void rng_seq_init(struct rng_seq *s, uint64_t seed, uint32_t stream, uint32_t a, uint32_t b) {
  subkey(seed, stream, s->key);
  s->a = a;
  s->b = b;
  s->block = 0;
  s->used = 4;
}

uint32_t rng_seq_u32(struct rng_seq *s) {
  if (s->used == 4) {
    const uint32_t ctr[4] = {(uint32_t)s->block, (uint32_t)(s->block >> 32), s->a, s->b};
    rng_philox4x32_10(ctr, s->key, s->buf);
    s->block++;
    s->used = 0;
  }
  return s->buf[s->used++];
}

static uint64_t seq_u64(struct rng_seq *s) {
  uint32_t lo = rng_seq_u32(s);
  return join64(lo, rng_seq_u32(s));
}

double rng_seq_uniform(struct rng_seq *s) { return u64_to_unit(seq_u64(s)); }

uint64_t rng_seq_below(struct rng_seq *s, uint64_t n) { return mulhi64(seq_u64(s), n); }

double rng_seq_normal(struct rng_seq *s) {
  uint64_t a = seq_u64(s);
  return box_muller(a, seq_u64(s));
}

void rng_seq_fill_normal(struct rng_seq *s, float *x, size_t n, float mean, float std) {
  for (size_t i = 0; i < n; i++) x[i] = mean + std * (float)rng_seq_normal(s);
}
