/* model/lora.h: LoRA adapters on the model's linear layers (PEFT's formula).
 *
 * With [model] lora_rank r > 0, each targeted projection W [out, in] of every layer gets
 * A [r, in] and B [out, r] and computes
 *     y = x W^T + (alpha / r) (x A^T) B^T.
 * A starts uniform in +-1/sqrt(in) (PEFT's kaiming_uniform(a = sqrt(5)) bound), B at zero,
 * so the adapted model starts equal to the base. The adapters are extra entries at the
 * end of the parameter table (model/params.h: kinds P_LORA_A, P_LORA_B), so everything
 * that walks the flat buffer (weight broadcast, checkpoints, the KL reference's copy)
 * carries them unchanged; the trainer's optimizer, gradient norm and allreduce cover
 * only the table's trainable tail [table.trainable, total): the base is frozen and its
 * weight gradients are not computed.
 *
 * `rlpt convert` of a LoRA checkpoint writes the merged model (lora_merge).
 *
 * Built and tested for the CPU backend, train_tp = 1, no ZeRO-1, run.mode = sync, fp32 weight sync,
 * the critic-free policy-gradient algorithms and SFT; deck/config_check.c refuses the rest. */
#ifndef RLPT_LORA_H
#define RLPT_LORA_H

#include <stddef.h>

#include "model/backend.h"

/* Bits of model_config.lora_targets, in table order inside a layer. */
enum lora_target { LORA_Q, LORA_K, LORA_V, LORA_O, LORA_GATE, LORA_UP, LORA_DOWN, LORA_NTARGETS };

/* "q,v", "q, k, v, o", "all": a bit mask of enum lora_target. 0, or -1 with a message. */
int lora_targets_parse(const char *s, unsigned *mask, char *err, size_t errlen);
/* The target's name in the projection's Hugging Face name ("q_proj", "gate_proj", ...) and
 * its module ("self_attn" or "mlp"). */
const char *lora_target_proj(int target);
const char *lora_target_module(int target);

/* One adapter of a linear with in inputs and out outputs, read in the weights the forward
 * reads. */
struct lora_adapter {
  const float *A, *B; /* [r, in], [out, r] */
  float *dA, *dB;     /* their gradients (NULL in a forward-only model) */
  int r, in, out;
  float scale;        /* alpha / r */
};

/* y[T, out] += scale (x A^T) B^T; u [T, r] gets x A^T (scratch). exact: the backend's
 * row-invariant products (a row's result does not depend on its batch), as model.c's. */
void lora_fwd(const struct backend_ops *ops, int exact, const struct lora_adapter *a, float *y,
              const float *x, int T, float *u);
/* Backward of the adapter's term: du [T, r] = scale dy B; dx[T, in] += du A. */
void lora_bwd_dx(const struct backend_ops *ops, const struct lora_adapter *a, float *dx,
                 const float *dy, int T, float *du);
/* dB += scale dy^T (x A^T); dA += du^T x, with du from lora_bwd_dx; u [T, r] scratch. */
void lora_bwd_dw(const struct backend_ops *ops, const struct lora_adapter *a, const float *dy,
                 const float *x, const float *du, int T, float *u);

struct param_table;
struct model_config;
/* The adapters of params (laid out by t, the table of mc) folded into their base weights,
 * W += (alpha / r) B A (model/lora_merge.c): params' first t->trainable floats are then the
 * merged model, laid out by the table of *base (mc without adapters), which it fills. */
void lora_merge(const struct param_table *t, const struct model_config *mc, float *params,
                struct model_config *base);

/* Initial A (uniform +-1/sqrt(in)) from the seed and the tensor's index n; B zeros. */
void lora_init_a(float *A, int r, int in, unsigned long long seed, int n);

#endif
