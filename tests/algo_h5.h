/* algo_h5.h: read the small golden files of tests/ref (serial HDF5 API) for
 * train/test_optim.c and rl/test_algo_golden.c. Datasets are converted to the requested
 * native type by HDF5; a missing file or dataset is a test failure with a message. */
#ifndef RLPT_ALGO_H5_H
#define RLPT_ALGO_H5_H
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>

/* Opens $RLPT_SOURCE_DIR/tests/ref/<name> read-only, or returns -1 with a message. */
static hid_t golden_open(const char *name) {
  const char *root = getenv("RLPT_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/ref/%s", root ? root : ".", name);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) fprintf(stderr, "cannot open golden file %s (set RLPT_SOURCE_DIR)\n", path);
  return f;
}

/* Reads dataset `name` as `type` into a new buffer; *n gets the element count. */
static void *golden_read(hid_t f, const char *name, hid_t type, long *n) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  if (d < 0) {
    fprintf(stderr, "golden dataset %s missing\n", name);
    exit(1);
  }
  hid_t s = H5Dget_space(d);
  long count = (long)H5Sget_simple_extent_npoints(s);
  void *buf = malloc((size_t)(count > 0 ? count : 1) * H5Tget_size(type));
  if (!buf || H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
    fprintf(stderr, "cannot read golden dataset %s\n", name);
    exit(1);
  }
  H5Sclose(s);
  H5Dclose(d);
  if (n) *n = count;
  return buf;
}

/* Reads a scalar attribute of the object at `obj` ("/" for the file) as a double. */
static double golden_attr(hid_t f, const char *obj, const char *name) {
  double v = 0.0;
  hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0) {
    fprintf(stderr, "golden attribute %s/%s missing\n", obj, name);
    exit(1);
  }
  H5Aclose(a);
  return v;
}
#endif
