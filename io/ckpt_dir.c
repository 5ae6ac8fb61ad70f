/* io/ckpt_dir.c: the checkpoint directory (file names, `latest`, fsync, pruning,
 * resolving a restart) and the helpers the writer and the reader share.
 *
 * A checkpoint is complete when DIR/step_%08d.h5 exists: the writer only
 * renames a verified, fsynced file to that name. `latest` is one line naming
 * such a file; it is replaced by write-fsync-rename, so a crash leaves either
 * the old or the new pointer, never a torn one. */
#include "io/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deck/config.h"

void ckpt_step_path(const char *dir, long step, char *buf, size_t len) {
  snprintf(buf, len, "%s/step_%08ld.h5", dir, step);
}

void ckpt_rows_even(const struct param_table *t, int rank, int size, struct ckpt_rows *out) {
  for (int i = 0; i < t->n; i++) {
    long rows = t->e[i].rows;
    long a = rows * rank / size, b = rows * (rank + 1) / size;
    out[i].row0 = a;
    out[i].nrows = b - a;
  }
}

int ckpt_groups(const struct ckpt_state *st, const struct param_table *t,
                const struct param_table *ct, struct ckpt_group out[CKPT_GROUPS_MAX]) {
  int n = 0;
  out[n++] = (struct ckpt_group){.name = "model", .t = t, .buf = st->params};
  if (st->has_optim) {
    out[n++] = (struct ckpt_group){.name = "optim/m", .t = t, .buf = st->adam_m};
    out[n++] = (struct ckpt_group){.name = "optim/v", .t = t, .buf = st->adam_v};
  }
  if (st->has_ref) out[n++] = (struct ckpt_group){.name = "ref", .t = t, .buf = st->ref_params};
  if (st->has_critic) out[n++] = (struct ckpt_group){.name = "critic", .t = ct, .buf = st->critic_params};
  if (st->has_critic && st->has_critic_optim) {
    out[n++] = (struct ckpt_group){.name = "critic_optim/m", .t = ct, .buf = st->critic_adam_m};
    out[n++] = (struct ckpt_group){.name = "critic_optim/v", .t = ct, .buf = st->critic_adam_v};
  }
  return n;
}

int ckpt_fsync_path(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  int saved = errno;
  close(fd);
  errno = saved;
  return rc;
}

int ckpt_mkdirs(const char *dir) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0777) && errno != EEXIST) return -1;
    *s = '/';
  }
  if (mkdir(p, 0777) && errno != EEXIST) return -1;
  struct stat sb;
  if (stat(p, &sb)) return -1;
  if (!S_ISDIR(sb.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

int ckpt_latest_prepare(const char *dir, const char *name) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s/latest.tmp", dir);
  errno = 0;
  FILE *f = fopen(tmp, "w");
  if (!f) return -1;
  int bad = fprintf(f, "%s\n", name) < 0, saved = 0;
  if (!bad && fflush(f)) bad = 1, saved = errno;
  if (!bad && fsync(fileno(f))) bad = 1, saved = errno;
  if (fclose(f) && !bad) bad = 1, saved = errno;
  if (bad) {
    unlink(tmp);
    errno = saved ? saved : EIO;
    return -1;
  }
  return 0;
}

int ckpt_latest_commit(const char *dir) {
  char tmp[4096], dst[4096];
  snprintf(tmp, sizeof tmp, "%s/latest.tmp", dir);
  snprintf(dst, sizeof dst, "%s/latest", dir);
  if (rename(tmp, dst)) {
    int saved = errno;
    unlink(tmp);
    errno = saved;
    return -1;
  }
  return ckpt_fsync_path(dir);
}

void ckpt_latest_discard(const char *dir) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s/latest.tmp", dir);
  unlink(tmp);
}

int ckpt_latest_update(const char *dir, const char *name) {
  return ckpt_latest_prepare(dir, name) ? -1 : ckpt_latest_commit(dir);
}

/* step of a name "step_%08d.h5" (complete files only), or -1. */
static long step_of(const char *name) {
  size_t n = strlen(name);
  if (n < 9 || strncmp(name, "step_", 5) || strcmp(name + n - 3, ".h5")) return -1;
  long step = 0;
  for (size_t i = 5; i < n - 3; i++) {
    if (name[i] < '0' || name[i] > '9' || step > 100000000000L) return -1;
    step = step * 10 + (name[i] - '0');
  }
  return n - 8 >= 8 ? step : -1;
}

static int cmp_desc(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x < y) - (x > y);
}

long *ckpt_list_steps(const char *dir, int *n) {
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  int cap = 16;
  long *steps = malloc(sizeof *steps * (size_t)cap);
  struct dirent *de;
  while (steps && (de = readdir(d))) {
    long s = step_of(de->d_name);
    if (s < 0) continue;
    if (*n == cap) {
      long *grown = realloc(steps, sizeof *steps * (size_t)(cap *= 2));
      if (!grown) break;
      steps = grown;
    }
    steps[(*n)++] = s;
  }
  closedir(d);
  if (steps) qsort(steps, (size_t)*n, sizeof *steps, cmp_desc);
  return steps;
}

void ckpt_prune(const char *dir, int keep, long current) {
  int n, kept = 1; /* current */
  long *steps = ckpt_list_steps(dir, &n);
  for (int i = 0; i < n; i++) {
    if (steps[i] == current) continue;
    if (kept++ < keep) continue;
    char p[4096];
    ckpt_step_path(dir, steps[i], p, sizeof p);
    if (unlink(p)) fprintf(stderr, "rlpt: warning: cannot delete old checkpoint %s: %s\n", p,
                           strerror(errno));
  }
  free(steps);
}

int ckpt_probe(const char *path, int quiet) {
  struct h5_quiet q;
  h5_quiet_begin(&q);
  htri_t is = H5Fis_hdf5(path);
  hid_t f = is > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
  int rc = 2, version = -1;
  if (is < 0) {
    if (!quiet) fprintf(stderr, "rlpt: %s: cannot open the checkpoint: %s\n", path,
                        access(path, R_OK) ? strerror(errno) : "unreadable");
  } else if (is == 0) {
    if (!quiet) fprintf(stderr, "rlpt: %s: not an HDF5 file\n", path);
  } else if (f < 0) {
    if (!quiet) fprintf(stderr, "rlpt: %s: cannot open as HDF5 (truncated or damaged file)\n", path);
  } else if (H5Aexists_by_name(f, "meta", "step", H5P_DEFAULT) <= 0 ||
             H5Aexists_by_name(f, "meta", "format_version", H5P_DEFAULT) <= 0) {
    if (!quiet) fprintf(stderr, "rlpt: %s: not an rlpt checkpoint (no /meta step and "
                        "format_version attributes)\n", path);
  } else {
    hid_t a = H5Aopen_by_name(f, "meta", "format_version", H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0 && H5Aread(a, H5T_NATIVE_INT, &version) >= 0 && version == CKPT_FORMAT_VERSION)
      rc = 0;
    else if (!quiet)
      fprintf(stderr, "rlpt: %s: /meta format_version is %d, this build reads %d\n", path,
              version, CKPT_FORMAT_VERSION);
    if (a >= 0) H5Aclose(a);
  }
  if (f >= 0) H5Fclose(f);
  h5_quiet_end(&q);
  return rc;
}

/* The file DIR/latest names, into out; 0 or -1 (missing or malformed). */
static int latest_read(const char *dir, char *out, size_t len) {
  char p[4096], name[256];
  snprintf(p, sizeof p, "%s/latest", dir);
  FILE *f = fopen(p, "r");
  if (!f) return -1;
  int ok = fgets(name, sizeof name, f) != NULL;
  fclose(f);
  if (!ok) return -1;
  name[strcspn(name, "\r\n")] = '\0';
  if (step_of(name) < 0) return -1;
  snprintf(out, len, "%s/%s", dir, name);
  return 0;
}

int ckpt_resolve(const char *dir_or_path, const char *which, char *out, size_t len) {
  struct stat sb;
  const char *dir = dir_or_path;
  if (which && *which && strcmp(which, "latest")) {
    if (stat(which, &sb) || !S_ISDIR(sb.st_mode)) {
      snprintf(out, len, "%s", which);
      return ckpt_probe(out, 0);
    }
    dir = which;
  }
  if (!latest_read(dir, out, len) && !ckpt_probe(out, 0)) return 0;
  int n;
  long *steps = ckpt_list_steps(dir, &n);
  fprintf(stderr, "rlpt: warning: %s/latest does not name a readable checkpoint; "
          "looking for the newest valid step_*.h5 in %s\n", dir, dir);
  for (int i = 0; i < n; i++) {
    ckpt_step_path(dir, steps[i], out, len);
    if (!ckpt_probe(out, 0)) {
      fprintf(stderr, "rlpt: warning: using %s\n", out);
      free(steps);
      return 0;
    }
  }
  free(steps);
  fprintf(stderr, "rlpt: %s: no valid checkpoint (step_*.h5) to restart from\n", dir);
  return 2;
}

int ckpt_on_error(const struct config *cfg, int rc, int rank) {
  if (!rc) return 0;
  if (cfg->checkpoint.on_error == CKPT_ON_ERROR_CONTINUE) {
    if (rank == 0) fprintf(stderr, "rlpt: warning: continuing without this checkpoint "
                           "([checkpoint] on_error = continue)\n");
    return 0;
  }
  if (rank == 0) fprintf(stderr, "rlpt: stopping: the checkpoint could not be written "
                         "([checkpoint] on_error = abort)\n");
  return 1;
}

void ckpt_describe(const struct ckpt_state *st, char *buf, size_t len) {
  int n = snprintf(buf, len, "step %ld (weight_version %ld): %zu params", st->step,
                   st->weight_version, model_param_count(&st->mc));
  if (st->has_optim && n >= 0 && (size_t)n < len)
    n += snprintf(buf + n, len - (size_t)n, ", AdamW t=%ld lr=%g", st->adam_t, st->lr);
  if (st->has_ref && n >= 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, ", ref");
  if (st->has_critic && n >= 0 && (size_t)n < len)
    n += snprintf(buf + n, len - (size_t)n, ", critic %zu params", model_param_count(&st->critic_mc));
  if (n >= 0 && (size_t)n < len)
    n += snprintf(buf + n, len - (size_t)n, ", %d rng counters, data cursor %llu epoch %llu, "
                  "%d controller sums", st->n_rng, (unsigned long long)st->data.cursor,
                  (unsigned long long)st->data.epoch, st->n_ctrl);
  if (st->has_buffer && n >= 0 && (size_t)n < len)
    n += snprintf(buf + n, len - (size_t)n, ", buffer %zu bytes", st->buffer_len);
  if (st->has_difficulty && n >= 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, ", difficulty filter %zu bytes", st->difficulty_len);
}

int ckpt_deck_text(const struct config *cfg, char **deck, char **used_keys) {
  size_t n1 = 0, n2 = 0;
  FILE *f1 = open_memstream(deck, &n1), *f2 = open_memstream(used_keys, &n2);
  if (!f1 || !f2) {
    if (f1) fclose(f1);
    if (f2) fclose(f2);
    return 1;
  }
  config_write_canonical(cfg, f1);
  for (int i = 0; i < cfg_schema_len; i++)
    if (cfg->src[i]) fprintf(f2, "%s.%s\n", cfg_schema[i].section, cfg_schema[i].name);
  int bad = fclose(f1) | fclose(f2);
  return bad ? 1 : 0;
}

void ckpt_state_free(struct ckpt_state *st) {
  if (st->owned) {
    free(st->params);
    free(st->adam_m);
    free(st->adam_v);
    free(st->ref_params);
    free(st->critic_params);
    free(st->critic_adam_m);
    free(st->critic_adam_v);
    free(st->deck);
    free(st->used_keys);
    free(st->buffer);
    free(st->difficulty);
  }
  memset(st, 0, sizeof *st);
}
