/* cmd_convert.c: `rlpt convert IN OUT` converts model weights between formats.
 *
 * IN is an rlpt model file (io/model_h5.h), a checkpoint (step_*.h5, or a
 * checkpoint directory: its `latest`, with the fallback of ckpt_read_latest), a
 * Hugging Face safetensors directory (io/safetensors.h) or a GGUF file. OUT
 * ending in .h5 gets an rlpt model file (what `rlpt score` and `[model] init`
 * read); any other OUT is written as a Hugging Face directory (config.json,
 * safetensors in --dtype, generation_config.json, tokenizer files from
 * --tokenizer or from a safetensors IN, or tokenizer.json + tokenizer_config.json
 * written from a GGUF IN's tokenizer metadata). The older `convert CKPT --out
 * MODEL.h5` form still works. Input is fully validated first (checkpoint CRCs
 * included); a bad one exits 2 with one message and leaves no output file. Runs
 * as a single MPI process. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "gguf.h"
#include "hf_tokenizer.h"
#include "model_h5.h"
#include "safetensors.h"

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

/* The input's weights; `from` says what was read (for the message). */
struct convert_model {
  struct model_config mc;
  float *params;
  char from[600];
  const char *hf_dir;   /* the input when it is a HF directory (its tokenizer files) */
  const char *gguf;     /* the input when it is a GGUF file (its tokenizer metadata) */
  int bos_id, eos_id;   /* from a GGUF's tokenizer metadata; -1 unknown */
};

/* bos/eos ids of a GGUF, for generation_config.json (absent keys stay -1). */
static void gguf_token_ids(const char *in, struct convert_model *m) {
  struct gguf_file f;
  char err[256];
  int64_t v;
  if (gguf_open(&f, in, err, sizeof err)) return;
  if (!gguf_get_int(&f, "tokenizer.ggml.bos_token_id", &v, err, sizeof err)) m->bos_id = (int)v;
  if (!gguf_get_int(&f, "tokenizer.ggml.eos_token_id", &v, err, sizeof err)) m->eos_id = (int)v;
  gguf_close(&f);
}

static int load_ckpt(const char *in, int is_dir, struct convert_model *m) {
  char path[4096], what[512];
  struct ckpt_state st;
  snprintf(path, sizeof path, "%s", in);
  int rc = is_dir ? ckpt_read_latest(in, &st, NULL, MPI_COMM_SELF, path, sizeof path)
                  : ckpt_read(path, &st, NULL, MPI_COMM_SELF);
  if (rc) return rc;
  ckpt_describe(&st, what, sizeof what);
  snprintf(m->from, sizeof m->from, "%.500s (%.80s)", path, what);
  m->mc = st.mc;
  m->params = st.params;
  st.params = NULL;
  ckpt_state_free(&st);
  return 0;
}

static int load_h5_model(const char *in, struct convert_model *m) {
  struct param_table t;
  int rc = model_h5_read_config(in, &m->mc);
  if (rc) return rc;
  param_table_build(&t, &m->mc);
  m->params = malloc(t.total * sizeof *m->params);
  rc = m->params ? model_h5_read_params(in, &t, m->params) : 1;
  param_table_free(&t);
  snprintf(m->from, sizeof m->from, "%.500s (rlpt model file)", in);
  return rc;
}

/* Loaders return 0, 2 (bad input, one message printed) or 1. */
static int load_input(const char *in, struct convert_model *m) {
  char err[1024] = "", path[4096];
  struct param_table t;
  struct stat sb;
  unsigned char magic[8] = {0};
  if (stat(in, &sb)) {
    fprintf(stderr, "rlpt: convert: %s: %s\n", in, strerror(errno));
    return 2;
  }
  snprintf(path, sizeof path, "%s/config.json", in);
  if (S_ISDIR(sb.st_mode) && access(path, F_OK)) return load_ckpt(in, 1, m);
  if (S_ISDIR(sb.st_mode)) {
    if (st_dir_load(in, &m->mc, &t, &m->params, err, sizeof err)) goto bad;
    param_table_free(&t);
    snprintf(m->from, sizeof m->from, "%.500s (safetensors directory)", in);
    m->hf_dir = in;
    return 0;
  }
  FILE *fp = fopen(in, "rb");
  size_t got = fp ? fread(magic, 1, sizeof magic, fp) : 0;
  if (fp) fclose(fp);
  if (got == 8 && !memcmp(magic, "\x89HDF\r\n\x1a\n", 8))
    return ckpt_probe(in, 1) ? load_h5_model(in, m) : load_ckpt(in, 0, m);
  if (got >= 4 && !memcmp(magic, "GGUF", 4)) {
    if (gguf_load_model(in, &m->mc, &t, &m->params, err, sizeof err)) goto bad;
    param_table_free(&t);
    snprintf(m->from, sizeof m->from, "%.500s (GGUF)", in);
    gguf_token_ids(in, m);
    m->gguf = in;
    return 0;
  }
  snprintf(err, sizeof err, "%s: not an HDF5 model/checkpoint, GGUF file or safetensors directory "
           "(for safetensors pass the directory with config.json)", in);
bad:
  fprintf(stderr, "rlpt: convert: %s\n", err);
  return 2;
}

/* A GGUF's tokenizer as tokenizer.json + tokenizer_config.json in dir (so that
 * `[model] init = hf:DIR` gets the same tokenizer as gguf:PATH). */
static int gguf_tokenizer_save(const char *in, const char *dir, int *ntok, char *err, size_t errlen) {
  struct gguf_file f;
  struct bpe_spec s;
  if (gguf_open(&f, in, err, errlen)) return -1;
  int rc = tokenizer_bpe_spec_gguf(&s, &f, err, errlen);
  if (!rc) {
    rc = hf_tokenizer_save(dir, &s, err, errlen);
    tokenizer_bpe_spec_free(&s);
  }
  gguf_close(&f);
  if (!rc) *ntok = 2;
  return rc;
}

static int write_output(const struct convert_args *a, const struct convert_model *m) {
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
  o.tokenizer_dir = a->tokenizer ? a->tokenizer : m->hf_dir;
  o.bos_id = m->bos_id;
  o.eos_id = m->eos_id;
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
  struct convert_model m = {.bos_id = -1, .eos_id = -1};
  int rc = load_input(a->in, &m);
  if (!rc) rc = write_output(a, &m);
  free(m.params);
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
