/* rollout/generate_text.h: G sampled responses to one text prompt from the rollout
 * engine (rollout/engine.h), printed with their per-token logprobs and finish reasons.
 *
 * The model is an rlpt model file (FILE.h5), a checkpoint file or directory (read and
 * validated as model/source.h does for eval, score and convert: a CRC mismatch is exit 2),
 * whose text goes through the built-in character tokenizer (the model's vocabulary must cover its 98 ids), or gguf:PATH /
 * hf:DIR as `[model] init` takes them: the model's own BPE tokenizer, BOS when the
 * model adds it, and with chat the prompt as one user message in the model's chat
 * template (model/import.h). Text output: a "prompt:" line, then per sample its finish
 * reason, token count, summed logprob, text and logprobs. JSON output: one object per
 * sample and line, {"prompt", "prompt_tokens", "text", "tokens", "logprobs",
 * "finish_reason"}; its strings are valid UTF-8 (a response cut inside a character ends
 * in U+FFFD). MPI must be initialised (a checkpoint is read on MPI_COMM_SELF). */
#ifndef RLPT_GENERATE_TEXT_H
#define RLPT_GENERATE_TEXT_H

struct generate_text_opts {
  const char *model, *prompt;
  const char *device;       /* auto|cpu|cuda, as [run] device picks the backend */
  long n;                   /* samples (G) */
  long top_k, max_new, seed;
  double temperature, top_p; /* temperature 0: greedy */
  int json;                 /* one JSON object per sample instead of text */
  int chat;                 /* the prompt in the model's chat template (gguf:/hf: only) */
};

/* The deck's [rollout] and [run] seed defaults, device auto, one sample, text output. */
void generate_text_defaults(struct generate_text_opts *o);

/* Sample and print on stdout. Bad input (chat without a gguf:/hf: model, a prompt the
 * tokenizer cannot encode, prompt + max_new over the model's max_seq, an unreadable or
 * unsuitable model) is one message on stderr and exit code 2. Returns 0, 2 or 1. */
int generate_text(const struct generate_text_opts *o);

#endif
