/* cli/commands.c: the table of subcommands (one row each; implementations in cmd_*.c). */
#include "cli/commands.h"

int cmd_version(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_deck_help(int argc, char **argv);
int cmd_reward_check(int argc, char **argv);
int cmd_reward_score(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_score(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_report(int argc, char **argv);

const struct command rlpt_commands[] = {
  {"version", "", "print the version and the build's features", cmd_version},
  {"check", "DECK [section.key=value ...]", "validate a deck (no MPI) and print the canonical deck", cmd_check},
  {"run", "DECK [section.key=value ...]", "the training job under mpirun: SFT, then RL steps (sync mode), evals, metrics JSONL", cmd_run},
  {"eval", "DECK --model MODEL [--json] [--output FILE.jsonl] [section.key=value ...]", "the run's held-out eval alone (greedy/sampled pass@1, pass@k) on a model file or checkpoint", cmd_eval},
  {"doctor", "RUN_DIR|metrics.jsonl [--json] [--band LO,HI]", "troubleshoot a run from its metrics: findings with evidence, causes and deck keys; exit 1 if any", cmd_doctor},
  {"report", "RUN_DIR|metrics.jsonl --out FILE.html [--band LO,HI]", "one self-contained HTML file: the run's plots (inline SVG), evals, deck and findings", cmd_report},
  {"plan", "DECK [--world N] [--ranks] [section.key=value ...]", "rank map, memory per rank and FLOPs per step; exit 2 if it cannot run", cmd_plan},
  {"init", "DECK --out FILE.h5 [section.key=value ...]", "write a freshly initialised model (HDF5)", cmd_init},
  {"score", "--model FILE.h5 --input IN.jsonl --output OUT.jsonl [--device auto|cpu|cuda]", "next-token logprobs and entropy of token sequences", cmd_score},
  {"generate", "--model FILE.h5 --prompt TEXT [-n G] [--temperature T] [--top-p P] [--top-k K] [--max-new-tokens N] [--seed S] [--json] [--device auto|cpu|cuda]", "sample responses with the rollout engine, with logprobs and finish reasons", cmd_generate},
  {"convert", "IN OUT [--dtype fp32|bf16]", "convert weights: model .h5, checkpoint, HF safetensors dir or GGUF -> OUT.h5 or HF dir", cmd_convert},
  {"reward-check", "DECK [--prompts N] [--split train|eval] [section.key=value ...]", "score reference and wrong answers through the deck's reward; exit 3 if the references get none", cmd_reward_check},
  {"reward-score", "DECK --input RESPONSES.jsonl --output SCORES.jsonl [section.key=value ...]", "score given responses through the deck's reward (verifier, code sandbox, [reward] command)", cmd_reward_score},
  {"deck-help", "", "print every deck key as markdown (inputs/README.md)", cmd_deck_help},
};
const int rlpt_commands_len = (int)(sizeof rlpt_commands / sizeof rlpt_commands[0]);
