/* train/test_optim.c: AdamW, gradient clipping and the LR schedule.
 * AdamW and clip_grad_norm_ against torch (tests/ref/adamw_ref.py ->
 * golden_adamw.h5, tolerance 1e-6 absolute on fp32 values of order 1); schedules at
 * hand-computed points (1e-12); non-finite gradient detection. */
#include <math.h>
#include <string.h>

#include "algo_h5.h"
#include "deck/config.h"
#include "testutil.h"
#include "train/optim.h"

static void test_adamw_golden(hid_t f) {
  long n, ng, na;
  float *p = golden_read(f, "p0", H5T_NATIVE_FLOAT, &n);
  float *g = golden_read(f, "grads", H5T_NATIVE_FLOAT, &ng);
  float *want = golden_read(f, "p_after", H5T_NATIVE_FLOAT, &na);
  float *m = golden_read(f, "m", H5T_NATIVE_FLOAT, NULL);
  float *v = golden_read(f, "v", H5T_NATIVE_FLOAT, NULL);
  CHECK(ng == 3 * n && na == 3 * n);
  struct adamw_hparams h = {.lr = golden_attr(f, "/", "lr"), .beta1 = golden_attr(f, "/", "beta1"),
                            .beta2 = golden_attr(f, "/", "beta2"), .eps = golden_attr(f, "/", "eps"),
                            .weight_decay = golden_attr(f, "/", "weight_decay")};
  struct adamw o;
  CHECK(adamw_init(&o, n) == 0);
  for (int s = 0; s < 3; s++) {
    adamw_step(&o, p, g + s * n, &h);
    double err = 0.0;
    for (long i = 0; i < n; i++) err = fmax(err, fabs(p[i] - want[s * n + i]));
    CHECK_MSG(err <= 1e-6, "step %d max |p - torch| = %.3g", s + 1, err);
  }
  CHECK(o.t == 3);
  double em = 0.0, ev = 0.0;
  for (long i = 0; i < n; i++) {
    em = fmax(em, fabs(o.m[i] - m[i]));
    ev = fmax(ev, fabs(o.v[i] - v[i]));
  }
  CHECK_NEAR(em, 0.0, 1e-6);
  CHECK_NEAR(ev, 0.0, 1e-6);
  adamw_free(&o);
  free(p), free(g), free(want), free(m), free(v);
}

static void test_clip_golden(hid_t f) {
  const char *names[2][2] = {{"clip_big_in", "clip_big_out"}, {"clip_small_in", "clip_small_out"}};
  double clip = golden_attr(f, "/", "clip");
  for (int k = 0; k < 2; k++) {
    long n;
    float *g = golden_read(f, names[k][0], H5T_NATIVE_FLOAT, &n);
    float *want = golden_read(f, names[k][1], H5T_NATIVE_FLOAT, NULL);
    double norm_want = golden_attr(f, names[k][0], "norm"), norm;
    CHECK(optim_clip_grad(g, n, clip, &norm) == OPTIM_OK);
    CHECK_NEAR(norm, norm_want, 1e-5 * norm_want);  /* torch accumulates the norm in fp32 */
    for (long i = 0; i < n; i++) CHECK_NEAR(g[i], want[i], 1e-6);
    free(g), free(want);
  }
}

/* Hand-made: g = (3, 4) has norm 5; clip 1 scales by 1/(5 + 1e-6). */
static void test_clip_hand(void) {
  float g[2] = {3.0f, 4.0f};
  double norm;
  CHECK(optim_clip_grad(g, 2, 1.0, &norm) == OPTIM_OK);
  CHECK_NEAR(norm, 5.0, 1e-12);
  CHECK_NEAR(g[0], 3.0 / (5.0 + 1e-6), 1e-7);
  CHECK_NEAR(g[1], 4.0 / (5.0 + 1e-6), 1e-7);
  float h[2] = {3.0f, 4.0f};
  CHECK(optim_clip_grad(h, 2, 0.0, &norm) == OPTIM_OK);  /* clip 0 = off */
  CHECK(h[0] == 3.0f && h[1] == 4.0f);
  CHECK_NEAR(optim_sumsq(h, 2), 25.0, 1e-12);
}

static void test_nonfinite(void) {
  float g[3] = {1.0f, NAN, 2.0f};
  double norm;
  CHECK(optim_clip_grad(g, 3, 1.0, &norm) == OPTIM_NONFINITE);
  CHECK(g[0] == 1.0f && g[2] == 2.0f);  /* untouched: the step is skipped */
  float h[2] = {INFINITY, 0.0f};
  CHECK(optim_clip_grad(h, 2, 1.0, &norm) == OPTIM_NONFINITE);
  /* 3e38^2 overflows fp32 but not the double accumulator: finite norm, clipped. */
  float big[2] = {3e38f, 3e38f};
  CHECK(optim_clip_grad(big, 2, 1.0, &norm) == OPTIM_OK);
  CHECK_NEAR(norm, 3e38 * sqrt(2.0), 1e31);
  CHECK_NEAR(big[0], 1.0 / sqrt(2.0), 1e-6);
}

static void test_schedule(void) {
  struct optim_sched s = {.lr = 1.0, .min_lr_ratio = 0.1, .warmup = 2, .total = 12, .kind = SCHED_CONSTANT};
  /* warm-up: lr*(step+1)/warmup = 0.5, 1.0 */
  CHECK_NEAR(optim_lr_at(&s, 0), 0.5, 1e-12);
  CHECK_NEAR(optim_lr_at(&s, 1), 1.0, 1e-12);
  CHECK_NEAR(optim_lr_at(&s, 7), 1.0, 1e-12);
  s.kind = SCHED_LINEAR;
  /* progress (step-2)/10; lr = 0.1 + 0.9*(1-progress): step 2 -> 1, 7 -> 0.55, 12 -> 0.1 */
  CHECK_NEAR(optim_lr_at(&s, 2), 1.0, 1e-12);
  CHECK_NEAR(optim_lr_at(&s, 7), 0.55, 1e-12);
  CHECK_NEAR(optim_lr_at(&s, 12), 0.1, 1e-12);
  CHECK_NEAR(optim_lr_at(&s, 50), 0.1, 1e-12);  /* past the end: stays at the floor */
  s.kind = SCHED_COSINE;
  /* step 7: progress 0.5, cos(pi/2) = 0 -> 0.1 + 0.9*0.5 = 0.55;
   * step 4: progress 0.2, 0.5*(1+cos(0.2 pi)) = 0.9045084972 -> 0.1 + 0.9*0.9045084972 */
  CHECK_NEAR(optim_lr_at(&s, 7), 0.55, 1e-12);
  CHECK_NEAR(optim_lr_at(&s, 4), 0.1 + 0.9 * 0.904508497187473712, 1e-12);
  CHECK_NEAR(optim_lr_at(&s, 12), 0.1, 1e-12);
  CHECK_NEAR(optim_lr_at(&s, 1), 1.0, 1e-12);  /* warm-up is shared by every kind */

  struct config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.optim.lr = 3e-5, cfg.optim.min_lr_ratio = 0.0, cfg.optim.warmup_steps = 0;
  cfg.optim.schedule = SCHED_LINEAR, cfg.run.steps = 10;
  optim_sched_from_config(&cfg, &s);
  CHECK_NEAR(optim_lr_at(&s, 0), 3e-5, 1e-18);
  CHECK_NEAR(optim_lr_at(&s, 5), 1.5e-5, 1e-18);
}

/* AdamW step by hand at t = 1: m = 0.1 g, v = 0.001 g^2, m_hat = g, v_hat = g^2,
 * p = p(1 - lr wd) - lr g/(|g| + eps). p = 1, g = 2, lr 0.1, wd 0.5:
 * 0.95 - 0.1 * 2/(2 + 1e-8) = 0.85000000050. */
static void test_adamw_hand(void) {
  struct adamw o;
  CHECK(adamw_init(&o, 1) == 0);
  float p = 1.0f, g = 2.0f;
  struct adamw_hparams h = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.5};
  adamw_step(&o, &p, &g, &h);
  CHECK_NEAR(p, 0.85, 1e-7);
  CHECK_NEAR(o.m[0], 0.2, 1e-7);
  CHECK_NEAR(o.v[0], 0.004, 1e-9);
  adamw_free(&o);
}

int main(void) {
  hid_t f = golden_open("golden_adamw.h5");
  CHECK(f >= 0);
  if (f >= 0) {
    test_adamw_golden(f);
    test_clip_golden(f);
    H5Fclose(f);
  }
  test_clip_hand();
  test_nonfinite();
  test_schedule();
  test_adamw_hand();
  return TEST_RESULT("test_optim");
}
