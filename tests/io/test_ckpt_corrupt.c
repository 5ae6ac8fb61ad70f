/* io/test_ckpt_corrupt.c: every way a checkpoint can be bad gives code 2 and one
 * message naming the file and the dataset (or field): not HDF5, missing, a
 * model file instead of a checkpoint, truncated, wrong format_version, flipped
 * bytes in a tensor and in /rng (CRC), a missing dataset, a dataset of the wrong
 * shape, and a deck whose model differs. Leaves ckpt_good.h5 and
 * ckpt_flipped.h5 for the `rlpt convert` and h5py tests (fixture ckpt_files). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_fixture.h"
#include "testutil.h"

static void copy_file(const char *from, const char *to) {
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  char buf[65536];
  size_t n;
  while (a && b && (n = fread(buf, 1, sizeof buf, a)) > 0) CHECK(fwrite(buf, 1, n, b) == n);
  if (a) fclose(a);
  if (b) fclose(b);
}

/* ckpt_read with stderr captured into msg; returns its code. */
static int read_capture(const char *path, const struct model_config *expect, char *msg, size_t len) {
  fflush(stderr);
  int saved = dup(2), fd = open("ckpt_corrupt_msg.txt", O_CREAT | O_TRUNC | O_RDWR, 0644);
  dup2(fd, 2);
  struct ckpt_state st;
  int rc = ckpt_read(path, &st, expect, MPI_COMM_WORLD);
  if (!rc) ckpt_state_free(&st);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  ssize_t n = pread(fd, msg, len - 1, 0);
  msg[n > 0 ? n : 0] = '\0';
  close(fd);
  printf("%s -> %d: %s", path, rc, msg);
  return rc;
}

static void expect_bad(const char *path, const struct model_config *expect, const char *want) {
  char msg[4096];
  int rc = read_capture(path, expect, msg, sizeof msg);
  CHECK_MSG(rc == 2, "%s: code %d", path, rc);
  CHECK_MSG(strstr(msg, want) != NULL, "%s: message lacks '%s'", path, want);
  CHECK_MSG(strstr(msg, path) != NULL, "message does not name %s", path);
}

/* Opens a copy read-write for surgery. */
static hid_t open_rw(const char *path) {
  return H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
}

static void make_files(struct ckpt_state *a) {
  CHECK(system("rm -rf ckpt_corrupt_dir") == 0);
  struct ckpt_write_opts o = {.keep_last = 1};
  CHECK(ckpt_write("ckpt_corrupt_dir", a, &o, MPI_COMM_WORLD) == CKPT_OK);
  copy_file("ckpt_corrupt_dir/step_00000042.h5", "ckpt_good.h5");
  const char *copies[] = {"ckpt_flipped.h5", "ckpt_trunc.h5", "ckpt_missing.h5", "ckpt_shape.h5",
                          "ckpt_version.h5", "ckpt_rng.h5"};
  for (size_t i = 0; i < sizeof copies / sizeof *copies; i++) copy_file("ckpt_good.h5", copies[i]);
  FILE *f = fopen("ckpt_text.h5", "w");
  if (f) {
    fputs("this is not an HDF5 file\n", f);
    fclose(f);
  }
  CHECK(model_h5_write("ckpt_model_only.h5", &a->mc, a->params) == 0);
}

static void damage(void) {
  CHECK(fixture_flip("ckpt_flipped.h5", "/model/model.layers.0.mlp.down_proj.weight") == 0);
  CHECK(fixture_flip("ckpt_rng.h5", "/rng") == 0);
  struct stat sb;
  CHECK(stat("ckpt_trunc.h5", &sb) == 0 && truncate("ckpt_trunc.h5", sb.st_size * 3 / 5) == 0);
  hid_t f = open_rw("ckpt_missing.h5");
  CHECK(f >= 0 && H5Ldelete(f, "/optim/v/model.norm.weight", H5P_DEFAULT) >= 0);
  H5Fclose(f);
  f = open_rw("ckpt_shape.h5");
  hsize_t seven = 7;
  hid_t sp = H5Screate_simple(1, &seven, NULL);
  CHECK(f >= 0 && H5Ldelete(f, "/model/model.norm.weight", H5P_DEFAULT) >= 0);
  hid_t ds = H5Dcreate2(f, "/model/model.norm.weight", H5T_IEEE_F32LE, sp, H5P_DEFAULT,
                        H5P_DEFAULT, H5P_DEFAULT);
  CHECK(ds >= 0);
  H5Dclose(ds);
  H5Sclose(sp);
  H5Fclose(f);
  f = open_rw("ckpt_version.h5");
  CHECK(H5Adelete_by_name(f, "meta", "format_version", H5P_DEFAULT) >= 0);
  sp = H5Screate(H5S_SCALAR);
  hid_t at = H5Acreate_by_name(f, "meta", "format_version", H5T_STD_I32LE, sp, H5P_DEFAULT,
                               H5P_DEFAULT, H5P_DEFAULT);
  int v = 99;
  CHECK(at >= 0 && H5Awrite(at, H5T_NATIVE_INT, &v) >= 0);
  H5Aclose(at);
  H5Sclose(sp);
  H5Fclose(f);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  struct ckpt_state a;
  CHECK(fixture_state(&a, 42, 5, 0) == 0);
  make_files(&a);
  damage();
  char msg[4096];
  CHECK(read_capture("ckpt_good.h5", &a.mc, msg, sizeof msg) == 0);
  expect_bad("ckpt_flipped.h5", NULL,
             "ckpt_flipped.h5: dataset /model/model.layers.0.mlp.down_proj.weight: crc32 mismatch");
  expect_bad("ckpt_rng.h5", NULL, "dataset /rng: crc32 mismatch");
  expect_bad("ckpt_trunc.h5", NULL, "truncated or damaged");
  expect_bad("ckpt_missing.h5", NULL, "missing dataset /optim/v/model.norm.weight");
  expect_bad("ckpt_shape.h5", NULL, "dataset /model/model.norm.weight has the wrong shape (expected [16])");
  expect_bad("ckpt_version.h5", NULL, "/meta format_version is 99, this build reads 1");
  expect_bad("ckpt_text.h5", NULL, "not an HDF5 file");
  expect_bad("ckpt_does_not_exist.h5", NULL, "No such file");
  expect_bad("ckpt_model_only.h5", NULL, "not an rlpt checkpoint");
  struct model_config other = a.mc;
  other.dim = 32;
  expect_bad("ckpt_good.h5", &other, "model differs from the deck: dim is 16 in the checkpoint, 32 in the deck");
  other = a.mc;
  other.tie_embeddings = 1;
  expect_bad("ckpt_good.h5", &other, "tie_embeddings is 0 in the checkpoint, 1 in the deck");
  other = a.mc;
  other.max_seq = 4096; /* a longer context is not a different model */
  CHECK(read_capture("ckpt_good.h5", &other, msg, sizeof msg) == 0);
  ckpt_state_free(&a);
  int rc = TEST_RESULT("test_ckpt_corrupt");
  MPI_Finalize();
  return rc;
}
