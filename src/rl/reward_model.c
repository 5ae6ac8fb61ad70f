/* rl/reward_model.c: load a value-head model as the reward model and score packed
 * prompt + response sequences at their final token (see rl/reward_model.h). */
#include "rl/reward_model.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/model_h5.h"
#include "io/rm_file.h"
#include "rl/experience.h"
#include "util/error.h"

static int alloc_buffers(struct reward_model *rm) {
  size_t b = (size_t)rm->budget;
  rm->tokens = malloc(sizeof(int) * b);
  rm->cu = calloc(b + 1, sizeof(int));
  rm->val = malloc(sizeof(float) * b);
  return rm->tokens && rm->cu && rm->val ? 0 : 1;
}

/* rm_path's file (into file[flen]) open in *f, with its value-head model's config and group
 * checked against the policy (io/rm_file.h rm_file_open). 0 (f open), or 2 with a message
 * (nothing open). */
static int open_checked(const char *path, int vocab, int need_seq, char *file, size_t flen, hid_t *f,
                        struct model_config *mc, const char **group, char *err, size_t errlen) {
  struct rm_file rf;
  int rc = rm_file_open(path, vocab, need_seq, &rf, f, err, errlen);
  if (rc) return rc;
  snprintf(file, flen, "%s", rf.file);
  *mc = rf.mc;
  *group = rf.group;
  return 0;
}

int reward_model_check(const char *path, int vocab, int need_seq, struct model_config *mc,
                       char *err, size_t errlen) {
  struct rm_file rf;
  int rc = rm_file_check(path, vocab, need_seq, &rf, err, errlen);
  if (!rc && mc) *mc = rf.mc;
  return rc;
}

int reward_model_load_on(struct reward_model *rm, const struct backend_ops *ops, const char *path,
                         int vocab, int need_seq, int budget, char *err, size_t errlen) {
  memset(rm, 0, sizeof *rm);
  hid_t f;
  struct model_config mc;
  int rc = open_checked(path, vocab, need_seq, rm->path, sizeof rm->path, &f, &mc, &rm->group, err, errlen);
  if (rc) return rc;
  rm->budget = budget > need_seq ? budget : need_seq;
  if (model_create_forward(&rm->m, &mc, rm->budget, ops) != 0) {
    snprintf(err, errlen, "[reward] rm_path: out of memory for the reward model (%zu parameters, "
             "[reward] rm_batch_tokens = %d)", model_param_count(&mc), rm->budget);
    rc = 1;
  }
  if (!rc && h5_params_read(f, rm->group, &rm->m.table, rm->m.params, rm->path) != 0) {
    snprintf(err, errlen, "[reward] rm_path: cannot read the weights /%s of '%s' (see the message above)",
             rm->group, rm->path);
    rc = 2;
  }
  H5Fclose(f);
  if (!rc && alloc_buffers(rm) != 0) {
    snprintf(err, errlen, "out of memory for the reward model's batch");
    rc = 1;
  }
  if (rc) reward_model_free(rm);
  return rc;
}

int reward_model_load(struct reward_model *rm, const char *path, int vocab, int need_seq, int budget,
                      char *err, size_t errlen) {
  return reward_model_load_on(rm, &cpu_backend, path, vocab, need_seq, budget, err, errlen);
}

void reward_model_free(struct reward_model *rm) {
  if (rm->m.params) model_free(&rm->m);
  free(rm->tokens);
  free(rm->cu);
  free(rm->val);
  memset(rm, 0, sizeof *rm);
}

/* Append seqs[i] to the pending batch; 0, or -1 with a message for a sequence no batch takes. */
static int pack_one(struct reward_model *rm, const struct rm_seq *s, int i, int nseq, char *err,
                    size_t errlen) {
  int len = s->na + s->nb, lim = rm->budget < rm->m.cfg.max_seq ? rm->budget : rm->m.cfg.max_seq;
  if (len < 1 || len > lim) {
    snprintf(err, errlen, "reward model: sequence %d has %d tokens (1..%d allowed: rm_batch_tokens %d, "
             "max_seq %d)", i, len, lim, rm->budget, rm->m.cfg.max_seq);
    return -1;
  }
  int *t = rm->tokens + rm->cu[nseq];
  if (s->na) memcpy(t, s->a, sizeof(int) * (size_t)s->na);
  if (s->nb) memcpy(t + s->na, s->b, sizeof(int) * (size_t)s->nb);
  for (int k = 0; k < len; k++)
    if (t[k] < 0 || t[k] >= rm->m.cfg.vocab_size) {
      snprintf(err, errlen, "reward model: sequence %d: token %d at %d is outside 0..%d", i, t[k], k,
               rm->m.cfg.vocab_size - 1);
      return -1;
    }
  rm->cu[nseq + 1] = rm->cu[nseq] + len;
  return 0;
}

int reward_model_score(struct reward_model *rm, const struct rm_seq *seqs, int n, double *out, char *err,
                       size_t errlen) {
  for (int i = 0; i < n;) {
    int nseq = 0;
    rm->cu[0] = 0;
    while (i + nseq < n && rm->cu[nseq] + seqs[i + nseq].na + seqs[i + nseq].nb <= rm->budget) {
      if (pack_one(rm, &seqs[i + nseq], i + nseq, nseq, err, errlen) != 0) return -1;
      nseq++;
    }
    if (nseq == 0 && pack_one(rm, &seqs[i], i, 0, err, errlen) != 0) return -1; /* too long: says so */
    if (model_forward(&rm->m, rm->tokens, rm->cu, nseq, NULL, NULL, rm->val) != 0) {
      snprintf(err, errlen, "reward model: the forward over %d sequences failed", nseq);
      return -1;
    }
    for (int s = 0; s < nseq; s++) out[i + s] = (double)rm->val[rm->cu[s + 1] - 1];
    i += nseq;
  }
  return 0;
}

double *reward_model_score_samples(struct reward_model *rm, const struct sample_batch *b, char *err,
                                   size_t errlen) {
  double *out = calloc((size_t)b->n + 1, sizeof *out);
  struct rm_seq *seqs = calloc((size_t)b->n + 1, sizeof *seqs);
  if (!out || !seqs) {
    snprintf(err, errlen, "out of memory scoring %d samples with the reward model", b->n);
    free(out);
    free(seqs);
    return NULL;
  }
  for (int k = 0; k < b->n; k++) {
    const struct sample *s = &b->s[k];
    seqs[k] = (struct rm_seq){.a = (const int *)s->prompt, .na = s->n_prompt,
                              .b = (const int *)s->resp, .nb = s->n_resp};
  }
  int rc = reward_model_score(rm, seqs, b->n, out, err, errlen);
  free(seqs);
  if (rc) {
    free(out);
    return NULL;
  }
  return out;
}
