/* util/rng.h: counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
 *
 * Every random number in rlpt is a pure function of a key, so any rank computes
 * the same value for the same purpose without sharing state, and a restarted
 * run draws exactly what the uninterrupted run would have drawn.
 *
 * Key layout (struct rng_key -> one Philox call):
 *   Philox key (64 bits)  = the first two output words of
 *                           Philox4x32-10(counter = {stream, 0, 0, 0x726c7074 "rlpt"},
 *                                         key     = {lo32(seed), hi32(seed)})
 *                           i.e. a sub-key per (seed, stream); streams never share
 *                           a Philox key, so two purposes cannot draw the same numbers.
 *   Philox counter        = {pos, sample, prompt, step}   (word 0 .. word 3)
 * One call yields 128 random bits; rng_uniform uses words 0-1, rng_normal all four.
 *
 * struct rng_seq (bulk fills, e.g. weight init) keeps the same sub-key and puts a
 * 64-bit block index into counter words 0-1, with two caller words (a, b) in
 * words 2-3 (e.g. a = tensor index): consumption is sequential but the numbers
 * are still a function of (seed, stream, a, b, index). */
#ifndef RLPT_RNG_H
#define RLPT_RNG_H

#include <stddef.h>
#include <stdint.h>

/* Purposes (the `stream` word). Never renumber: checkpoints and golden files depend on them. */
enum rng_stream_id {
  RNG_STREAM_INIT = 1,        /* scratch weight init */
  RNG_STREAM_SAMPLE = 2,      /* token sampling in the rollout engine */
  RNG_STREAM_TASK_TRAIN = 3,  /* built-in task prompts, train split */
  RNG_STREAM_TASK_EVAL = 4,   /* built-in task prompts, held-out split */
  RNG_STREAM_TASK_SPLIT = 5,  /* hash that assigns a problem to train or held-out */
  RNG_STREAM_SHUFFLE = 6,     /* dataset order */
  RNG_STREAM_SFT = 7,         /* SFT example draw */
  RNG_STREAM_DIFFICULTY = 8,  /* replacement draws for prompts the difficulty filter skips */
  RNG_STREAM_SIMULATE = 9,    /* rlpt plan --simulate deck: the response lengths it draws */
  RNG_STREAM_TEST = 99,       /* tests only */
};

struct rng_key {
  uint64_t seed;
  uint32_t stream;  /* enum rng_stream_id */
  uint32_t step;
  uint32_t prompt;
  uint32_t sample;
  uint32_t pos;
};

/* The raw block function: out = Philox4x32-10(ctr, key). */
void rng_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* 128 random bits for one key. */
void rng_block(const struct rng_key *k, uint32_t out[4]);
uint32_t rng_u32(const struct rng_key *k);
uint64_t rng_u64(const struct rng_key *k);
/* Uniform in [0, 1): 53 random bits (double) or 24 (float). */
double rng_uniform(const struct rng_key *k);
float rng_uniform_f(const struct rng_key *k);
/* Standard normal by Box-Muller from the key's 128 bits (one value per key). */
double rng_normal(const struct rng_key *k);
/* Uniform integer in [0, n) for n >= 1 (64-bit multiply-shift; bias < n / 2^64). */
uint64_t rng_below(const struct rng_key *k, uint64_t n);

/* A 64-bit keyed hash of n words (seed and stream select the hash function).
 * Used to assign problems to train/held-out deterministically. */
uint64_t rng_hash_words(uint64_t seed, uint32_t stream, const uint32_t *w, size_t n);

/* Sequential keyed stream. */
struct rng_seq {
  uint32_t key[2];   /* sub-key for (seed, stream) */
  uint32_t a, b;     /* counter words 2, 3 */
  uint64_t block;    /* next block index (counter words 0, 1) */
  uint32_t buf[4];
  int used;          /* words of buf already consumed (4 = empty) */
};

void rng_seq_init(struct rng_seq *s, uint64_t seed, uint32_t stream, uint32_t a, uint32_t b);
uint32_t rng_seq_u32(struct rng_seq *s);
double rng_seq_uniform(struct rng_seq *s);
uint64_t rng_seq_below(struct rng_seq *s, uint64_t n);
double rng_seq_normal(struct rng_seq *s);
/* x[i] = mean + std * N(0,1), i < n. */
void rng_seq_fill_normal(struct rng_seq *s, float *x, size_t n, float mean, float std);

#endif
