/* cmd_convert.c: `rlpt convert CKPT --out MODEL.h5` writes the model of a
 * checkpoint as a standalone weights file in the io/model_h5.h layout (what
 * `rlpt score` and `[model] init` read). CKPT is a step_*.h5 file or a
 * checkpoint directory (its `latest`, with the fallback of ckpt_read_latest). The
 * checkpoint is fully validated first (CRCs included); a bad one exits 2 with
 * one message and leaves no output file. Runs as a single MPI process. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "model_h5.h"

static int convert_usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: rlpt convert CKPT --out MODEL.h5\n"
          "  CKPT: a checkpoint file (step_*.h5) or a checkpoint directory (uses its latest)\n"
          "  writes the checkpoint's /model as a standalone weights file\n");
  return rc;
}

/* 0 with *ckpt and *out set, -1 for --help, or 2. */
static int convert_args(int argc, char **argv, const char **ckpt, const char **out) {
  *ckpt = *out = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return -1;
    if (!strcmp(argv[i], "--out") && i + 1 < argc) *out = argv[++i];
    else if (argv[i][0] != '-' && !*ckpt) *ckpt = argv[i];
    else {
      fprintf(stderr, "rlpt: convert: unexpected argument '%s'\n", argv[i]);
      return convert_usage(2);
    }
  }
  if (!*ckpt || !*out) return convert_usage(2);
  return 0;
}

static int convert_run(const char *ckpt, const char *out) {
  char path[4096], what[512];
  struct stat sb;
  struct ckpt_state st;
  int rc;
  if (!stat(ckpt, &sb) && S_ISDIR(sb.st_mode)) {
    rc = ckpt_read_latest(ckpt, &st, NULL, MPI_COMM_SELF, path, sizeof path);
  } else {
    snprintf(path, sizeof path, "%s", ckpt);
    rc = ckpt_read(path, &st, NULL, MPI_COMM_SELF);
  }
  if (rc) return rc;
  rc = model_h5_write(out, &st.mc, st.params);
  ckpt_describe(&st, what, sizeof what);
  if (rc) unlink(out);
  else printf("rlpt: wrote %s from %s (%s)\n", out, path, what);
  ckpt_state_free(&st);
  return rc;
}

int cmd_convert(int argc, char **argv) {
  const char *ckpt, *out;
  int rc = convert_args(argc, argv, &ckpt, &out);
  if (rc) return rc < 0 ? convert_usage(0) : rc;
  MPI_Init(NULL, NULL);
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world > 1) {
    fprintf(stderr, "rlpt: convert runs as one process (it was started on %d ranks)\n", world);
    rc = 2;
  } else {
    rc = convert_run(ckpt, out);
  }
  MPI_Finalize();
  return rc;
}
