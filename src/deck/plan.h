/* deck/plan.h: what a deck's job will need before anyone queues for it: the rank
 * layout, the parameter count, memory per rank for each role, FLOPs per step,
 * and whether each role fits [ranks] device_memory_gb.
 *
 * Units: bytes in the structs; printed as GB = 1e9 bytes (device_memory_gb is
 * compared in the same unit).
 *
 * Precision. dtype fp32: weights and activations 4 bytes, and the weights are
 * the fp32 master copy. dtype bf16 (GPU): weights, activations and KV cache
 * 2 bytes, plus an fp32 master copy of the weights. Gradients are accumulated
 * in fp32 (4 bytes); AdamW m and v are fp32 (8 bytes per parameter).
 * With [optim] zero = 1 the fp32 master copy and m, v are sharded over DP.
 *
 * PPO (gae) adds its critic to the train ranks: the policy's trunk and a value
 * head, with its own master, grads, AdamW moments and activations (no logits).
 * A reward model ([reward] rm_path, its shape read from the file's metadata) costs
 * its weights plus the forward activations of rm_batch_tokens on each reward rank
 * (colocated: on each worker).
 *
 * Rollout memory is the weights, the KV cache of every sequence an engine instance
 * holds in one step (the need) and the forward-only model's activation arena for
 * [rollout] max_batch_tokens (model_forward_arena_bytes, what the code allocates); the
 * engine itself allocates a pool of [rollout] kv_cache_mb, so the fit check also
 * requires weights + activations + pool to fit. */
#ifndef RLPT_PLAN_H
#define RLPT_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "model/params.h"
#include "mpi/comm.h"

struct config;

/* Bytes per rank, by what they hold. */
struct plan_memory {
  double weights, master, grads, adam, activations, logits, kv_cache;
  double critic;            /* train: the PPO critic's own weights, grads, Adam, activations */
  double total;
};

struct plan {
  struct role_counts counts;
  struct model_config mc;
  double params;            /* whole model */
  double stage_params;      /* the largest pipeline stage (before the TP split) */
  int weight_bytes;         /* 4 (fp32) or 2 (bf16) */
  double act_elems_token_layer; /* saved activations per token per layer (elements) */
  struct plan_memory train, rollout;  /* per rank of that role */
  struct plan_memory reward;          /* [reward] rm_path: weights + activations; else 0 */
  struct model_config rm_mc;          /* the reward model's shape (when rm_path is set) */
  double colocated_total;   /* colocated worker: train + rollout + reward model, all resident */
  double seqs_per_instance; /* rollout sequences one engine instance holds in a step */
  double kv_bytes_token;    /* whole-model KV bytes per token (all layers, all kv heads) */
  double kv_pool;           /* [rollout] kv_cache_mb in bytes: the pool the engine allocates
                               (when smaller than kv_cache above, it generates in waves) */
  double tokens_step;       /* prompts_per_step x group_size x max_seq (upper bound) */
  double flops_gen, flops_train;
};

/* Saved activations per token per transformer layer, in elements (see deck/plan.c). */
double plan_act_elems_per_token_layer(const struct model_config *mc);
/* Parameters of the largest pipeline stage when the layers are split over pp
 * stages (embedding on the first, final norm + lm_head on the last). */
double plan_stage_params(const struct model_config *mc, int pp);
/* Everything above for a world of `world` ranks. Returns 0, or 2 with a message
 * (impossible layout, bad model shape). */
int plan_build(struct plan *p, const struct config *cfg, int world, char *err, size_t errlen);
/* The report (the rank layout summary, model, memory, FLOPs). */
void plan_print(const struct plan *p, const struct config *cfg, FILE *f);
/* Ranges of world ranks per role and one line per rank (without hosts). */
void plan_print_ranks(const struct role_counts *c, FILE *f);
/* 0 when every role fits [ranks] device_memory_gb (or it is 0); otherwise 2
 * with one reason per role that does not fit, separated by newlines, in err. */
int plan_check_fit(const struct plan *p, const struct config *cfg, char *err, size_t errlen);

/* ---- `rlpt plan` -------------------------------------------------------------------- */
#define PLAN_PER_RANK_MAX 64  /* a plan without MPI lists every rank up to this world size */

/* The report of cfg's job on world ranks, one line per rank when per_rank, and the verdict
 * ("plan: OK ..." or the reasons it does not fit), on stdout and stderr where print != 0.
 * Returns 0 or 2, the same wherever it runs (every rank of the live plan calls it). */
int plan_report(const struct config *cfg, int world, int print, int per_rank);
/* `rlpt plan DECK --world N`: the deck and overrides loaded without MPI, then the report for
 * world ranks (per-rank lines when per_rank or world <= PLAN_PER_RANK_MAX) and, with
 * simulate (a metrics JSONL, or "deck") non-NULL, deck/simulate.h's model (split: NULL or a
 * metrics JSONL at half the threads, for colocate_async). 0 or 2. */
int plan_without_mpi(const char *deck, int n_over, char *const *over, int world, int per_rank,
                     const char *simulate, const char *split);

#endif
