/* model/source.h: a model's config and weights from what rlpt eval, score and convert
 * take as MODEL, loaded one way for all three:
 *
 *   gguf:PATH, hf:DIR   as [model] init takes them (model/import.h)
 *   FILE.h5             an rlpt model file (io/model_h5.h) or a checkpoint file (io/ckpt.h,
 *                       fully validated, CRCs included)
 *   DIR                 a checkpoint directory (its latest, as a restart picks it), or a
 *                       Hugging Face directory when it holds config.json
 *   FILE                a GGUF file (by its magic)
 *
 * The config is the file's own, max_seq included (a GGUF's or config.json's context
 * length). Rank-0 / single-process code: checkpoints are read on MPI_COMM_SELF. */
#ifndef RLPT_MODEL_SOURCE_H
#define RLPT_MODEL_SOURCE_H

#include <stddef.h>

#include "io/gguf.h"
#include "model/model.h"

enum model_source_kind { MODEL_SRC_H5, MODEL_SRC_CKPT, MODEL_SRC_HF, MODEL_SRC_GGUF };

struct model_source {
  enum model_source_kind kind;
  struct model_config mc;
  float *params;               /* param_table_build(mc).total floats */
  long step, weight_version;   /* a checkpoint's; 0 for the others */
  char path[4096];             /* the file or directory read (a checkpoint directory: its latest) */
  char from[4200];             /* "PATH (what it is)", for messages */
  struct gguf_file *gguf;      /* MODEL_SRC_GGUF: the file, still open (its tokenizer metadata) */
};

/* Load src. Messages go to stderr as "rlpt: CMD: ..." (a missing src: "rlpt: CMD: [OPT ]SRC:
 * no such file or directory"; opt may be NULL). 0, 2 (bad input, one message) or 1. */
int model_source_load(const char *src, const char *cmd, const char *opt, struct model_source *ms);
/* "hf:DIR" / "gguf:PATH" of a Hugging Face or GGUF source (what model_import_tokenizer
 * reads its tokenizer from), "" for an rlpt model file or checkpoint. */
void model_source_init(const struct model_source *ms, char *init, size_t len);
void model_source_free(struct model_source *ms);

#endif
