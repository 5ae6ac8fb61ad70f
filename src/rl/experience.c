/* rl/experience.c: the sample record, sample batches and the versioned buffer
 * (see rl/experience.h). */
#include "rl/experience.h"

#include <stdlib.h>
#include <string.h>

static const char *finish_names[FINISH_COUNT] = {"eos", "stop", "length"};

const char *finish_reason_name(int f) {
  return f >= 0 && f < FINISH_COUNT ? finish_names[f] : "?";
}

int finish_reason_parse(const char *name) {
  for (int i = 0; i < FINISH_COUNT; i++)
    if (strcmp(name, finish_names[i]) == 0) return i;
  return -1;
}

void sample_init(struct sample *s) { memset(s, 0, sizeof *s); }

void sample_free(struct sample *s) {
  free(s->prompt);
  free(s->resp);
  free(s->logprobs);
  free(s->resp_mask);
  free(s->tok_version);
  for (int i = 0; i < s->n_parts; i++) free(s->parts[i].name);
  free(s->parts);
  free(s->adv);
  sample_init(s);
}

/* malloc'd copy of n elements of size sz; *out = NULL when n == 0 or src == NULL. */
static int dup_array(void **out, const void *src, size_t n, size_t sz) {
  *out = NULL;
  if (n == 0 || src == NULL) return 0;
  *out = malloc(n * sz);
  if (!*out) return -1;
  memcpy(*out, src, n * sz);
  return 0;
}

int sample_set_prompt(struct sample *s, const int32_t *tok, int32_t n) {
  void *p;
  if (n < 0 || dup_array(&p, tok, (size_t)n, sizeof *tok)) return -1;
  free(s->prompt);
  s->prompt = p;
  s->n_prompt = p ? n : 0;
  return 0;
}

int sample_set_response(struct sample *s, const int32_t *tok, const float *logprobs, int32_t n) {
  void *t, *lp;
  if (n < 0 || dup_array(&t, tok, (size_t)n, sizeof *tok)) return -1;
  if (dup_array(&lp, logprobs, t ? (size_t)n : 0, sizeof *logprobs)) {
    free(t);
    return -1;
  }
  free(s->resp);
  free(s->logprobs);
  free(s->resp_mask);
  s->resp_mask = NULL;
  free(s->tok_version);  /* of the old response */
  s->tok_version = NULL;
  s->resp = t;
  s->logprobs = lp;
  s->n_resp = t ? n : 0;
  /* a per-token advantage no longer matches the new response */
  if (s->n_adv > 1 && s->n_adv != s->n_resp) sample_set_adv(s, NULL, 0);
  return 0;
}

int sample_set_tok_versions(struct sample *s, const int64_t *v) {
  void *p;
  if (dup_array(&p, v, (size_t)s->n_resp, sizeof *v)) return -1;
  free(s->tok_version);
  s->tok_version = p;
  return 0;
}

int32_t sample_tokens_of_version(const struct sample *s, int64_t v) {
  if (!s->tok_version) return s->weight_version == v ? s->n_resp : 0;
  int32_t n = 0;
  for (int32_t j = 0; j < s->n_resp; j++) n += s->tok_version[j] == v;
  return n;
}

int sample_set_part(struct sample *s, const char *name, double value) {
  for (int i = 0; i < s->n_parts; i++)
    if (strcmp(s->parts[i].name, name) == 0) {
      s->parts[i].value = value;
      return 0;
    }
  char *nm = strdup(name);
  struct reward_part *p = nm ? realloc(s->parts, (size_t)(s->n_parts + 1) * sizeof *p) : NULL;
  if (!p) {
    free(nm);
    return -1;
  }
  p[s->n_parts].name = nm;
  p[s->n_parts].value = value;
  s->parts = p;
  s->n_parts++;
  return 0;
}

int sample_get_part(const struct sample *s, const char *name, double *v) {
  for (int i = 0; i < s->n_parts; i++)
    if (strcmp(s->parts[i].name, name) == 0) {
      *v = s->parts[i].value;
      return 0;
    }
  return -1;
}

int sample_set_adv(struct sample *s, const float *adv, int32_t n) {
  void *a;
  if (n < 0 || (n > 1 && n != s->n_resp) || (n > 0 && !adv)) return -1;
  if (dup_array(&a, adv, (size_t)n, sizeof *adv)) return -1;
  free(s->adv);
  s->adv = a;
  s->n_adv = n;
  return 0;
}

int sample_set_resp_mask(struct sample *s, const uint8_t *mask) {
  int all = 1;
  for (int j = 0; mask && j < s->n_resp; j++) all &= mask[j] == 1;
  void *m = NULL;
  if (!all && dup_array(&m, mask, (size_t)s->n_resp, 1)) return -1;
  free(s->resp_mask);
  s->resp_mask = m;
  return 0;
}

int32_t sample_last_turn(const struct sample *s) {
  int32_t j = s->resp_mask ? s->n_resp : 0;
  while (j > 0 && s->resp_mask[j - 1]) j--;
  return j;
}

int sample_copy(struct sample *dst, const struct sample *src) {
  struct sample t = *src;
  t.prompt = NULL, t.resp = NULL, t.logprobs = NULL, t.parts = NULL, t.adv = NULL;
  t.resp_mask = NULL;
  t.tok_version = NULL;
  t.n_prompt = t.n_resp = t.n_parts = t.n_adv = 0;
  int bad = sample_set_prompt(&t, src->prompt, src->n_prompt) ||
            sample_set_response(&t, src->resp, src->logprobs, src->n_resp) ||
            sample_set_resp_mask(&t, src->resp_mask) ||
            sample_set_tok_versions(&t, src->tok_version) ||
            sample_set_adv(&t, src->adv, src->n_adv);
  for (int i = 0; !bad && i < src->n_parts; i++)
    bad = sample_set_part(&t, src->parts[i].name, src->parts[i].value);
  if (bad) {
    sample_free(&t);
    return -1;
  }
  *dst = t;
  return 0;
}

static int same_bytes(const void *a, const void *b, size_t n) {
  return n == 0 || (a && b && memcmp(a, b, n) == 0);
}

int sample_equal(const struct sample *a, const struct sample *b) {
  if (a->prompt_id != b->prompt_id || a->group != b->group || a->index != b->index ||
      a->weight_version != b->weight_version || a->step != b->step ||
      a->n_prompt != b->n_prompt || a->n_resp != b->n_resp || a->finish != b->finish ||
      memcmp(&a->reward, &b->reward, sizeof a->reward) != 0 || a->n_parts != b->n_parts ||
      a->n_adv != b->n_adv || a->flags != b->flags ||
      (a->n_resp > 0 && (!a->logprobs) != (!b->logprobs)) ||
      (a->n_resp > 0 && (!a->resp_mask) != (!b->resp_mask)) ||
      (a->n_resp > 0 && (!a->tok_version) != (!b->tok_version)))
    return 0;
  if (!same_bytes(a->prompt, b->prompt, (size_t)a->n_prompt * sizeof *a->prompt) ||
      !same_bytes(a->resp, b->resp, (size_t)a->n_resp * sizeof *a->resp) ||
      (a->logprobs && !same_bytes(a->logprobs, b->logprobs, (size_t)a->n_resp * sizeof(float))) ||
      (a->resp_mask && !same_bytes(a->resp_mask, b->resp_mask, (size_t)a->n_resp)) ||
      (a->tok_version && !same_bytes(a->tok_version, b->tok_version, (size_t)a->n_resp * sizeof(int64_t))) ||
      !same_bytes(a->adv, b->adv, (size_t)a->n_adv * sizeof *a->adv))
    return 0;
  for (int i = 0; i < a->n_parts; i++)
    if (strcmp(a->parts[i].name, b->parts[i].name) != 0 ||
        memcmp(&a->parts[i].value, &b->parts[i].value, sizeof(double)) != 0)
      return 0;
  return 1;
}

/* ---- batches ------------------------------------------------------------- */

void sample_batch_init(struct sample_batch *b) { memset(b, 0, sizeof *b); }

void sample_batch_clear(struct sample_batch *b) { sample_batch_truncate(b, 0); }

void sample_batch_free(struct sample_batch *b) {
  sample_batch_clear(b);
  free(b->s);
  sample_batch_init(b);
}

int sample_batch_reserve(struct sample_batch *b, int n) {
  if (n <= b->cap) return 0;
  int cap = b->cap ? b->cap : 16;
  while (cap < n) cap = cap > (1 << 29) ? n : cap * 2;
  struct sample *s = realloc(b->s, (size_t)cap * sizeof *s);
  if (!s) return -1;
  b->s = s;
  b->cap = cap;
  return 0;
}

struct sample *sample_batch_add(struct sample_batch *b) {
  if (sample_batch_reserve(b, b->n + 1)) return NULL;
  struct sample *s = &b->s[b->n++];
  sample_init(s);
  return s;
}

int sample_batch_push(struct sample_batch *b, struct sample *s) {
  if (sample_batch_reserve(b, b->n + 1)) return -1;
  b->s[b->n++] = *s;
  sample_init(s);
  return 0;
}

int sample_batch_move_all(struct sample_batch *dst, struct sample_batch *src) {
  if (sample_batch_reserve(dst, dst->n + src->n)) return -1;
  memcpy(dst->s + dst->n, src->s, (size_t)src->n * sizeof *src->s);
  dst->n += src->n;
  src->n = 0;
  return 0;
}

void sample_batch_truncate(struct sample_batch *b, int from) {
  if (from < 0) from = 0;
  for (int i = from; i < b->n; i++) sample_free(&b->s[i]);
  if (from < b->n) b->n = from;
}

int64_t sample_batch_resp_tokens(const struct sample_batch *b) {
  int64_t t = 0;
  for (int i = 0; i < b->n; i++)
    for (int j = 0; j < b->s[i].n_resp; j++) t += sample_tok_trained(&b->s[i], j);
  return t;
}

/* ---- versioned buffer ------------------------------------------------------ */

int exp_buffer_init(struct exp_buffer *buf, int cap, int64_t max_lag, enum stale_policy stale) {
  memset(buf, 0, sizeof *buf);
  if (cap < 1 || max_lag < 0) return -1;
  buf->ring = calloc((size_t)cap, sizeof *buf->ring);
  if (!buf->ring) return -1;
  buf->cap = cap;
  buf->max_lag = max_lag;
  buf->stale = stale;
  return 0;
}

void exp_buffer_free(struct exp_buffer *buf) {
  for (int i = 0; i < buf->n; i++) sample_free(&buf->ring[(buf->head + i) % buf->cap]);
  free(buf->ring);
  memset(buf, 0, sizeof *buf);
}

int exp_buffer_space(const struct exp_buffer *buf) { return buf->cap - buf->n; }

int exp_buffer_push(struct exp_buffer *buf, struct sample *s) {
  if (buf->n == buf->cap) {
    buf->win.rejected++;
    buf->total.rejected++;
    return 1;
  }
  buf->ring[(buf->head + buf->n) % buf->cap] = *s;
  buf->n++;
  sample_init(s);
  return 0;
}

const struct sample *exp_buffer_peek(const struct exp_buffer *buf, int i) {
  return i >= 0 && i < buf->n ? &buf->ring[(buf->head + i) % buf->cap] : NULL;
}

static void count(struct exp_buffer *buf, int64_t popped, int64_t dropped, int64_t stale,
                  int64_t lag) {
  struct exp_stats *st[2] = {&buf->win, &buf->total};
  for (int k = 0; k < 2; k++) {
    st[k]->popped += popped;
    st[k]->dropped += dropped;
    st[k]->stale_kept += stale;
    if (popped) {
      st[k]->lag_sum += (double)lag;
      if (lag > st[k]->lag_max) st[k]->lag_max = lag;
    }
  }
}

/* Remove the oldest sample: drop it, or move it to out (room reserved by the
 * caller) flagged SAMPLE_STALE when its own lag exceeds max_lag. */
static void take_head(struct exp_buffer *buf, int64_t version, int drop, struct sample_batch *out) {
  struct sample *s = &buf->ring[buf->head];
  int64_t lag = version - s->weight_version;
  int stale = lag > buf->max_lag;
  if (drop) {
    sample_free(s);
    count(buf, 0, 1, 0, 0);
  } else {
    if (stale) s->flags |= SAMPLE_STALE;
    out->s[out->n++] = *s;
    sample_init(s);
    count(buf, 1, 0, stale, lag);
  }
  buf->head = (buf->head + 1) % buf->cap;
  buf->n--;
}

int exp_buffer_pop(struct exp_buffer *buf, int64_t version, int want, struct sample_batch *out) {
  int got = 0;
  while (got < want && buf->n > 0) {
    if (sample_batch_reserve(out, out->n + 1)) return -1;
    const struct sample *s = &buf->ring[buf->head];
    int drop = buf->stale == STALE_DROP && version - s->weight_version > buf->max_lag;
    take_head(buf, version, drop, out);
    got += !drop;
  }
  return got;
}

int exp_buffer_pop_groups(struct exp_buffer *buf, int64_t version, int groups,
                          struct sample_batch *out) {
  int got = 0;
  while (got < groups && buf->n > 0) {
    const struct sample *first = &buf->ring[buf->head];
    int k = 0;
    int64_t oldest = first->weight_version;
    for (; k < buf->n; k++) {
      const struct sample *s = exp_buffer_peek(buf, k);
      if (s->step != first->step || s->group != first->group) break;
      if (s->weight_version < oldest) oldest = s->weight_version;
    }
    int drop = buf->stale == STALE_DROP && version - oldest > buf->max_lag;
    if (!drop && sample_batch_reserve(out, out->n + k)) return -1;
    for (int i = 0; i < k; i++) take_head(buf, version, drop, out);
    got += !drop;
  }
  return got;
}

int exp_buffer_prune(struct exp_buffer *buf, int64_t version) {
  if (buf->stale != STALE_DROP) return 0;
  int kept = 0, dropped = 0;
  /* compact in place, keeping FIFO order */
  for (int i = 0; i < buf->n; i++) {
    struct sample *s = &buf->ring[(buf->head + i) % buf->cap];
    if (version - s->weight_version > buf->max_lag) {
      sample_free(s);
      dropped++;
    } else {
      buf->ring[(buf->head + kept) % buf->cap] = *s;
      kept++;
    }
  }
  buf->n = kept;
  count(buf, 0, dropped, 0, 0);
  return dropped;
}

void exp_buffer_take_stats(struct exp_buffer *buf, struct exp_stats *out) {
  if (out) *out = buf->win;
  memset(&buf->win, 0, sizeof buf->win);
}

double exp_stats_lag_mean(const struct exp_stats *st) {
  return st->popped ? st->lag_sum / (double)st->popped : 0.0;
}

double exp_stats_drop_ratio(const struct exp_stats *st) {
  int64_t seen = st->popped + st->dropped;
  return seen ? (double)st->dropped / (double)seen : 0.0;
}
