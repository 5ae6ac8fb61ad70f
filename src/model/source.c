/* model/source.c: one loader for the MODEL of rlpt eval, score and convert (model/source.h). */
#include "model/source.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/ckpt.h"
#include "io/model_h5.h"
#include "io/safetensors.h"
#include "util/alloc.h"

static void set_from(struct model_source *ms, const char *path, const char *what) {
  snprintf(ms->path, sizeof ms->path, "%s", path);
  snprintf(ms->from, sizeof ms->from, "%.4000s (%.190s)", path, what);
}

/* A checkpoint file, or a directory's latest, through ckpt_read's validation (it prints). */
static int load_ckpt(const char *in, int is_dir, struct model_source *ms) {
  struct ckpt_state st;
  char path[4096], what[512];
  snprintf(path, sizeof path, "%s", in);
  int rc = is_dir ? ckpt_read_latest(in, &st, NULL, MPI_COMM_SELF, path, sizeof path)
                  : ckpt_read(path, &st, NULL, MPI_COMM_SELF);
  if (rc) return rc;
  ckpt_describe(&st, what, sizeof what);
  set_from(ms, path, what);
  ms->kind = MODEL_SRC_CKPT;
  ms->mc = st.mc;
  ms->params = st.params;
  ms->step = st.step;
  ms->weight_version = st.weight_version;
  st.params = NULL;
  ckpt_state_free(&st);
  return 0;
}

/* An rlpt model file (model_h5 prints its messages). */
static int load_h5(const char *in, struct model_source *ms) {
  struct param_table t;
  int rc = model_h5_read_config(in, &ms->mc);
  if (rc) return rc;
  param_table_build(&t, &ms->mc);
  ms->params = malloc_check(t.total * sizeof *ms->params);
  rc = model_h5_read_params(in, &t, ms->params);
  param_table_free(&t);
  ms->kind = MODEL_SRC_H5;
  set_from(ms, in, "model file");
  return rc;
}

/* A Hugging Face directory or a GGUF file; 0, or 2 with the reason in err. */
static int load_hf_gguf(const char *in, int hf, struct model_source *ms, char *err, size_t errlen) {
  struct param_table t;
  int rc;
  if (hf) {
    rc = st_dir_load(in, &ms->mc, &t, &ms->params, err, errlen);
  } else {
    ms->gguf = calloc_check(1, sizeof *ms->gguf);
    rc = gguf_open(ms->gguf, in, err, errlen);
    if (!rc) rc = gguf_model_load(ms->gguf, &ms->mc, &t, &ms->params, err, errlen);
  }
  if (rc) return 2;
  param_table_free(&t);
  ms->kind = hf ? MODEL_SRC_HF : MODEL_SRC_GGUF;
  set_from(ms, in, hf ? "safetensors directory" : "GGUF");
  return 0;
}

/* What a file's first bytes say it is: 'h' HDF5, 'g' GGUF, 0 neither. */
static int file_magic(const char *path) {
  unsigned char magic[8] = {0};
  FILE *fp = fopen(path, "rb");
  size_t got = fp ? fread(magic, 1, sizeof magic, fp) : 0;
  if (fp) fclose(fp);
  if (got == 8 && !memcmp(magic, "\x89HDF\r\n\x1a\n", 8)) return 'h';
  if (got >= 4 && !memcmp(magic, "GGUF", 4)) return 'g';
  return 0;
}

int model_source_load(const char *src, const char *cmd, const char *opt, struct model_source *ms) {
  char err[1024] = "", cfg_json[4200];
  struct stat sb;
  memset(ms, 0, sizeof *ms);
  int hf = !strncmp(src, "hf:", 3), gg = !strncmp(src, "gguf:", 5), rc;
  const char *path = src + (hf ? 3 : gg ? 5 : 0);
  if (stat(path, &sb)) {
    fprintf(stderr, "rlpt: %s: %s%s%s: no such file or directory\n", cmd, opt ? opt : "", opt ? " " : "", src);
    return 2;
  }
  snprintf(cfg_json, sizeof cfg_json, "%s/config.json", path);
  int is_dir = S_ISDIR(sb.st_mode), magic = is_dir ? 0 : file_magic(path);
  if (hf || (is_dir && !access(cfg_json, F_OK))) rc = load_hf_gguf(path, 1, ms, err, sizeof err);
  else if (gg || magic == 'g') rc = load_hf_gguf(path, 0, ms, err, sizeof err);
  else if (is_dir) return load_ckpt(path, 1, ms);
  else if (magic == 'h') return ckpt_probe(path, 1) ? load_h5(path, ms) : load_ckpt(path, 0, ms);
  else {
    snprintf(err, sizeof err, "%s: not an HDF5 model/checkpoint, GGUF file or safetensors directory "
             "(for safetensors pass the directory with config.json)", path);
    rc = 2;
  }
  if (rc == 2) fprintf(stderr, "rlpt: %s: %s\n", cmd, err);
  return rc;
}

void model_source_init(const struct model_source *ms, char *init, size_t len) {
  if (ms->kind == MODEL_SRC_HF || ms->kind == MODEL_SRC_GGUF)
    snprintf(init, len, "%s%s", ms->kind == MODEL_SRC_HF ? "hf:" : "gguf:", ms->path);
  else if (len)
    init[0] = '\0';
}

void model_source_free(struct model_source *ms) {
  free(ms->params);
  if (ms->gguf) gguf_close(ms->gguf);
  free(ms->gguf);
  ms->params = NULL;
  ms->gguf = NULL;
}
