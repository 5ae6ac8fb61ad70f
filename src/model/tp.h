/* model/tp.h: tensor parallelism (Megatron-LM style) of the transformer over a TP group.
 *
 * A group is the train ranks that share a DP index (and a pipeline stage): mpi/comm.h's
 * tp_comm. Each rank holds a shard of every split tensor (model/params.h param_split):
 * column-parallel q/k/v (by heads; the kv heads split too) and gate/up, row-parallel o and
 * down, and a vocabulary slice [rank V/tp, (rank + 1) V/tp) of the embedding and lm_head
 * (tied: one slice serves both). Norms are replicated: their inputs and output gradients
 * are the same on every rank (after the all-reduces below), so their gradients are too and
 * need no reduction. The model (model/model.h model_create_tp) does, per layer:
 *   forward   the row-parallel o and down products' outputs summed over the group (then
 *             the residual added); the embedding's rows of other slices are zeros, summed;
 *   backward  the input gradients of the column-parallel q/k/v and gate/up products (and of
 *             the lm_head's logits) summed over the group;
 * and the logprob and entropy are vocabulary-parallel (model/tp_logprob.c): the full
 * logits are never gathered. The collectives are MPI on the host, fp32 sums in place.
 *
 * The shard maps below move a rank's flat buffer (its table, param_table_build_tp) to and
 * from the full model's layout (param_table_build): checkpoints, the weight sync and the
 * initial weights see full logical tensors, the same as a one-rank run's. */
#ifndef RLPT_TP_H
#define RLPT_TP_H

#include <mpi.h>
#include <stddef.h>

#include "model/params.h"

struct tp_group {
  MPI_Comm comm;  /* not owned */
  int rank, size;
};

/* What this process's TP collectives moved since it started: the payload bytes (what each
 * rank hands to the all-reduce; a ring all-reduce sends 2 (size - 1) / size of it) and the
 * calls, [0] the model's (forward, backward, the vocabulary-parallel logprob), [1] the
 * weight gathers (tp_gather_tensor: the weight sync, checkpoints). One-rank groups move
 * nothing and count nothing. */
struct tp_traffic {
  double bytes[2];
  long calls[2];
};
void tp_traffic_get(struct tp_traffic *out);

/* The group of comm (MPI_Comm_rank / size). */
void tp_group_init(struct tp_group *g, MPI_Comm comm);

/* In place: x[0..n) summed over the group (a one-rank group returns at once). */
void tp_sum_floats(const struct tp_group *g, float *x, size_t n);
void tp_sum_doubles(const struct tp_group *g, double *x, int n);
void tp_max_floats(const struct tp_group *g, float *x, int n);

/* full (laid out by the full model's table, mc) <- every rank's shard local (laid out by
 * param_table_build_tp(mc, g->size)), on every rank of the group: exact (each value comes
 * from one rank; the others add zeros). full has model_param_count(mc) floats. One
 * all-reduce per tensor (tp_gather_tensor). */
void tp_gather(const struct tp_group *g, const struct param_table *full_t, float *full,
               const struct param_table *local_t, const float *local);
/* local <- this rank's shard of full (no communication). */
void tp_scatter(const struct tp_group *g, const struct param_table *full_t, const float *full,
                const struct param_table *local_t, float *local);
/* The same for one tensor: full (fe->numel floats, the tensor's first value) <- the
 * group's shards local (this rank's, le->numel floats), collective over the group; and
 * local <- this rank's shard of the full tensor. What lets a rank move the model tensor
 * by tensor with a scratch of one tensor (the weight sync, checkpoints, the initial
 * weights) instead of holding it whole. */
void tp_gather_tensor(const struct tp_group *g, const struct param_entry *fe, float *full,
                      const struct param_entry *le, const float *local);
void tp_scatter_tensor(const struct tp_group *g, const struct param_entry *fe, const float *full,
                       const struct param_entry *le, float *local);
/* The consecutive tensors [i0, i1) of the tables to the group's rank 0 alone, in one gather
 * (each rank sends its shards once): there full (laid out from full_t's tensor i0) <- the
 * group's shards (local: each rank's whole vector, laid out by local_t); full is not
 * written on the other ranks. Collective over the group. The weight sync's root gathers
 * a bucket at a time with it. */
void tp_gather_range(const struct tp_group *g, const struct param_table *full_t, int i0, int i1,
                     float *full, const struct param_table *local_t, const float *local);
/* full [rows, cols x size] <- every rank's local [rows, cols], rank r's in columns
 * [r cols, (r + 1) cols): the vocabulary-parallel logits made whole for the rollout
 * engine's sampler (one all-gather, counted as the model's traffic). */
void tp_gather_cols(const struct tp_group *g, const float *local, int rows, int cols, float *full);
/* The sum of squares of the full model's vector x from its shards (a gradient): the split
 * tensors' squares summed over the group, the replicated ones counted once. */
double tp_sumsq(const struct tp_group *g, const struct param_table *local_t, const float *x);

/* Vocabulary-parallel embedding over this rank's slice [lo, lo + V) of the table emb
 * [V, C]: out[t] = emb[tokens[t] - lo], zeros for tokens outside the slice, then summed
 * over the group. */
void tp_embed_fwd(const struct tp_group *g, float *out, const int *tokens, const float *emb,
                  int T, int C, int lo, int V);
/* demb[tokens[t] - lo] += dout[t] for the tokens of the slice. */
void tp_embed_bwd(float *demb, const int *tokens, const float *dout, int T, int C, int lo, int V);

/* Vocabulary-parallel logprob, entropy and log-sum-exp of R rows of logits [R, V] over
 * this rank's slice [lo, lo + V) of the vocabulary (model/tp_logprob.c): the row maxima,
 * the sums of e^(z - max) and e^(z - max) (z - max), and the target logits all-reduced.
 * targets are full-vocabulary ids (-1: none, logprob 0). */
void tp_logprob_fwd(const struct tp_group *g, float *logprob, float *entropy, float *lse,
                    const float *logits, const int *targets, int R, int V, int lo);
/* logits [R, V] <- dL/dlogits of L = sum gl lp + ge H for this slice (no communication:
 * lse and H are the full rows'). */
void tp_logprob_bwd(float *logits, const float *lse, const float *entropy, const int *targets,
                    const float *dlogprob, const float *dentropy, int R, int V, int lo);

#endif
