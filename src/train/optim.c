/* train/optim.c: AdamW, global-norm clipping and the LR schedule (see train/optim.h).
 * The inner loops take restrict pointers and no branches so that the compiler
 * vectorises them (the AdamW loop only with -fno-math-errno: sqrtf's errno path
 * is a branch to GCC); scalars (bias corrections, step sizes) are computed in double.
 *
 * AdamW is memory-bound (7 floats of traffic per parameter), so its one pass is
 * split in contiguous slices over the rank's BLAS thread count on the rank's
 * thread pool (cpu/thread_pool.h), the same one the CPU ops use. Each element gets
 * the same operations whatever the slicing: bitwise thread-invariant. */
#include "train/optim.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "cpu/thread_pool.h"
#include "deck/config.h"
#include "util/huge_alloc.h"

int adamw_init(struct adamw *o, long n) {
  o->n = n;
  o->t = 0;
  o->m = huge_floats((size_t)(n > 0 ? n : 1));
  o->v = huge_floats((size_t)(n > 0 ? n : 1));
  if (!o->m || !o->v) {
    adamw_free(o);
    return -1;
  }
  return 0;
}

void adamw_free(struct adamw *o) {
  free(o->m);
  free(o->v);
  o->m = o->v = NULL;
  o->n = 0;
}

static void adamw_kernel(long n, float *restrict p, const float *restrict g, float *restrict m,
                         float *restrict v, float decay, float b1, float c1, float b2, float c2,
                         float step_size, float inv_sqrt_bc2, float eps) {
  for (long i = 0; i < n; i++) {
    float gi = g[i];
    float mi = b1 * m[i] + c1 * gi;
    float vi = b2 * v[i] + c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float denom = sqrtf(vi) * inv_sqrt_bc2 + eps;
    p[i] = p[i] * decay - step_size * mi / denom;
  }
}

/* The update's scalars, shared by every slice. */
struct adamw_job {
  float *p, *m, *v;
  const float *g;
  float decay, b1, c1, b2, c2, step_size, inv_sqrt_bc2, eps;
};

static void adamw_slice(void *arg, size_t lo, size_t hi) {
  const struct adamw_job *s = arg;
  adamw_kernel((long)(hi - lo), s->p + lo, s->g + lo, s->m + lo, s->v + lo, s->decay, s->b1,
               s->c1, s->b2, s->c2, s->step_size, s->inv_sqrt_bc2, s->eps);
}

#define ADAMW_MIN_SLICE (1L << 18) /* parameters per thread below which one is not worth waking */

void adamw_step(struct adamw *o, float *p, const float *g, const struct adamw_hparams *h) {
  o->t++;
  double bc1 = 1.0 - pow(h->beta1, (double)o->t);
  double bc2 = 1.0 - pow(h->beta2, (double)o->t);
  /* torch applies the decay first, then the Adam update, to the decayed p. 1 - beta is
   * formed in double as torch does: (1.0f - 0.999f) is off by 1e-5 relative. */
  struct adamw_job job = {.p = p, .m = o->m, .v = o->v, .g = g,
                          .decay = (float)(1.0 - h->lr * h->weight_decay),
                          .b1 = (float)h->beta1, .c1 = (float)(1.0 - h->beta1),
                          .b2 = (float)h->beta2, .c2 = (float)(1.0 - h->beta2),
                          .step_size = (float)(h->lr / bc1),
                          .inv_sqrt_bc2 = (float)(1.0 / sqrt(bc2)), .eps = (float)h->eps};
  thread_pool_par_for_work(openblas_get_num_threads(), (size_t)(o->n > 0 ? o->n : 0), 1,
                           ADAMW_MIN_SLICE, adamw_slice, &job);
}

/* Eight partial sums, one per lane of x[i .. i+8): the loop vectorises and is
 * not held to the latency of one chain of dependent adds (135M parameters per
 * step on the SmolLM2 shape); the lanes are combined pairwise, then the tail. */
double optim_sumsq(const float *g, long n) {
  const float *restrict x = g;
  double s[8] = {0};
  long i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) s[l] += (double)x[i + l] * (double)x[i + l];
  double tail = 0.0;
  for (; i < n; i++) tail += (double)x[i] * (double)x[i];
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7])) + tail;
}

double optim_grad_norm(const float *g, long n) { return sqrt(optim_sumsq(g, n)); }

float optim_clip_factor(double norm, double clip) {
  return clip > 0.0 && norm > clip ? (float)(clip / (norm + 1e-6)) : 1.0f;
}

int optim_clip_scale(float *g, long n, double norm, double clip) {
  if (!isfinite(norm)) return OPTIM_NONFINITE;
  float scale = optim_clip_factor(norm, clip);
  if (scale != 1.0f) {
    float *restrict x = g;
    for (long i = 0; i < n; i++) x[i] *= scale;
  }
  return OPTIM_OK;
}

int optim_clip_grad(float *g, long n, double clip, double *norm_out) {
  double norm = optim_grad_norm(g, n);
  if (norm_out) *norm_out = norm;
  return optim_clip_scale(g, n, norm, clip);
}

void optim_sched_from_config(const struct config *cfg, struct optim_sched *s) {
  s->lr = cfg->optim.lr;
  s->min_lr_ratio = cfg->optim.min_lr_ratio;
  s->warmup = cfg->optim.warmup_steps;
  s->total = cfg->run.steps;
  s->kind = cfg->optim.schedule;
}

double optim_lr_at(const struct optim_sched *s, long step) {
  if (step < s->warmup) return s->lr * (double)(step + 1) / (double)s->warmup;
  if (s->kind == SCHED_CONSTANT) return s->lr;
  long span = s->total - s->warmup;
  double progress = span > 0 ? (double)(step - s->warmup) / (double)span : 1.0;
  if (progress > 1.0) progress = 1.0;
  double shape = s->kind == SCHED_LINEAR ? 1.0 - progress : 0.5 * (1.0 + cos(M_PI * progress));
  return s->lr * (s->min_lr_ratio + (1.0 - s->min_lr_ratio) * shape);
}
