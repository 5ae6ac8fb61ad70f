/* train/optim.h: AdamW over the flat fp32 parameter buffer, global-norm gradient
 * clipping and the learning-rate schedule.
 *
 * The optimizer walks one contiguous buffer (or a contiguous slice of it, for the
 * ZeRO-1 shard a DP rank owns); it knows nothing about tensor names. Semantics
 * follow torch.optim.AdamW and torch.nn.utils.clip_grad_norm_ so that the golden
 * test (tests/ref/adamw_ref.py) can compare step by step. */
#ifndef RLPT_OPTIM_H
#define RLPT_OPTIM_H

struct config;

/* AdamW state for n parameters: first and second moments, and the step count t
 * (the number of updates applied so far; bias correction uses t after the increment). */
struct adamw {
  long n;
  long t;
  float *m, *v;
};

struct adamw_hparams {
  double lr, beta1, beta2, eps, weight_decay;
};

/* Zeroed state; returns 0, or -1 when out of memory. */
int adamw_init(struct adamw *o, long n);
void adamw_free(struct adamw *o);
/* One update of p (n = o->n values) with gradient g, as torch.optim.AdamW:
 *   p *= 1 - lr*wd;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps). */
void adamw_step(struct adamw *o, float *p, const float *g, const struct adamw_hparams *h);

/* Sum of squares of g[0..n) in double (callers allreduce this across shards/ranks). */
double optim_sumsq(const float *g, long n);
/* L2 norm of g[0..n), accumulated in double. */
double optim_grad_norm(const float *g, long n);

#define OPTIM_OK 0
#define OPTIM_NONFINITE 1   /* the gradient norm is NaN/Inf: skip the step (skipped_nonfinite) */

/* The factor clip_grad_norm_ scales the gradient by: clip/(norm + 1e-6) in float when
 * clip > 0 and norm > clip, else 1 (a finite norm). */
float optim_clip_factor(double norm, double clip);
/* Given the global norm, scale g by clip/(norm + 1e-6) when norm > clip (clip > 0),
 * as clip_grad_norm_. Returns OPTIM_NONFINITE (and leaves g as it is) for a
 * non-finite norm. */
int optim_clip_scale(float *g, long n, double norm, double clip);
/* Local convenience: norm of g, then optim_clip_scale; *norm_out gets the norm. */
int optim_clip_grad(float *g, long n, double clip, double *norm_out);

/* Linear warm-up over `warmup` steps, then constant, linear or cosine decay
 * (enum lr_schedule) from lr to min_lr_ratio*lr at step `total`. */
struct optim_sched {
  double lr, min_lr_ratio;
  long warmup, total;
  int kind;
};
/* The RL phase's schedule: [optim] keys, total = run.steps. */
void optim_sched_from_config(const struct config *cfg, struct optim_sched *s);
/* Learning rate of update `step` (0-based): warm-up gives lr*(step+1)/warmup so
 * that the first update is not wasted at lr 0; decay progress is
 * (step - warmup)/(total - warmup), clamped to [0, 1]. */
double optim_lr_at(const struct optim_sched *s, long step);

#endif
