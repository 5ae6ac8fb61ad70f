/* ckpt_fixture.h: a tiny, fully populated checkpoint state for the checkpoint
 * tests (io/test_ckpt.c, io/test_ckpt_mpi.c, io/test_ckpt_corrupt.c). Every value is a
 * function of (seed, step), so a process that did not write a checkpoint can
 * rebuild what it must read back. */
#ifndef RLPT_CKPT_FIXTURE_H
#define RLPT_CKPT_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "io/ckpt.h"
#include "util/rng.h"

/* vocab 40, dim 16, 2 layers, 4/2 heads, ffn 24, untied, qkv bias: 9 kinds of tensor. */
static inline void fixture_config(struct model_config *mc, int value_head) {
  memset(mc, 0, sizeof *mc);
  *mc = (struct model_config){.vocab_size = 40, .dim = 16, .layers = 2, .heads = 4, .kv_heads = 2,
                              .ffn_dim = 24, .max_seq = 64, .head_dim = 4, .rope_theta = 10000.0,
                              .norm_eps = 1e-5, .init_std = 0.02, .tie_embeddings = 0,
                              .qkv_bias = 1, .value_head = value_head};
}

static inline float *fixture_floats(size_t n, uint64_t seed, uint32_t which, int positive) {
  float *x = malloc(sizeof(float) * (n ? n : 1));
  struct rng_seq s;
  rng_seq_init(&s, seed, RNG_STREAM_TEST, which, 0);
  if (x) rng_seq_fill_normal(&s, x, n, 0.0f, 0.5f);
  for (size_t i = 0; x && positive && i < n; i++) x[i] = x[i] * x[i];
  return x;
}

/* Everything a checkpoint can hold; free with ckpt_state_free. deck_pad adds
 * that many bytes of comment lines to the deck text (large-attribute test). */
static inline int fixture_state(struct ckpt_state *st, long step, uint64_t seed, size_t deck_pad) {
  memset(st, 0, sizeof *st);
  st->owned = 1;
  st->step = step;
  st->weight_version = step + 1;
  fixture_config(&st->mc, 0);
  size_t n = model_param_count(&st->mc);
  uint64_t key = seed * 1000 + (uint64_t)step;
  st->params = fixture_floats(n, key, 1, 0);
  st->has_optim = 1;
  st->adam_m = fixture_floats(n, key, 2, 0);
  st->adam_v = fixture_floats(n, key, 3, 1);
  st->adam_t = step * 2;
  st->lr = 3e-4 / (double)(step + 1);
  st->has_ref = 1;
  st->ref_params = fixture_floats(n, seed, 4, 0);
  st->has_critic = 1;
  fixture_config(&st->critic_mc, 1);
  st->critic_params = fixture_floats(model_param_count(&st->critic_mc), key, 5, 0);
  st->n_rng = 5;
  for (int i = 0; i < st->n_rng; i++) st->rng[i] = key * 7919u + (uint64_t)i * 0x9e3779b97f4a7c15u;
  st->data = (struct ckpt_data_cursor){.cursor = (uint64_t)step * 64, .epoch = 3, .shuffle_seed = seed};
  st->n_ctrl = 3;
  const char *names[3] = {"reward_sum", "tokens_sum", "kl_sum"};
  for (int i = 0; i < st->n_ctrl; i++) {
    snprintf(st->ctrl_name[i], CKPT_NAME_MAX, "%s", names[i]);
    st->ctrl[i] = 1.25 * (double)(i + 1) + (double)step;
  }
  struct config *cfg = malloc(sizeof *cfg);
  if (!cfg) return 1;
  config_defaults(cfg);
  int rc = ckpt_deck_text(cfg, &st->deck, &st->used_keys);
  free(cfg);
  if (!rc && deck_pad) {
    size_t len = strlen(st->deck);
    char *d = realloc(st->deck, len + deck_pad + 1);
    if (!d) return 1;
    for (size_t i = 0; i < deck_pad; i++) d[len + i] = (i % 64 == 0) ? '#' : (i % 64 == 63 ? '\n' : 'x');
    d[len + deck_pad] = '\0';
    st->deck = d;
  }
  st->has_buffer = 1;
  st->buffer_len = 1000 + (size_t)step;
  st->buffer = malloc(st->buffer_len);
  for (size_t i = 0; st->buffer && i < st->buffer_len; i++) st->buffer[i] = (unsigned char)(i * 31 + step);
  return rc || !st->params || !st->adam_m || !st->adam_v || !st->ref_params ||
         !st->critic_params || !st->buffer;
}

static inline int fixture_same_floats(const char *what, const float *a, const float *b, size_t n) {
  if (!a || !b || memcmp(a, b, sizeof(float) * n)) {
    fprintf(stderr, "fixture: %s differs\n", what);
    return 0;
  }
  return 1;
}

/* 1 when b is bit-identical to a (prints what differs otherwise). */
static inline int fixture_equal(const struct ckpt_state *a, const struct ckpt_state *b) {
  size_t n = model_param_count(&a->mc);
  int ok = a->step == b->step && a->weight_version == b->weight_version &&
           !memcmp(&a->mc, &b->mc, sizeof a->mc) && a->has_optim == b->has_optim &&
           a->adam_t == b->adam_t && a->lr == b->lr && a->has_ref == b->has_ref &&
           a->has_critic == b->has_critic && !memcmp(&a->critic_mc, &b->critic_mc, sizeof a->mc);
  if (!ok) fprintf(stderr, "fixture: scalars or model configs differ\n");
  ok = ok && fixture_same_floats("params", a->params, b->params, n);
  ok = ok && fixture_same_floats("adam_m", a->adam_m, b->adam_m, n);
  ok = ok && fixture_same_floats("adam_v", a->adam_v, b->adam_v, n);
  ok = ok && fixture_same_floats("ref", a->ref_params, b->ref_params, n);
  ok = ok && fixture_same_floats("critic", a->critic_params, b->critic_params,
                                 model_param_count(&a->critic_mc));
  int small = a->n_rng == b->n_rng && !memcmp(a->rng, b->rng, sizeof(uint64_t) * (size_t)a->n_rng) &&
              !memcmp(&a->data, &b->data, sizeof a->data) && a->n_ctrl == b->n_ctrl &&
              !memcmp(a->ctrl, b->ctrl, sizeof(double) * (size_t)a->n_ctrl) &&
              a->has_buffer == b->has_buffer && a->buffer_len == b->buffer_len &&
              !memcmp(a->buffer, b->buffer, a->buffer_len) && !strcmp(a->deck, b->deck) &&
              !strcmp(a->used_keys, b->used_keys);
  for (int i = 0; small && i < a->n_ctrl; i++) small = !strcmp(a->ctrl_name[i], b->ctrl_name[i]);
  if (!small) fprintf(stderr, "fixture: rng, data, controller, buffer or deck differ\n");
  return ok && small;
}

/* Flips one byte in the middle of a contiguous dataset's data, in place. */
static inline int fixture_flip(const char *path, const char *dataset) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = f >= 0 ? H5Dopen2(f, dataset, H5P_DEFAULT) : -1;
  haddr_t off = ds >= 0 ? H5Dget_offset(ds) : HADDR_UNDEF;
  hsize_t size = ds >= 0 ? H5Dget_storage_size(ds) : 0;
  if (ds >= 0) H5Dclose(ds);
  if (f >= 0) H5Fclose(f);
  if (off == HADDR_UNDEF || size == 0) return -1;
  FILE *fp = fopen(path, "r+b");
  if (!fp) return -1;
  long at = (long)(off + size / 2);
  fseek(fp, at, SEEK_SET);
  int c = fgetc(fp);
  fseek(fp, at, SEEK_SET);
  fputc(c ^ 0x10, fp);
  return fclose(fp);
}

#endif
