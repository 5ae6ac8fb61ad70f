/* model/model.h: the Llama / Qwen2 / SmolLM2 transformer on a packed batch.
 *
 * Token embedding; per layer RMSNorm, q/k/v projections (optional bias), RoPE
 * (Hugging Face rotate_half), causal grouped-query attention, o_proj, residual,
 * RMSNorm, SwiGLU MLP, residual; final RMSNorm; lm_head (tied to the embedding
 * when tie_embeddings); optional value head score.weight [1, dim].
 *
 * Sequences are packed without padding: tokens[cu_seqlens[s] .. cu_seqlens[s+1])
 * is sequence s, and positions restart at 0 in each. The logits are never held
 * as a [tokens x vocab] tensor: they are computed logit_chunk rows at a time
 * and recomputed in the backward. Parameters and gradients are two flat
 * buffers laid out by the parameter table (model/params.h). */
#ifndef RLPT_MODEL_H
#define RLPT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "model/backend.h"
#include "model/params.h"
#include "model/tp.h"
#include "model/weights.h"

/* Default rows of logits computed at a time (at most max_tokens are allocated). 256
 * rather than 128: the lm_head's dW product accumulates over K = 256 rows per pass
 * over the [vocab, dim] gradient, its logits product has twice the rows, and the
 * backward recomputes one chunk fewer of every four (the forward's last chunk stays
 * in the buffer); on the SmolLM2 step the head's products take 0.82 the time of
 * 128-row chunks (bench_gemm --ab) for 25 MB more at vocab 49152. */
#define MODEL_LOGIT_CHUNK 256

/* Saved activations of one layer, pointers into the model's arena. */
struct layer_acts {
  float *res_in;   /* [T, C] layer input (residual stream) */
  float *rstd1;    /* [T] */
  float *q;        /* [T, H*D] after RoPE (H: this rank's heads) */
  float *k, *v;    /* [T, KVH*D], k after RoPE */
  float *att;      /* [T, H*D] attention output before o_proj */
  float *lse;      /* [T, H] attention log-sum-exp */
  float *res_mid;  /* [T, C] after the attention residual */
  float *rstd2;    /* [T] */
  float *gate, *up;/* [T, F] */
};

struct model {
  struct model_config cfg;  /* with tp: this rank's shard of the model (heads, kv_heads, ffn_dim
                               and vocab_size divided by the group size; head_dim the full
                               model's) */
  struct param_table table;
  const struct tp_group *tp; /* tensor parallelism (model/tp.h), or NULL */
  int vocab_full, vocab_lo;  /* the full vocabulary and the first id of this rank's slice */
  const struct backend_ops *ops;
  /* The weights (model/weights.h): the forward and backward read their device copy, made
   * current first; everything else reads and fills the host buffer, which params names
   * (weights.host: the loaders, the CLI, the optimizer, the checkpoints). A forward after
   * a host write uploads it unless the weights' host writes are tracked (the rollout
   * engine's: then the writer calls weights_host_written).
   * grads is host memory on every backend; the backward accumulates into dgrads (the
   * same buffer on a host backend) and, on a device backend, downloads them into grads
   * unless grads_on_device. */
  struct weights weights;
  float *params;          /* weights.host: table.total floats */
  float *grads, *dgrads;  /* table.total floats each */
  int grads_on_device;    /* 1: the gradients' reader works on dgrads (the trainer's device
                             update): model_backward downloads nothing and model_zero_grad
                             leaves grads alone */
  /* The device weights the last forward read (its backward reads them too): weights', or
   * those given to model_forward_with; fwd_params16 their bf16 working copy or NULL. */
  const float *fwd_params;
  const uint16_t *fwd_params16;
  int on_device;          /* ops work on their own memory (ops->upload set) */
  int exact;              /* 1 (model_create's default): A B^T products through the backend's
                             row-invariant matmul, so a row's logprob does not depend on the
                             batch it shares a forward with (the rollout's and the trainer's
                             agree to the bit); 0: the faster matmul (a pass whose logprobs
                             nothing compares, e.g. SFT). Set it before a forward and keep it
                             until that forward's backward. */
  int max_tokens;         /* token budget of one packed batch */
  int forward_only;       /* model_create_forward: no gradients, no backward buffers */
  int logit_chunk;        /* rows of logits at a time (tests may lower it) */
  int logit_rows;         /* rows the logits buffer holds: MODEL_LOGIT_CHUNK or max_tokens */

  /* inputs of the last forward, kept for the backward */
  int T, nseq;
  int *tokens, *cu_seqlens, *pos, *targets;
  int *cu_kv;             /* context spans of a KV-cache step */
  struct attn_batch attn; /* cu_q/cu_kv: the op copies above */
  /* host copies the batch is built in, then uploaded (the same arrays on a host backend) */
  int *h_tokens, *h_cu_seqlens, *h_pos, *h_targets, *h_cu_kv;
  /* device backend, KV-cache path: exchange() works on host rows, so each layer's
   * new K/V is downloaded into kv_host [2][max_tokens, kv_dim] and the contexts it
   * returns are uploaded into kv_dev [2][kv_dev_rows, kv_dim] (grown on demand) */
  float *kv_host, *kv_dev;
  size_t kv_dev_rows;

  float *rope_cos, *rope_sin;   /* [max_seq, D/2] */
  float *arena;                 /* every activation and scratch buffer below */
  struct layer_acts *layers;
  float *res_final, *rstdf, *xf; /* final residual, its rstd, the normed output [T, C] */
  float *lse_out, *ent_out, *lp_out; /* [T] logits log-sum-exp, entropy, logprob */
  float *val_out, *dlp_in, *dent_in, *dval_in; /* [T] staging of a device backend */
  int head_done;                 /* the last forward computed the logits' statistics */
  int logits_held;               /* 1 + first row of the forward's last logits chunk, still in
                                  * `logits` for the backward; 0: none */
  /* scratch, reused by every layer */
  float *xn, *h, *dres, *dxn, *datt, *dq, *dk, *dv, *dgate, *dup, *logits, *attn_scratch;
  float *lora_u, *lora_du;      /* [max_tokens, lora_rank] LoRA scratch (model/lora.h) */
};

/* Allocate a model for mc with room for max_tokens packed tokens per call.
 * Parameters start at zero (call model_init_params or load them). Returns 0,
 * or -1 when out of memory (message printed). */
int model_create(struct model *m, const struct model_config *mc, int max_tokens,
                 const struct backend_ops *ops);
/* The same for one rank of the TP group tp (model/tp.h; kept by pointer): this rank's shard
 * of the full model mc, whose parameters are laid out by param_table_build_tp. The
 * forward and backward run collectives over tp: every rank of the group calls them with
 * the same batch. A host backend only; no value head. tp->size must divide heads,
 * kv_heads, ffn_dim and vocab_size (-1 and a message otherwise). tp == NULL is
 * model_create. */
int model_create_tp(struct model *m, const struct model_config *mc, int max_tokens,
                    const struct backend_ops *ops, const struct tp_group *tp);
/* A model that only runs forwards (the rollout engine, scoring, evaluation): no gradients,
 * none of the backward's buffers, and one set of layer activations that every layer
 * reuses, so its activation memory does not grow with the layer count. model_backward
 * on it aborts; model_zero_grad does nothing. */
int model_create_forward(struct model *m, const struct model_config *mc, int max_tokens,
                         const struct backend_ops *ops);
/* The same for one rank of the TP group tp (the rollout engine of rollout_tp ranks): this
 * rank's shard, as model_create_tp; the KV-cache forward then returns the whole
 * vocabulary's logits on every rank (model_forward_kv). */
int model_create_forward_tp(struct model *m, const struct model_config *mc, int max_tokens,
                            const struct backend_ops *ops, const struct tp_group *tp);
/* Bytes of model_create_forward's activation arena for mc and max_tokens (rlpt plan). */
size_t model_forward_arena_bytes(const struct model_config *mc, int max_tokens);
void model_free(struct model *m);

/* normal(0, init_std) for matrices, ones for norms, zeros for biases;
 * deterministic from seed (util/rng.h stream RNG_STREAM_INIT, one sequence per
 * tensor index), independent of thread count. */
void model_init_params(struct model *m, uint64_t seed);
/* The same on a bare table + buffer (no activations needed: rlpt init). */
void model_params_init(const struct param_table *t, float *params, double init_std,
                       uint64_t seed);
/* Tensor n of t alone into p (its e[n].numel floats): the values model_params_init gives it. */
void model_param_init_one(const struct param_table *t, int n, float *p, double init_std,
                          uint64_t seed);
/* The LoRA adapters of t alone (A from the seed, B zeros), as model_params_init gives them:
 * after weights loaded from a file without adapters. */
void model_params_init_lora(const struct param_table *t, float *params, uint64_t seed);
void model_zero_grad(struct model *m);
/* Forward on nseq packed sequences (cu_seqlens[nseq] tokens in all).
 * logprob_out[t] = log p(tokens[t+1] | tokens[start..t]) within the sequence;
 * the last token of each sequence has no target and gets 0.
 * entropy_out[t] = entropy of the next-token distribution at t (every t,
 * the last position included). value_out[t] = score.weight . h_t (value head
 * models only; may be NULL). Any output may be NULL; with logprob_out and
 * entropy_out both NULL the lm_head is skipped (a critic's value-only pass
 * costs no vocabulary GEMM). Returns 0, or -1 when the batch exceeds the token
 * budget, a sequence exceeds max_seq or is empty, or a token is out of range
 * (message printed). */
int model_forward(struct model *m, const int *tokens, const int *cu_seqlens, int nseq,
                  float *logprob_out, float *entropy_out, float *value_out);
/* model_forward reading the weights w instead of m->weights (w spans m's table: the
 * trainer's frozen KL reference, whose device copy is made current as m's would be).
 * Returns -1 also when w's device copy cannot be made (message printed). */
int model_forward_with(struct model *m, struct weights *w, const int *tokens,
                       const int *cu_seqlens, int nseq, float *logprob_out, float *entropy_out,
                       float *value_out);

/* Backward of L = sum_t dlogprob[t] logprob[t] + dentropy[t] entropy[t]
 * + dvalue[t] value[t] through the last forward, with the weights it read; accumulates
 * into m->grads (into m->dgrads alone when grads_on_device).
 * Any of the three may be NULL (zero); with dlogprob and dentropy both NULL
 * the lm_head is skipped. */
void model_backward(struct model *m, const float *dlogprob, const float *dentropy,
                    const float *dvalue);

/* ---- KV-cache path (rollout engine) ------------------------------------------
 * The same layers on new tokens whose earlier keys/values sit in a cache the
 * caller owns. Per layer, exchange() receives the new rows' K (after RoPE) and
 * V, [n_new, kv_heads*head_dim] laid out by b->cu_q, must store them at their
 * positions, and returns contiguous K/V rows of every sequence's whole context
 * (cached, then new) laid out by b->cu_kv. Returns 0, or nonzero to abort the
 * forward. With equal weights, the logits are the same bits as model_forward's
 * at the same positions on the CPU backend (its products and attention compute
 * each row in one fixed order, whatever the batch; cpu/rowinv.c, cpu/attention.c). exchange() always sees host memory (b's
 * cu_q/cu_kv included): on a device backend the model downloads the new rows and
 * uploads the returned contexts, per layer (slow, correct; for a cache on the host).
 * A cache in device memory gives attend() instead (the rollout engine's, rollout/kv_device.h). */
struct model_kv_io {
  void *ctx;
  int (*exchange)(void *ctx, int layer, const struct attn_batch *b, const float *k_new,
                  const float *v_new, const float **k_ctx, const float **v_ctx);
  /* Optional, used instead of exchange() on a host backend with attention_paged_fwd:
   * store the new rows as exchange() does, then describe where every context lives
   * in the paged cache (*kv), so attention reads the blocks in place (no copy). */
  int (*paged)(void *ctx, int layer, const struct attn_batch *b, const float *k_new,
               const float *v_new, struct attn_paged *kv);
  /* Optional, used instead of both on a device backend: every pointer is device memory
   * (b's cu_q/cu_kv included); store the new rows as exchange() does and write the
   * layer's attention out [T, H*D] and lse [T, H] of the queries q [T, H*D] (after RoPE)
   * over every context, as attention_fwd with this scale would. Nothing goes to the host. */
  int (*attend)(void *ctx, int layer, const struct attn_batch *b, const float *q,
                const float *k_new, const float *v_new, float *out, float *lse, int H,
                float scale);
};

/* nseq sequences; sequence s brings tokens[cu_new[s] .. cu_new[s+1]) at positions
 * pos0[s] ...; logits [rows, vocab]: every new token (all_logits) or the last
 * new token of each sequence. Returns 0, or -1 for a bad batch (message
 * printed) or when exchange() failed. Invalidates the activations of the last
 * model_forward (no model_backward after this). With TP (model_create_forward_tp) every
 * rank of the group calls it with the same batch; exchange() gets this rank's kv heads,
 * and logits has the full vocabulary (m->vocab_full columns), gathered from the slices. */
int model_forward_kv(struct model *m, const int *tokens, const int *cu_new, const int *pos0,
                     int nseq, const struct model_kv_io *io, int all_logits, float *logits);
/* The same with logits [rows, vocab] in the backend's memory (device memory from
 * m->ops->alloc on a device backend; host memory on a host backend, where it is
 * model_forward_kv): the rollout engine samples them where they are (rollout/scheduler.h). */
int model_forward_kv_dev(struct model *m, const int *tokens, const int *cu_new, const int *pos0,
                         int nseq, const struct model_kv_io *io, int all_logits, float *logits);

#endif
