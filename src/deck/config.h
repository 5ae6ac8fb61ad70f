/* deck/config.h: the validated run configuration (the deck) and its schema table.
 *
 * One table (src/deck/config_schema.c, one row per key) is the single source of truth
 * for every deck key: section, name, type, default, range or choices, unit, help,
 * and where the value lives in struct config. Parsing, validation, overrides,
 * canonical echo and `rlpt deck-help` all walk that table. To add a key: add a
 * field below and a row in deck/config_schema.c; nothing else. */
#ifndef RLPT_CONFIG_H
#define RLPT_CONFIG_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#define CFG_STR_MAX 512   /* longest string/path value, checked at parse time */
#define CFG_LIST_MAX 16   /* most items in a list value */
#define CFG_KEYS_MAX 512  /* most schema rows (deck/config.c checks cfg_schema_len against it) */

enum cfg_type { CFG_INT, CFG_FLOAT, CFG_BOOL, CFG_STRING, CFG_ENUM, CFG_PATH, CFG_LIST };

/* Row flags. */
#define CFG_AUTO     1  /* int key that also accepts `auto` (stored as -1) */
#define CFG_REQUIRED 2  /* no default: the deck must set it */

struct cfg_key {
  const char *section;
  const char *name;
  enum cfg_type type;
  const char *def;      /* default as deck text (NULL with CFG_REQUIRED) */
  double min, max;      /* inclusive range for int/float/list items; ignored when min > max */
  const char *choices;  /* enum: "a|b|c", stored as the index */
  const char *unit;     /* "" when dimensionless */
  const char *help;
  size_t offset;        /* into struct config */
  int flags;
  size_t size;          /* string/path: sizeof the char array (set by STR/PATH); 0 = CFG_STR_MAX */
};

struct cfg_list { int n; double v[CFG_LIST_MAX]; };

/* Enum values: the order must match the `choices` string of the row. */
enum run_mode { MODE_SYNC, MODE_COLOCATE_ASYNC, MODE_SEPARATE_ASYNC };
enum run_device { DEVICE_AUTO, DEVICE_CPU, DEVICE_CUDA };
/* [async] in_flight: off, or the rollout/scheduler.h gen_in_flight policy + 1 */
enum async_in_flight { INFLIGHT_OFF, INFLIGHT_CONTINUE, INFLIGHT_RECOMPUTE, INFLIGHT_ABORT };
enum run_weight_sync { WSYNC_AUTO, WSYNC_MPI };
enum run_weight_sync_dtype { WSYNC_FP32, WSYNC_BF16 };
enum ranks_layout { LAYOUT_SEPARATE, LAYOUT_COLOCATED };
enum model_dtype { DTYPE_FP32, DTYPE_BF16 };
enum lr_schedule { SCHED_CONSTANT, SCHED_LINEAR, SCHED_COSINE };
/* [algo] enums (src/rl/algo.h uses them; order = the schema row's choices). */
enum algo_name { ALGO_GRPO, ALGO_DR_GRPO, ALGO_DAPO, ALGO_GSPO, ALGO_PPO, ALGO_RLOO,
                 ALGO_REINFORCE_PP, ALGO_DPO, ALGO_IPO, ALGO_RM };
enum adv_estimator { ADV_GRPO, ADV_DR_GRPO, ADV_RLOO, ADV_REINFORCE_PP, ADV_REINFORCE_PP_BASELINE,
                     ADV_GAE };
enum adv_std { STD_UNBIASED, STD_BIASED };
enum policy_loss { PL_PPO_CLIP, PL_GSPO, PL_CISPO };
enum loss_agg { AGG_TOKEN_MEAN, AGG_SEQ_MEAN_TOKEN_SUM, AGG_SEQ_MEAN_TOKEN_MEAN,
                AGG_SEQ_MEAN_TOKEN_SUM_NORM, AGG_SEQ_MEAN_TOKEN_SUM_NORM_VERL };
enum kl_estimator { KL_K1, KL_K2, KL_K3, KL_LOW_VAR };
enum kl_place { KL_IN_LOSS, KL_IN_REWARD };
enum old_logprobs { OLDLP_RECOMPUTE, OLDLP_ROLLOUT };
enum dpo_loss { DPO_SIGMOID, DPO_IPO };
enum tis_mode { TIS_OFF, TIS_TOKEN_TRUNCATE, TIS_SEQ_TRUNCATE, TIS_TOKEN_MASK, TIS_SEQ_MASK };
enum rollout_scheduling { ROLLOUT_FCFS, ROLLOUT_LONGEST_FIRST };
enum ckpt_on_error { CKPT_ON_ERROR_ABORT, CKPT_ON_ERROR_CONTINUE };
enum sft_source { SFT_SOURCE_DATASET, SFT_SOURCE_REJECTION };
enum sft_keep { SFT_KEEP_CORRECT, SFT_KEEP_WRONG, SFT_KEEP_ALL };
/* [data] enums (src/tasks/dataset.h). */
enum data_verifier { DATA_VERIFY_MATH, DATA_VERIFY_ARITH, DATA_VERIFY_COUNTDOWN, DATA_VERIFY_EXACT, DATA_VERIFY_CODE };
enum data_code_score { CODE_SCORE_FRACTION, CODE_SCORE_ALL };
/* [sandbox] isolation (src/sandbox/sandbox.h). */
enum sandbox_isolation { SANDBOX_ISOLATION_BWRAP, SANDBOX_ISOLATION_RLIMITS_ONLY };
enum data_bad_line { DATA_BAD_LINE_ERROR, DATA_BAD_LINE_SKIP };

struct config {
  /* Bookkeeping (deck/config.c): where each row's value came from, indexed like cfg_schema:
   * 0 = default, > 0 = deck line, < 0 = command-line override number -(i + 1). */
  int src[CFG_KEYS_MAX];
  struct {
    long seed, steps;
    int mode, device, weight_sync, weight_sync_dtype;
    char restart[CFG_STR_MAX];
    long stop_after;
    double phase_timeout_s;
  } run;
  struct {
    long steps, batch_size, pool, eval_prompts;
    double lr;
    long warmup_steps;
    struct cfg_list target_band;
    int source, rejection_keep;      /* enum sft_source, enum sft_keep */
    long rejection_rounds, rejection_prompts, rejection_samples;
    long checkpoint_every;
  } sft;
  struct {
    char init[CFG_STR_MAX];
    long vocab_size, dim, layers, heads, kv_heads, ffn_dim, max_seq;
    double rope_theta, norm_eps, init_std;
    int tie_embeddings, qkv_bias, value_head, dtype;
    int unknown_bytes;  /* 0 error, 1 drop (tokenizer_bpe_drop_unknown) */
    long lora_rank;     /* 0: full fine-tuning (model/lora.h) */
    double lora_alpha;
    char lora_targets[64];
  } model;
  struct {
    double lr, weight_decay, beta1, beta2, eps, grad_clip, min_lr_ratio;
    int schedule;
    long warmup_steps, zero;
  } optim;
  struct {
    char name[64];
    long digits_min, digits_max;
    char ops[64];
    double heldout_frac;
    long numbers_min, numbers_max, number_max, target_max;
  } task;
  struct {
    char train_path[CFG_STR_MAX], eval_path[CFG_STR_MAX];
    double eval_frac;
    char prompt_key[64], answer_key[64], chat_template[64];
    char prompt_template[CFG_STR_MAX];
    int shuffle, verifier, on_bad_line;
    char pref_path[CFG_STR_MAX], pref_eval_path[CFG_STR_MAX];  /* preference pairs (tasks/preference.h) */
    char chosen_key[64], rejected_key[64];
    int code_score;  /* enum data_code_score */
    long max_row_bytes;
  } data;
  struct {
    double correct_weight, format_weight, length_weight;
    char format_tags[CFG_STR_MAX];
    char rm_path[CFG_STR_MAX];
    double rm_alpha;
    long rm_batch_tokens;
    int self_consistency;
    double sc_min_agreement;
    char command[CFG_STR_MAX];  /* external reward workers (rl/reward_command.h) */
    long command_workers;
    double command_timeout_s;
  } reward;
  struct {
    int isolation;  /* enum sandbox_isolation */
    char interpreter[CFG_STR_MAX];
    double timeout_s;
    long cpu_s, memory_mb, output_kb, file_mb, processes, workers;
  } sandbox;
  struct {
    int enabled;                /* multi-turn rollouts with tools (env/episode.h) */
    char tools[CFG_STR_MAX];    /* enabled tools, comma-separated (env/tools.h) */
    long max_turns;
    char command[CFG_STR_MAX];  /* the command tool's worker (env/tools.h) */
    double command_timeout_s;
  } env;
  struct {
    int name;
    long group_size, prompts_per_step, mini_batches, ppo_epochs;
    int adv_estimator, std, policy_loss, loss_agg, kl_estimator, kl_in, old_logprobs, dpo_loss, tis;
    int whiten_adv, dynamic_sampling, difficulty_filter;
    double adv_eps, clip_low, clip_high, dual_clip, kl_coef, entropy_coef, gamma, lam, vf_coef;
    double value_clip, logprob_min, overlong_penalty, dpo_beta, tis_cap, tis_min;
    long max_resample_rounds, overlong_buffer, difficulty_window;
    double difficulty_low, difficulty_high;
    char dpo_ref[CFG_STR_MAX];  /* DPO/IPO reference model file ("" = the initial policy) */
    int rm_train_body;          /* name = rm: train the body too, not only score.weight */
  } algo;
  struct {
    long max_new_tokens, top_k, kv_cache_mb, max_batch_tokens, max_num_seqs;
    double temperature, top_p;
    long block_size;
    int scheduling, prefix_sharing;
    char stop[CFG_STR_MAX];
  } rollout;
  struct {
    long every, samples, k, prompts;
  } eval;
  struct {
    char metrics_path[CFG_STR_MAX], samples_path[CFG_STR_MAX];
    long samples_every;
    long samples_groups;
    char tensorboard_dir[CFG_STR_MAX], prometheus_path[CFG_STR_MAX];
  } log;
  struct {
    char dir[CFG_STR_MAX];
    long every, keep_last;
    int on_error;  /* enum ckpt_on_error */
  } checkpoint;
  struct {
    long controller, rollout, reward, train;  /* -1 = auto */
    int layout;
    long rollout_tp, train_dp, train_tp, train_pp, threads_per_rank, cores_per_node;
    long micro_batch_seqs;
    double device_memory_gb;
  } ranks;
  struct {
    long max_lag, capacity;  /* capacity -1 = auto */
    int deterministic;
    int in_flight;           /* enum async_in_flight */
    int stale;               /* rl/experience.h enum stale_policy: 0 drop, 1 tis */
    long in_flight_step;
  } async;
  struct {  /* read by `rlpt plan --simulate deck` only (deck/sim_costs.c) */
    double gen_tokens_per_s, gen_seq_tokens_per_s, prefill_tokens_per_s, train_tokens_per_s;
    double sync_gb_per_s, response_cv, other_s;
    long prompt_tokens, response_tokens;
  } simulate;
};

extern const struct cfg_key cfg_schema[];
extern const int cfg_schema_len;

/* ---- API (src/deck/config.c; loading in src/deck/load.c) ---------------------------
 * Every function that can fail on user input returns 0 or 2 (the exit code for
 * bad input) and describes the problem as "FILE:LINE: message" in err. */

/* Every key at its default. */
void config_defaults(struct config *cfg);
/* Parse deck text (path is used in messages), then apply command-line overrides
 * "section.key=value" (validated the same way), then the [algo] preset (deck/presets.h)
 * and the cross-key checks (src/deck/load.c). */
int config_parse(struct config *cfg, const char *path, const char *text, int n_over,
                 char *const *over, char *err, size_t errlen);
/* The first part of config_parse: the defaults, the deck text and the overrides, and every
 * required key set; without the preset and the cross-key checks. */
int config_parse_deck(struct config *cfg, const char *path, const char *text, int n_over,
                      char *const *over, char *err, size_t errlen);
/* Read and parse a deck file without MPI; prints the error to stderr. */
int config_load_serial(struct config *cfg, const char *path, int n_over, char *const *over);
/* Collective over comm: rank 0 reads and validates, the bytes are broadcast, every rank ends
 * with the same struct. On error rank 0 prints one message; all ranks return 2. */
int config_load(struct config *cfg, const char *path, int n_over, char *const *over, MPI_Comm comm);
/* The canonical deck: every key, in schema order, `key = value  # source`. */
void config_write_canonical(const struct config *cfg, FILE *f);
/* The checks across keys (src/deck/config_check.c), run by config_parse; over as given to it. */
/* 1 when [algo] name trains on preference pairs (dpo, ipo, rm), not rollouts. */
int config_is_pref(const struct config *c);
int config_cross_check(const struct config *cfg, const char *path, char *const *over, char *err,
                       size_t errlen);
/* Parse text into the field of schema row r with the deck's rules (type, range,
 * choices); the source bookkeeping is the caller's. Returns 0, or 2 with msg. */
int config_set_value(struct config *cfg, int r, const char *text, char *msg, size_t len);
/* Row index of [section] name in cfg_schema, or -1. */
int config_find(const char *section, const char *name);
/* 1 when arg looks like an override `section.key=value` (the rest is options/positionals). */
int config_is_override(const char *arg);
/* Commands take `DECK [--options] [section.key=value ...]` in any order: this moves argv[1..]
 * into over (the overrides) and rest (everything else), both in their original order; both
 * arrays need room for argc pointers. */
void config_split_args(int argc, char **argv, char **over, int *n_over, char **rest, int *n_rest);
/* For the deck reference: "int", "float", ...; the allowed values of a row ("[1, 64]", "a|b"). */
const char *config_type_name(enum cfg_type t);
void config_allowed_text(const struct cfg_key *k, char *buf, size_t len);

/* ---- the reward's checks (src/deck/config_check.c) --------------------------------
 * Checks of [reward] and its [algo] / [rollout] neighbours that config_parse leaves out,
 * so that any set of values, each valid alone, parses (the canonical deck round-trips);
 * `rlpt check` and the reward's set-up (rl/reward.h reward_init) run them. Messages name
 * the keys, without a location. */
#define CFG_TAG_MAX 128  /* [reward] format_tags: the longest tag + NUL */
/* rm_alpha < 1 needs rm_path; overlong_buffer below max_new_tokens; format_tags as
 * config_format_tags takes it; [sandbox] keys and [data] code_score off their defaults need
 * [data] verifier = code, [reward] command_* keys a command. 0, or 2 with a message in err. */
int config_reward_check(const struct config *cfg, char *err, size_t errlen);
/* [reward] format_tags "OPEN,CLOSE" split into open and close (CFG_TAG_MAX bytes each;
 * both empty when tags is empty). 0, or 2 with a message in err. */
int config_format_tags(const char *tags, char *open, char *close, char *err, size_t errlen);

/* ---- the deck's commands ------------------------------------------------------------ */
/* `rlpt check`: load the deck at path with the overrides without MPI, run the reward's
 * checks and write the canonical deck to out. 0, or 2 with the message on stderr. */
int config_check_deck(const char *path, int n_over, char *const *over, FILE *out);
/* `rlpt deck-help` (src/deck/help.c): the deck reference as markdown, one table per
 * section (inputs/README.md). */
void config_write_help(FILE *f);

#endif
