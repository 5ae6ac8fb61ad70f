/* io/rm_file.h: the reward model's file ([reward] rm_path), read for its metadata only
 * (never the weights) by the run's reward model (rl/reward_model.c) and by `rlpt plan`.
 *
 * rm_path names a model file with a value head (score.weight), a checkpoint file (its
 * /model when that has a value head, else its PPO /critic, io/ckpt.h), or a checkpoint
 * directory (the file its `latest` names). The model must share the policy's tokenizer
 * (same vocab_size) and take the policy's longest sequence (max_seq at least need_seq).
 * Messages name [reward] rm_path. */
#ifndef RLPT_RM_FILE_H
#define RLPT_RM_FILE_H

#include <hdf5.h>
#include <stddef.h>

#include "model/params.h"

#define RM_FILE_PATH_MAX 4200

struct rm_file {
  char file[RM_FILE_PATH_MAX];  /* the HDF5 file rm_path names */
  const char *group;            /* "model" or "critic": where its weights are */
  struct model_config mc;       /* the reward model's config */
};

/* rm_path's file open read-only in *f and described in *rf, checked against a policy of
 * vocab tokens and sequences up to need_seq tokens. 0 (f open), or 2 with a message in
 * err (nothing open). */
int rm_file_open(const char *rm_path, int vocab, int need_seq, struct rm_file *rf, hid_t *f,
                 char *err, size_t errlen);
/* The same checks, with the file closed again: 0 or 2. */
int rm_file_check(const char *rm_path, int vocab, int need_seq, struct rm_file *rf, char *err,
                  size_t errlen);

#endif
