/* cmd_convert.c: `rlpt convert CKPT --out MODEL.h5` writes the model of a
 * checkpoint as a standalone weights file in the io/model_h5.h layout (what
 * `rlpt score` and `[model] init` read). CKPT is a step_*.h5 file or a
 * checkpoint directory (its `latest`, with the fallback of ckpt_resolve). The
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
  char path[4096];
  struct stat sb;
  int is_dir = !stat(ckpt, &sb) && S_ISDIR(sb.st_mode);
  int rc = is_dir ? ckpt_resolve(ckpt, "latest", path, sizeof path) : 0;
  if (!is_dir) snprintf(path, sizeof path, "%s", ckpt);
  struct ckpt_state st;
  if (!rc) rc = ckpt_read(path, &st, NULL, MPI_COMM_SELF);
  if (rc) return rc;
  rc = model_h5_write(out, &st.mc, st.params);
  if (rc) unlink(out);
  else
    printf("rlpt: wrote %s from %s (step %ld, weight_version %ld): %zu parameters\n", out, path,
           st.step, st.weight_version, model_param_count(&st.mc));
  ckpt_state_free(&st);
  return rc;
}

int cmd_convert(int argc, char **argv) {
  const char *ckpt, *out;
  int rc = convert_args(argc, argv, &ckpt, &out);
  if (rc) return rc < 0 ? convert_usage(0) : rc;
  MPI_Init(NULL, NULL);
  rc = convert_run(ckpt, out);
  MPI_Finalize();
  return rc;
}
