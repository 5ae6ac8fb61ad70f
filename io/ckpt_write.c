/* io/ckpt_write.c: the collective, atomic checkpoint writer (see ckpt.h).
 *
 * Steps, all ranks of comm in lock-step:
 *   1. checksum and finiteness of each rank's rows, joined in row order by one
 *      MPI_Allreduce (io/crc32.h); a NaN or Inf refuses the checkpoint here,
 *      before any file exists;
 *   2. step_N.h5.tmp created with MPI-IO; every tensor written with collective
 *      hyperslab transfers (each rank its rows), each dataset with its crc32;
 *   3. closed, re-opened and verified the same way (present, shape, CRC, finite);
 *   4. rank 0: fsync file, write and fsync latest.tmp, rename to step_N.h5, rename
 *      latest.tmp to latest, fsync dir, prune (nothing after the first rename needs space).
 * Every rank makes the same HDF5 calls in the same order whatever fails locally;
 * the ranks agree on errors after every dataset, so a failure on one rank (disk
 * full on an aggregator) stops all of them at the same point. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "io/ckpt.h"
#include "io/crc32.h"
#include "mpi/wait.h"
#include "util/error.h"

enum { SMALL_RNG, SMALL_DATA, SMALL_CTRL, SMALL_BUFFER, SMALL_DIFFICULTY, SMALL_N };

/* The small datasets as rank 0 has them (broadcast so that every rank agrees). */
struct small_info {
  uint64_t len[SMALL_N];  /* elements */
  uint32_t crc[SMALL_N];
  int has_buffer, has_difficulty, nonfinite;
  int bad;                /* counts out of range or a controller name empty or with a comma */
};

struct writer {
  const char *dir;
  char final[4096], tmp[4096 + 8];
  MPI_Comm comm;
  int rank, size;
  const struct ckpt_state *st;
  struct param_table t, ct;
  struct ckpt_group g[CKPT_GROUPS_MAX];
  int ng;
  struct ckpt_rows *rows, *crows;  /* this rank's rows of each tensor: model, critic */
  struct crc_part *parts;          /* per tensor of every group, in file order */
  int nparts;
  struct small_info small;
  hid_t fapl, dcpl, dxpl, lcpl;
  void (*tensor)(void *ctx, const float *buf, int i, float *x);  /* ckpt_write_opts */
  void *ctx;
  float *scratch;                  /* one tensor of the model's table, with tensor */
};

static const struct ckpt_rows *group_rows(const struct writer *w, int gi) {
  return w->g[gi].t == &w->ct ? w->crows : w->rows;
}

/* The first value of full tensor i of group gi: in the group's buffer, or with a tensor
 * callback (the model's groups) made in the scratch. Called for every tensor of every group
 * in file order on every rank (the callback may be collective). */
static const float *tensor_base(struct writer *w, int gi, int i) {
  const struct ckpt_group *gr = &w->g[gi];
  if (!w->tensor || gr->t != &w->t) return gr->buf + gr->t->e[i].offset;
  w->tensor(w->ctx, gr->buf, i, w->scratch);
  return w->scratch;
}

/* ---- 1. checksums before writing ---------------------------------------- */

static void small_checksums(struct writer *w) {
  const struct ckpt_state *st = w->st;
  struct small_info *s = &w->small;
  memset(s, 0, sizeof *s);
  s->bad = st->n_rng < 0 || st->n_rng > CKPT_RNG_MAX || st->n_ctrl < 0 || st->n_ctrl > CKPT_CTRL_MAX;
  for (int i = 0; !s->bad && i < st->n_ctrl; i++)
    s->bad = !st->ctrl_name[i][0] || strchr(st->ctrl_name[i], ',') != NULL;
  if (s->bad) return;
  s->len[SMALL_RNG] = (uint64_t)st->n_rng;
  s->len[SMALL_DATA] = 3;
  s->len[SMALL_CTRL] = (uint64_t)st->n_ctrl;
  s->has_buffer = st->has_buffer;
  s->len[SMALL_BUFFER] = st->has_buffer ? st->buffer_len : 0;
  uint64_t data[3] = {st->data.cursor, st->data.epoch, st->data.shuffle_seed};
  s->crc[SMALL_RNG] = crc32_bytes(0, st->rng, sizeof(uint64_t) * (size_t)st->n_rng);
  s->crc[SMALL_DATA] = crc32_bytes(0, data, sizeof data);
  s->crc[SMALL_CTRL] = crc32_bytes(0, st->ctrl, sizeof(double) * (size_t)st->n_ctrl);
  s->crc[SMALL_BUFFER] = s->len[SMALL_BUFFER] ? crc32_bytes(0, st->buffer, st->buffer_len) : 0;
  s->has_difficulty = st->has_difficulty;
  s->len[SMALL_DIFFICULTY] = st->has_difficulty ? st->difficulty_len : 0;
  s->crc[SMALL_DIFFICULTY] = s->len[SMALL_DIFFICULTY] ? crc32_bytes(0, st->difficulty, st->difficulty_len) : 0;
  double acc = st->lr * 0.0;
  for (int i = 0; i < st->n_ctrl; i++) acc += st->ctrl[i] * 0.0;
  s->nonfinite = acc != 0.0;
}

/* Fills w->parts from this rank's rows; 0, or CKPT_ERR_NONFINITE / CKPT_ERR_IO
 * (rank 0 printed why). */
static int checksum_all(struct writer *w) {
  int k = 0;
  for (int gi = 0; gi < w->ng; gi++) {
    const struct ckpt_rows *r = group_rows(w, gi);
    for (int i = 0; i < w->g[gi].t->n; i++, k++) {
      const struct param_entry *e = &w->g[gi].t->e[i];
      const float *base = tensor_base(w, gi, i);
      if (r[i].row0 < 0 || r[i].nrows < 0 || r[i].row0 + r[i].nrows > e->rows) {
        w->parts[k] = (struct crc_part){.flags = CRC_PART_BADTILE}; /* never read past the tensor */
        continue;
      }
      crc_part_floats(&w->parts[k], base + (size_t)r[i].row0 * e->cols,
                      (uint64_t)r[i].row0, (uint64_t)r[i].nrows, (uint64_t)e->cols);
    }
  }
  MPI_CHECK(crc_parts_allreduce(w->parts, w->nparts, w->comm));
  if (w->rank == 0) small_checksums(w);
  MPI_CHECK(MPI_Bcast(&w->small, (int)sizeof w->small, MPI_BYTE, 0, w->comm));
  k = 0;
  for (int gi = 0; gi < w->ng; gi++) {
    for (int i = 0; i < w->g[gi].t->n; i++, k++) {
      const struct param_entry *e = &w->g[gi].t->e[i];
      const struct crc_part *p = &w->parts[k];
      int nonfinite = (p->flags & CRC_PART_NONFINITE) != 0;
      int tiled = !(p->flags & (CRC_PART_BADTILE | CRC_PART_EMPTY)) && p->row0 == 0 &&
                  p->row_end == (uint64_t)e->rows;
      if (w->rank == 0 && nonfinite)
        fprintf(stderr, "rlpt: checkpoint step %ld refused: /%s/%s holds a NaN or Inf; nothing "
                "was written (the previous checkpoints and latest are unchanged)\n",
                w->st->step, w->g[gi].name, e->name);
      if (w->rank == 0 && !tiled && !nonfinite)
        fprintf(stderr, "rlpt: checkpoint step %ld: the ranks' rows of /%s/%s do not cover its "
                "%d rows exactly once in rank order (internal error)\n", w->st->step,
                w->g[gi].name, e->name, e->rows);
      if (nonfinite) return CKPT_ERR_NONFINITE;
      if (!tiled) return CKPT_ERR_IO;
    }
  }
  if (w->small.bad) {
    if (w->rank == 0)
      fprintf(stderr, "rlpt: checkpoint step %ld: n_rng (%d, at most %d) or n_ctrl (%d, at most %d) "
              "out of range, or a controller name empty or with a comma (internal error)\n",
              w->st->step, w->st->n_rng, CKPT_RNG_MAX, w->st->n_ctrl, CKPT_CTRL_MAX);
    return CKPT_ERR_IO;
  }
  if (w->small.nonfinite) {
    if (w->rank == 0)
      fprintf(stderr, "rlpt: checkpoint step %ld refused: the learning rate or a controller sum "
              "is NaN or Inf; nothing was written\n", w->st->step);
    return CKPT_ERR_NONFINITE;
  }
  return 0;
}

/* ---- 2. writing --------------------------------------------------------- */

static int attr_write(hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *v) {
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(loc, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
  int bad = a < 0 || H5Awrite(a, mtype, v) < 0;
  if (a >= 0) bad |= H5Aclose(a) < 0;
  H5Sclose(sp);
  return bad;
}

static int attr_str(hid_t loc, const char *name, const char *s) {
  s = s ? s : "";
  hid_t ty = H5Tcopy(H5T_C_S1);
  H5Tset_size(ty, strlen(s) + 1);
  int bad = attr_write(loc, name, ty, ty, s);
  H5Tclose(ty);
  return bad;
}

static int attr_u32(hid_t loc, const char *name, uint32_t v) {
  return attr_write(loc, name, H5T_STD_U32LE, H5T_NATIVE_UINT32, &v);
}

static int meta_write(struct writer *w, hid_t f) {
  const struct ckpt_state *st = w->st;
  int bad = h5_meta_write(f, &st->mc, w->tmp) != 0;
  hid_t g = bad ? -1 : H5Gopen2(f, "meta", H5P_DEFAULT);
  if (g < 0) return 1;
  int64_t step = st->step, wv = st->weight_version;
  bad |= attr_str(g, "rlpt_version", RLPT_VERSION);
  bad |= attr_write(g, "step", H5T_STD_I64LE, H5T_NATIVE_INT64, &step);
  bad |= attr_write(g, "weight_version", H5T_STD_I64LE, H5T_NATIVE_INT64, &wv);
  bad |= attr_str(g, "deck", st->deck);
  bad |= attr_str(g, "used_keys", st->used_keys);
  H5Gclose(g);
  return bad;
}

/* One tensor (its first value at base), each rank its rows r; the CRC of the whole goes in
 * its attribute. */
static int tensor_write(struct writer *w, hid_t g, const struct param_entry *e, const float *base,
                        const struct ckpt_rows *r, uint32_t crc) {
  hsize_t dims[2], start[2] = {(hsize_t)r->row0, 0}, count[2];
  int rank = h5_param_dims(e, dims);
  count[0] = (hsize_t)r->nrows;
  count[1] = dims[1];
  hsize_t mlen = (hsize_t)r->nrows * (hsize_t)e->cols;
  hsize_t mdim = mlen ? mlen : 1;
  hid_t fs = H5Screate_simple(rank, dims, NULL), ms = H5Screate_simple(1, &mdim, NULL);
  hid_t ds = H5Dcreate2(g, e->name, H5T_IEEE_F32LE, fs, H5P_DEFAULT, w->dcpl, H5P_DEFAULT);
  if (mlen) {
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
  } else {
    H5Sselect_none(fs);
    H5Sselect_none(ms);
  }
  int bad = ds < 0;
  if (ds >= 0) {
    bad |= H5Dwrite(ds, H5T_NATIVE_FLOAT, ms, fs, w->dxpl,
                    base + (size_t)r->row0 * e->cols) < 0;
    bad |= attr_u32(ds, "crc32", crc);
    bad |= H5Dclose(ds) < 0;
  }
  H5Sclose(ms);
  H5Sclose(fs);
  return bad;
}

/* Agreement after each dataset: every rank stops at the same point. */
static int agree(struct writer *w, int bad, const char *what) {
  int any = error_agree(w->comm, bad ? CKPT_ERR_IO : 0);
  if (any && bad)
    fprintf(stderr, "rlpt: rank %d: checkpoint %s: cannot write %s (%s)\n", w->rank, w->tmp, what,
            errno ? strerror(errno) : "HDF5 error");
  errno = 0; /* so that the next failure reports its own cause */
  return any;
}

static int groups_write(struct writer *w, hid_t f) {
  char what[256];
  int k = 0;
  for (int gi = 0; gi < w->ng; gi++) {
    const struct ckpt_group *gr = &w->g[gi];
    const struct ckpt_rows *r = group_rows(w, gi);
    hid_t g = H5Gcreate2(f, gr->name, w->lcpl, H5P_DEFAULT, H5P_DEFAULT);
    snprintf(what, sizeof what, "group /%s", gr->name);
    if (agree(w, g < 0, what)) return 1;
    for (int i = 0; i < gr->t->n; i++, k++) {
      int bad = tensor_write(w, g, &gr->t->e[i], tensor_base(w, gi, i), &r[i], w->parts[k].crc);
      snprintf(what, sizeof what, "dataset /%s/%s", gr->name, gr->t->e[i].name);
      if (agree(w, bad, what)) {
        H5Gclose(g);
        return 1;
      }
    }
    int bad = 0;
    if (!strcmp(gr->name, "critic")) {
      char *json = model_config_to_json(&w->st->critic_mc);
      bad = attr_str(g, "model_config", json);
      free(json);
    }
    bad |= H5Gclose(g) < 0;
    if (agree(w, bad, what)) return 1;
  }
  int bad = 0;
  if (w->st->has_optim) {
    hid_t g = H5Gopen2(f, "optim", H5P_DEFAULT);
    int64_t t = w->st->adam_t;
    bad = g < 0 || attr_write(g, "t", H5T_STD_I64LE, H5T_NATIVE_INT64, &t) ||
          attr_write(g, "lr", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &w->st->lr);
    if (g >= 0) H5Gclose(g);
  }
  if (w->st->has_critic && w->st->has_critic_optim) {
    hid_t g = H5Gopen2(f, "critic_optim", H5P_DEFAULT);
    int64_t t = w->st->critic_adam_t;
    bad |= g < 0 || attr_write(g, "t", H5T_STD_I64LE, H5T_NATIVE_INT64, &t);
    if (g >= 0) H5Gclose(g);
  }
  return agree(w, bad, "/optim and /critic_optim attributes");
}

/* A 1-D dataset written by rank 0 (the others select nothing). */
static int small_write(struct writer *w, hid_t f, const char *name, hid_t ftype, hid_t mtype,
                       uint64_t n, const void *data, uint32_t crc, const char *names) {
  hsize_t dim = (hsize_t)n, one = n ? (hsize_t)n : 1;
  hid_t fs = H5Screate_simple(1, &dim, NULL), ms = H5Screate_simple(1, &one, NULL);
  hid_t ds = H5Dcreate2(f, name, ftype, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (w->rank != 0 || !n) {
    H5Sselect_none(fs);
    H5Sselect_none(ms);
  }
  int bad = ds < 0;
  if (ds >= 0) {
    if (n) bad |= H5Dwrite(ds, mtype, ms, fs, w->dxpl, data) < 0;
    bad |= attr_u32(ds, "crc32", crc);
    if (names) bad |= attr_str(ds, "names", names);
    bad |= H5Dclose(ds) < 0;
  }
  H5Sclose(ms);
  H5Sclose(fs);
  char what[64];
  snprintf(what, sizeof what, "dataset /%s", name);
  return agree(w, bad, what);
}

/* "a,b,c" from the controller names (rank 0's copy is what is written). */
static char *ctrl_names(const struct ckpt_state *st) {
  size_t n = 1;
  for (int i = 0; i < st->n_ctrl; i++) n += strlen(st->ctrl_name[i]) + 1;
  char *s = calloc(n, 1);
  for (int i = 0; s && i < st->n_ctrl; i++) {
    if (i) strcat(s, ",");
    strcat(s, st->ctrl_name[i]);
  }
  return s;
}

static int smalls_write(struct writer *w, hid_t f) {
  const struct ckpt_state *st = w->st;
  const struct small_info *s = &w->small;
  uint64_t data[3] = {st->data.cursor, st->data.epoch, st->data.shuffle_seed};
  char *names = ctrl_names(st);
  int bad = small_write(w, f, "rng", H5T_STD_U64LE, H5T_NATIVE_UINT64, s->len[SMALL_RNG], st->rng,
                        s->crc[SMALL_RNG], NULL);
  if (!bad) bad = small_write(w, f, "data", H5T_STD_U64LE, H5T_NATIVE_UINT64, 3, data,
                              s->crc[SMALL_DATA], CKPT_DATA_NAMES);
  if (!bad) bad = small_write(w, f, "controller", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                              s->len[SMALL_CTRL], st->ctrl, s->crc[SMALL_CTRL], names ? names : "");
  if (!bad && s->has_buffer)
    bad = small_write(w, f, "buffer", H5T_STD_U8LE, H5T_NATIVE_UCHAR, s->len[SMALL_BUFFER],
                      st->buffer, s->crc[SMALL_BUFFER], NULL);
  if (!bad && s->has_difficulty)
    bad = small_write(w, f, "difficulty", H5T_STD_U8LE, H5T_NATIVE_UCHAR, s->len[SMALL_DIFFICULTY],
                      st->difficulty, s->crc[SMALL_DIFFICULTY], NULL);
  free(names);
  return bad;
}

static int file_write(struct writer *w) {
  struct h5_quiet q;
  h5_quiet_begin(&q);
  errno = 0;
  hid_t f = H5Fcreate(w->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, w->fapl);
  int bad = agree(w, f < 0, "the file");
  if (!bad) bad = agree(w, meta_write(w, f), "/meta");
  if (!bad) bad = groups_write(w, f);
  if (!bad) bad = smalls_write(w, f);
  /* HDF5 1.10 leaves a dangling file ID when H5Fclose fails (a second close or
   * the library's own cleanup at MPI_Finalize then crashes): space_ready()
   * refuses up front what would make the close fail for lack of space, and when a
   * write failed anyway (the disk filled up meanwhile) rank 0 truncates the doomed
   * temporary first, so that the space it took lets the close write its metadata. */
  if (f >= 0 && bad && w->rank == 0 && truncate(w->tmp, 0)) errno = 0;
  if (f >= 0 && bad) wait_barrier(w->comm);
  if (f >= 0) bad |= agree(w, H5Fclose(f) < 0, "the file (close)");
  h5_quiet_end(&q);
  return bad;
}

/* ---- 3. verification -------------------------------------------------- */

/* Rank 0 reads a 1-D dataset whole (the others select nothing) and checks its
 * length and CRC against what was written; 0 or 1. */
static int small_verify(struct writer *w, hid_t f, const char *name, hid_t mtype, size_t esize,
                        uint64_t n, uint32_t crc) {
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  hid_t fs = ds >= 0 ? H5Dget_space(ds) : -1;
  hsize_t dim = 0, one = n ? (hsize_t)n : 1;
  if (fs >= 0 && H5Sget_simple_extent_ndims(fs) == 1) H5Sget_simple_extent_dims(fs, &dim, NULL);
  int bad = ds < 0 || fs < 0 || dim != (hsize_t)n;
  unsigned char *buf = malloc(esize * (size_t)one);
  hid_t ms = H5Screate_simple(1, &one, NULL);
  if (!bad && n) {
    if (w->rank != 0) {
      H5Sselect_none(fs);
      H5Sselect_none(ms);
    }
    bad |= !buf || H5Dread(ds, mtype, ms, fs, w->dxpl, buf) < 0;
    bad |= w->rank == 0 && crc32_bytes(0, buf, esize * (size_t)n) != crc;
  }
  uint32_t stored = 0;
  hid_t a = ds >= 0 ? H5Aopen(ds, "crc32", H5P_DEFAULT) : -1;
  bad |= a < 0 || H5Aread(a, H5T_NATIVE_UINT32, &stored) < 0 || stored != crc;
  if (a >= 0) H5Aclose(a);
  H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  if (ds >= 0) H5Dclose(ds);
  free(buf);
  if (bad) fprintf(stderr, "rlpt: rank %d: checkpoint %s: verify: /%s does not read back as "
                   "written\n", w->rank, w->tmp, name);
  return bad;
}

/* Reads this rank's rows of one tensor back into scratch; fills its CRC piece
 * and the stored crc32. Returns 1 when the dataset or attribute is not as written. */
static int tensor_verify(struct writer *w, hid_t g, const struct param_entry *e,
                         const struct ckpt_rows *r, float *scratch, struct crc_part *part,
                         uint32_t *stored) {
  hsize_t dims[2], got[2] = {0, 0}, start[2] = {(hsize_t)r->row0, 0};
  int rank = h5_param_dims(e, dims);
  hsize_t count[2] = {(hsize_t)r->nrows, dims[1]};
  hsize_t mlen = (hsize_t)r->nrows * (hsize_t)e->cols, mdim = mlen ? mlen : 1;
  hid_t ds = H5Dopen2(g, e->name, H5P_DEFAULT);
  hid_t fs = ds >= 0 ? H5Dget_space(ds) : -1, ms = H5Screate_simple(1, &mdim, NULL);
  int bad = fs < 0 || H5Sget_simple_extent_ndims(fs) != rank;
  if (!bad) H5Sget_simple_extent_dims(fs, got, NULL);
  bad |= got[0] != dims[0] || (rank == 2 && got[1] != dims[1]);
  if (!bad) {
    if (mlen) {
      H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    } else {
      H5Sselect_none(fs);
      H5Sselect_none(ms);
    }
    bad |= H5Dread(ds, H5T_NATIVE_FLOAT, ms, fs, w->dxpl, scratch) < 0;
  }
  crc_part_floats(part, scratch, (uint64_t)r->row0, (uint64_t)r->nrows, (uint64_t)e->cols);
  hid_t a = ds >= 0 ? H5Aopen(ds, "crc32", H5P_DEFAULT) : -1;
  bad |= a < 0 || H5Aread(a, H5T_NATIVE_UINT32, stored) < 0;
  if (a >= 0) H5Aclose(a);
  H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  if (ds >= 0) H5Dclose(ds);
  return bad;
}

/* Every tensor of the file against the pieces computed before writing. */
static int tensors_verify(struct writer *w, hid_t f, struct crc_part *vp, uint32_t *stored) {
  size_t most = 1;
  for (int gi = 0; gi < w->ng; gi++)
    for (int i = 0; i < w->g[gi].t->n; i++) {
      size_t n = (size_t)group_rows(w, gi)[i].nrows * (size_t)w->g[gi].t->e[i].cols;
      most = n > most ? n : most;
    }
  float *scratch = malloc(sizeof(float) * most);
  if (error_agree(w->comm, !scratch)) {
    free(scratch);
    return 1;
  }
  int bad = 0, k = 0;
  for (int gi = 0; gi < w->ng; gi++) {
    hid_t g = H5Gopen2(f, w->g[gi].name, H5P_DEFAULT);
    for (int i = 0; i < w->g[gi].t->n; i++, k++) {
      int b = g < 0 || tensor_verify(w, g, &w->g[gi].t->e[i], &group_rows(w, gi)[i], scratch,
                                     &vp[k], &stored[k]);
      if (b) fprintf(stderr, "rlpt: rank %d: checkpoint %s: verify: /%s/%s does not read back as "
                     "written\n", w->rank, w->tmp, w->g[gi].name, w->g[gi].t->e[i].name);
      bad |= b;
    }
    if (g >= 0) H5Gclose(g);
  }
  free(scratch);
  MPI_CHECK(crc_parts_allreduce(vp, w->nparts, w->comm));
  return bad;
}

/* Re-open the closed file and check it against what was meant to be written;
 * 0 or CKPT_ERR_IO on every rank (the first difference is printed by rank 0). */
static int file_verify(struct writer *w) {
  struct h5_quiet q;
  h5_quiet_begin(&q);
  struct crc_part *vp = calloc((size_t)w->nparts, sizeof *vp);
  uint32_t *stored = calloc((size_t)w->nparts, sizeof *stored);
  hid_t f = H5Fopen(w->tmp, H5F_ACC_RDONLY, w->fapl);
  int bad = !vp || !stored || f < 0;
  if (error_agree(w->comm, bad)) {
    if (w->rank == 0) fprintf(stderr, "rlpt: checkpoint %s: verify: cannot re-open it\n", w->tmp);
  } else {
    bad = tensors_verify(w, f, vp, stored);
    const struct small_info *s = &w->small;
    bad |= small_verify(w, f, "rng", H5T_NATIVE_UINT64, 8, s->len[SMALL_RNG], s->crc[SMALL_RNG]);
    bad |= small_verify(w, f, "data", H5T_NATIVE_UINT64, 8, 3, s->crc[SMALL_DATA]);
    bad |= small_verify(w, f, "controller", H5T_NATIVE_DOUBLE, 8, s->len[SMALL_CTRL],
                        s->crc[SMALL_CTRL]);
    if (s->has_buffer)
      bad |= small_verify(w, f, "buffer", H5T_NATIVE_UCHAR, 1, s->len[SMALL_BUFFER],
                          s->crc[SMALL_BUFFER]);
    if (s->has_difficulty)
      bad |= small_verify(w, f, "difficulty", H5T_NATIVE_UCHAR, 1, s->len[SMALL_DIFFICULTY],
                          s->crc[SMALL_DIFFICULTY]);
    for (int gi = 0, k = 0; gi < w->ng && !bad; gi++)
      for (int i = 0; i < w->g[gi].t->n && !bad; i++, k++) {
        bad = vp[k].crc != w->parts[k].crc || stored[k] != w->parts[k].crc ||
              vp[k].bytes != w->parts[k].bytes || (vp[k].flags & CRC_PART_NONFINITE);
        if (bad && w->rank == 0)
          fprintf(stderr, "rlpt: checkpoint %s: verify: /%s/%s reads back with crc32 0x%08x "
                  "(stored 0x%08x, written 0x%08x)\n", w->tmp, w->g[gi].name,
                  w->g[gi].t->e[i].name, (unsigned)vp[k].crc, (unsigned)stored[k],
                  (unsigned)w->parts[k].crc);
      }
  }
  if (f >= 0) bad |= H5Fclose(f) < 0;
  h5_quiet_end(&q);
  free(vp);
  free(stored);
  return error_agree(w->comm, bad ? CKPT_ERR_IO : 0);
}

/* ---- 4. publish ----------------------------------------------------------- */

/* Rank 0: fsync, latest.tmp, the renames, prune. 0 or CKPT_ERR_IO with a message; *renamed
 * says whether step_N.h5 exists (then only `latest` failed to move: the file stays). */
static int publish(struct writer *w, int keep_last, int *renamed) {
  const char *name = strrchr(w->final, '/') + 1;
  *renamed = 0;
  if (ckpt_fsync_path(w->tmp) || ckpt_fsync_path(w->dir)) {
    fprintf(stderr, "rlpt: checkpoint %s: fsync failed: %s\n", w->tmp, strerror(errno));
    return CKPT_ERR_IO;
  }
  if (ckpt_latest_prepare(w->dir, name)) {
    fprintf(stderr, "rlpt: checkpoint step %ld: cannot write %s/latest.tmp: %s\n", w->st->step,
            w->dir, strerror(errno));
    return CKPT_ERR_IO;
  }
  if (rename(w->tmp, w->final)) {
    fprintf(stderr, "rlpt: checkpoint %s: cannot rename to %s: %s\n", w->tmp, w->final,
            strerror(errno));
    ckpt_latest_discard(w->dir);
    return CKPT_ERR_IO;
  }
  *renamed = 1;
  if (ckpt_latest_commit(w->dir)) {
    /* The step file is complete and stays; `latest` still names the previous one. */
    fprintf(stderr, "rlpt: checkpoint %s written, but %s/latest could not be updated: %s\n",
            w->final, w->dir, strerror(errno));
    return CKPT_ERR_IO;
  }
  ckpt_prune(w->dir, keep_last, w->st->step);
  return 0;
}

/* ---- driver ------------------------------------------------------------- */

static int writer_init(struct writer *w, const char *dir, const struct ckpt_state *st,
                       const struct ckpt_write_opts *o, MPI_Comm comm) {
  memset(w, 0, sizeof *w);
  w->dir = dir;
  w->st = st;
  w->comm = comm;
  MPI_Comm_rank(comm, &w->rank);
  MPI_Comm_size(comm, &w->size);
  ckpt_step_path(dir, st->step, w->final, sizeof w->final);
  snprintf(w->tmp, sizeof w->tmp, "%s.tmp", w->final);
  param_table_build(&w->t, &st->mc);
  if (st->has_critic) param_table_build(&w->ct, &st->critic_mc);
  w->ng = ckpt_groups(st, &w->t, &w->ct, w->g);
  for (int gi = 0; gi < w->ng; gi++) w->nparts += w->g[gi].t->n;
  w->rows = malloc(sizeof *w->rows * (size_t)w->t.n);
  w->crows = malloc(sizeof *w->crows * (size_t)(w->ct.n + 1));
  w->parts = calloc((size_t)w->nparts, sizeof *w->parts);
  if (o && o->tensor) {
    w->tensor = o->tensor;
    w->ctx = o->ctx;
    w->scratch = malloc(sizeof(float) * param_table_max_numel(&w->t));
  }
  if (!w->rows || !w->crows || !w->parts || (w->tensor && !w->scratch)) return 1;
  if (o && o->rows) memcpy(w->rows, o->rows, sizeof *w->rows * (size_t)w->t.n);
  else ckpt_rows_even(&w->t, w->rank, w->size, w->rows);
  if (o && o->critic_rows) memcpy(w->crows, o->critic_rows, sizeof *w->crows * (size_t)w->ct.n);
  else ckpt_rows_even(&w->ct, w->rank, w->size, w->crows);
  w->fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_mpio(w->fapl, comm, MPI_INFO_NULL);
  H5Pset_all_coll_metadata_ops(w->fapl, 1);
  H5Pset_coll_metadata_write(w->fapl, 1);
  /* The 1.8 object-header format: attributes over 64 KiB (a long deck) go to dense storage. */
  H5Pset_libver_bounds(w->fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
  w->dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_fill_time(w->dcpl, H5D_FILL_TIME_NEVER); /* every byte is written once, by us */
  w->dxpl = H5Pcreate(H5P_DATASET_XFER);
  H5Pset_dxpl_mpio(w->dxpl, H5FD_MPIO_COLLECTIVE);
  w->lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(w->lcpl, 1);
  return 0;
}

static void writer_free(struct writer *w) {
  hid_t plists[4] = {w->fapl, w->dcpl, w->dxpl, w->lcpl};
  for (int i = 0; i < 4; i++)
    if (plists[i] > 0) H5Pclose(plists[i]);
  free(w->rows);
  free(w->crows);
  free(w->parts);
  free(w->scratch);
  param_table_free(&w->t);
  if (w->st->has_critic) param_table_free(&w->ct);
}

/* An upper bound of the file's size: the data, a few KiB of metadata per
 * dataset, the deck strings and a fixed allowance for the superblock and heaps. */
static uint64_t size_bound(const struct writer *w) {
  uint64_t b = (uint64_t)1 << 20;
  for (int k = 0; k < w->nparts; k++) b += w->parts[k].bytes + 4096;
  for (int i = 0; i < SMALL_N; i++) b += w->small.len[i] * 8 + 4096;
  b += 2 * ((w->st->deck ? strlen(w->st->deck) : 0) + (w->st->used_keys ? strlen(w->st->used_keys) : 0));
  return b;
}

/* Room for the file: free space in dir (rank 0) and every rank's file-size
 * limit (ulimit -f, which MPI-IO writes on any rank are subject to). */
static int space_ready(struct writer *w) {
  uint64_t need = size_bound(w);
  struct rlimit lim;
  int rc = 0;
  if (!getrlimit(RLIMIT_FSIZE, &lim) && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need) {
    fprintf(stderr, "rlpt: rank %d: checkpoint step %ld needs about %.3g MB but the file size limit "
            "(ulimit -f) is %.3g MB; nothing was written\n", w->rank, w->st->step, need / 1e6,
            (double)lim.rlim_cur / 1e6);
    rc = CKPT_ERR_IO;
  }
  struct statvfs vfs;
  if (w->rank == 0 && !statvfs(w->dir, &vfs) &&
      (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize < need) {
    fprintf(stderr, "rlpt: checkpoint step %ld needs about %.3g MB but %s has %.3g MB free; nothing "
            "was written\n", w->st->step, need / 1e6, w->dir,
            (double)vfs.f_bavail * (double)vfs.f_frsize / 1e6);
    rc = CKPT_ERR_IO;
  }
  return error_agree(w->comm, rc);
}

/* Rank 0 creates the directory, then the space check; 0 or CKPT_ERR_IO on every rank. */
static int dir_ready(struct writer *w) {
  int rc = 0;
  if (w->rank == 0 && ckpt_mkdirs(w->dir)) {
    fprintf(stderr, "rlpt: checkpoint step %ld: cannot create the directory %s: %s; nothing was "
            "written\n", w->st->step, w->dir, strerror(errno));
    rc = CKPT_ERR_IO;
  }
  rc = error_agree(w->comm, rc);
  return rc ? rc : space_ready(w);
}

int ckpt_write(const char *dir, const struct ckpt_state *st, const struct ckpt_write_opts *o,
               MPI_Comm comm) {
  struct writer w;
  int rc = writer_init(&w, dir, st, o, comm) ? CKPT_ERR_IO : 0;
  if (error_agree(comm, rc)) {
    if (w.rank == 0) fprintf(stderr, "rlpt: checkpoint step %ld: out of memory\n", st->step);
    writer_free(&w);
    return CKPT_ERR_IO;
  }
  rc = checksum_all(&w);
  if (!rc) rc = dir_ready(&w);
  if (!rc) {
    rc = file_write(&w) ? CKPT_ERR_IO : 0;
    if (!rc) rc = file_verify(&w);
    if (w.rank == 0) {
      int renamed = 0;
      if (!rc) rc = publish(&w, o ? o->keep_last : 1, &renamed);
      if (rc && !renamed) {
        unlink(w.tmp);
        fprintf(stderr, "rlpt: checkpoint step %ld not written; the previous checkpoints and "
                "%s/latest are unchanged\n", st->step, dir);
      }
    }
    wait_barrier(comm); /* the others sleep, not spin, through rank 0's fsync and rename */
    rc = error_agree(comm, rc);
  }
  writer_free(&w);
  return rc;
}
