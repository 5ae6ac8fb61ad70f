/* train/device_update.c: the trainer's update on the device (train/device_update.h): NCCL
 * gradient sum over DP, global norm, clip, non-finite skip and fused AdamW
 * on device memory, and the host copies its readers ask for. Compiled in every
 * build; the device update only with the CUDA backend. */
#include "train/device_update.h"

#include <math.h>
#include <stdlib.h>

#include "deck/config.h"
#include "model/model.h"
#include "mpi/allreduce.h"
#include "mpi/nccl_comm.h"
#include "train/optim.h"
#include "train/trainer.h"
#include "train/zero.h"
#include "util/error.h"

#ifdef RLPT_HAVE_CUDA
#include "kernels/cuda_backend.h"
#endif

/* The device AdamW state of one model (the policy, or the PPO critic) and which
 * copies agree: moments_ok, the device moments hold the host's or newer ones;
 * host_*_ok, the host copy equals the device one (no update since the download). */
struct dev_slot {
  float *m, *v;
  int moments_ok, host_params_ok, host_moments_ok;
};

struct trainer_dev {
  struct dev_slot slot[2]; /* [0] policy, [1] critic */
#ifdef RLPT_HAVE_CUDA
  int nccl_on;             /* nc mirrors t->dp (dp_size > 1, from the first update on) */
  struct nccl_comm nc;
#endif
};

static struct model *slot_model(struct trainer *t, int i) { return i ? &t->critic : &t->policy; }
static struct adamw *slot_opt(struct trainer *t, int i) { return i ? &t->critic_opt : &t->opt; }

void trainer_sync_host(struct trainer *t, int with_optim) {
  struct trainer_dev *d = t->dev;
  if (!d) return;
  for (int i = 0; i < 2; i++) {
    struct model *m = slot_model(t, i);
    struct adamw *o = slot_opt(t, i);
    struct dev_slot *s = &d->slot[i];
    if (m->dev_update && !s->host_params_ok) {
      model_params_to_host(m);
      s->host_params_ok = 1;
    }
    if (with_optim && s->moments_ok && !s->host_moments_ok) {
      m->ops->download(o->m, s->m, sizeof(float) * (size_t)o->n);
      m->ops->download(o->v, s->v, sizeof(float) * (size_t)o->n);
      s->host_moments_ok = 1;
    }
  }
}

void trainer_host_changed(struct trainer *t) {
  model_params_on_host(&t->policy);
  model_params_on_host(&t->critic);
  if (!t->dev) return;
  for (int i = 0; i < 2; i++)
    t->dev->slot[i] = (struct dev_slot){t->dev->slot[i].m, t->dev->slot[i].v, 0, 1, 1};
}

void trainer_device_free(struct trainer *t) {
  struct trainer_dev *d = t->dev;
  if (!d) return;
  for (int i = 0; i < 2; i++) {
    const struct model *m = slot_model(t, i);
    if (d->slot[i].m) m->ops->free(d->slot[i].m);
    if (d->slot[i].v) m->ops->free(d->slot[i].v);
  }
#ifdef RLPT_HAVE_CUDA
  if (d->nccl_on) nccl_comm_free(&d->nc);
#endif
  free(d);
  t->dev = NULL;
}

#ifdef RLPT_HAVE_CUDA
int trainer_device_on(const struct model *m) { return m->on_device; }

/* Device moments of slot s (o->n values: all of m, or its ZeRO-1 slice) allocated and
 * current, m's device params the truth. */
static void slot_ready(struct model *m, const struct adamw *o, struct dev_slot *s) {
  size_t bytes = sizeof(float) * (size_t)o->n;
  if (!s->m) s->m = m->ops->alloc(bytes);
  if (!s->v) s->v = m->ops->alloc(bytes);
  if (!s->m || !s->v)
    die_local("out of device memory for the AdamW moments (%zu parameters)", m->table.total);
  if (!s->moments_ok) {
    m->ops->upload(s->m, o->m, bytes);
    m->ops->upload(s->v, o->v, bytes);
    s->moments_ok = s->host_moments_ok = 1;
  }
  if (!m->dev_update) {
    model_params_live(m);
    s->host_params_ok = 1;
  }
}

static struct nccl_comm *dp_nccl(struct trainer *t) {
  struct trainer_dev *d = t->dev;
  if (!d->nccl_on) {
    nccl_comm_init(&d->nc, t->dp);
    d->nccl_on = 1;
  }
  return &d->nc;
}

/* The gradient sum over dp, in place in g[n] (device). */
static void dp_sum(struct trainer *t, float *g, size_t n) {
  if (t->dp_size > 1) nccl_allreduce_sum(dp_nccl(t), g, n);
}

/* ZeRO-1: the DP ranks' slices of m (trainer_opt_range's on each), lo[dp_size + 1]. */
static size_t *zero_bounds(const struct trainer *t, const struct model *m) {
  size_t *lo = malloc(sizeof(size_t) * ((size_t)t->dp_size + 1));
  if (!lo) die_local("out of memory");
  for (int r = 0; r < t->dp_size; r++) {
    long a, b;
    zero_shard((long)m->table.total, r, t->dp_size, &a, &b);
    lo[r] = (size_t)a;
    lo[r + 1] = (size_t)b;
  }
  return lo;
}

/* The sum of squares of the global gradient g[n]: with ZeRO-1 (lo: the slices) each
 * rank's slice of g becomes the sum over dp and the slices' sums are added over dp;
 * else all of g becomes the sum over dp. */
static double dp_sumsq(struct trainer *t, float *g, size_t n, const size_t *lo) {
  if (!lo) {
    dp_sum(t, g, n);
    return cuda_sumsq(g, n);
  }
  nccl_reduce_slices(dp_nccl(t), g, lo);
  double ss = cuda_sumsq(g + lo[t->dp_rank], lo[t->dp_rank + 1] - lo[t->dp_rank]);
  allreduce_polite(&ss, 1, MPI_DOUBLE, MPI_SUM, t->dp);
  return ss;
}

int trainer_update_device(struct trainer *t, struct model *m, struct adamw *opt, double lr,
                          double *grad_norm) {
  if (!t->dev && !(t->dev = calloc(1, sizeof *t->dev))) die_local("out of memory");
  struct dev_slot *s = &t->dev->slot[m == &t->critic];
  slot_ready(m, opt, s);
  float *g = m->dgrads, *p = m->dparams_main;
  long a, b; /* this rank's part: all of m, or its ZeRO-1 slice */
  trainer_opt_range(t, m, &a, &b);
  size_t n = (size_t)(b - a), *lo = t->zero ? zero_bounds(t, m) : NULL;
  double norm = sqrt(dp_sumsq(t, g, m->table.total, lo));
  *grad_norm = norm;
  if (!isfinite(norm)) {
    free(lo);
    t->skipped_nonfinite++;
    return 0;
  }
  const struct config *cfg = t->cfg;
  float scale = optim_clip_factor(norm, cfg->optim.grad_clip);
  if (scale != 1.0f) cuda_scale(g + a, n, scale);
  opt->t++;
  /* the bf16 working copy is refreshed here when the forward reads the master's */
  uint16_t *p16 = m->dparams == m->dparams_main ? m->dparams16 : NULL;
  cuda_adamw_step(p + a, p16 ? p16 + a : NULL, g + a, s->m, s->v, n, opt->t, lr,
                  cfg->optim.beta1, cfg->optim.beta2, cfg->optim.eps, cfg->optim.weight_decay);
  if (lo) { /* every rank's updated slice to every rank, and its bf16 copy */
    nccl_gather_slices(dp_nccl(t), p, lo);
    if (p16) m->ops->to_bf16(p16, p, m->table.total);
  }
  free(lo);
  s->host_params_ok = s->host_moments_ok = 0;
  return 1;
}
#else
int trainer_device_on(const struct model *m) {
  (void)m;
  return 0;
}

int trainer_update_device(struct trainer *t, struct model *m, struct adamw *opt, double lr,
                          double *grad_norm) {
  (void)t, (void)m, (void)opt, (void)lr, (void)grad_norm;
  die_local("the device update needs the CUDA backend (this build has none)");
}
#endif
