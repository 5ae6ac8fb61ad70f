/* model/convert.h: a model's weights from one format into another. The input is any
 * MODEL that model/source.h reads (an rlpt model file, a checkpoint file or directory,
 * a Hugging Face safetensors directory, a GGUF file; gguf:PATH and hf:DIR too); the
 * output is an rlpt model file when its name ends in .h5 (what `rlpt score` and
 * `[model] init` read), else a Hugging Face directory: config.json, safetensors,
 * generation_config.json and the tokenizer files (copied from tokenizer_dir or a
 * safetensors input, or tokenizer.json + tokenizer_config.json written from a GGUF
 * input's tokenizer metadata). */
#ifndef RLPT_MODEL_CONVERT_H
#define RLPT_MODEL_CONVERT_H

#include <stddef.h>

struct model_convert_opts {
  const char *in, *out;
  const char *tokenizer_dir;  /* HF directory whose tokenizer files and bos/eos ids the output
                                 gets; NULL: a safetensors input's own, a GGUF input's metadata */
  int bf16;                   /* safetensors in bf16 (rounded to nearest even), else fp32 */
  size_t shard_bytes;         /* 0: one model.safetensors; else shards of at most this many
                                 bytes (+ index) */
};

/* Convert o->in into o->out. The input is fully validated first (checkpoint CRCs
 * included): a bad one is one message on stderr, exit code 2, and no output file. A
 * line on stdout names what was written. MPI must be initialised (a checkpoint is
 * read on MPI_COMM_SELF). Returns 0, 2 (bad input) or 1. */
int model_convert(const struct model_convert_opts *o);

#endif
