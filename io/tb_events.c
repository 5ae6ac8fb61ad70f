/* io/tb_events.c: TensorBoard event files (io/tb_events.h): Event protos built with
 * protobuf-c's generated code (io/tb_event.pb-c.h), packed and framed as TFRecords. */
#include "io/tb_events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/ckpt.h"
#include "io/tb_event.pb-c.h"
#include "io/tfrecord.h"

#define TB_NAME_TRIES 1000 /* seconds to move past taken names */

double tb_wall_time(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Pack ev and append it as one record. */
static int write_event(const struct tb_events *w, const Tensorboard__Event *ev) {
  size_t n = tensorboard__event__get_packed_size(ev);
  unsigned char *buf = malloc(n ? n : 1);
  if (!buf) return -1;
  tensorboard__event__pack(ev, buf);
  int rc = tfrecord_write(w->f, buf, n);
  free(buf);
  return rc;
}

/* A new file dir/events.out.tfevents.<t>.<host><suffix>, t from wall_time on; the fd,
 * or -1 with errno set and the last name tried in path. */
static int create_file(const char *dir, const char *suffix, double wall_time, char *path,
                       size_t len) {
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0 || !host[0]) snprintf(host, sizeof host, "localhost");
  long t = (long)wall_time;
  for (int i = 0; i < TB_NAME_TRIES; i++, t++) {
    snprintf(path, len, "%s/events.out.tfevents.%010ld.%s%s", dir, t, host, suffix);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

int tb_events_open(struct tb_events *w, const char *dir, const char *suffix, double wall_time,
                   char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  if (ckpt_mkdirs(dir) != 0) {
    snprintf(err, errlen, "%s: cannot create the directory: %s", dir, strerror(errno));
    return -1;
  }
  size_t len = strlen(dir) + strlen(suffix) + 320;
  w->path = malloc(len);
  if (!w->path) return snprintf(err, errlen, "out of memory"), -1;
  int fd = create_file(dir, suffix, wall_time, w->path, len);
  if (fd < 0 || !(w->f = fdopen(fd, "a"))) {
    snprintf(err, errlen, "%s: cannot create the event file: %s", w->path, strerror(errno));
    if (fd >= 0) close(fd);
    free(w->path);
    w->path = NULL;
    return -1;
  }
  Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
  ev.wall_time = wall_time;
  ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
  ev.file_version = TB_FILE_VERSION;
  if (write_event(w, &ev) != 0) {
    snprintf(err, errlen, "%s: cannot write the event file: %s", w->path, strerror(errno));
    unlink(w->path);
    tb_events_close(w);
    return -1;
  }
  return 0;
}

/* One event at step whose summary holds the n values. */
static int write_summary(const struct tb_events *w, long step, double wall_time,
                         Tensorboard__Summary__Value **vals, int n) {
  Tensorboard__Summary sum = TENSORBOARD__SUMMARY__INIT;
  sum.n_value = (size_t)n;
  sum.value = vals;
  Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
  ev.wall_time = wall_time;
  ev.step = step;
  ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
  ev.summary = &sum;
  return write_event(w, &ev);
}

int tb_events_scalars(const struct tb_events *w, long step, double wall_time,
                      const struct tb_scalar *v, int n) {
  Tensorboard__Summary__Value *vals = calloc((size_t)n + 1, sizeof *vals);
  Tensorboard__Summary__Value **ptrs = calloc((size_t)n + 1, sizeof *ptrs);
  int rc = -1;
  if (vals && ptrs) {
    for (int i = 0; i < n; i++) {
      tensorboard__summary__value__init(&vals[i]);
      vals[i].tag = (char *)v[i].tag;
      vals[i].value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
      vals[i].simple_value = v[i].value;
      ptrs[i] = &vals[i];
    }
    rc = write_summary(w, step, wall_time, ptrs, n);
  }
  free(vals);
  free(ptrs);
  return rc;
}

/* The text plugin's value: tag, metadata plugin_name "text" (content empty: version 0),
 * a rows x cols DT_STRING tensor of str. Its messages point into one another, so they
 * are one struct, valid while it is. */
struct tb_text {
  Tensorboard__Summary__Value v;
  Tensorboard__TensorProto t;
  Tensorboard__TensorShapeProto shape;
  Tensorboard__TensorShapeProto__Dim d[2], *dims[2];
  Tensorboard__SummaryMetadata md;
  Tensorboard__SummaryMetadata__PluginData pd;
};

static void text_value(struct tb_text *x, const char *tag, int rows, int cols,
                       ProtobufCBinaryData *str) {
  tensorboard__tensor_shape_proto__dim__init(&x->d[0]);
  tensorboard__tensor_shape_proto__dim__init(&x->d[1]);
  x->d[0].size = rows;
  x->d[1].size = cols;
  x->dims[0] = &x->d[0];
  x->dims[1] = &x->d[1];
  tensorboard__tensor_shape_proto__init(&x->shape);
  x->shape.n_dim = 2;
  x->shape.dim = x->dims;
  tensorboard__tensor_proto__init(&x->t);
  x->t.dtype = TENSORBOARD__DATA_TYPE__DT_STRING;
  x->t.tensor_shape = &x->shape;
  x->t.n_string_val = (size_t)rows * (size_t)cols;
  x->t.string_val = str;
  tensorboard__summary_metadata__plugin_data__init(&x->pd);
  x->pd.plugin_name = "text";
  tensorboard__summary_metadata__init(&x->md);
  x->md.plugin_data = &x->pd;
  x->md.data_class = TENSORBOARD__DATA_CLASS__DATA_CLASS_TENSOR;
  tensorboard__summary__value__init(&x->v);
  x->v.tag = (char *)tag;
  x->v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
  x->v.tensor = &x->t;
  x->v.metadata = &x->md;
}

int tb_events_text(const struct tb_events *w, long step, double wall_time, const char *tag,
                   int rows, int cols, const char *const *cells) {
  size_t n = (size_t)rows * (size_t)cols;
  ProtobufCBinaryData *str = calloc(n + 1, sizeof *str);
  if (!str) return -1;
  for (size_t i = 0; i < n; i++) {
    str[i].data = (uint8_t *)cells[i];
    str[i].len = strlen(cells[i]);
  }
  struct tb_text x;
  text_value(&x, tag, rows, cols, str);
  Tensorboard__Summary__Value *pv = &x.v;
  int rc = write_summary(w, step, wall_time, &pv, 1);
  free(str);
  return rc;
}

void tb_events_close(struct tb_events *w) {
  if (w->f) fclose(w->f);
  free(w->path);
  memset(w, 0, sizeof *w);
}
