/* model/lora.c: the LoRA adapter's products, forward and backward (model/lora.h). */
#include "model/lora.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/rng.h"

static const char *const names[LORA_NTARGETS] = {"q", "k", "v", "o", "gate", "up", "down"};
static const char *const projs[LORA_NTARGETS] = {"q_proj", "k_proj", "v_proj", "o_proj",
                                                 "gate_proj", "up_proj", "down_proj"};

const char *lora_target_proj(int target) { return projs[target]; }

const char *lora_target_module(int target) { return target <= LORA_O ? "self_attn" : "mlp"; }

/* The bit of the name in s[0..n), or -1. */
static int target_bit(const char *s, size_t n) {
  for (int i = 0; i < LORA_NTARGETS; i++)
    if (strlen(names[i]) == n && !strncmp(s, names[i], n)) return i;
  return -1;
}

int lora_targets_parse(const char *s, unsigned *mask, char *err, size_t errlen) {
  *mask = 0;
  while (*s) {
    while (*s == ' ' || *s == ',') s++;
    size_t n = strcspn(s, ", ");
    if (!n) break;
    if (n == 3 && !strncmp(s, "all", 3)) {
      *mask |= (1u << LORA_NTARGETS) - 1;
    } else {
      int b = target_bit(s, n);
      if (b < 0) {
        snprintf(err, errlen, "[model] lora_targets: unknown projection '%.*s' (choose among q, k, "
                 "v, o, gate, up, down, all)", (int)n, s);
        return -1;
      }
      *mask |= 1u << b;
    }
    s += n;
  }
  if (!*mask) {
    snprintf(err, errlen, "[model] lora_targets names no projection (q, k, v, o, gate, up, down)");
    return -1;
  }
  return 0;
}

/* C[M,N] = alpha A[M,K] B[N,K]^T + beta C, row-invariant when asked and available. */
static void abt(const struct backend_ops *ops, int exact, int M, int N, int K, float alpha,
                const float *A, const float *B, float beta, float *C) {
  if (exact && ops->matmul_rowinv) ops->matmul_rowinv(M, N, K, alpha, A, K, B, K, beta, C, N);
  else ops->matmul(0, 1, M, N, K, alpha, A, K, B, K, beta, C, N);
}

void lora_fwd(const struct backend_ops *ops, int exact, const struct lora_adapter *a, float *y,
              const float *x, int T, float *u) {
  abt(ops, exact, T, a->r, a->in, 1.0f, x, a->A, 0.0f, u);
  abt(ops, exact, T, a->out, a->r, a->scale, u, a->B, 1.0f, y);
}

void lora_bwd_dx(const struct backend_ops *ops, const struct lora_adapter *a, float *dx,
                 const float *dy, int T, float *du) {
  ops->matmul(0, 0, T, a->r, a->out, a->scale, dy, a->out, a->B, a->r, 0.0f, du, a->r);
  ops->matmul(0, 0, T, a->in, a->r, 1.0f, du, a->r, a->A, a->in, 1.0f, dx, a->in);
}

void lora_bwd_dw(const struct backend_ops *ops, const struct lora_adapter *a, const float *dy,
                 const float *x, const float *du, int T, float *u) {
  ops->matmul(0, 1, T, a->r, a->in, 1.0f, x, a->in, a->A, a->in, 0.0f, u, a->r);
  ops->matmul(1, 0, a->out, a->r, T, a->scale, dy, a->out, u, a->r, 1.0f, a->dB, a->r);
  ops->matmul(1, 0, a->r, a->in, T, 1.0f, du, a->r, x, a->in, 1.0f, a->dA, a->in);
}

void lora_init_a(float *A, int r, int in, unsigned long long seed, int n) {
  struct rng_seq s;
  rng_seq_init(&s, seed, RNG_STREAM_INIT, (uint32_t)n, 0);
  double bound = 1.0 / sqrt((double)in);
  for (size_t i = 0; i < (size_t)r * in; i++) A[i] = (float)((2.0 * rng_seq_uniform(&s) - 1.0) * bound);
}
