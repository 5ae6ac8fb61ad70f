/* model/convert.c: model weights between rlpt HDF5, Hugging Face safetensors
 * directories and GGUF (model/convert.h). */
#include "model/convert.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "io/gguf.h"
#include "io/hf_tokenizer.h"
#include "io/model_h5.h"
#include "io/safetensors.h"
#include "model/lora.h"
#include "model/source.h"

/* bos/eos ids of a GGUF, for generation_config.json (absent keys stay -1). */
static void gguf_token_ids(const struct gguf_file *f, int *bos, int *eos) {
  char err[256];
  int64_t v;
  if (!gguf_get_int(f, "tokenizer.ggml.bos_token_id", &v, err, sizeof err)) *bos = (int)v;
  if (!gguf_get_int(f, "tokenizer.ggml.eos_token_id", &v, err, sizeof err)) *eos = (int)v;
}

/* A GGUF's tokenizer as tokenizer.json + tokenizer_config.json in dir (so that
 * `[model] init = hf:DIR` gets the same tokenizer as gguf:PATH). */
static int gguf_tokenizer_save(const struct gguf_file *f, const char *dir, int *ntok, char *err,
                               size_t errlen) {
  struct bpe_spec s;
  int rc = tokenizer_bpe_spec_gguf(&s, f, err, errlen);
  if (!rc) {
    rc = hf_tokenizer_save(dir, &s, err, errlen);
    tokenizer_bpe_spec_free(&s);
  }
  if (!rc) *ntok = 2;
  return rc;
}

static int write_h5(const char *out, const struct model_source *m) {
  int rc = model_h5_write(out, &m->mc, m->params);
  if (rc) unlink(out);
  else printf("rlpt: wrote %s from %s\n", out, m->from);
  return rc;
}

static int write_hf(const struct model_convert_opts *o, const struct model_source *m) {
  struct st_save_opts save = {
    .dtype = o->bf16 ? ST_BF16 : ST_F32,
    .shard_bytes = o->shard_bytes,
    .tokenizer_dir = o->tokenizer_dir ? o->tokenizer_dir : m->kind == MODEL_SRC_HF ? m->path : NULL,
    .bos_id = -1,
    .eos_id = -1,
  };
  char err[1024];
  int ntok = 0;
  if (m->gguf) gguf_token_ids(m->gguf, &save.bos_id, &save.eos_id);
  if (st_dir_save(o->out, &m->mc, m->params, &save, &ntok, err, sizeof err) ||
      (!save.tokenizer_dir && m->gguf && gguf_tokenizer_save(m->gguf, o->out, &ntok, err, sizeof err))) {
    fprintf(stderr, "rlpt: convert: %s\n", err);
    return 1;
  }
  printf("rlpt: wrote Hugging Face directory %s (%s) from %s; %d tokenizer file(s)%s\n", o->out,
         st_dtype_name(save.dtype), m->from, ntok,
         save.tokenizer_dir || m->gguf ? "" : " (pass --tokenizer HF_DIR to add them)");
  return 0;
}

int model_convert(const struct model_convert_opts *o) {
  struct model_source m;
  size_t n = strlen(o->out);
  int rc = model_source_load(o->in, "convert", NULL, &m);
  if (!rc && m.mc.lora_rank > 0) { /* the export is the merged model, W + (alpha / r) B A */
    struct param_table t;
    param_table_build(&t, &m.mc);
    int r = m.mc.lora_rank;
    lora_merge(&t, &m.mc, m.params, &m.mc);
    param_table_free(&t);
    printf("rlpt: convert: LoRA adapters (rank %d) merged into their base weights\n", r);
  }
  if (!rc) rc = n > 3 && !strcmp(o->out + n - 3, ".h5") ? write_h5(o->out, &m) : write_hf(o, &m);
  model_source_free(&m);
  return rc;
}
