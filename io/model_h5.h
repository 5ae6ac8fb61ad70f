/* io/model_h5.h: model weights in HDF5 (serial), in the checkpoint's layout.
 *
 *   /meta            attrs: model_config (JSON string, model/params.c), format_version (int)
 *   /model/<hf-name> float32, [out, in] for matrices, [n] for norm weights and biases
 *
 * The group functions read/write any parameter table + flat buffer under a
 * group name, so the checkpoint module can reuse them for /optim/m, /ref, ...
 * Every function that can fail on user input returns 0 or 2 (bad input) or 1
 * (I/O failure while writing) and prints one message naming the file and the
 * dataset or attribute. */
#ifndef RLPT_MODEL_H5_H
#define RLPT_MODEL_H5_H

#include <hdf5.h>

#include "model/params.h"

#define MODEL_H5_FORMAT_VERSION 1

/* Silences HDF5's automatic error-stack printing between begin and end, so that
 * a user's bad file gives one message from us, not a library backtrace. */
struct h5_quiet { H5E_auto2_t fn; void *data; };
void h5_quiet_begin(struct h5_quiet *q);
void h5_quiet_end(const struct h5_quiet *q);
/* Dataset shape of a table entry: [n] for norm weights and biases, else
 * [rows, cols]; returns the rank (1 or 2). */
int h5_param_dims(const struct param_entry *e, hsize_t dims[2]);
/* A string attribute, fixed- or variable-length (h5py writes the latter), as a
 * malloc'd string; NULL when it is not a string. */
char *h5_read_string_attr(hid_t a);

/* Write every tensor of t from buf as <group>/<hf-name> (group is created). */
int h5_params_write(hid_t loc, const char *group, const struct param_table *t, const float *buf,
                    const char *path);
/* Read every tensor of t into buf from <group>/<hf-name>; a missing dataset or
 * a shape that differs from the table is an error (2). */
int h5_params_read(hid_t loc, const char *group, const struct param_table *t, float *buf,
                   const char *path);
/* /meta attributes: model_config JSON and format_version. */
int h5_meta_write(hid_t file, const struct model_config *mc, const char *path);
int h5_meta_read_config(hid_t file, struct model_config *mc, const char *path);

/* Whole model files: create/overwrite path with /meta and /model. */
int model_h5_write(const char *path, const struct model_config *mc, const float *params);
/* The config stored in path's /meta (validated). */
int model_h5_read_config(const char *path, struct model_config *mc);
/* /model of path into params, laid out by t (built from the same config). */
int model_h5_read_params(const char *path, const struct param_table *t, float *params);
/* The same tensor by tensor: each tensor i of t read into a scratch of one tensor (shape
 * checked) and handed to take(ctx, i, x) (x: t->e[i].numel floats, valid during the call).
 * A reader that keeps a shard of each never holds the model whole. 0, 1 (no memory) or 2. */
typedef void (*h5_take_fn)(void *ctx, int i, const float *x);
int model_h5_read_each(const char *path, const struct param_table *t, h5_take_fn take, void *ctx);
/* /group of loc the same way into scratch (param_table_max_numel(t) floats). */
int h5_params_read_each(hid_t loc, const char *group, const struct param_table *t,
                        float *scratch, h5_take_fn take, void *ctx, const char *path);
/* The largest tensor of t in floats (at least 1). */
size_t param_table_max_numel(const struct param_table *t);

#endif
