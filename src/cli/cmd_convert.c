/* cli/cmd_convert.c: `rlpt convert IN OUT` converts model weights between formats.
 *
 * IN is an rlpt model file (io/model_h5.h), a checkpoint (step_*.h5, or a
 * checkpoint directory: its `latest`, with the fallback of ckpt_read_latest), a
 * Hugging Face safetensors directory (io/safetensors.h) or a GGUF file. OUT
 * ending in .h5 gets an rlpt model file (what `rlpt score` and `[model] init`
 * read); any other OUT is written as a Hugging Face directory (config.json,
 * safetensors in --dtype, generation_config.json, tokenizer files from
 * --tokenizer or from a safetensors IN, or tokenizer.json + tokenizer_config.json
 * written from a GGUF IN's tokenizer metadata). The older `convert CKPT --out
 * MODEL.h5` form still works. IN is read by model/source.h (gguf:PATH and hf:DIR
 * work too), the GGUF opened once. Input is fully validated first (checkpoint CRCs
 * included); a bad one exits 2 with one message and leaves no output file. Runs
 * as a single MPI process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "io/gguf.h"
#include "io/hf_tokenizer.h"
#include "io/model_h5.h"
#include "io/safetensors.h"
#include "model/source.h"

static int convert_usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: rlpt convert IN OUT [--dtype fp32|bf16] [--tokenizer HF_DIR] [--shard-mb N]\n"
          "       rlpt convert CKPT --out MODEL.h5\n"
          "  IN:  an rlpt model file, a checkpoint file or directory (uses its latest),\n"
          "       a Hugging Face safetensors directory, or a GGUF file\n"
          "  OUT: NAME.h5 = rlpt model file; anything else = Hugging Face directory\n"
          "  --dtype       safetensors dtype (default fp32; bf16 rounds to nearest even)\n"
          "  --tokenizer   copy tokenizer files and bos/eos ids from this HF directory\n"
          "  --shard-mb    split the safetensors into shards of at most N MiB (+ index)\n");
  return rc;
}

struct convert_args {
  const char *in, *out, *tokenizer;
  struct st_save_opts save;
};

/* 0 with a filled, -1 for --help, or 2. */
static int convert_args(int argc, char **argv, struct convert_args *a) {
  memset(a, 0, sizeof *a);
  a->save = (struct st_save_opts){.dtype = ST_F32, .bos_id = -1, .eos_id = -1};
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    long mb = v && !strcmp(argv[i], "--shard-mb") ? strtol(v, &end, 10) : 0;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return -1;
    if (!strcmp(argv[i], "--out") && v && !a->out) a->out = argv[++i];
    else if (!strcmp(argv[i], "--tokenizer") && v) a->tokenizer = argv[++i];
    else if (!strcmp(argv[i], "--dtype") && v && (!strcmp(v, "fp32") || !strcmp(v, "bf16")))
      a->save.dtype = !strcmp(argv[++i], "bf16") ? ST_BF16 : ST_F32;
    else if (mb > 0 && mb < (1L << 30) && !*end) {
      a->save.shard_bytes = (size_t)mb << 20;
      i++;
    }
    else if (argv[i][0] != '-' && !a->in) a->in = argv[i];
    else if (argv[i][0] != '-' && !a->out) a->out = argv[i];
    else {
      fprintf(stderr, "rlpt: convert: unexpected or bad argument '%s'%s\n", argv[i],
              v && argv[i][0] == '-' ? " (or its value)" : "");
      return convert_usage(2);
    }
  }
  if (!a->in || !a->out) return convert_usage(2);
  return 0;
}

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

static int write_output(const struct convert_args *a, const struct model_source *m) {
  size_t n = strlen(a->out);
  if (n > 3 && !strcmp(a->out + n - 3, ".h5")) {
    int rc = model_h5_write(a->out, &m->mc, m->params);
    if (rc) unlink(a->out);
    else printf("rlpt: wrote %s from %s\n", a->out, m->from);
    return rc;
  }
  struct st_save_opts o = a->save;
  char err[1024];
  int ntok = 0;
  o.tokenizer_dir = a->tokenizer ? a->tokenizer : m->kind == MODEL_SRC_HF ? m->path : NULL;
  if (m->gguf) gguf_token_ids(m->gguf, &o.bos_id, &o.eos_id);
  if (st_dir_save(a->out, &m->mc, m->params, &o, &ntok, err, sizeof err) ||
      (!o.tokenizer_dir && m->gguf && gguf_tokenizer_save(m->gguf, a->out, &ntok, err, sizeof err))) {
    fprintf(stderr, "rlpt: convert: %s\n", err);
    return 1;
  }
  printf("rlpt: wrote Hugging Face directory %s (%s) from %s; %d tokenizer file(s)%s\n", a->out,
         st_dtype_name(o.dtype), m->from, ntok,
         o.tokenizer_dir || m->gguf ? "" : " (pass --tokenizer HF_DIR to add them)");
  return 0;
}

static int convert_run(const struct convert_args *a) {
  struct model_source m;
  int rc = model_source_load(a->in, "convert", NULL, &m);
  if (!rc) rc = write_output(a, &m);
  model_source_free(&m);
  return rc;
}

int cmd_convert(int argc, char **argv) {
  struct convert_args a;
  int rc = convert_args(argc, argv, &a);
  if (rc) return rc < 0 ? convert_usage(0) : rc;
  MPI_Init(NULL, NULL);
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world > 1) {
    fprintf(stderr, "rlpt: convert runs as one process (it was started on %d ranks)\n", world);
    rc = 2;
  } else {
    rc = convert_run(&a);
  }
  MPI_Finalize();
  return rc;
}
