/* io/tb_events.h: a TensorBoard event file writer. An event file is a sequence of
 * TFRecord-framed (io/tfrecord.h) Event protos (io/tb_event.proto, encoded with
 * protobuf-c), the first one carrying file_version "brain.Event:2". Each writer
 * appends to a file of its own, events.out.tfevents.<seconds>.<host><suffix>, in a
 * run directory; TensorBoard merges the files of a directory into one run, reading
 * them in name (= start time) order. Every event is flushed when written: a crash
 * loses nothing written before it (a reader stops at a torn last record).
 *
 * Scalars are Summary values with simple_value (float32); text is the text plugin's
 * form, a DT_STRING tensor with plugin_name "text", rendered as a table when it has
 * two dimensions. */
#ifndef RLPT_TB_EVENTS_H
#define RLPT_TB_EVENTS_H

#include <stddef.h>
#include <stdio.h>

#define TB_FILE_VERSION "brain.Event:2"

struct tb_events {
  FILE *f;
  char *path;  /* owned: the file written */
};

struct tb_scalar {
  const char *tag;
  float value;
};

/* Create dir (and its parents) and a new event file in it named after wall_time's
 * second; never over an existing file (a taken name moves to the next second, so the
 * names still sort by start time). Writes the file_version event at wall_time.
 * Returns 0, or -1 with the reason (naming the path) in err. */
int tb_events_open(struct tb_events *w, const char *dir, const char *suffix, double wall_time,
                   char *err, size_t errlen);
/* One event at step holding n scalars. Returns 0, or -1 (errno set). */
int tb_events_scalars(const struct tb_events *w, long step, double wall_time,
                      const struct tb_scalar *v, int n);
/* One event at step holding a text-plugin table of rows x cols UTF-8 strings, cells in
 * row-major order (cols = 1: a one-column table). Returns 0, or -1 (errno set). */
int tb_events_text(const struct tb_events *w, long step, double wall_time, const char *tag,
                   int rows, int cols, const char *const *cells);
void tb_events_close(struct tb_events *w);
/* Seconds since the epoch, the wall_time of an event written now. */
double tb_wall_time(void);

#endif
