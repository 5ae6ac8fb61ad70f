/* train/device_update.c: the AdamW update of a model on its device (train/device_update.h):
 * NCCL gradient sum over DP, global norm, clip, non-finite skip and fused AdamW on device
 * memory, and the host copies of the moments. Compiled in every build; the update itself
 * only with the CUDA backend. */
#include "train/device_update.h"

#include <math.h>
#include <stdlib.h>

#include "deck/config.h"
#include "model/model.h"
#include "mpi/allreduce.h"
#include "mpi/nccl_comm.h"
#include "train/optim.h"
#include "train/zero.h"
#include "util/alloc.h"
#include "util/error.h"

#ifdef RLPT_HAVE_CUDA
#include "kernels/cuda_backend.h"
#endif

/* The device AdamW moments of one model (o->n values: all of it, or its ZeRO-1 slice);
 * state: which of them and the host struct adamw's m, v is the truth. */
struct device_moments {
  const struct backend_ops *ops; /* of the model, set when m and v are made */
  float *m, *v;
  enum residency state;
};

struct device_update {
  const struct config *cfg;
  MPI_Comm dp;
  int dp_rank, dp_size, zero;
  struct device_moments moments[DEVICE_UPDATE_MODELS];
#ifdef RLPT_HAVE_CUDA
  int nccl_on;             /* nc mirrors dp (dp_size > 1, from the first update on) */
  struct nccl_comm nc;
#endif
};

struct device_update *device_update_create(const struct config *cfg, MPI_Comm dp, int zero) {
  struct device_update *du = calloc_check(1, sizeof *du);
  du->cfg = cfg;
  du->dp = dp;
  du->zero = zero;
  MPI_CHECK(MPI_Comm_rank(dp, &du->dp_rank));
  MPI_CHECK(MPI_Comm_size(dp, &du->dp_size));
  for (int k = 0; k < DEVICE_UPDATE_MODELS; k++)
    du->moments[k] = (struct device_moments){ .state = RESIDENCY_HOST };
  return du;
}

void device_update_free(struct device_update *du) {
  if (!du) return;
  for (int k = 0; k < DEVICE_UPDATE_MODELS; k++) {
    const struct device_moments *s = &du->moments[k];
    if (s->m) s->ops->free(s->m);
    if (s->v) s->ops->free(s->v);
  }
#ifdef RLPT_HAVE_CUDA
  if (du->nccl_on) nccl_comm_free(&du->nc);
#endif
  free(du);
}

void device_update_moments_to_host(struct device_update *du, int k, struct adamw *opt) {
  struct device_moments *s = &du->moments[k];
  if (s->state != RESIDENCY_DEVICE) return;
  s->ops->download(opt->m, s->m, sizeof(float) * (size_t)opt->n);
  s->ops->download(opt->v, s->v, sizeof(float) * (size_t)opt->n);
  s->state = RESIDENCY_BOTH;
}

void device_update_moments_written(struct device_update *du) {
  for (int k = 0; k < DEVICE_UPDATE_MODELS; k++) du->moments[k].state = RESIDENCY_HOST;
}

#ifdef RLPT_HAVE_CUDA
int device_update_on(const struct model *m) { return m->on_device; }

/* Model m's device moments made and current (uploaded from opt when the host is the truth). */
static void moments_ready(const struct model *m, const struct adamw *o, struct device_moments *s) {
  size_t bytes = sizeof(float) * (size_t)o->n;
  s->ops = m->ops;
  if (!s->m) s->m = m->ops->alloc(bytes);
  if (!s->v) s->v = m->ops->alloc(bytes);
  if (!s->m || !s->v)
    die_local("out of device memory for the AdamW moments (%zu parameters)", m->table.total);
  if (s->state == RESIDENCY_HOST) {
    m->ops->upload(s->m, o->m, bytes);
    m->ops->upload(s->v, o->v, bytes);
    s->state = RESIDENCY_BOTH;
  }
}

static struct nccl_comm *dp_nccl(struct device_update *du) {
  if (!du->nccl_on) {
    nccl_comm_init(&du->nc, du->dp);
    du->nccl_on = 1;
  }
  return &du->nc;
}

/* ZeRO-1: the DP ranks' slices of n values (zero_shard's on each), lo[dp_size + 1]. */
static size_t *zero_bounds(const struct device_update *du, size_t n) {
  size_t *lo = malloc_check(sizeof(size_t) * ((size_t)du->dp_size + 1));
  for (int r = 0; r < du->dp_size; r++) {
    long a, b;
    zero_shard((long)n, r, du->dp_size, &a, &b);
    lo[r] = (size_t)a;
    lo[r + 1] = (size_t)b;
  }
  return lo;
}

/* The sum of squares of the global gradient g[n]: with ZeRO-1 (lo: the slices) each
 * rank's slice of g becomes the sum over dp and the slices' sums are added over dp;
 * else all of g becomes the sum over dp. */
static double dp_sumsq(struct device_update *du, float *g, size_t n, const size_t *lo) {
  if (!lo) {
    if (du->dp_size > 1) nccl_allreduce_sum(dp_nccl(du), g, n);
    return cuda_sumsq(g, n);
  }
  nccl_reduce_slices(dp_nccl(du), g, lo);
  double ss = cuda_sumsq(g + lo[du->dp_rank], lo[du->dp_rank + 1] - lo[du->dp_rank]);
  allreduce_polite(&ss, 1, MPI_DOUBLE, MPI_SUM, du->dp);
  return ss;
}

/* Clip and AdamW on this rank's part [a, a + n) of the device weights w with gradient g;
 * with ZeRO-1 (lo) every rank's updated slice then goes to every rank. */
static void adamw_on_device(struct device_update *du, struct weights *w, float *g,
                            struct device_moments *s, struct adamw *opt, double lr,
                            double norm, const size_t *lo) {
  const struct config *cfg = du->cfg;
  size_t a = lo ? lo[du->dp_rank] : 0, n = lo ? lo[du->dp_rank + 1] - a : w->n;
  float scale = optim_clip_factor(norm, cfg->optim.grad_clip);
  if (scale != 1.0f) cuda_scale(g + a, n, scale);
  opt->t++;
  cuda_adamw_step(w->dev + a, w->dev16 ? w->dev16 + a : NULL, g + a, s->m, s->v, n, opt->t, lr,
                  cfg->optim.beta1, cfg->optim.beta2, cfg->optim.eps, cfg->optim.weight_decay);
  if (lo) nccl_gather_slices(dp_nccl(du), w->dev, lo);
  /* the fused pass wrote this rank's slice of the bf16 copy: the gathered ones are remade */
  weights_device_written(w, lo ? WEIGHTS_BF16_STALE : WEIGHTS_BF16_WRITTEN);
}

int device_update_step(struct device_update *du, int k, struct model *m, struct adamw *opt,
                       double lr, double *grad_norm) {
  struct device_moments *s = &du->moments[k];
  moments_ready(m, opt, s);
  if (weights_to_device(&m->weights))
    die_local("out of device memory for the weights (%zu parameters)", m->table.total);
  size_t *lo = du->zero ? zero_bounds(du, m->table.total) : NULL;
  double norm = sqrt(dp_sumsq(du, m->dgrads, m->table.total, lo));
  *grad_norm = norm;
  int applied = isfinite(norm);
  if (applied) {
    adamw_on_device(du, &m->weights, m->dgrads, s, opt, lr, norm, lo);
    s->state = RESIDENCY_DEVICE;
  }
  free(lo);
  return applied;
}

int device_update_params_finite(struct model *m) {
  if (weights_to_device(&m->weights))
    die_local("out of device memory for the weights (%zu parameters)", m->table.total);
  return isfinite(cuda_sumsq(m->weights.dev, m->table.total));
}
#else
int device_update_on(const struct model *m) {
  (void)m;
  return 0;
}

int device_update_params_finite(struct model *m) {
  (void)m;
  return 1;
}

int device_update_step(struct device_update *du, int k, struct model *m, struct adamw *opt,
                       double lr, double *grad_norm) {
  (void)du, (void)k, (void)m, (void)opt, (void)lr, (void)grad_norm;
  die_local("the device update needs the CUDA backend (this build has none)");
}
#endif
