/* io/test_ckpt.c: the checkpoint layer on one rank. Round trip bit-identical
 * (Adam state, ref, critic, rng, data cursor, controller sums, a deck larger
 * than HDF5's 64 KiB compact-attribute limit, buffer blob); `latest`; keep_last;
 * a NaN or Inf refused with nothing written; an unwritable directory and a full
 * disk (RLIMIT_FSIZE) leave the previous checkpoints and `latest` intact with no
 * temporary file; a corrupt newest checkpoint falls back to the previous one;
 * [checkpoint] on_error. */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_fixture.h"
#include "testutil.h"

#define DIR_T "ckpt_unit"

static void rm_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *de;
  char p[1024];
  while (d && (de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    unlink(p);
  }
  if (d) closedir(d);
  rmdir(dir);
}

static int exists(const char *dir, const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, F_OK) == 0;
}

static void latest_is(const char *dir, const char *want) {
  char p[1024], got[256] = "";
  snprintf(p, sizeof p, "%s/latest", dir);
  FILE *f = fopen(p, "r");
  if (f) {
    if (!fgets(got, sizeof got, f)) got[0] = '\0';
    fclose(f);
  }
  CHECK_MSG(!strcmp(got, want), "latest is '%s', want '%s'", got, want);
}

/* No step_*.h5.tmp or latest.tmp left in dir. */
static int no_tmp(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int n = 0;
  while (d && (de = readdir(d))) n += strstr(de->d_name, ".tmp") != NULL;
  if (d) closedir(d);
  return n == 0;
}

static const struct ckpt_write_opts KEEP3 = {.keep_last = 3};

static void test_round_trip(void) {
  struct ckpt_state a, b;
  CHECK(fixture_state(&a, 5, 11, 100000) == 0);
  CHECK(ckpt_write(DIR_T, &a, &KEEP3, MPI_COMM_WORLD) == CKPT_OK);
  CHECK(exists(DIR_T, "step_00000005.h5"));
  latest_is(DIR_T, "step_00000005.h5\n");
  char path[1024];
  ckpt_step_path(DIR_T, 5, path, sizeof path);
  CHECK(ckpt_read(path, &b, &a.mc, MPI_COMM_WORLD) == 0);
  CHECK(fixture_equal(&a, &b));
  CHECK(strlen(b.deck) > 100000);
  ckpt_state_free(&b);
  CHECK(ckpt_resolve(DIR_T, "latest", path, sizeof path) == 0);
  CHECK(!strcmp(path, DIR_T "/step_00000005.h5"));
  ckpt_state_free(&a);
}

/* The least a checkpoint holds: the model alone (no optim, ref, critic, buffer,
 * rng or controller sums; no deck text). Written in its own directory. */
static void test_minimal(void) {
  struct ckpt_state a, b;
  memset(&a, 0, sizeof a);
  a.step = 1;
  fixture_config(&a.mc, 0);
  a.params = fixture_floats(model_param_count(&a.mc), 3, 1, 0);
  CHECK(ckpt_write("ckpt_unit_min", &a, NULL, MPI_COMM_WORLD) == CKPT_OK);
  char used[1024];
  CHECK(ckpt_read_latest("ckpt_unit_min", &b, &a.mc, MPI_COMM_WORLD, used, sizeof used) == 0);
  CHECK(!b.has_optim && !b.has_ref && !b.has_critic && !b.has_buffer && b.n_rng == 0 &&
        b.n_ctrl == 0 && !strcmp(b.deck, "") && b.step == 1);
  CHECK(b.params && !memcmp(a.params, b.params, sizeof(float) * model_param_count(&a.mc)));
  ckpt_state_free(&b);
  free(a.params);
  rm_dir("ckpt_unit_min");
}

static void test_keep_last(void) {
  struct ckpt_write_opts keep2 = {.keep_last = 2};
  for (long step = 6; step <= 8; step++) {
    struct ckpt_state a;
    CHECK(fixture_state(&a, step, 11, 0) == 0);
    CHECK(ckpt_write(DIR_T, &a, &keep2, MPI_COMM_WORLD) == CKPT_OK);
    ckpt_state_free(&a);
  }
  CHECK(!exists(DIR_T, "step_00000005.h5") && !exists(DIR_T, "step_00000006.h5"));
  CHECK(exists(DIR_T, "step_00000007.h5") && exists(DIR_T, "step_00000008.h5"));
  latest_is(DIR_T, "step_00000008.h5\n");
  CHECK(no_tmp(DIR_T));
}

/* A NaN in the params and an Inf in Adam's v: refused before any file exists. */
static void test_nonfinite(void) {
  struct ckpt_state a;
  CHECK(fixture_state(&a, 9, 11, 0) == 0);
  a.params[123] = NAN;
  CHECK(ckpt_write(DIR_T, &a, &KEEP3, MPI_COMM_WORLD) == CKPT_ERR_NONFINITE);
  a.params[123] = 0.5f;
  a.adam_v[model_param_count(&a.mc) - 1] = INFINITY;
  CHECK(ckpt_write(DIR_T, &a, &KEEP3, MPI_COMM_WORLD) == CKPT_ERR_NONFINITE);
  a.adam_v[model_param_count(&a.mc) - 1] = 0.0f;
  a.ctrl[1] = NAN;
  CHECK(ckpt_write(DIR_T, &a, &KEEP3, MPI_COMM_WORLD) == CKPT_ERR_NONFINITE);
  CHECK(!exists(DIR_T, "step_00000009.h5") && !exists(DIR_T, "step_00000009.h5.tmp"));
  latest_is(DIR_T, "step_00000008.h5\n");
  ckpt_state_free(&a);
}

/* Caller mistakes are refused without reading past a buffer: rows beyond a
 * tensor, a controller name with a comma. */
static void test_bad_layout(void) {
  struct ckpt_state a;
  struct param_table t;
  CHECK(fixture_state(&a, 9, 11, 0) == 0);
  param_table_build(&t, &a.mc);
  struct ckpt_rows *rows = calloc((size_t)t.n, sizeof *rows);
  ckpt_rows_even(&t, 0, 1, rows);
  rows[3].nrows += 1000;
  struct ckpt_write_opts o = {.keep_last = 3, .rows = rows};
  CHECK(ckpt_write(DIR_T, &a, &o, MPI_COMM_WORLD) == CKPT_ERR_IO);
  snprintf(a.ctrl_name[0], CKPT_NAME_MAX, "a,b");
  CHECK(ckpt_write(DIR_T, &a, &KEEP3, MPI_COMM_WORLD) == CKPT_ERR_IO);
  CHECK(!exists(DIR_T, "step_00000009.h5"));
  free(rows);
  param_table_free(&t);
  ckpt_state_free(&a);
}

/* The previous checkpoint still reads back exactly. */
static void previous_intact(void) {
  struct ckpt_state a, b;
  char path[1024];
  fixture_state(&a, 8, 11, 0);
  latest_is(DIR_T, "step_00000008.h5\n");
  CHECK(no_tmp(DIR_T));
  ckpt_step_path(DIR_T, 8, path, sizeof path);
  CHECK(ckpt_read(path, &b, &a.mc, MPI_COMM_WORLD) == 0);
  CHECK(fixture_equal(&a, &b));
  ckpt_state_free(&a);
  ckpt_state_free(&b);
}

static void test_write_errors(void) {
  struct ckpt_state a;
  CHECK(fixture_state(&a, 10, 11, 0) == 0);
  /* A directory that cannot exist: a path through a regular file (works as root too). */
  FILE *f = fopen("ckpt_unit_file", "w");
  if (f) fclose(f);
  CHECK(ckpt_write("ckpt_unit_file/sub", &a, &KEEP3, MPI_COMM_WORLD) == CKPT_ERR_IO);
  /* A read-only directory (root ignores the mode bits: only checked as a user). */
  if (geteuid() != 0) {
    chmod(DIR_T, 0555);
    CHECK(ckpt_write(DIR_T, &a, &KEEP3, MPI_COMM_WORLD) == CKPT_ERR_IO);
    chmod(DIR_T, 0755);
    previous_intact();
  }
  /* Disk full: the file may not grow past 16 KiB (writes fail with EFBIG). */
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 16384;
  signal(SIGXFSZ, SIG_IGN);
  CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  int rc = ckpt_write(DIR_T, &a, &KEEP3, MPI_COMM_WORLD);
  setrlimit(RLIMIT_FSIZE, &old);
  CHECK_MSG(rc == CKPT_ERR_IO, "rc %d", rc);
  CHECK(!exists(DIR_T, "step_00000010.h5"));
  previous_intact();
  unlink("ckpt_unit_file");
  ckpt_state_free(&a);
}

/* Newest file truncated: resolve and read_latest both fall back to step 7.
 * Newest file with a flipped data byte: only the full read (CRC) catches it, and
 * falls back past the truncated step 8 to step 7. */
static void test_fallback(void) {
  char path[1024], used[1024];
  struct ckpt_state b;
  ckpt_step_path(DIR_T, 8, path, sizeof path);
  struct stat sb;
  CHECK(stat(path, &sb) == 0);
  CHECK(truncate(path, sb.st_size / 2) == 0);
  CHECK(ckpt_resolve(DIR_T, "latest", used, sizeof used) == 0);
  CHECK_MSG(!strcmp(used, DIR_T "/step_00000007.h5"), "resolved %s", used);
  CHECK(ckpt_read_latest(DIR_T, &b, NULL, MPI_COMM_WORLD, used, sizeof used) == 0);
  CHECK(b.step == 7 && !strcmp(used, DIR_T "/step_00000007.h5"));
  ckpt_state_free(&b);

  struct ckpt_state a;
  CHECK(fixture_state(&a, 11, 11, 0) == 0);
  CHECK(ckpt_write(DIR_T, &a, &KEEP3, MPI_COMM_WORLD) == CKPT_OK);
  ckpt_state_free(&a);
  ckpt_step_path(DIR_T, 11, path, sizeof path);
  CHECK(fixture_flip(path, "/optim/v/model.layers.1.mlp.up_proj.weight") == 0);
  CHECK(ckpt_resolve(DIR_T, "latest", used, sizeof used) == 0); /* the cheap check passes */
  CHECK(!strcmp(used, path));
  CHECK(ckpt_read_latest(DIR_T, &b, NULL, MPI_COMM_WORLD, used, sizeof used) == 0);
  CHECK_MSG(b.step == 7, "fell back to step %ld", b.step);
  ckpt_state_free(&b);
  /* The run resumes from 7 and writes 8 again with keep_last 1: the new step 8
   * survives pruning although a higher-numbered (corrupt) step 11 exists. */
  struct ckpt_write_opts keep1 = {.keep_last = 1};
  CHECK(fixture_state(&a, 8, 12, 0) == 0);
  CHECK(ckpt_write(DIR_T, &a, &keep1, MPI_COMM_WORLD) == CKPT_OK);
  ckpt_state_free(&a);
  CHECK(exists(DIR_T, "step_00000008.h5") && !exists(DIR_T, "step_00000011.h5") &&
        !exists(DIR_T, "step_00000007.h5"));
  latest_is(DIR_T, "step_00000008.h5\n");
  CHECK(ckpt_read_latest(DIR_T, &b, NULL, MPI_COMM_WORLD, used, sizeof used) == 0);
  CHECK(b.step == 8 && b.data.shuffle_seed == 12);
  ckpt_state_free(&b);
}

/* [checkpoint] on_error: abort stops the run (exit 1), continue carries on. */
static void test_on_error(void) {
  struct config *cfg = malloc(sizeof *cfg);
  char err[512];
  const char *deck = "[checkpoint]\non_error = continue\n";
  CHECK(cfg && config_parse(cfg, "t.ini", deck, 0, NULL, err, sizeof err) == 0);
  CHECK(cfg->checkpoint.on_error == CKPT_ON_ERROR_CONTINUE);
  CHECK(ckpt_on_error(cfg, CKPT_ERR_IO, 1) == 0);
  config_defaults(cfg);
  CHECK(cfg->checkpoint.on_error == CKPT_ON_ERROR_ABORT);
  CHECK(ckpt_on_error(cfg, CKPT_OK, 0) == 0);
  CHECK(ckpt_on_error(cfg, CKPT_ERR_NONFINITE, 1) == 1);
  free(cfg);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rm_dir(DIR_T);
  test_round_trip();
  test_minimal();
  test_keep_last();
  test_nonfinite();
  test_bad_layout();
  test_write_errors();
  test_fallback();
  test_on_error();
  rm_dir(DIR_T);
  int rc = TEST_RESULT("test_ckpt");
  MPI_Finalize();
  return rc;
}
