/* model/score.h: per-token logprobs and entropy of token sequences under a model.
 *
 * Each input line {"tokens": [t0, ..., t_{n-1}]} gives one output line
 * {"logprobs": [...], "entropy": [...]} (plus "values": [...] for a model with a
 * value head), where logprobs[i] = log p(t_{i+1} | t_0..t_i) and entropy[i] is
 * the entropy of that same next-token distribution (both length n-1; values
 * length n). Empty lines are skipped; output order is input order. The model is
 * what model/source.h reads (an rlpt model file, a checkpoint file or directory,
 * gguf:PATH or hf:DIR), on the backend `device` names as [run] device does. */
#ifndef RLPT_MODEL_SCORE_H
#define RLPT_MODEL_SCORE_H

struct model_score_opts {
  const char *model;   /* MODEL, as model/source.h takes it */
  const char *input;   /* JSONL of {"tokens": [...]} */
  const char *output;  /* JSONL written, one line per input line */
  const char *device;  /* auto|cpu|cuda */
};

/* Score o->input into o->output. A bad line is reported as INPUT:LINE with exit code 2;
 * the output is written to a temporary and renamed only when complete, so after any
 * failure no partial output is left and an existing output file is unchanged. MPI must be
 * initialised (a checkpoint is read on MPI_COMM_SELF). Returns 0, 2 (bad input) or 1. */
int model_score(const struct model_score_opts *o);

#endif
