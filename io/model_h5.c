/* io/model_h5.c: write and read parameter tables as HDF5 datasets (see io/model_h5.h).
 *
 * HDF5's automatic error-stack printing is switched off around each call so
 * that a user's bad file gives one message from us, not a library backtrace. */
#include "io/model_h5.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Norm weights and biases are stored as [n]; everything else as [rows, cols]. */
static int param_rank(const struct param_entry *e) {
  switch (e->kind) {
  case P_ATTN_NORM: case P_FFN_NORM: case P_FINAL_NORM: case P_BQ: case P_BK: case P_BV:
    return 1;
  default:
    return 2;
  }
}

int h5_param_dims(const struct param_entry *e, hsize_t dims[2]) {
  dims[0] = (hsize_t)(param_rank(e) == 1 ? e->numel : (size_t)e->rows);
  dims[1] = (hsize_t)e->cols;
  return param_rank(e);
}

void h5_quiet_begin(struct h5_quiet *q) {
  H5Eget_auto2(H5E_DEFAULT, &q->fn, &q->data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void h5_quiet_end(const struct h5_quiet *q) {
  H5Eset_auto2(H5E_DEFAULT, q->fn, q->data);
}

static int write_one(hid_t g, const struct param_entry *e, const float *buf, const char *path,
                     const char *group) {
  hsize_t dims[2] = {(hsize_t)e->rows, (hsize_t)e->cols};
  if (param_rank(e) == 1) dims[0] = (hsize_t)e->numel;
  hid_t sp = H5Screate_simple(param_rank(e), dims, NULL);
  hid_t ds = H5Dcreate2(g, e->name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int rc = ds < 0 || H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                              buf + e->offset) < 0;
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(sp);
  if (rc) fprintf(stderr, "rlpt: %s: cannot write dataset /%s/%s\n", path, group, e->name);
  return rc;
}

int h5_params_write(hid_t loc, const char *group, const struct param_table *t, const float *buf,
                    const char *path) {
  struct h5_quiet q;
  h5_quiet_begin(&q);
  int rc = 0;
  hid_t g = H5Gcreate2(loc, group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) {
    fprintf(stderr, "rlpt: %s: cannot create group /%s\n", path, group);
    rc = 1;
  }
  for (int i = 0; !rc && i < t->n; i++) rc = write_one(g, &t->e[i], buf, path, group);
  if (g >= 0) H5Gclose(g);
  h5_quiet_end(&q);
  return rc;
}

/* Reads one dataset after checking it exists with the table's shape. */
static int read_one(hid_t g, const struct param_entry *e, float *buf, const char *path,
                    const char *group) {
  if (H5Lexists(g, e->name, H5P_DEFAULT) <= 0) {
    fprintf(stderr, "rlpt: %s: missing dataset /%s/%s\n", path, group, e->name);
    return 2;
  }
  hid_t ds = H5Dopen2(g, e->name, H5P_DEFAULT);
  hid_t sp = ds >= 0 ? H5Dget_space(ds) : -1;
  hsize_t dims[3] = {0, 0, 0};
  int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
  if (rank >= 1 && rank <= 2) H5Sget_simple_extent_dims(sp, dims, NULL);
  int want = param_rank(e), rc = 0;
  int ok = rank == want && (want == 1 ? dims[0] == (hsize_t)e->numel
                                      : dims[0] == (hsize_t)e->rows && dims[1] == (hsize_t)e->cols);
  if (!ok) {
    if (want == 1)
      fprintf(stderr, "rlpt: %s: dataset /%s/%s has the wrong shape (expected [%zu])\n", path,
              group, e->name, e->numel);
    else
      fprintf(stderr, "rlpt: %s: dataset /%s/%s has the wrong shape (expected [%d, %d])\n", path,
              group, e->name, e->rows, e->cols);
    rc = 2;
  } else if (H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf + e->offset) < 0) {
    fprintf(stderr, "rlpt: %s: cannot read dataset /%s/%s as float32\n", path, group, e->name);
    rc = 2;
  }
  if (sp >= 0) H5Sclose(sp);
  if (ds >= 0) H5Dclose(ds);
  return rc;
}

int h5_params_read(hid_t loc, const char *group, const struct param_table *t, float *buf,
                   const char *path) {
  struct h5_quiet q;
  h5_quiet_begin(&q);
  int rc = 0;
  hid_t g = H5Lexists(loc, group, H5P_DEFAULT) > 0 ? H5Gopen2(loc, group, H5P_DEFAULT) : -1;
  if (g < 0) {
    fprintf(stderr, "rlpt: %s: missing group /%s\n", path, group);
    rc = 2;
  }
  for (int i = 0; !rc && i < t->n; i++) rc = read_one(g, &t->e[i], buf, path, group);
  if (g >= 0) H5Gclose(g);
  h5_quiet_end(&q);
  return rc;
}

int h5_meta_write(hid_t file, const struct model_config *mc, const char *path) {
  struct h5_quiet q;
  h5_quiet_begin(&q);
  char *json = model_config_to_json(mc);
  int version = MODEL_H5_FORMAT_VERSION, rc = 0;
  hid_t g = H5Gcreate2(file, "meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, strlen(json) + 1);
  hid_t scalar = H5Screate(H5S_SCALAR);
  hid_t a1 = g >= 0 ? H5Acreate2(g, "model_config", str, scalar, H5P_DEFAULT, H5P_DEFAULT) : -1;
  hid_t a2 = g >= 0 ? H5Acreate2(g, "format_version", H5T_STD_I32LE, scalar, H5P_DEFAULT,
                                 H5P_DEFAULT) : -1;
  if (a1 < 0 || a2 < 0 || H5Awrite(a1, str, json) < 0 || H5Awrite(a2, H5T_NATIVE_INT, &version) < 0) {
    fprintf(stderr, "rlpt: %s: cannot write /meta attributes\n", path);
    rc = 1;
  }
  if (a1 >= 0) H5Aclose(a1);
  if (a2 >= 0) H5Aclose(a2);
  H5Sclose(scalar);
  H5Tclose(str);
  if (g >= 0) H5Gclose(g);
  free(json);
  h5_quiet_end(&q);
  return rc;
}

char *h5_read_string_attr(hid_t a) {
  hid_t ft = H5Aget_type(a);
  char *out = NULL;
  if (H5Tget_class(ft) == H5T_STRING) {
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_cset(mt, H5Tget_cset(ft)); /* h5py writes UTF-8; ASCII <-> UTF-8 does not convert */
    if (H5Tis_variable_str(ft) > 0) {
      char *v = NULL;
      H5Tset_size(mt, H5T_VARIABLE);
      if (H5Aread(a, mt, &v) >= 0 && v) {
        out = strdup(v);
        H5free_memory(v);
      }
    } else {
      size_t n = H5Tget_size(ft);
      H5Tset_size(mt, n + 1);
      out = calloc(n + 2, 1);
      if (out && H5Aread(a, mt, out) < 0) {
        free(out);
        out = NULL;
      }
    }
    H5Tclose(mt);
  }
  H5Tclose(ft);
  return out;
}

int h5_meta_read_config(hid_t file, struct model_config *mc, const char *path) {
  struct h5_quiet q;
  h5_quiet_begin(&q);
  int rc = 2, version = -1;
  char *json = NULL, err[256];
  if (H5Aexists_by_name(file, "meta", "format_version", H5P_DEFAULT) <= 0 ||
      H5Aexists_by_name(file, "meta", "model_config", H5P_DEFAULT) <= 0) {
    fprintf(stderr, "rlpt: %s: missing /meta attributes format_version and model_config "
            "(not an rlpt model file?)\n", path);
    goto out;
  }
  hid_t a = H5Aopen_by_name(file, "meta", "format_version", H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0 || H5Aread(a, H5T_NATIVE_INT, &version) < 0 || version != MODEL_H5_FORMAT_VERSION) {
    fprintf(stderr, "rlpt: %s: /meta format_version is %d, this build reads %d\n", path, version,
            MODEL_H5_FORMAT_VERSION);
    if (a >= 0) H5Aclose(a);
    goto out;
  }
  H5Aclose(a);
  a = H5Aopen_by_name(file, "meta", "model_config", H5P_DEFAULT, H5P_DEFAULT);
  json = a >= 0 ? h5_read_string_attr(a) : NULL;
  if (a >= 0) H5Aclose(a);
  if (!json) {
    fprintf(stderr, "rlpt: %s: /meta model_config is not a string attribute\n", path);
    goto out;
  }
  if (model_config_from_json(mc, json, err, sizeof err)) {
    fprintf(stderr, "rlpt: %s: /meta model_config: %s\n", path, err);
    goto out;
  }
  rc = 0;
out:
  free(json);
  h5_quiet_end(&q);
  return rc;
}

int model_h5_write(const char *path, const struct model_config *mc, const float *params) {
  struct h5_quiet q;
  h5_quiet_begin(&q);
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  h5_quiet_end(&q);
  if (f < 0) {
    fprintf(stderr, "rlpt: %s: cannot create the model file\n", path);
    return 2;
  }
  struct param_table t;
  param_table_build(&t, mc);
  int rc = h5_meta_write(f, mc, path);
  if (!rc) rc = h5_params_write(f, "model", &t, params, path);
  param_table_free(&t);
  if (H5Fclose(f) < 0 && !rc) {
    fprintf(stderr, "rlpt: %s: error closing the model file\n", path);
    rc = 1;
  }
  return rc;
}

static hid_t open_ro(const char *path) {
  struct h5_quiet q;
  h5_quiet_begin(&q);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  h5_quiet_end(&q);
  if (f < 0) fprintf(stderr, "rlpt: %s: cannot open as an HDF5 model file\n", path);
  return f;
}

int model_h5_read_config(const char *path, struct model_config *mc) {
  hid_t f = open_ro(path);
  if (f < 0) return 2;
  int rc = h5_meta_read_config(f, mc, path);
  H5Fclose(f);
  return rc;
}

int model_h5_read_params(const char *path, const struct param_table *t, float *params) {
  hid_t f = open_ro(path);
  if (f < 0) return 2;
  int rc = h5_params_read(f, "model", t, params, path);
  H5Fclose(f);
  return rc;
}

/* The entry e alone, at offset 0: a table that reads one tensor into a scratch. */
static struct param_table one_tensor(const struct param_entry *e, struct param_entry *copy) {
  *copy = *e;
  copy->offset = 0;
  return (struct param_table){.n = 1, .e = copy, .total = e->numel};
}

int h5_params_read_each(hid_t loc, const char *group, const struct param_table *t,
                        float *scratch, h5_take_fn take, void *ctx, const char *path) {
  int rc = 0;
  for (int i = 0; !rc && i < t->n; i++) {
    struct param_entry e1;
    struct param_table t1 = one_tensor(&t->e[i], &e1);
    rc = h5_params_read(loc, group, &t1, scratch, path);
    if (!rc) take(ctx, i, scratch);
  }
  return rc;
}

size_t param_table_max_numel(const struct param_table *t) {
  size_t most = 1;
  for (int i = 0; i < t->n; i++) most = t->e[i].numel > most ? t->e[i].numel : most;
  return most;
}

int model_h5_read_each(const char *path, const struct param_table *t, h5_take_fn take, void *ctx) {
  float *scratch = malloc(sizeof(float) * param_table_max_numel(t));
  if (!scratch) {
    fprintf(stderr, "rlpt: %s: out of memory for one tensor\n", path);
    return 1;
  }
  hid_t f = open_ro(path);
  int rc = f < 0 ? 2 : h5_params_read_each(f, "model", t, scratch, take, ctx, path);
  if (f >= 0) H5Fclose(f);
  free(scratch);
  return rc;
}
