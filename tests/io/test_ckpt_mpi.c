/* io/test_ckpt_mpi.c: collective checkpoints across rank counts.
 *
 *   test_ckpt_mpi write DIR   (any number of ranks) writes step 41 with uneven
 *       explicit row ranges and step 42 with the even split, reads both back on
 *       the same ranks; a NaN in the last rank's rows only and row ranges that
 *       overlap are refused on every rank with nothing written.
 *   test_ckpt_mpi read DIR    (any number of ranks) reads DIR/latest (42) and step
 *       41 and compares them bit for bit with the fixture state.
 * The ctest pairs write on 2 ranks and read on 3 and on 1. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_fixture.h"
#include "testutil.h"

#define SEED 77

static int rank, size;

static void read_compare(const char *dir, long step) {
  struct ckpt_state want, got;
  char path[1024];
  CHECK(fixture_state(&want, step, SEED, 0) == 0);
  ckpt_step_path(dir, step, path, sizeof path);
  CHECK(ckpt_read(path, &got, &want.mc, MPI_COMM_WORLD) == 0);
  CHECK_MSG(fixture_equal(&want, &got), "rank %d step %ld", rank, step);
  ckpt_state_free(&got);
  ckpt_state_free(&want);
}

/* Rank r < size-1 writes row r of each tensor, the last rank the rest. */
static void rows_uneven(const struct param_table *t, struct ckpt_rows *r) {
  for (int i = 0; i < t->n; i++) {
    long rows = t->e[i].rows;
    r[i].row0 = rank < size - 1 ? rank : size - 1;
    r[i].nrows = rank < size - 1 ? 1 : rows - (size - 1);
  }
}

/* Step 40: refused on every rank, no file. */
static void refused_cases(const char *dir, const struct param_table *t) {
  struct ckpt_state a;
  char path[1024];
  CHECK(fixture_state(&a, 40, SEED, 0) == 0);
  ckpt_step_path(dir, a.step, path, sizeof path);
  /* The last element of the params (lm_head's last row) is on the last rank only. */
  size_t last = model_param_count(&a.mc) - 1;
  float keep = a.params[last];
  if (rank == size - 1) a.params[last] = NAN;
  struct ckpt_write_opts o = {.keep_last = 3};
  CHECK(ckpt_write(dir, &a, &o, MPI_COMM_WORLD) == CKPT_ERR_NONFINITE);
  a.params[last] = keep;
  if (size > 1) {
    struct ckpt_rows all[256];
    for (int i = 0; i < t->n; i++) all[i] = (struct ckpt_rows){.row0 = 0, .nrows = t->e[i].rows};
    o.rows = all; /* every rank claims every row: overlap */
    CHECK(ckpt_write(dir, &a, &o, MPI_COMM_WORLD) == CKPT_ERR_IO);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(access(path, F_OK) != 0);
  ckpt_state_free(&a);
}

static void write_mode(const char *dir) {
  char cmd[1100];
  if (rank == 0) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  struct ckpt_state a;
  struct param_table t;
  struct ckpt_rows rows[256];
  CHECK(fixture_state(&a, 41, SEED, 0) == 0);
  param_table_build(&t, &a.mc);
  CHECK(t.n <= 256);
  refused_cases(dir, &t);
  rows_uneven(&t, rows);
  struct ckpt_write_opts o = {.keep_last = 3, .rows = rows};
  CHECK(ckpt_write(dir, &a, &o, MPI_COMM_WORLD) == CKPT_OK);
  ckpt_state_free(&a);
  CHECK(fixture_state(&a, 42, SEED, 0) == 0);
  o.rows = NULL;
  CHECK(ckpt_write(dir, &a, &o, MPI_COMM_WORLD) == CKPT_OK);
  ckpt_state_free(&a);
  param_table_free(&t);
  read_compare(dir, 41);
  read_compare(dir, 42);
}

static void read_mode(const char *dir) {
  struct ckpt_state want, got;
  char used[1024];
  CHECK(fixture_state(&want, 42, SEED, 0) == 0);
  CHECK(ckpt_read_latest(dir, &got, &want.mc, MPI_COMM_WORLD, used, sizeof used) == 0);
  CHECK_MSG(fixture_equal(&want, &got), "rank %d of %d", rank, size);
  ckpt_state_free(&got);
  ckpt_state_free(&want);
  read_compare(dir, 41);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3 || (strcmp(argv[1], "write") && strcmp(argv[1], "read"))) {
    if (rank == 0) fprintf(stderr, "usage: test_ckpt_mpi write|read DIR\n");
    MPI_Finalize();
    return 2;
  }
  if (!strcmp(argv[1], "write")) write_mode(argv[2]);
  else read_mode(argv[2]);
  int fails = tu_failures, any = 0;
  MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  tu_failures = rank == 0 ? any : fails;
  int rc = rank == 0 ? TEST_RESULT("test_ckpt_mpi") : (fails != 0);
  MPI_Finalize();
  return rc;
}
