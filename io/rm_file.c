/* io/rm_file.c: the reward model's file ([reward] rm_path) resolved and read for its
 * metadata (see io/rm_file.h). */
#include "io/rm_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "io/ckpt.h"
#include "io/model_h5.h"

/* A PPO checkpoint's /critic config (attribute model_config of /critic); 0 when it has one. */
static int critic_config(hid_t f, struct model_config *mc) {
  if (H5Lexists(f, "critic", H5P_DEFAULT) <= 0 ||
      H5Aexists_by_name(f, "critic", "model_config", H5P_DEFAULT) <= 0)
    return -1;
  hid_t a = H5Aopen_by_name(f, "critic", "model_config", H5P_DEFAULT, H5P_DEFAULT);
  char *json = a >= 0 ? h5_read_string_attr(a) : NULL, err[256];
  if (a >= 0) H5Aclose(a);
  int rc = json && model_config_from_json(mc, json, err, sizeof err) == 0 ? 0 : -1;
  free(json);
  return rc;
}

/* The file behind rm_path (a directory means the checkpoint its `latest` names). 0 or 2. */
static int resolve_file(const char *path, char *out, size_t len, char *err, size_t errlen) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    snprintf(err, errlen, "[reward] rm_path: '%s' does not exist", path);
    return 2;
  }
  if (!S_ISDIR(sb.st_mode)) {
    snprintf(out, len, "%s", path);
    return 0;
  }
  if (ckpt_resolve(path, NULL, out, len) != 0) {
    snprintf(err, errlen, "[reward] rm_path: the directory '%s' holds no readable checkpoint", path);
    return 2;
  }
  return 0;
}

/* The config and group of the value-head model in rf->file, open in f ("model", else a PPO
 * "critic"), checked against the policy. 0 or 2. */
static int pick_model(hid_t f, int vocab, int need_seq, struct rm_file *rf, char *err,
                      size_t errlen) {
  const char *file = rf->file;
  struct model_config *mc = &rf->mc;
  if (h5_meta_read_config(f, mc, file) != 0) {
    snprintf(err, errlen, "[reward] rm_path: '%s' is not an rlpt model file or checkpoint (no valid "
             "/meta model_config; see the message above)", file);
    return 2;
  }
  rf->group = "model";
  struct model_config cm;
  if (!mc->value_head && critic_config(f, &cm) == 0 && cm.value_head) {
    *mc = cm;
    rf->group = "critic";
  }
  if (!mc->value_head) {
    snprintf(err, errlen, "[reward] rm_path: the model in '%s' has no value head (score.weight); a reward "
             "model needs one: e.g. rlpt init DECK --out rm.h5 model.value_head=true, or a PPO "
             "checkpoint (its critic)", file);
    return 2;
  }
  if (mc->vocab_size != vocab) {
    snprintf(err, errlen, "[reward] rm_path: the reward model in '%s' has vocab_size %d, the policy %d: it "
             "must share the policy's tokenizer", file, mc->vocab_size, vocab);
    return 2;
  }
  if (mc->max_seq < need_seq) {
    snprintf(err, errlen, "[reward] rm_path: the reward model in '%s' has max_seq %d, shorter than the "
             "policy's [model] max_seq = %d (the longest prompt + response it must score)", file,
             mc->max_seq, need_seq);
    return 2;
  }
  return 0;
}


int rm_file_open(const char *rm_path, int vocab, int need_seq, struct rm_file *rf, hid_t *f,
                 char *err, size_t errlen) {
  int rc = resolve_file(rm_path, rf->file, sizeof rf->file, err, errlen);
  if (rc) return rc;
  struct h5_quiet q;
  h5_quiet_begin(&q);
  *f = H5Fopen(rf->file, H5F_ACC_RDONLY, H5P_DEFAULT);
  h5_quiet_end(&q);
  if (*f < 0) {
    snprintf(err, errlen, "[reward] rm_path: cannot open '%s' as an HDF5 model file", rf->file);
    return 2;
  }
  rc = pick_model(*f, vocab, need_seq, rf, err, errlen);
  if (rc) H5Fclose(*f);
  return rc;
}

int rm_file_check(const char *rm_path, int vocab, int need_seq, struct rm_file *rf, char *err,
                  size_t errlen) {
  hid_t f;
  int rc = rm_file_open(rm_path, vocab, need_seq, rf, &f, err, errlen);
  if (!rc) H5Fclose(f);
  return rc;
}
