/* cli/cmd_convert.c: `rlpt convert IN OUT [--dtype fp32|bf16] [--tokenizer HF_DIR]
 * [--shard-mb N]` and `rlpt convert CKPT --out MODEL.h5` convert model weights between
 * formats (model/convert.h: rlpt model files, checkpoints, Hugging Face safetensors
 * directories, GGUF). Runs as a single MPI process. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/convert.h"

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

/* 0 with o filled, -1 for --help, or 2. */
static int convert_args(int argc, char **argv, struct model_convert_opts *o) {
  *o = (struct model_convert_opts){0};
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    long mb = v && !strcmp(argv[i], "--shard-mb") ? strtol(v, &end, 10) : 0;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return -1;
    if (!strcmp(argv[i], "--out") && v && !o->out) o->out = argv[++i];
    else if (!strcmp(argv[i], "--tokenizer") && v) o->tokenizer_dir = argv[++i];
    else if (!strcmp(argv[i], "--dtype") && v && (!strcmp(v, "fp32") || !strcmp(v, "bf16")))
      o->bf16 = !strcmp(argv[++i], "bf16");
    else if (mb > 0 && mb < (1L << 30) && !*end) {
      o->shard_bytes = (size_t)mb << 20;
      i++;
    }
    else if (argv[i][0] != '-' && !o->in) o->in = argv[i];
    else if (argv[i][0] != '-' && !o->out) o->out = argv[i];
    else {
      fprintf(stderr, "rlpt: convert: unexpected or bad argument '%s'%s\n", argv[i],
              v && argv[i][0] == '-' ? " (or its value)" : "");
      return convert_usage(2);
    }
  }
  if (!o->in || !o->out) return convert_usage(2);
  return 0;
}

int cmd_convert(int argc, char **argv) {
  struct model_convert_opts o;
  int rc = convert_args(argc, argv, &o), world;
  if (rc) return rc < 0 ? convert_usage(0) : rc;
  MPI_Init(NULL, NULL);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world > 1) {
    fprintf(stderr, "rlpt: convert runs as one process (it was started on %d ranks)\n", world);
    rc = 2;
  } else {
    rc = model_convert(&o);
  }
  MPI_Finalize();
  return rc;
}
