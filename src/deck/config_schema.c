/* deck/config_schema.c: every deck key, one row each (see deck/config.h). The defaults here
 * are the documented defaults; `rlpt deck-help` prints this table as markdown. */
#include "deck/config.h"

#define OFF(field) offsetof(struct config, field)
#define FSIZE(field) sizeof(((struct config *)0)->field)
/* The fields every row sets; min > max means no range. */
#define ROW(sec, key, typ, def_, lo, hi, help_, field) \
  .section = sec, .name = key, .type = typ, .def = def_, .min = lo, .max = hi, .help = help_, \
  .offset = OFF(field)
#define INT(sec, key, def, lo, hi, unit_, help, field) \
  { ROW(sec, key, CFG_INT, def, lo, hi, help, field), .unit = unit_ }
#define AUTOINT(sec, key, def, lo, hi, unit_, help, field) \
  { ROW(sec, key, CFG_INT, def, lo, hi, help, field), .unit = unit_, .flags = CFG_AUTO }
#define FLT(sec, key, def, lo, hi, unit_, help, field) \
  { ROW(sec, key, CFG_FLOAT, def, lo, hi, help, field), .unit = unit_ }
#define BOOL(sec, key, def, help, field) \
  { ROW(sec, key, CFG_BOOL, def, 1, 0, help, field), .unit = "" }
#define ENUM(sec, key, def, choices_, help, field) \
  { ROW(sec, key, CFG_ENUM, def, 1, 0, help, field), .choices = choices_, .unit = "" }
#define STR(sec, key, def, help, field) \
  { ROW(sec, key, CFG_STRING, def, 1, 0, help, field), .unit = "", .size = FSIZE(field) }
#define PATH(sec, key, def, help, field) \
  { ROW(sec, key, CFG_PATH, def, 1, 0, help, field), .unit = "", .size = FSIZE(field) }
#define LIST(sec, key, def, lo, hi, unit_, help, field) \
  { ROW(sec, key, CFG_LIST, def, lo, hi, help, field), .unit = unit_ }

const struct cfg_key cfg_schema[] = {
  /* [run] */
  INT("run", "seed", "1234", 0, 9.2e18, "", "Seed of every random stream (util/rng.h keys it by step, prompt, sample, position)", run.seed),
  INT("run", "steps", "10", 0, 1e9, "steps", "RL steps (0 = no RL phase, e.g. SFT only)", run.steps),
  ENUM("run", "mode", "sync", "sync|colocate_async|separate_async", "Step scheduling: sync waits for each update; separate_async overlaps rollout and training on disjoint ranks ([async] section); colocate_async overlaps them on the same ranks (layout = colocated; batch k + 1 generated on a second thread with half the rank's threads while batch k trains on the others; max_lag 1; CPU backend)", run.mode),
  ENUM("run", "device", "auto", "auto|cpu|cuda", "Compute device; auto = cuda when the build has it and a GPU is visible", run.device),
  ENUM("run", "weight_sync", "auto", "auto|mpi", "Weight broadcast to the rollout ranks: auto = over NCCL from device to device when every rank of weight_comm has a GPU of its own, else over MPI through host memory; mpi = always over MPI (for comparison)", run.weight_sync),
  ENUM("run", "weight_sync_dtype", "fp32", "fp32|bf16", "What the weight broadcast sends: fp32, or each weight rounded to bf16 (to nearest even; half the bytes, over MPI): the rollout ranks then generate with the rounded weights, so their logprobs differ from the fp32 trainer's (logprob_diff_max, _mean, _frac; correct them with [algo] tis)", run.weight_sync_dtype),
  PATH("run", "restart", "", "Checkpoint to restart from: empty, `latest` or a path", run.restart),
  INT("run", "stop_after", "0", 0, 1e9, "steps", "Stop after this RL step as on SIGUSR1: checkpoint, every rank exits 0; resume with [run] restart = latest (0 = run to [run] steps)", run.stop_after),
  FLT("run", "phase_timeout_s", "600", 1, 1e7, "s", "Watchdog: a phase (SFT step, RL step, eval) that takes longer stops the job naming the stalled role, rank and phase", run.phase_timeout_s),

  /* [sft] */
  INT("sft", "steps", "0", 0, 1e9, "steps", "Supervised warm-start steps before RL (0 = none)", sft.steps),
  INT("sft", "batch_size", "64", 1, 1e7, "sequences", "SFT sequences per step (global)", sft.batch_size),
  FLT("sft", "lr", "1e-3", 0, 10, "", "SFT peak learning rate", sft.lr),
  INT("sft", "warmup_steps", "0", 0, 1e9, "steps", "SFT linear warm-up steps", sft.warmup_steps),
  INT("sft", "pool", "0", 0, 1e9, "examples", "SFT sees only this many fixed examples (0 = fresh examples every step)", sft.pool),
  INT("sft", "eval_prompts", "200", 1, 1e7, "prompts", "Held-out prompts for the end-of-SFT greedy exact match", sft.eval_prompts),
  LIST("sft", "target_band", "0.0, 1.0", 0, 1, "fraction", "Post-SFT pass@1 must land in [lo, hi]; the run says so clearly when it does not", sft.target_band),
  ENUM("sft", "source", "dataset", "dataset|rejection", "SFT examples: dataset = the task's reference answers; rejection = the model's own samples that the task's verifier accepts (rejection-sampling fine-tuning): each of rejection_rounds rounds generates rejection_samples per prompt for rejection_prompts train prompts with the current policy, keeps the accepted ones and trains [sft] steps / rejection_rounds steps on them", sft.source),
  INT("sft", "rejection_rounds", "1", 1, 1e6, "rounds", "source = rejection: generate-filter-train rounds; [sft] steps are split evenly among them", sft.rejection_rounds),
  INT("sft", "rejection_prompts", "64", 1, 1e7, "prompts", "source = rejection: train prompts generated for per round", sft.rejection_prompts),
  INT("sft", "rejection_samples", "8", 1, 1e5, "samples", "source = rejection: samples per prompt at [rollout] temperature", sft.rejection_samples),
  ENUM("sft", "rejection_keep", "correct", "correct|wrong|all", "source = rejection: which samples become SFT examples: correct = those the verifier accepts (rejection sampling); wrong and all are ablations that show what the verifier's filter adds", sft.rejection_keep),
  INT("sft", "checkpoint_every", "0", 0, 1e9, "steps", "Checkpoint every N SFT steps into [checkpoint] dir (step_00000000.h5 holding the SFT step; a restart continues SFT there); 0 = only when a signal stops the run during SFT", sft.checkpoint_every),

  /* [model] */
  STR("model", "init", "scratch", "Initial weights: scratch | gguf:PATH | hf:DIR | ckpt:PATH. gguf: (GGUF file) and hf: (Hugging Face directory: config.json, *.safetensors, tokenizer.json) also give the model shape and the tokenizer", model.init),
  AUTOINT("model", "vocab_size", "auto", 1, 1e8, "tokens", "Vocabulary size (auto = from the tokenizer)", model.vocab_size),
  INT("model", "dim", "128", 1, 1e6, "", "Hidden size", model.dim),
  INT("model", "layers", "4", 1, 1e4, "", "Transformer blocks", model.layers),
  INT("model", "heads", "4", 1, 1e4, "", "Attention (query) heads; dim must divide by it", model.heads),
  INT("model", "kv_heads", "4", 1, 1e4, "", "Key/value heads (grouped-query attention); heads must divide by it", model.kv_heads),
  INT("model", "ffn_dim", "344", 1, 1e7, "", "SwiGLU inner size", model.ffn_dim),
  INT("model", "max_seq", "64", 2, 1e7, "tokens", "Longest sequence (prompt + response) the model accepts", model.max_seq),
  FLT("model", "rope_theta", "10000", 1, 1e12, "", "RoPE base frequency", model.rope_theta),
  FLT("model", "norm_eps", "1e-5", 0, 1, "", "RMSNorm epsilon", model.norm_eps),
  FLT("model", "init_std", "0.02", 0, 10, "", "Std of the normal init of weight matrices (scratch init)", model.init_std),
  BOOL("model", "tie_embeddings", "true", "lm_head shares model.embed_tokens.weight", model.tie_embeddings),
  BOOL("model", "qkv_bias", "false", "q/k/v projections carry a bias (Qwen2)", model.qkv_bias),
  BOOL("model", "value_head", "false", "Add a scalar value head score.weight (critic, reward model)", model.value_head),
  ENUM("model", "dtype", "fp32", "fp32|bf16", "Compute precision (bf16 on GPU only)", model.dtype),
  ENUM("model", "unknown_bytes", "error", "error|drop", "gguf:/hf: models: text bytes the BPE vocabulary has no token for (SmolLM2 lacks 21, e.g. 0x04, 0xff): error = refuse the text naming the byte; drop = leave them out of their piece as Hugging Face tokenizers does", model.unknown_bytes),
  INT("model", "lora_rank", "0", 0, 65536, "", "LoRA rank r (0 = off: full fine-tuning). With r > 0 each targeted linear computes y = x W^T + (lora_alpha / r) (x A^T) B^T (PEFT's formula; A [r, in] uniform +-1/sqrt(in) from the seed, B [out, r] zeros); the base weights are frozen and only A and B are trained and carry AdamW state. Built for the CPU backend, train_tp = 1, no ZeRO-1, run.mode = sync, fp32 weight sync, the critic-free policy-gradient algorithms and SFT; other combinations are refused. `rlpt convert` of a LoRA checkpoint writes the merged model (src/model/lora.h)", model.lora_rank),
  FLT("model", "lora_alpha", "16", 0, 1e6, "", "LoRA scale numerator: the adapter's product is scaled by lora_alpha / lora_rank", model.lora_alpha),
  STR("model", "lora_targets", "q,v", "Comma-separated projections that get adapters: q, k, v, o, gate, up, down (or all)", model.lora_targets),

  /* [optim] */
  FLT("optim", "lr", "3e-5", 0, 10, "", "Peak learning rate of the RL phase", optim.lr),
  FLT("optim", "weight_decay", "0.0", 0, 10, "", "AdamW decoupled weight decay", optim.weight_decay),
  FLT("optim", "beta1", "0.9", 0, 0.999999, "", "AdamW beta1", optim.beta1),
  FLT("optim", "beta2", "0.999", 0, 0.9999999, "", "AdamW beta2", optim.beta2),
  FLT("optim", "eps", "1e-8", 0, 1, "", "AdamW epsilon", optim.eps),
  FLT("optim", "grad_clip", "1.0", 0, 1e9, "", "Global-norm gradient clip (0 = off)", optim.grad_clip),
  ENUM("optim", "schedule", "constant", "constant|linear|cosine", "LR schedule after warm-up", optim.schedule),
  INT("optim", "warmup_steps", "0", 0, 1e9, "steps", "Linear LR warm-up", optim.warmup_steps),
  FLT("optim", "min_lr_ratio", "0.0", 0, 1, "", "Final LR of linear/cosine decay as a fraction of lr", optim.min_lr_ratio),
  INT("optim", "zero", "0", 0, 1, "", "ZeRO stage for AdamW state (0 = replicated, 1 = m and v sharded over the DP train ranks, ZeRO-1; with one DP rank 1 is 0)", optim.zero),

  /* [task] */
  STR("task", "name", "arith", "Built-in task (arith | countdown) or jsonl", task.name),
  INT("task", "digits_min", "1", 1, 9, "digits", "arith: fewest operand digits", task.digits_min),
  INT("task", "digits_max", "2", 1, 9, "digits", "arith: most operand digits", task.digits_max),
  STR("task", "ops", "+", "arith: operators to draw from, e.g. +-*", task.ops),
  FLT("task", "heldout_frac", "0.1", 0.001, 0.5, "fraction", "Share of the problem space reserved for held-out prompts (a keyed hash of each problem decides; train and eval never share a problem)", task.heldout_frac),
  INT("task", "numbers_min", "3", 2, 6, "numbers", "countdown: fewest given numbers", task.numbers_min),
  INT("task", "numbers_max", "4", 2, 6, "numbers", "countdown: most given numbers", task.numbers_max),
  INT("task", "number_max", "99", 2, 999, "", "countdown: given numbers are drawn from 1..number_max", task.number_max),
  INT("task", "target_max", "999", 1, 1e6, "", "countdown: targets lie in 1..target_max", task.target_max),

  /* [data] (used when [task] name = jsonl; src/tasks/dataset.h) */
  PATH("data", "train_path", "", "JSONL file of training rows (one JSON object per line); required by [task] name = jsonl", data.train_path),
  PATH("data", "eval_path", "", "JSONL file of held-out rows; empty = hold out eval_frac of train_path (chosen by [run] seed)", data.eval_path),
  FLT("data", "eval_frac", "0.1", 0.001, 0.9, "fraction", "Share of train_path rows held out when eval_path is empty (at least 1 row each side)", data.eval_frac),
  STR("data", "prompt_key", "prompt", "Row key of the prompt text (rows with \"messages\" use the last user turn instead)", data.prompt_key),
  STR("data", "answer_key", "answer", "Row key of the reference answer (string or number; a \"messages\" row may end with an assistant turn instead)", data.answer_key),
  STR("data", "prompt_template", "{prompt}", "Prompt the model sees; {prompt} is replaced by the row's prompt; \\n = newline, \\t = tab, \\\\ = backslash", data.prompt_template),
  STR("data", "chat_template", "", "Render prompts with a chat template: chatml | smollm2 | llama3 (empty = plain text)", data.chat_template),
  BOOL("data", "shuffle", "true", "Visit training rows in a fresh permutation each epoch, keyed by ([run] seed, epoch)", data.shuffle),
  ENUM("data", "verifier", "math", "math|arith|countdown|exact|code", "Correctness check of a response against the row's answer (countdown rows carry \"nums\" and \"target\"; code: the response's program runs the row's tests in [sandbox], HumanEval rows with \"test\" and \"entry_point\" or MBPP rows with \"test_list\", src/tasks/code.h)", data.verifier),
  ENUM("data", "code_score", "fraction", "fraction|all", "verifier = code: correct = the share of the row's tests that pass, or 1 only when all pass", data.code_score),
  PATH("data", "pref_path", "", "Preference pairs for [algo] name = dpo | ipo | rm: JSONL rows {prompt, chosen, rejected} (key names below), or chosen / rejected as chat message lists whose final assistant turns differ (the turns before them are the prompt)", data.pref_path),
  PATH("data", "pref_eval_path", "", "Held-out preference pairs (the eval's pair accuracy); empty = hold out eval_frac of pref_path", data.pref_eval_path),
  STR("data", "chosen_key", "chosen", "Row key of the preferred response", data.chosen_key),
  STR("data", "rejected_key", "rejected", "Row key of the dispreferred response", data.rejected_key),
  ENUM("data", "on_bad_line", "error", "error|skip", "A broken row (bad JSON, missing key, prompt too long): stop with FILE:LINE, or skip it and report the count at load", data.on_bad_line),
  INT("data", "max_row_bytes", "1048576", 64, 1e9, "bytes", "Longest line a JSONL file may have: a longer one (a file that is not JSON Lines, a device such as /dev/zero) stops the load with FILE:LINE whatever on_bad_line says, before it can fill the memory", data.max_row_bytes),

  /* [reward] */
  FLT("reward", "correct_weight", "1.0", -1e6, 1e6, "", "Weight of the verifier's correctness score (0 or 1)", reward.correct_weight),
  FLT("reward", "format_weight", "0.0", -1e6, 1e6, "", "Weight of the format score (1 when the response holds exactly one format_tags block)", reward.format_weight),
  FLT("reward", "length_weight", "0.0", -1e6, 1e6, "", "Weight of the length score -len/max_new_tokens (a plain length penalty)", reward.length_weight),
  STR("reward", "format_tags", "", "Answer tags \"OPEN,CLOSE\", e.g. <answer>,</answer>; when set, the verifier reads the inside of the single block (empty = whole response)", reward.format_tags),
  PATH("reward", "rm_path", "", "Reward model: an HDF5 model file with a value head (rlpt init with [model] value_head = true, or a checkpoint file or directory whose model or PPO critic has one); it scores prompt + response at the final token as reward_parts.rm (empty = none)", reward.rm_path),
  FLT("reward", "rm_alpha", "1.0", 0, 1, "", "Mix of rule and reward model: reward = rm_alpha * (weighted rule components) + (1 - rm_alpha) * rm; 1 = rule only (rm is still reported when rm_path is set); below 1 needs rm_path", reward.rm_alpha),
  BOOL("reward", "self_consistency", "false", "Label-free rewards (TTRL): `correct` is 1 when a sample's final answer (the verifier's canonical form) is its group's most frequent one (ties: the smallest answer text), instead of matching the reference; evals still score against the reference; JSONL rows may then lack the answer (not with the countdown verifier, which has no answer to vote on)", reward.self_consistency),
  FLT("reward", "sc_min_agreement", "0", 0, 1, "fraction", "self_consistency: a group whose majority answer is given by fewer than this share of its samples gets correct = 0 throughout", reward.sc_min_agreement),
  STR("reward", "command", "", "External reward: PROGRAM ARGS started as long-lived workers that read one JSON request per line on stdin and answer one JSON line on stdout (protocol: README.md, External rewards); its reward replaces the verifier's correct part (empty = the built-in verifier)", reward.command),
  INT("reward", "command_workers", "2", 1, 1024, "processes", "Worker processes of [reward] command per reward rank (requests go to them in parallel)", reward.command_workers),
  FLT("reward", "command_timeout_s", "30", 0.01, 1e6, "s", "A worker that takes longer for one request is killed, restarted and the request counted in reward_errors (reward 0)", reward.command_timeout_s),
  INT("reward", "rm_batch_tokens", "1024", 1, 1e8, "tokens", "Tokens per reward-model forward (prompt + response sequences packed; raised to [model] max_seq when smaller)", reward.rm_batch_tokens),

  /* [sandbox] (src/sandbox/sandbox.h: where model-written code runs) */
  ENUM("sandbox", "isolation", "bwrap", "bwrap|rlimits_only", "bwrap: each program in new namespaces (bubblewrap; no network, no host files, an empty tmpfs working directory) plus the limits below; rlimits_only: the limits only, the program sees the host (a WARNING is printed); a machine that cannot isolate is refused unless this says rlimits_only", sandbox.isolation),
  STR("sandbox", "interpreter", "python3", "Runs the program file: a program (looked up in /usr/local/bin, /usr/bin, /bin) or absolute path, then its options, separated by spaces", sandbox.interpreter),
  FLT("sandbox", "timeout_s", "10", 0.01, 3600, "s", "Wall clock of one execution; then its whole process group (under bwrap its PID namespace) is killed", sandbox.timeout_s),
  INT("sandbox", "cpu_s", "5", 1, 3600, "s", "CPU seconds of one process (RLIMIT_CPU)", sandbox.cpu_s),
  INT("sandbox", "memory_mb", "512", 16, 1e6, "MiB", "Address space of one process (RLIMIT_AS)", sandbox.memory_mb),
  INT("sandbox", "output_kb", "64", 1, 1e6, "KiB", "stdout and stderr captured, each; more ends the execution", sandbox.output_kb),
  INT("sandbox", "file_mb", "16", 1, 1e5, "MiB", "Largest file (RLIMIT_FSIZE) and, under bwrap, the size of the tmpfs working directory", sandbox.file_mb),
  INT("sandbox", "processes", "16", 1, 4096, "processes", "Processes of one execution (RLIMIT_NPROC inside its user namespace)", sandbox.processes),
  INT("sandbox", "workers", "2", 1, 1024, "processes", "Executions run at once by each process that scores (a reward rank, a rollout rank in the eval, rlpt reward-score): its pool of sandboxes", sandbox.workers),

  /* [env] (src/env/episode.h: multi-turn rollouts with tools) */
  BOOL("env", "enabled", "false", "Multi-turn rollouts: generation stops at each <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call> the model writes, the tool runs, its result is appended as a tool turn (masked out of the loss) and generation continues on the same KV cache; the verifier scores the last model turn; the response budget of model and tool tokens together is [rollout] max_new_tokens (README.md, Multi-turn rollouts with tools)", env.enabled),
  STR("env", "tools", "calculator", "Tools the model may call, comma-separated: calculator (+ - * / and parentheses on decimals, in process), python (the arguments' code in [sandbox]), command (every call of another name goes to [env] command's worker); without command a call of another name gets an error tool turn", env.tools),
  INT("env", "max_turns", "4", 1, 1000, "turns", "Model turns per episode: a tool call in the last one ends the response without running", env.max_turns),
  STR("env", "command", "", "The command tool's worker, PROGRAM ARGS (split on spaces, no shell): one long-lived process answering JSON lines {\"id\", \"name\", \"arguments\", \"episode\"} with {\"id\", \"content\"} on its stdin/stdout; needs command in [env] tools (README.md, Multi-turn rollouts with tools)", env.command),
  FLT("env", "command_timeout_s", "30", 0.01, 1e6, "s", "A command worker that takes longer for one call is killed and restarted, the call getting an error tool turn (tool_errors)", env.command_timeout_s),

  /* [algo] */
  ENUM("algo", "name", "grpo", "grpo|dr_grpo|dapo|gspo|ppo|rloo|reinforce_pp|dpo|ipo|rm", "Algorithm preset (every knob below can still be set); dpo, ipo (preference optimisation against a frozen reference) and rm (a Bradley-Terry reward model on the value head) train on [data] pref_path instead of rollouts", algo.name),
  INT("algo", "group_size", "8", 1, 1e5, "samples", "Samples per prompt (G)", algo.group_size),
  INT("algo", "prompts_per_step", "16", 1, 1e7, "prompts", "Prompts per RL step (global); dpo, ipo, rm: preference pairs per step", algo.prompts_per_step),
  INT("algo", "mini_batches", "1", 1, 1e5, "", "Optimizer updates per step per epoch", algo.mini_batches),
  INT("algo", "ppo_epochs", "1", 1, 1e3, "", "Passes over each step's batch", algo.ppo_epochs),
  /* The rows below default to the GRPO preset; preset_apply (deck/presets.c) sets
   * every one the deck did not set to the value of the chosen `name`. */
  ENUM("algo", "adv_estimator", "grpo", "grpo|dr_grpo|rloo|reinforce_pp|reinforce_pp_baseline|gae", "Advantage estimator (preset)", algo.adv_estimator),
  ENUM("algo", "std", "unbiased", "unbiased|biased", "Group std of the grpo estimator: divide by G-1 (unbiased) or G", algo.std),
  FLT("algo", "adv_eps", "1e-6", 0, 1, "", "Epsilon added to the group std (grpo estimator)", algo.adv_eps),
  ENUM("algo", "policy_loss", "ppo_clip", "ppo_clip|gspo|cispo", "Per-token policy loss (preset)", algo.policy_loss),
  FLT("algo", "clip_low", "0.2", 0, 1, "", "Ratio clip below: 1 - clip_low", algo.clip_low),
  FLT("algo", "clip_high", "0.2", 0, 100, "", "Ratio clip above: 1 + clip_high (DAPO clip-higher 0.28)", algo.clip_high),
  FLT("algo", "dual_clip", "3.0", 0, 1e6, "", "Dual-clip constant c > 1 for A < 0 (0 = off)", algo.dual_clip),
  ENUM("algo", "loss_agg", "token-mean", "token-mean|seq-mean-token-sum|seq-mean-token-mean|seq-mean-token-sum-norm|seq-mean-token-sum-norm-verl", "Loss aggregation over tokens and sequences (preset). seq-mean-token-sum-norm is Dr. GRPO's sum / (N_seq * max_new_tokens); seq-mean-token-sum-norm-verl is veRL's agg_loss of that name, sum / max_new_tokens (veRL's padded width) without the 1 / N_seq", algo.loss_agg),
  ENUM("algo", "kl_estimator", "k3", "k1|k2|k3|low_var_kl", "KL-to-reference estimator at x = lp - lp_ref: k3 = exp(-x) + x - 1 unclamped; low_var_kl = k3 clamped to [-10, 10] (what veRL computes for both its k3 and low_var_kl)", algo.kl_estimator),
  ENUM("algo", "kl_in", "loss", "loss|reward", "KL placement: a loss term (gradient through lp) or a per-token reward penalty", algo.kl_in),
  FLT("algo", "kl_coef", "0.001", 0, 1e3, "", "KL coefficient (0 = no KL, no reference forward)", algo.kl_coef),
  FLT("algo", "entropy_coef", "0", 0, 1e3, "", "Entropy bonus coefficient (loss -= coef * entropy)", algo.entropy_coef),
  FLT("algo", "gamma", "1.0", 0, 1, "", "Discount (reinforce_pp, gae)", algo.gamma),
  FLT("algo", "lam", "1.0", 0, 1, "", "GAE lambda", algo.lam),
  BOOL("algo", "whiten_adv", "false", "Whiten GAE advantages over the batch's valid tokens", algo.whiten_adv),
  FLT("algo", "vf_coef", "0.1", 0, 1e3, "", "Value-loss coefficient (PPO critic)", algo.vf_coef),
  FLT("algo", "value_clip", "0.5", 0, 1e6, "", "Value clip around the old value (0 = off)", algo.value_clip),
  ENUM("algo", "old_logprobs", "recompute", "recompute|rollout", "lp_old: trainer recompute before the update, or the rollout engine's logprobs", algo.old_logprobs),
  FLT("algo", "logprob_min", "-20", -1e6, 0, "nats", "Logprobs below this (and -inf) are clamped to it", algo.logprob_min),
  BOOL("algo", "dynamic_sampling", "false", "DAPO: drop groups whose rewards are all equal and resample", algo.dynamic_sampling),
  INT("algo", "max_resample_rounds", "4", 0, 1e6, "rounds", "Dynamic sampling: most extra generation rounds per step", algo.max_resample_rounds),
  BOOL("algo", "difficulty_filter", "false", "Stop drawing train prompts whose running pass rate (share of correct samples over their last difficulty_window groups) is <= difficulty_low or >= difficulty_high; skipped draws are counted in prompts_filtered; the state is in the checkpoint", algo.difficulty_filter),
  INT("algo", "difficulty_window", "4", 1, 1e6, "groups", "Difficulty filter: a prompt's running pass rate is over its last this many groups", algo.difficulty_window),
  FLT("algo", "difficulty_low", "0", 0, 1, "fraction", "Difficulty filter: skip a prompt whose running pass rate is at or below this (0 = never solved)", algo.difficulty_low),
  FLT("algo", "difficulty_high", "1", 0, 1, "fraction", "Difficulty filter: skip a prompt whose running pass rate is at or above this (1 = always solved)", algo.difficulty_high),
  INT("algo", "overlong_buffer", "0", 0, 1e7, "tokens", "DAPO overlong shaping buffer Lcache (0 = off)", algo.overlong_buffer),
  FLT("algo", "overlong_penalty", "1.0", 0, 1e6, "", "Scale of the overlong shaping reward (-penalty at the limit)", algo.overlong_penalty),
  FLT("algo", "dpo_beta", "0.1", 0, 1e6, "", "DPO/IPO beta", algo.dpo_beta),
  ENUM("algo", "dpo_loss", "sigmoid", "sigmoid|ipo", "DPO loss form", algo.dpo_loss),
  PATH("algo", "dpo_ref", "", "DPO/IPO frozen reference: an rlpt model file or checkpoint of the policy's shape (empty = the policy at the start of the preference steps)", algo.dpo_ref),
  BOOL("algo", "rm_train_body", "true", "name = rm: train the whole model; false = the value head score.weight only (needs [optim] weight_decay = 0)", algo.rm_train_body),
  ENUM("algo", "tis", "off", "off|token_truncate|seq_truncate|token_mask|seq_mask", "Off-policy importance weights exp(lp_old - lp_roll)", algo.tis),
  FLT("algo", "tis_cap", "2.0", 0, 1e6, "", "TIS: truncation cap / upper bound of the mask", algo.tis_cap),
  FLT("algo", "tis_min", "0", 0, 1e6, "", "TIS mask modes: lower bound of the kept weights", algo.tis_min),

  /* [rollout] */
  INT("rollout", "max_new_tokens", "16", 1, 1e7, "tokens", "Longest response", rollout.max_new_tokens),
  FLT("rollout", "temperature", "1.0", 0, 100, "", "Sampling temperature (0 = greedy)", rollout.temperature),
  FLT("rollout", "top_p", "1.0", 0, 1, "", "Nucleus sampling mass (1 = off)", rollout.top_p),
  INT("rollout", "top_k", "0", 0, 1e8, "tokens", "Top-k sampling (0 = off)", rollout.top_k),
  INT("rollout", "kv_cache_mb", "256", 1, 1e8, "MiB", "KV-cache pool per rollout rank", rollout.kv_cache_mb),
  INT("rollout", "max_batch_tokens", "4096", 1, 1e9, "tokens", "Most tokens per forward (prefill + decode)", rollout.max_batch_tokens),
  INT("rollout", "max_num_seqs", "256", 1, 1e7, "sequences", "Most sequences decoded together", rollout.max_num_seqs),
  INT("rollout", "block_size", "16", 1, 4096, "tokens", "Tokens per KV-cache block (paged attention page)", rollout.block_size),
  ENUM("rollout", "scheduling", "fcfs", "fcfs|longest_first", "Admission order: fcfs = request order; longest_first = longest prompt first (ties in request order)", rollout.scheduling),
  BOOL("rollout", "prefix_sharing", "true", "Prefill each prompt once and share its KV blocks among its G samples (copy-on-write)", rollout.prefix_sharing),
  STR("rollout", "stop", "", "Stop string: a response ends (finish_reason = stop) once its decoded text ends with it; empty = none", rollout.stop),

  /* [eval] */
  INT("eval", "every", "0", 0, 1e9, "steps", "Evaluate every N RL steps (0 = only at the end)", eval.every),
  INT("eval", "prompts", "200", 1, 1e7, "prompts", "Held-out prompts per evaluation", eval.prompts),
  INT("eval", "samples", "4", 1, 1e5, "samples", "Sampled completions per prompt (n of pass@k)", eval.samples),
  INT("eval", "k", "4", 1, 1e5, "", "k of pass@k (k <= samples)", eval.k),

  /* [log] */
  PATH("log", "metrics_path", "metrics.jsonl", "Per-step metrics, one JSON line per step", log.metrics_path),
  PATH("log", "samples_path", "", "Sample dumps (prompt, response, reward, advantage); empty = off", log.samples_path),
  INT("log", "samples_every", "0", 0, 1e9, "steps", "Write samples every N steps, to samples_path and as a text table to tensorboard_dir (0 = off)", log.samples_every),
  INT("log", "samples_groups", "2", 0, 1e9, "groups", "Groups written per logged step (the first ones of train dp 0's share; 0 = all of its groups)", log.samples_groups),
  PATH("log", "tensorboard_dir", "", "TensorBoard run directory (created if missing): the controller writes every metrics line as scalars under veRL's names (critic/score/mean, actor/kl_loss, response_length/mean, timing_s/gen, ...; SFT lines under sft/, evals under eval/), train dp 0 every samples_every steps a text table of sampled responses; a restart adds new files, whose steps replace the old ones in TensorBoard; empty = off", log.tensorboard_dir),
  PATH("log", "prometheus_path", "", "Prometheus textfile (e.g. /var/lib/node_exporter/textfile/rlpt.prom; node_exporter reads *.prom): gauges rlpt_<field>, rl_sample_mean_lag, rl_sample_drop_ratio and the latest eval, rewritten atomically (.tmp + rename) every line; empty = off", log.prometheus_path),

  /* [checkpoint] */
  PATH("checkpoint", "dir", "checkpoints", "Directory of step_%08d.h5 files and `latest`", checkpoint.dir),
  INT("checkpoint", "every", "0", 0, 1e9, "steps", "Checkpoint every N steps (0 = only at the end)", checkpoint.every),
  INT("checkpoint", "keep_last", "3", 1, 1e6, "files", "Complete checkpoints to keep", checkpoint.keep_last),
  ENUM("checkpoint", "on_error", "abort", "abort|continue", "A checkpoint that cannot be written (disk full, unwritable dir, non-finite state): abort the run, or warn and keep training (the previous checkpoints and `latest` stay intact)", checkpoint.on_error),

  /* [ranks] */
  AUTOINT("ranks", "controller", "auto", 0, 1, "ranks", "Controller ranks (auto = 1 with layout separate, 0 colocated)", ranks.controller),
  AUTOINT("ranks", "rollout", "auto", 0, 1e7, "ranks", "Rollout ranks (auto = what is left after the others)", ranks.rollout),
  AUTOINT("ranks", "reward", "auto", 0, 1e7, "ranks", "Reward ranks (auto = 1 with layout separate, 0 colocated)", ranks.reward),
  AUTOINT("ranks", "train", "auto", 1, 1e7, "ranks", "Train ranks (auto = train_dp * train_tp * train_pp)", ranks.train),
  ENUM("ranks", "layout", "separate", "separate|colocated", "separate: disjoint role ranks; colocated: every rank runs rollout, reward and train in turn", ranks.layout),
  INT("ranks", "rollout_tp", "1", 1, 1e4, "ranks", "Tensor-parallel size of one rollout engine instance: rlpt run runs one engine over rollout_tp ranks, each with its shard of the model and of the KV cache (sync mode, separate layout, CPU; heads, kv_heads, ffn_dim and vocab_size divisible by it; no [env], rejection SFT or bf16 weight sync)", ranks.rollout_tp),
  INT("ranks", "train_dp", "1", 1, 1e7, "ranks", "Data-parallel size of the train grid", ranks.train_dp),
  INT("ranks", "train_tp", "1", 1, 1e4, "ranks", "Tensor-parallel size of the train grid: rlpt run splits the policy over train_tp ranks Megatron-style (sync mode, separate layout, CPU; heads, kv_heads, ffn_dim and vocab_size divisible by it; no critic, preference or rejection SFT, zero = 0)", ranks.train_tp),
  INT("ranks", "train_pp", "1", 1, 1e4, "ranks", "Pipeline-parallel size of the train grid (rlpt plan; rlpt run needs 1)", ranks.train_pp),
  INT("ranks", "threads_per_rank", "1", 1, 4096, "threads", "BLAS threads per rank; ranks x threads on a node must not exceed its cores", ranks.threads_per_rank),
  AUTOINT("ranks", "cores_per_node", "auto", 1, 1e5, "cores", "Cores of one node (auto = read from the machine)", ranks.cores_per_node),
  INT("ranks", "micro_batch_seqs", "8", 1, 1e7, "sequences", "Sequences per train micro-batch (activation memory)", ranks.micro_batch_seqs),
  FLT("ranks", "device_memory_gb", "0", 0, 1e6, "GB", "Memory of one device/rank; `plan` checks every role fits (0 = no check)", ranks.device_memory_gb),
  /* [async] (run/async_step.c) */
  INT("async", "max_lag", "1", 0, 1e6, "versions", "separate_async: the most weight versions a trained sample may lag the trainer; the schedule keeps min(max_lag, capacity / prompts_per_step) steps of groups in flight", async.max_lag),
  AUTOINT("async", "capacity", "auto", 1, 1e9, "groups", "separate_async: the buffer of scored groups between rollout and train (auto = prompts_per_step x max_lag); at least one step's groups", async.capacity),
  BOOL("async", "deterministic", "true", "separate_async: the fixed interleaving (step k trains on the groups generated during step k - D under version k - 1 - D, D = the steps in flight), bit-exact across a restart; false: the free-running schedule (rollout generates while the buffer has room, train takes the oldest groups, weights reach the rollout ranks without a wait; not reproducible, a restart loses no finished group and skips no prompt)", async.deterministic),
  ENUM("async", "stale", "drop", "drop|tis", "separate_async: samples whose lag exceeds max_lag are dropped (drop: the schedule keeps min(max_lag, capacity / prompts_per_step) steps in flight, so none is) or kept and weighted by truncated importance sampling against the rollout's logprobs (tis: capacity / prompts_per_step steps in flight, which must exceed max_lag)", async.stale),
  ENUM("async", "in_flight", "off", "off|continue|recompute|abort", "separate_async: off changes the rollout weights only between batches; otherwise each update reaches the rollout ranks while they generate the next batch, at its decode step in_flight_step, and the sequences in flight keep their KV cache (continue), have it recomputed under the new weights (recompute) or restart (abort); every token records its weight version", async.in_flight),
  INT("async", "in_flight_step", "1", 1, 1e6, "steps", "separate_async with in_flight and deterministic = true: the decode step of the batch being generated at which the schedule applies the step's update (generation that ends sooner takes it at its end); the free-running schedule takes each update at the first decode-step boundary after it arrives and refuses this key", async.in_flight_step),

  /* [simulate]: read by `rlpt plan DECK --world N --simulate deck` only (deck/sim_costs.c) */
  FLT("simulate", "gen_tokens_per_s", "0", 0, 1e12, "tokens/s", "plan --simulate deck: one rollout engine instance's decode throughput with its batch full, summed over its sequences (0 = not given: --simulate then needs a sync run's metrics file)", simulate.gen_tokens_per_s),
  FLT("simulate", "gen_seq_tokens_per_s", "0", 0, 1e12, "tokens/s", "plan --simulate deck: one sequence's decode speed; an instance's batch lasts at least its longest response at this speed (the long tail sync waits for; 0 = no such bound)", simulate.gen_seq_tokens_per_s),
  FLT("simulate", "prefill_tokens_per_s", "0", 0, 1e12, "tokens/s", "plan --simulate deck: one instance's prompt prefill throughput (0 = prefill not counted)", simulate.prefill_tokens_per_s),
  FLT("simulate", "train_tokens_per_s", "0", 0, 1e12, "tokens/s", "plan --simulate deck: prompt + response tokens one train DP group (its TP x PP ranks) trains per second per PPO epoch, forward and backward and the reference/old-logprob forwards included", simulate.train_tokens_per_s),
  FLT("simulate", "sync_gb_per_s", "0", 0, 1e6, "GB/s", "plan --simulate deck: the weight broadcast's speed, GB (1e9 bytes) of the model as [run] weight_sync_dtype sends it per second", simulate.sync_gb_per_s),
  INT("simulate", "prompt_tokens", "64", 0, 1e7, "tokens", "plan --simulate deck: mean prompt length", simulate.prompt_tokens),
  INT("simulate", "response_tokens", "256", 1, 1e7, "tokens", "plan --simulate deck: mean response length (at most [rollout] max_new_tokens)", simulate.response_tokens),
  FLT("simulate", "response_cv", "0.5", 0, 100, "", "plan --simulate deck: response lengths are log-normal with this coefficient of variation (std / mean), cut at [rollout] max_new_tokens; 0 = every response response_tokens long", simulate.response_cv),
  FLT("simulate", "other_s", "0", 0, 1e6, "s", "plan --simulate deck: seconds per RL step outside generation, training and the weight sync (controller, rewards, the log)", simulate.other_s),
};

const int cfg_schema_len = (int)(sizeof cfg_schema / sizeof cfg_schema[0]);
