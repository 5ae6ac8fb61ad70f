/* io/ckpt.h: HDF5 checkpoints and restart.
 *
 * Layout of DIR/step_%08d.h5 (README "Checkpoints and restarts"; readable by h5ls,
 * h5dump and h5py):
 *   /meta                 attrs format_version (int), rlpt_version, step, weight_version,
 *                         model_config (JSON), deck (canonical deck text), used_keys
 *   /model/<hf-name>      float32 full logical tensors, [out, in] or [n] (io/model_h5.h)
 *   /optim/m/<hf-name>, /optim/v/<hf-name>   AdamW moments; /optim attrs t, lr
 *   /ref/<hf-name>        the frozen reference policy (optional)
 *   /critic/<hf-name>     the PPO value model (optional); /critic attr model_config
 *   /critic_optim/m/<hf-name>, /critic_optim/v/<hf-name>   its AdamW moments; attr t
 *   /rng                  uint64 [n] random-stream counters
 *   /data                 uint64 [3] dataset cursor, epoch, shuffle seed (attr names)
 *   /controller           float64 [n] controller running sums (attr names, comma-separated)
 *   /buffer               uint8 [n] pending samples of the async modes (optional)
 *   /difficulty           uint8 [n] the difficulty filter's per-prompt pass rates (optional;
 *                         rl/difficulty.h difficulty_save)
 * Every dataset carries a uint32 attribute `crc32`: zlib's CRC-32 of the full
 * logical tensor's little-endian bytes (io/crc32.h).
 *
 * Writing is collective over the train communicator with MPI-IO: each rank
 * writes its rows of each tensor (replicated tensors are split evenly by rows, so
 * every row is written once). The file is written as step_N.h5.tmp, closed,
 * re-opened and verified (every dataset present, CRCs, finite values), fsynced; the new
 * DIR/latest is written as DIR/latest.tmp and fsynced (all that needs disk space is done
 * before any rename); then step_N.h5.tmp is renamed to step_N.h5 and DIR/latest.tmp to
 * DIR/latest (a one-line text file naming it). A failure before the renames removes the
 * temporaries only, so a checkpoint reported as not written leaves no step_N.h5 behind.
 * A non-finite value is refused before any file is created.
 *
 * Reading is layout-independent: rank 0 reads and validates the full logical
 * tensors, every rank gets the same state. So a run restarts on any number of
 * ranks.
 *
 * In the step loop (train ranks, comm = the train communicator):
 *   struct ckpt_state st = {.step = k, .weight_version = v, .mc = mc, .params = p,
 *                           .has_optim = 1, .adam_m = opt.m, .adam_v = opt.v,
 *                           .adam_t = opt.t, .lr = lr, ...};
 *   ckpt_deck_text(cfg, &st.deck, &st.used_keys);          (once; free both at the end)
 *   rc = ckpt_write(cfg->checkpoint.dir, &st,
 *                   &(struct ckpt_write_opts){.keep_last = cfg->checkpoint.keep_last}, comm);
 *   if (ckpt_on_error(cfg, rc, rank)) -> every rank exits 1
 * At start-up, [run] restart = latest: ckpt_read_latest(cfg->checkpoint.dir, &st, &mc, comm,
 * path, len); a path: ckpt_read(path, ...); then print ckpt_describe() on rank 0, copy
 * or adopt the buffers and ckpt_state_free(). */
#ifndef RLPT_CKPT_H
#define RLPT_CKPT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "io/model_h5.h"
#include "model/params.h"

struct config;

#define CKPT_FORMAT_VERSION MODEL_H5_FORMAT_VERSION
#define CKPT_RNG_MAX 16
#define CKPT_CTRL_MAX 32
#define CKPT_NAME_MAX 48

/* ckpt_write results. The caller maps a nonzero one through [checkpoint] on_error. */
#define CKPT_OK 0
#define CKPT_ERR_IO 1         /* not written (disk full, unwritable dir, verify failed) */
#define CKPT_ERR_NONFINITE 3  /* refused: a NaN or Inf in the state; no file was created */

struct ckpt_data_cursor {
  uint64_t cursor, epoch, shuffle_seed;
};

/* What a checkpoint holds. For ckpt_write the caller points the buffers at its
 * own memory; ckpt_read allocates them (owned = 1) and ckpt_state_free frees. */
#define CKPT_GROUPS_MAX 7 /* model, optim/m, optim/v, ref, critic, critic_optim/m, /v */

struct ckpt_state {
  long step, weight_version;
  struct model_config mc;
  float *params;                 /* param_table_build(mc).total floats */
  int has_optim;
  float *adam_m, *adam_v;        /* same layout as params */
  long adam_t;                   /* AdamW updates applied (struct adamw t) */
  double lr;
  int has_ref;
  float *ref_params;             /* same layout as params */
  int has_critic;
  struct model_config critic_mc;
  float *critic_params;          /* param_table_build(critic_mc).total floats */
  int has_critic_optim;          /* the critic's AdamW state (needs has_critic) */
  float *critic_adam_m, *critic_adam_v; /* same layout as critic_params */
  long critic_adam_t;
  int n_rng;
  uint64_t rng[CKPT_RNG_MAX];
  struct ckpt_data_cursor data;
  int n_ctrl;                    /* controller running sums, by name */
  char ctrl_name[CKPT_CTRL_MAX][CKPT_NAME_MAX];
  double ctrl[CKPT_CTRL_MAX];
  char *deck;                    /* canonical deck text (NULL = "") */
  char *used_keys;               /* "section.key" lines the deck or overrides set (NULL = "") */
  int has_buffer;
  unsigned char *buffer;         /* async modes: serialised pending samples (rank 0's is saved) */
  size_t buffer_len;
  int has_difficulty;
  unsigned char *difficulty;     /* [algo] difficulty_filter's state (rl/difficulty.h) */
  size_t difficulty_len;
  int owned;
};

/* Rows [row0, row0 + nrows) of one tensor that this rank writes. */
struct ckpt_rows {
  long row0, nrows;
};

struct ckpt_write_opts {
  int keep_last;                    /* complete checkpoints kept (>= 1; the newest always) */
  const struct ckpt_rows *rows;     /* per entry of the model's table; NULL = even split */
  const struct ckpt_rows *critic_rows; /* per entry of the critic's table; NULL = even split */
  /* NULL, or: the model's groups (params, adam_m, adam_v, ref_params) are in the caller's
   * layout (a tensor-parallel shard) and tensor(ctx, buf, i, x) writes full tensor i of the
   * group whose buffer is buf into x (e[i].numel floats of the model's table). The writer
   * calls it for every tensor of those groups in file order on every rank of comm, twice
   * (checksums, then the write), so it may be collective; it keeps one tensor at a time. */
  void (*tensor)(void *ctx, const float *buf, int i, float *x);
  void *ctx;
};

/* DIR/step_%08d.h5 into buf. */
void ckpt_step_path(const char *dir, long step, char *buf, size_t len);
/* Rank `rank` of `size`'s even share of each tensor's rows (out: t->n entries). */
void ckpt_rows_even(const struct param_table *t, int rank, int size, struct ckpt_rows *out);

/* Collective over comm (the train ranks; every rank passes the same scalars and
 * its own rows of the tensors). Writes DIR/step_%08d.h5 (DIR is created) and
 * moves DIR/latest to it. Returns CKPT_OK, CKPT_ERR_IO or CKPT_ERR_NONFINITE,
 * the same on every rank; rank 0 has printed one message. On error the previous
 * checkpoints and `latest` are untouched and no temporary file is left. */
int ckpt_write(const char *dir, const struct ckpt_state *st, const struct ckpt_write_opts *o,
               MPI_Comm comm);

/* Collective over comm: read and validate path into st (allocated; free with
 * ckpt_state_free). expect (may be NULL) is the deck's model: an architecture
 * that differs is an error naming the field (max_seq and init_std may differ).
 * Returns 0, 2 (bad, corrupt or mismatched file: rank 0 printed one message
 * naming the file and dataset) or 1 (out of memory), the same on every rank. */
int ckpt_read(const char *path, struct ckpt_state *st, const struct model_config *expect,
              MPI_Comm comm);
/* Collective: the checkpoint DIR/latest points at, else (with a warning) each
 * step_*.h5 from the newest down until one reads and validates. path_out gets
 * the file used. Returns as ckpt_read; 2 when no checkpoint in dir is valid. */
int ckpt_read_latest(const char *dir, struct ckpt_state *st, const struct model_config *expect,
                     MPI_Comm comm, char *path_out, size_t len);
void ckpt_state_free(struct ckpt_state *st);
/* The same for a reader that keeps a shard of each tensor (tensor parallelism): the model's
 * groups (params, adam_m, adam_v, ref_params) are read by rank 0 one tensor at a time (shape
 * and crc32 checked), broadcast, and take(ctx, i, x, local) keeps this rank's part of full
 * tensor i (x) in local, a buffer of local_total floats; those four buffers of st are then
 * in the caller's layout. No rank holds more than one full tensor of them. into[g] non-NULL
 * (g: params, adam_m, adam_v, ref_params): that group goes straight into the caller's buffer
 * and its pointer in st stays NULL (the has_ flags say whether it was there). sh NULL:
 * ckpt_read / ckpt_read_latest. */
struct ckpt_read_shards {
  size_t local_total;
  float *into[4];
  void (*take)(void *ctx, int i, const float *x, float *local);
  void *ctx;
};
int ckpt_read_sharded(const char *path, struct ckpt_state *st, const struct model_config *expect,
                      MPI_Comm comm, const struct ckpt_read_shards *sh);
int ckpt_read_latest_sharded(const char *dir, struct ckpt_state *st,
                             const struct model_config *expect, MPI_Comm comm, char *path_out,
                             size_t len, const struct ckpt_read_shards *sh);

/* No MPI. The file a restart would use: which = "latest" (or NULL / "") reads
 * dir_or_path/latest and checks that the file opens as a checkpoint; if not,
 * warns and takes the newest step_*.h5 that does. Any other `which` is a path
 * (a directory there means its latest). Returns 0, or 2 with a message. */
int ckpt_resolve(const char *dir_or_path, const char *which, char *out, size_t len);
/* Cheap check that path opens as an rlpt checkpoint (/meta format_version and
 * step); message on stderr unless quiet. Returns 0 or 2. */
int ckpt_probe(const char *path, int quiet);

/* What the run does after ckpt_write returned rc, by [checkpoint] on_error:
 * 0 = carry on (rc was 0, or on_error = continue: rank 0 prints a warning), or
 * the exit code 1 (on_error = abort). The same on every rank. */
int ckpt_on_error(const struct config *cfg, int rc, int rank);
/* One line saying what st holds ("step 42 (weight_version 43): 5264 params, AdamW t=84 ..."),
 * for the restart message. */
void ckpt_describe(const struct ckpt_state *st, char *buf, size_t len);

/* The canonical deck of cfg and the keys it set (malloc'd strings). 0 or 1 (no memory). */
int ckpt_deck_text(const struct config *cfg, char **deck, char **used_keys);

/* ---- shared by ckpt_write.c, ckpt_read.c, ckpt_dir.c --------------------- */

/* One group of float tensors laid out by a parameter table. */
struct ckpt_group {
  const char *name;                /* "model", "optim/m", ... */
  const struct param_table *t;
  float *buf;
};
/* The tensor groups st holds (model, optim/m, optim/v, ref, critic), in file order. */
int ckpt_groups(const struct ckpt_state *st, const struct param_table *t,
                const struct param_table *ct, struct ckpt_group out[CKPT_GROUPS_MAX]);
/* Names of the small datasets' fields. */
#define CKPT_DATA_NAMES "cursor,epoch,shuffle_seed"
/* The fsync'd atomic replacement of DIR/latest by `name`; 0 or -1 (errno set). In two
 * halves for the writer: prepare writes and fsyncs DIR/latest.tmp (the part that needs disk
 * space; on failure it is removed), commit renames it over DIR/latest and fsyncs DIR,
 * discard removes a prepared one. */
int ckpt_latest_update(const char *dir, const char *name);
int ckpt_latest_prepare(const char *dir, const char *name);
int ckpt_latest_commit(const char *dir);
void ckpt_latest_discard(const char *dir);
/* fsync a file or directory by path; 0 or -1. */
int ckpt_fsync_path(const char *path);
/* mkdir -p; 0 or -1 (errno set). */
int ckpt_mkdirs(const char *dir);
/* Delete complete step_*.h5 files of dir but `current` (the one just written,
 * whatever its number: after a rollback newer-numbered files may exist) and the
 * keep - 1 highest-numbered others. */
void ckpt_prune(const char *dir, int keep, long current);
/* Steps of dir's complete step_*.h5 files, newest first (malloc'd; *n entries). */
long *ckpt_list_steps(const char *dir, int *n);

#endif
