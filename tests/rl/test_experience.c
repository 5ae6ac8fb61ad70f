/* rl/test_experience.c: the sample record, batch growth and the versioned
 * buffer's lag / drop / TIS accounting. */
#include <stdlib.h>
#include <string.h>

#include "rl/experience.h"
#include "testutil.h"

static void fill(struct sample *s, int64_t id, int64_t version, int n_resp) {
  sample_init(s);
  s->prompt_id = id;
  s->weight_version = version;
  int32_t prompt[3] = {1, 2, (int32_t)id};
  int32_t *tok = malloc((size_t)(n_resp ? n_resp : 1) * sizeof *tok);
  float *lp = malloc((size_t)(n_resp ? n_resp : 1) * sizeof *lp);
  for (int i = 0; i < n_resp; i++) tok[i] = 100 + i, lp[i] = -0.5f * (float)i;
  CHECK(sample_set_prompt(s, prompt, 3) == 0);
  CHECK(sample_set_response(s, tok, lp, n_resp) == 0);
  free(tok);
  free(lp);
}

static void test_sample(void) {
  struct sample a, b;
  fill(&a, 7, 3, 5);
  CHECK(a.n_prompt == 3 && a.prompt[2] == 7 && a.n_resp == 5 && a.resp[4] == 104);
  CHECK(sample_set_part(&a, "correct", 1.0) == 0);
  CHECK(sample_set_part(&a, "format", 0.25) == 0);
  CHECK(sample_set_part(&a, "correct", 0.5) == 0); /* replaces, does not add */
  double v = 0;
  CHECK(a.n_parts == 2 && sample_get_part(&a, "correct", &v) == 0 && v == 0.5);
  CHECK(sample_get_part(&a, "missing", &v) == -1);
  float adv[5] = {1, 2, 3, 4, 5};
  CHECK(sample_set_adv(&a, adv, 3) == -1); /* neither scalar nor per token */
  CHECK(sample_set_adv(&a, adv, 5) == 0 && a.n_adv == 5);
  a.finish = FINISH_LENGTH;
  a.reward = 0.75;
  CHECK(sample_copy(&b, &a) == 0);
  CHECK(sample_equal(&a, &b));
  CHECK(b.resp != a.resp && b.parts[0].name != a.parts[0].name); /* deep copy */
  b.logprobs[4] = 1.0f;
  CHECK(!sample_equal(&a, &b));
  /* per-token versions (an in-flight update): copied deep, compared, counted per version */
  int64_t tv[5] = {3, 3, 4, 4, 4};
  a.weight_version = 3;
  CHECK(sample_tokens_of_version(&a, 3) == 5 && sample_tokens_of_version(&a, 4) == 0);
  CHECK(sample_set_tok_versions(&a, tv) == 0 && a.tok_version[4] == 4);
  CHECK(sample_tokens_of_version(&a, 3) == 2 && sample_tokens_of_version(&a, 4) == 3);
  struct sample c;
  CHECK(sample_copy(&c, &a) == 0 && sample_equal(&a, &c) && c.tok_version != a.tok_version);
  c.tok_version[0] = 4;
  CHECK(!sample_equal(&a, &c));
  CHECK(sample_set_tok_versions(&c, NULL) == 0 && c.tok_version == NULL && !sample_equal(&a, &c));
  sample_free(&c);
  /* a new response of another length drops the per-token advantage */
  int32_t t2[2] = {9, 9};
  CHECK(sample_set_response(&b, t2, NULL, 2) == 0 && b.n_adv == 0 && b.logprobs == NULL);
  CHECK(sample_set_response(&a, t2, NULL, 2) == 0 && a.tok_version == NULL); /* of the old response */
  CHECK(strcmp(finish_reason_name(FINISH_STOP), "stop") == 0);
  CHECK(finish_reason_parse("length") == FINISH_LENGTH && finish_reason_parse("x") == -1);
  CHECK(strcmp(finish_reason_name(17), "?") == 0);
  sample_free(&a);
  sample_free(&b);
  CHECK(a.prompt == NULL && a.n_parts == 0);
}

static void test_batch(void) {
  struct sample_batch b, c;
  sample_batch_init(&b);
  sample_batch_init(&c);
  for (int i = 0; i < 1000; i++) { /* grows past the first capacity many times */
    struct sample s;
    fill(&s, i, 0, i % 17);
    CHECK(sample_batch_push(&b, &s) == 0);
    CHECK(s.resp == NULL && s.n_resp == 0); /* ownership moved */
  }
  CHECK(b.n == 1000 && b.cap >= 1000);
  int64_t tok = 0;
  for (int i = 0; i < 1000; i++) tok += i % 17;
  CHECK(sample_batch_resp_tokens(&b) == tok);
  CHECK(b.s[999].prompt_id == 999 && b.s[999].n_resp == 999 % 17);
  struct sample *s = sample_batch_add(&c);
  CHECK(s && s->n_resp == 0 && c.n == 1);
  CHECK(sample_batch_move_all(&c, &b) == 0);
  CHECK(c.n == 1001 && b.n == 0 && c.s[1000].prompt_id == 999);
  sample_batch_truncate(&c, 500);
  CHECK(c.n == 500);
  sample_batch_clear(&c);
  CHECK(c.n == 0 && c.cap >= 1001);
  sample_batch_free(&b);
  sample_batch_free(&c);
  CHECK(c.s == NULL && c.cap == 0);
}

/* Push one sample generated at version v into buf. */
static int push_v(struct exp_buffer *buf, int64_t id, int64_t v) {
  struct sample s;
  fill(&s, id, v, 4);
  int rc = exp_buffer_push(buf, &s);
  if (rc) sample_free(&s);
  return rc;
}

static void test_buffer_drop(void) {
  struct exp_buffer buf;
  CHECK(exp_buffer_init(&buf, 0, 1, STALE_DROP) == -1);
  CHECK(exp_buffer_init(&buf, 6, 1, STALE_DROP) == 0);
  /* versions 0,0,1,1,2,2; the trainer is at version 2 with max_lag 1 */
  for (int i = 0; i < 6; i++) CHECK(push_v(&buf, i, i / 2) == 0);
  CHECK(exp_buffer_space(&buf) == 0);
  CHECK(push_v(&buf, 99, 2) == 1); /* full: refused, counted */
  CHECK(exp_buffer_peek(&buf, 0)->prompt_id == 0 && exp_buffer_peek(&buf, 6) == NULL);
  struct sample_batch out;
  sample_batch_init(&out);
  int got = exp_buffer_pop(&buf, 2, 3, &out);
  /* the two version-0 samples (lag 2) are dropped, then ids 2,3,4 (lags 1,1,0) */
  CHECK(got == 3 && out.n == 3);
  CHECK(out.s[0].prompt_id == 2 && out.s[2].prompt_id == 4);
  CHECK(buf.n == 1 && exp_buffer_space(&buf) == 5);
  struct exp_stats st;
  exp_buffer_take_stats(&buf, &st);
  CHECK(st.popped == 3 && st.dropped == 2 && st.rejected == 1 && st.stale_kept == 0);
  CHECK(st.lag_max == 1);
  CHECK_NEAR(exp_stats_lag_mean(&st), 2.0 / 3.0, 1e-12);
  CHECK_NEAR(exp_stats_drop_ratio(&st), 2.0 / 5.0, 1e-12);
  exp_buffer_take_stats(&buf, &st); /* the window was reset */
  CHECK(st.popped == 0 && st.dropped == 0 && exp_stats_lag_mean(&st) == 0 &&
        exp_stats_drop_ratio(&st) == 0);
  /* the ring wraps: push 5 more (versions 3), prune at version 4 drops the old id 5 */
  for (int i = 0; i < 5; i++) CHECK(push_v(&buf, 10 + i, 3) == 0);
  CHECK(exp_buffer_prune(&buf, 4) == 1 && buf.n == 5);
  CHECK(exp_buffer_peek(&buf, 0)->prompt_id == 10 && exp_buffer_peek(&buf, 4)->prompt_id == 14);
  got = exp_buffer_pop(&buf, 4, 100, &out);
  CHECK(got == 5 && out.n == 8 && out.s[7].prompt_id == 14);
  exp_buffer_take_stats(&buf, &st);
  CHECK(st.popped == 5 && st.dropped == 1 && st.lag_max == 1);
  CHECK(buf.total.popped == 8 && buf.total.dropped == 3 && buf.total.rejected == 1);
  exp_buffer_free(&buf);
  sample_batch_free(&out);
}

static void test_buffer_tis(void) {
  struct exp_buffer buf;
  CHECK(exp_buffer_init(&buf, 4, 0, STALE_TIS) == 0);
  for (int i = 0; i < 4; i++) CHECK(push_v(&buf, i, i) == 0); /* versions 0..3 */
  CHECK(exp_buffer_prune(&buf, 3) == 0);                      /* TIS never prunes */
  struct sample_batch out;
  sample_batch_init(&out);
  CHECK(exp_buffer_pop(&buf, 3, 10, &out) == 4);
  for (int i = 0; i < 4; i++)
    CHECK(!!(out.s[i].flags & SAMPLE_STALE) == (i < 3)); /* lag 3,2,1 > 0 = max_lag */
  struct exp_stats st;
  exp_buffer_take_stats(&buf, &st);
  CHECK(st.popped == 4 && st.dropped == 0 && st.stale_kept == 3 && st.lag_max == 3);
  CHECK_NEAR(exp_stats_lag_mean(&st), 6.0 / 4.0, 1e-12);
  exp_buffer_free(&buf);
  sample_batch_free(&out);
}

/* Push a sample of (step, group) generated at version v. */
static void push_g(struct exp_buffer *buf, int64_t step, int group, int64_t v) {
  struct sample s;
  fill(&s, 100 * step + group, v, 2);
  s.step = step;
  s.group = group;
  CHECK(exp_buffer_push(buf, &s) == 0);
}

static void test_buffer_groups(void) {
  struct exp_buffer buf;
  struct sample_batch out;
  struct exp_stats st;
  sample_batch_init(&out);
  for (int policy = 0; policy < 2; policy++) {
    CHECK(exp_buffer_init(&buf, 16, 1, policy ? STALE_TIS : STALE_DROP) == 0);
    push_g(&buf, 0, 0, 1); /* group (0,0): one sample at version 0 makes it lag 2 */
    push_g(&buf, 0, 0, 0);
    push_g(&buf, 0, 1, 1); /* group (0,1): lag 1 */
    push_g(&buf, 0, 1, 1);
    push_g(&buf, 1, 0, 2); /* group (1,0): lag 0, three samples */
    push_g(&buf, 1, 0, 2);
    push_g(&buf, 1, 0, 2);
    int got = exp_buffer_pop_groups(&buf, 2, 2, &out);
    exp_buffer_take_stats(&buf, &st);
    if (policy == 0) { /* (0,0) dropped whole, (0,1) and (1,0) trained */
      CHECK(got == 2 && out.n == 5 && buf.n == 0);
      CHECK(out.s[0].prompt_id == 1 && out.s[4].prompt_id == 100);
      CHECK(st.dropped == 2 && st.popped == 5 && st.stale_kept == 0 && st.lag_max == 1);
    } else { /* TIS: (0,0) and (0,1) handed out; only the version-0 sample is stale */
      CHECK(got == 2 && out.n == 4 && buf.n == 3);
      CHECK(!(out.s[0].flags & SAMPLE_STALE) && (out.s[1].flags & SAMPLE_STALE));
      CHECK(st.dropped == 0 && st.popped == 4 && st.stale_kept == 1 && st.lag_max == 2);
    }
    exp_buffer_free(&buf);
    sample_batch_clear(&out);
  }
  sample_batch_free(&out);
}

int main(void) {
  test_sample();
  test_batch();
  test_buffer_drop();
  test_buffer_tis();
  test_buffer_groups();
  return TEST_RESULT("test_experience");
}
