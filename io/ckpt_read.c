/* io/ckpt_read.c: reading and validating a checkpoint (see ckpt.h).
 *
 * Rank 0 opens the file serially, validates it step by step (HDF5 at all, the
 * format version, the model config against the deck, every dataset present with
 * its shape, every crc32) and reads the full logical tensors; then the ranks
 * agree on the result and rank 0 broadcasts the state. One message, from rank 0,
 * names the file and the dataset; the tensors are layout-independent, so any
 * number of ranks can restart from any checkpoint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/ckpt.h"
#include "io/crc32.h"
#include "mpi/wait.h"
#include "util/error.h"

/* The architecture fields that must match the deck (max_seq and init_std may change). */
static int config_compare(const char *path, const struct model_config *a,
                          const struct model_config *want) {
#define CMP_INT(f) if (a->f != want->f) { \
    fprintf(stderr, "rlpt: %s: the checkpoint's model differs from the deck: " #f " is %d in the " \
            "checkpoint, %d in the deck\n", path, a->f, want->f); return 2; }
#define CMP_DBL(f) if (a->f != want->f) { \
    fprintf(stderr, "rlpt: %s: the checkpoint's model differs from the deck: " #f " is %g in the " \
            "checkpoint, %g in the deck\n", path, a->f, want->f); return 2; }
  CMP_INT(vocab_size) CMP_INT(dim) CMP_INT(layers) CMP_INT(heads) CMP_INT(kv_heads)
  CMP_INT(ffn_dim) CMP_INT(tie_embeddings) CMP_INT(qkv_bias) CMP_INT(value_head)
  CMP_DBL(rope_theta) CMP_DBL(norm_eps)
#undef CMP_INT
#undef CMP_DBL
  return 0;
}

static int attr_i64(hid_t f, const char *obj, const char *name, int64_t *v, const char *path) {
  hid_t a = H5Aexists_by_name(f, obj, name, H5P_DEFAULT) > 0
                ? H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int bad = a < 0 || H5Aread(a, H5T_NATIVE_INT64, v) < 0;
  if (a >= 0) H5Aclose(a);
  if (bad) fprintf(stderr, "rlpt: %s: missing or unreadable attribute %s of /%s\n", path, name, obj);
  return bad ? 2 : 0;
}

static int attr_f64(hid_t f, const char *obj, const char *name, double *v, const char *path) {
  hid_t a = H5Aexists_by_name(f, obj, name, H5P_DEFAULT) > 0
                ? H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int bad = a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, v) < 0;
  if (a >= 0) H5Aclose(a);
  if (bad) fprintf(stderr, "rlpt: %s: missing or unreadable attribute %s of /%s\n", path, name, obj);
  return bad ? 2 : 0;
}

static char *attr_text(hid_t f, const char *obj, const char *name, const char *path) {
  hid_t a = H5Aexists_by_name(f, obj, name, H5P_DEFAULT) > 0
                ? H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT) : -1;
  char *s = a >= 0 ? h5_read_string_attr(a) : NULL;
  if (a >= 0) H5Aclose(a);
  if (!s) fprintf(stderr, "rlpt: %s: missing or non-string attribute %s of /%s\n", path, name, obj);
  return s;
}

/* The crc32 attribute of obj against the CRC of n bytes at p. */
static int crc_check(hid_t f, const char *obj, const void *p, size_t n, const char *path) {
  uint32_t stored = 0;
  hid_t a = H5Aexists_by_name(f, obj, "crc32", H5P_DEFAULT) > 0
                ? H5Aopen_by_name(f, obj, "crc32", H5P_DEFAULT, H5P_DEFAULT) : -1;
  int bad = a < 0 || H5Aread(a, H5T_NATIVE_UINT32, &stored) < 0;
  if (a >= 0) H5Aclose(a);
  if (bad) {
    fprintf(stderr, "rlpt: %s: dataset %s has no crc32 attribute\n", path, obj);
    return 2;
  }
  uint32_t crc = crc32_bytes(0, p, n);
  if (crc != stored) {
    fprintf(stderr, "rlpt: %s: dataset %s: crc32 mismatch (stored 0x%08x, data 0x%08x): the file "
            "is corrupt\n", path, obj, (unsigned)stored, (unsigned)crc);
    return 2;
  }
  return 0;
}

/* One group of tensors into a fresh buffer, every dataset CRC-checked. */
static int group_read(hid_t f, const char *group, const struct param_table *t, float **buf,
                      const char *path) {
  *buf = malloc(sizeof(float) * (t->total ? t->total : 1));
  if (!*buf) {
    fprintf(stderr, "rlpt: %s: out of memory reading /%s\n", path, group);
    return 1;
  }
  int rc = h5_params_read(f, group, t, *buf, path);
  char obj[256];
  for (int i = 0; !rc && i < t->n; i++) {
    snprintf(obj, sizeof obj, "/%s/%s", group, t->e[i].name);
    rc = crc_check(f, obj, *buf + t->e[i].offset, sizeof(float) * t->e[i].numel, path);
  }
  return rc;
}

/* A 1-D dataset of at most max elements into out (malloc'd when *out is NULL). */
static int small_read(hid_t f, const char *name, hid_t mtype, size_t esize, size_t max, void **out,
                      size_t *n, const char *path) {
  char obj[64];
  snprintf(obj, sizeof obj, "/%s", name);
  hid_t ds = H5Lexists(f, name, H5P_DEFAULT) > 0 ? H5Dopen2(f, name, H5P_DEFAULT) : -1;
  hid_t sp = ds >= 0 ? H5Dget_space(ds) : -1;
  hsize_t dim = 0;
  int ok = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1;
  if (ok) H5Sget_simple_extent_dims(sp, &dim, NULL);
  int rc = 0;
  if (ds < 0) {
    fprintf(stderr, "rlpt: %s: missing dataset %s\n", path, obj);
    rc = 2;
  } else if (!ok || dim > max) {
    fprintf(stderr, "rlpt: %s: dataset %s has the wrong shape (expected [n], n <= %zu)\n", path,
            obj, max);
    rc = 2;
  } else {
    if (!*out) *out = malloc(esize * (size_t)(dim ? dim : 1));
    if (!*out) rc = 1;
    else if (dim && H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
      fprintf(stderr, "rlpt: %s: cannot read dataset %s\n", path, obj);
      rc = 2;
    }
    *n = (size_t)dim;
  }
  if (!rc) rc = crc_check(f, obj, *out, esize * (size_t)dim, path);
  if (sp >= 0) H5Sclose(sp);
  if (ds >= 0) H5Dclose(ds);
  return rc;
}

/* /controller names "a,b,c" into st->ctrl_name. */
static int ctrl_names_read(hid_t f, struct ckpt_state *st, const char *path) {
  char *names = attr_text(f, "controller", "names", path);
  if (!names) return 2;
  int n = 0;
  for (char *s = names, *tok; n < st->n_ctrl && (tok = strsep(&s, ",")); n++)
    snprintf(st->ctrl_name[n], CKPT_NAME_MAX, "%s", tok);
  free(names);
  if (n != st->n_ctrl) {
    fprintf(stderr, "rlpt: %s: /controller has %d values but %d names\n", path, st->n_ctrl, n);
    return 2;
  }
  return 0;
}

static int smalls_read(hid_t f, struct ckpt_state *st, const char *path) {
  size_t n = 0;
  void *p = st->rng;
  int rc = small_read(f, "rng", H5T_NATIVE_UINT64, 8, CKPT_RNG_MAX, &p, &n, path);
  st->n_rng = (int)n;
  uint64_t data[3];
  p = data;
  if (!rc) rc = small_read(f, "data", H5T_NATIVE_UINT64, 8, 3, &p, &n, path);
  if (!rc && n != 3) {
    fprintf(stderr, "rlpt: %s: dataset /data has the wrong shape (expected [3])\n", path);
    rc = 2;
  }
  st->data = (struct ckpt_data_cursor){.cursor = data[0], .epoch = data[1], .shuffle_seed = data[2]};
  p = st->ctrl;
  if (!rc) rc = small_read(f, "controller", H5T_NATIVE_DOUBLE, 8, CKPT_CTRL_MAX, &p, &n, path);
  st->n_ctrl = (int)n;
  if (!rc) rc = ctrl_names_read(f, st, path);
  st->has_buffer = !rc && H5Lexists(f, "buffer", H5P_DEFAULT) > 0;
  if (st->has_buffer) {
    p = NULL;
    rc = small_read(f, "buffer", H5T_NATIVE_UCHAR, 1, (size_t)1 << 40, &p, &st->buffer_len, path);
    st->buffer = p;
  }
  st->has_difficulty = !rc && H5Lexists(f, "difficulty", H5P_DEFAULT) > 0;
  if (st->has_difficulty) {
    p = NULL;
    rc = small_read(f, "difficulty", H5T_NATIVE_UCHAR, 1, (size_t)1 << 40, &p, &st->difficulty_len, path);
    st->difficulty = p;
  }
  return rc;
}

static int meta_read(hid_t f, struct ckpt_state *st, const struct model_config *expect,
                     const char *path) {
  int64_t step = 0, wv = 0;
  int rc = h5_meta_read_config(f, &st->mc, path);
  if (!rc && expect) rc = config_compare(path, &st->mc, expect);
  if (!rc) rc = attr_i64(f, "meta", "step", &step, path);
  if (!rc) rc = attr_i64(f, "meta", "weight_version", &wv, path);
  st->step = (long)step;
  st->weight_version = (long)wv;
  if (!rc && !(st->deck = attr_text(f, "meta", "deck", path))) rc = 2;
  if (!rc && !(st->used_keys = attr_text(f, "meta", "used_keys", path))) rc = 2;
  return rc;
}

static int critic_read(hid_t f, struct ckpt_state *st, const char *path) {
  char *json = attr_text(f, "critic", "model_config", path), err[256];
  int rc = json ? 0 : 2;
  if (!rc && model_config_from_json(&st->critic_mc, json, err, sizeof err)) {
    fprintf(stderr, "rlpt: %s: /critic model_config: %s\n", path, err);
    rc = 2;
  }
  free(json);
  if (!rc) {
    struct param_table ct;
    param_table_build(&ct, &st->critic_mc);
    rc = group_read(f, "critic", &ct, &st->critic_params, path);
    st->has_critic_optim = !rc && H5Lexists(f, "critic_optim", H5P_DEFAULT) > 0;
    if (st->has_critic_optim) {
      int64_t t = 0;
      rc = group_read(f, "critic_optim/m", &ct, &st->critic_adam_m, path);
      if (!rc) rc = group_read(f, "critic_optim/v", &ct, &st->critic_adam_v, path);
      if (!rc) rc = attr_i64(f, "critic_optim", "t", &t, path);
      st->critic_adam_t = (long)t;
    }
    param_table_free(&ct);
  }
  return rc;
}

/* Everything after /meta, with the table of st->mc. */
static int body_read(hid_t f, struct ckpt_state *st, const char *path) {
  struct param_table t;
  param_table_build(&t, &st->mc);
  int rc = group_read(f, "model", &t, &st->params, path);
  st->has_optim = !rc && H5Lexists(f, "optim", H5P_DEFAULT) > 0;
  if (st->has_optim) {
    int64_t adam_t = 0;
    rc = group_read(f, "optim/m", &t, &st->adam_m, path);
    if (!rc) rc = group_read(f, "optim/v", &t, &st->adam_v, path);
    if (!rc) rc = attr_i64(f, "optim", "t", &adam_t, path);
    if (!rc) rc = attr_f64(f, "optim", "lr", &st->lr, path);
    st->adam_t = (long)adam_t;
  }
  st->has_ref = !rc && H5Lexists(f, "ref", H5P_DEFAULT) > 0;
  if (st->has_ref) rc = group_read(f, "ref", &t, &st->ref_params, path);
  st->has_critic = !rc && H5Lexists(f, "critic", H5P_DEFAULT) > 0;
  if (st->has_critic) rc = critic_read(f, st, path);
  if (!rc) rc = smalls_read(f, st, path);
  param_table_free(&t);
  return rc;
}

/* Rank 0: the whole file into st (owned); 0, 1 or 2 with one message. */
static int file_read(const char *path, struct ckpt_state *st, const struct model_config *expect) {
  memset(st, 0, sizeof *st);
  st->owned = 1;
  if (ckpt_probe(path, 0)) return 2;
  struct h5_quiet q;
  h5_quiet_begin(&q);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  int rc = f < 0 ? 2 : meta_read(f, st, expect, path);
  if (f < 0) fprintf(stderr, "rlpt: %s: cannot open as HDF5 (truncated or damaged file)\n", path);
  if (!rc) rc = body_read(f, st, path);
  if (f >= 0 && H5Fclose(f) < 0 && !rc) {
    fprintf(stderr, "rlpt: %s: error closing the checkpoint\n", path);
    rc = 2;
  }
  h5_quiet_end(&q);
  return rc;
}

/* ---- broadcast ---------------------------------------------------------- */

static void bcast_bytes(void *p, size_t n, MPI_Comm comm) {
  const size_t chunk = (size_t)1 << 28;
  for (size_t off = 0; off < n; off += chunk) {
    size_t k = n - off < chunk ? n - off : chunk;
    MPI_CHECK(MPI_Bcast((char *)p + off, (int)k, MPI_BYTE, 0, comm));
  }
}

/* Allocates a buffer of n bytes on non-root ranks and broadcasts rank 0's. */
static int bcast_alloc(void **p, size_t n, int rank, MPI_Comm comm) {
  if (rank != 0) *p = malloc(n ? n : 1);
  if (error_agree(comm, *p ? 0 : 1)) return 1;
  bcast_bytes(*p, n, comm);
  return 0;
}

/* Rank 0's state to every rank (the others allocate). With sharded, the model's groups
 * (params, adam_m, adam_v, ref_params) are each rank's own already and stay. */
static int state_bcast(struct ckpt_state *st, int rank, MPI_Comm comm, int sharded) {
  float *own[4] = {st->params, st->adam_m, st->adam_v, st->ref_params};
  struct ckpt_state root = *st;
  bcast_bytes(&root, sizeof root, comm);
  size_t lens[2] = {st->deck ? strlen(st->deck) + 1 : 0, st->used_keys ? strlen(st->used_keys) + 1 : 0};
  bcast_bytes(lens, sizeof lens, comm);
  if (rank != 0) {
    *st = root;
    st->params = st->adam_m = st->adam_v = st->ref_params = st->critic_params = NULL;
    st->critic_adam_m = st->critic_adam_v = NULL;
    st->deck = st->used_keys = NULL;
    st->buffer = NULL;
    st->difficulty = NULL;
  }
  size_t n = sizeof(float) * model_param_count(&st->mc);
  size_t nc = st->has_critic ? sizeof(float) * model_param_count(&st->critic_mc) : 0;
  int rc = 0;
  if (sharded) {
    st->params = own[0];
    st->adam_m = own[1];
    st->adam_v = own[2];
    st->ref_params = own[3];
  } else {
    rc = bcast_alloc((void **)&st->params, n, rank, comm);
    if (!rc && st->has_optim) rc = bcast_alloc((void **)&st->adam_m, n, rank, comm);
    if (!rc && st->has_optim) rc = bcast_alloc((void **)&st->adam_v, n, rank, comm);
    if (!rc && st->has_ref) rc = bcast_alloc((void **)&st->ref_params, n, rank, comm);
  }
  if (!rc && st->has_critic) rc = bcast_alloc((void **)&st->critic_params, nc, rank, comm);
  if (!rc && st->has_critic && st->has_critic_optim) {
    rc = bcast_alloc((void **)&st->critic_adam_m, nc, rank, comm);
    if (!rc) rc = bcast_alloc((void **)&st->critic_adam_v, nc, rank, comm);
  }
  if (!rc && st->has_buffer) rc = bcast_alloc((void **)&st->buffer, st->buffer_len, rank, comm);
  if (!rc && st->has_difficulty)
    rc = bcast_alloc((void **)&st->difficulty, st->difficulty_len, rank, comm);
  if (!rc) rc = bcast_alloc((void **)&st->deck, lens[0], rank, comm);
  if (!rc) rc = bcast_alloc((void **)&st->used_keys, lens[1], rank, comm);
  return rc;
}

int ckpt_read(const char *path, struct ckpt_state *st, const struct model_config *expect,
              MPI_Comm comm) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  memset(st, 0, sizeof *st);
  st->owned = 1;
  int rc = rank == 0 ? file_read(path, st, expect) : 0;
  wait_barrier(comm); /* the others sleep, not spin, while rank 0 reads */
  rc = error_agree(comm, rc);
  if (!rc && state_bcast(st, rank, comm, 0)) {
    if (rank == 0) fprintf(stderr, "rlpt: %s: out of memory on a rank receiving the checkpoint\n",
                           path);
    rc = 1;
  }
  if (rc) ckpt_state_free(st);
  return rc;
}

/* ---- sharded reading (ckpt_read_sharded) ------------------------------- */

/* Rank 0: tensor i of /group into x (its numel floats), shape and crc32 checked. */
static int tensor_read(hid_t f, const char *group, const struct param_table *t, int i, float *x,
                       const char *path) {
  struct param_entry e1 = t->e[i];
  e1.offset = 0;
  struct param_table t1 = {.n = 1, .e = &e1, .total = e1.numel};
  int rc = h5_params_read(f, group, &t1, x, path);
  char obj[256];
  snprintf(obj, sizeof obj, "/%s/%s", group, e1.name);
  return rc ? rc : crc_check(f, obj, x, sizeof(float) * e1.numel, path);
}

/* The model's groups tensor by tensor: rank 0 reads each into x, broadcasts it, every rank
 * keeps its shard (sh->take) in a buffer of sh->local_total floats. Then rank 0 reads the
 * /optim attributes. 0, 1 or 2 on every rank (the rest of the state is rank 0's). */
static int shards_read(hid_t f, struct ckpt_state *st, int rank, MPI_Comm comm,
                       const struct ckpt_read_shards *sh, const char *path) {
  struct param_table t;
  param_table_build(&t, &st->mc);
  float *x = malloc(sizeof(float) * param_table_max_numel(&t));
  int has[2] = {0, 0};  /* /optim, /ref */
  if (rank == 0) {
    has[0] = H5Lexists(f, "optim", H5P_DEFAULT) > 0;
    has[1] = H5Lexists(f, "ref", H5P_DEFAULT) > 0;
  }
  MPI_CHECK(MPI_Bcast(has, 2, MPI_INT, 0, comm));
  st->has_optim = has[0];
  st->has_ref = has[1];
  const char *names[4] = {"model", "optim/m", "optim/v", "ref"};
  float **bufs[4] = {&st->params, &st->adam_m, &st->adam_v, &st->ref_params};
  int on[4] = {1, has[0], has[0], has[1]};
  int rc = error_agree(comm, x ? 0 : 1);
  for (int g = 0; g < 4 && !rc; g++) {
    if (!on[g]) continue;
    float *dst = sh->into[g];
    if (!dst) dst = *bufs[g] = malloc(sizeof(float) * (sh->local_total ? sh->local_total : 1));
    rc = error_agree(comm, dst ? 0 : 1);
    for (int i = 0; i < t.n && !rc; i++) {
      if (rank == 0) rc = tensor_read(f, names[g], &t, i, x, path);
      MPI_CHECK(MPI_Bcast(&rc, 1, MPI_INT, 0, comm));
      if (rc) break;
      bcast_bytes(x, sizeof(float) * t.e[i].numel, comm);
      sh->take(sh->ctx, i, x, dst);
    }
  }
  if (!rc && rank == 0 && has[0]) {
    int64_t adam_t = 0;
    rc = attr_i64(f, "optim", "t", &adam_t, path);
    if (!rc) rc = attr_f64(f, "optim", "lr", &st->lr, path);
    st->adam_t = (long)adam_t;
  }
  free(x);
  param_table_free(&t);
  return rc;
}

/* Rank 0: /meta, then (with the model's table known everywhere) the sharded groups, the
 * critic and the small datasets; the rest broadcast. As ckpt_read. */
static int read_sharded(const char *path, struct ckpt_state *st, const struct model_config *expect,
                        MPI_Comm comm, const struct ckpt_read_shards *sh) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  memset(st, 0, sizeof *st);
  st->owned = 1;
  hid_t f = -1;
  struct h5_quiet q;
  int rc = 0;
  if (rank == 0) {
    rc = ckpt_probe(path, 0) ? 2 : 0;
    h5_quiet_begin(&q);
    if (!rc && (f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0) {
      fprintf(stderr, "rlpt: %s: cannot open as HDF5 (truncated or damaged file)\n", path);
      rc = 2;
    }
    if (!rc) rc = meta_read(f, st, expect, path);
  }
  wait_barrier(comm);
  rc = error_agree(comm, rc);
  if (!rc) {
    MPI_CHECK(MPI_Bcast(&st->mc, (int)sizeof st->mc, MPI_BYTE, 0, comm));
    rc = shards_read(f, st, rank, comm, sh, path);
  }
  if (!rc && rank == 0) {
    st->has_critic = H5Lexists(f, "critic", H5P_DEFAULT) > 0;
    if (st->has_critic) rc = critic_read(f, st, path);
    if (!rc) rc = smalls_read(f, st, path);
  }
  if (rank == 0) {
    if (f >= 0 && H5Fclose(f) < 0 && !rc) {
      fprintf(stderr, "rlpt: %s: error closing the checkpoint\n", path);
      rc = 2;
    }
    h5_quiet_end(&q);
  }
  rc = error_agree(comm, rc);
  if (!rc && state_bcast(st, rank, comm, 1)) {
    if (rank == 0) fprintf(stderr, "rlpt: %s: out of memory on a rank receiving the checkpoint\n",
                           path);
    rc = 1;
  }
  if (rc) ckpt_state_free(st);
  return rc;
}

int ckpt_read_sharded(const char *path, struct ckpt_state *st, const struct model_config *expect,
                      MPI_Comm comm, const struct ckpt_read_shards *sh) {
  return sh ? read_sharded(path, st, expect, comm, sh) : ckpt_read(path, st, expect, comm);
}

/* Rank 0: the candidate files of dir, `latest`'s first, then the step files
 * newest first (without repeating it). *n entries, malloc'd paths. */
static char **candidates(const char *dir, int *n) {
  int ns;
  long *steps = ckpt_list_steps(dir, &ns);
  char **c = calloc((size_t)ns + 1, sizeof *c), first[4096 + 512] = "", p[4096];
  *n = 0;
  FILE *f = NULL;
  snprintf(p, sizeof p, "%s/latest", dir);
  if (c && (f = fopen(p, "r")) && fgets(p, sizeof p, f)) {
    p[strcspn(p, "\r\n")] = '\0';
    if (snprintf(first, sizeof first, "%s/%s", dir, p) < (int)sizeof first)
      c[(*n)++] = strdup(first);
  }
  if (f) fclose(f);
  for (int i = 0; c && i < ns; i++) {
    ckpt_step_path(dir, steps[i], p, sizeof p);
    if (strcmp(p, first)) c[(*n)++] = strdup(p);
  }
  free(steps);
  return c;
}

int ckpt_read_latest(const char *dir, struct ckpt_state *st, const struct model_config *expect,
                     MPI_Comm comm, char *path_out, size_t len) {
  return ckpt_read_latest_sharded(dir, st, expect, comm, path_out, len, NULL);
}

int ckpt_read_latest_sharded(const char *dir, struct ckpt_state *st,
                             const struct model_config *expect, MPI_Comm comm, char *path_out,
                             size_t len, const struct ckpt_read_shards *sh) {
  int rank, n = 0, rc = 2;
  MPI_Comm_rank(comm, &rank);
  char **c = rank == 0 ? candidates(dir, &n) : NULL;
  char path[4096];
  MPI_CHECK(MPI_Bcast(&n, 1, MPI_INT, 0, comm));
  for (int i = 0; i < n && rc == 2; i++) {
    if (rank == 0) snprintf(path, sizeof path, "%s", c[i] ? c[i] : "");
    MPI_CHECK(MPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, comm));
    rc = ckpt_read_sharded(path, st, expect, comm, sh);
    if (rc == 2 && rank == 0)
      fprintf(stderr, "rlpt: warning: %s is not usable; %s\n", path,
              i + 1 < n ? "falling back to the previous checkpoint" : "no older checkpoint left");
    if (!rc) snprintf(path_out, len, "%s", path);
  }
  if (rank == 0 && n == 0) fprintf(stderr, "rlpt: %s: no checkpoint to restart from\n", dir);
  for (int i = 0; i < n && c; i++) free(c[i]);
  free(c);
  return rc;
}
