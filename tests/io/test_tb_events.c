/* io/test_tb_events.c: CRC-32C against RFC 3720's vectors, TFRecord framing and a whole
 * event file (file_version, two scalars, a text table) byte for byte against what
 * TensorBoard's own Python writer produces, new names never over old files, and an
 * uncreatable directory's message.
 *
 * The expected bytes come from tensorboard 2.21 (pip), with
 *   w = tensorboard.summary.writer.record_writer.RecordWriter(buf)
 *   w.write(Event(wall_time=1700000000.25, file_version="brain.Event:2").SerializeToString())
 *   w.write(Event(wall_time=1700000001.5, step=3, summary=Summary(value=[
 *       Value(tag="actor/pg_loss", simple_value=0.25), Value(tag="eval/acc", simple_value=-1.5)])))
 *   s = tensorboard.plugins.text.summary_v2.text_pb("samples/responses",
 *       np.array([["1+2=", "3"], ["\u00fc", ""]], dtype=object))
 *   s.value[0].metadata.data_class = DATA_CLASS_TENSOR
 *   w.write(Event(wall_time=1700000002.0, step=4, summary=s).SerializeToString())
 * and tensorboard.compat.tensorflow_stub.pywrap_tensorflow.masked_crc32c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/crc32c.h"
#include "io/tb_events.h"
#include "io/tfrecord.h"
#include "testutil.h"

static const unsigned char want_file[199] = {
    0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa3, 0x7f, 0x4b, 0x22,
    0x09, 0x00, 0x00, 0x10, 0x40, 0xfc, 0x54, 0xd9, 0x41, 0x1a, 0x0d, 0x62,
    0x72, 0x61, 0x69, 0x6e, 0x2e, 0x45, 0x76, 0x65, 0x6e, 0x74, 0x3a, 0x32,
    0x33, 0x8d, 0x2f, 0xe9, 0x34, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x5e, 0x33, 0x17, 0x5c, 0x09, 0x00, 0x00, 0x60, 0x40, 0xfc, 0x54, 0xd9,
    0x41, 0x10, 0x03, 0x2a, 0x27, 0x0a, 0x14, 0x0a, 0x0d, 0x61, 0x63, 0x74,
    0x6f, 0x72, 0x2f, 0x70, 0x67, 0x5f, 0x6c, 0x6f, 0x73, 0x73, 0x15, 0x00,
    0x00, 0x80, 0x3e, 0x0a, 0x0f, 0x0a, 0x08, 0x65, 0x76, 0x61, 0x6c, 0x2f,
    0x61, 0x63, 0x63, 0x15, 0x00, 0x00, 0xc0, 0xbf, 0x9f, 0x70, 0xd3, 0x54,
    0x4b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x87, 0x09, 0x99, 0x96,
    0x09, 0x00, 0x00, 0x80, 0x40, 0xfc, 0x54, 0xd9, 0x41, 0x10, 0x04, 0x2a,
    0x3e, 0x0a, 0x3c, 0x0a, 0x11, 0x73, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x73,
    0x2f, 0x72, 0x65, 0x73, 0x70, 0x6f, 0x6e, 0x73, 0x65, 0x73, 0x42, 0x1b,
    0x08, 0x07, 0x12, 0x08, 0x12, 0x02, 0x08, 0x02, 0x12, 0x02, 0x08, 0x02,
    0x42, 0x04, 0x31, 0x2b, 0x32, 0x3d, 0x42, 0x01, 0x33, 0x42, 0x02, 0xc3,
    0xbc, 0x42, 0x00, 0x4a, 0x0a, 0x0a, 0x06, 0x0a, 0x04, 0x74, 0x65, 0x78,
    0x74, 0x20, 0x02, 0x09, 0x8d, 0xcf, 0xcd,
};

static void test_crc32c(void) {
  CHECK(crc32c(0, "123456789", 9) == 0xE3069283u);
  unsigned char b[32];
  memset(b, 0, sizeof b);
  CHECK(crc32c(0, b, 32) == 0x8A9136AAu);  /* RFC 3720 B.4: 32 bytes of zeros */
  memset(b, 0xff, sizeof b);
  CHECK(crc32c(0, b, 32) == 0x62A8AB43u);  /* 32 bytes of ones */
  for (int i = 0; i < 32; i++) b[i] = (unsigned char)i;
  CHECK(crc32c(0, b, 32) == 0x46DD794Eu);  /* incrementing 00..1f */
  CHECK(crc32c(crc32c(0, b, 13), b + 13, 19) == 0x46DD794Eu);  /* continued */
  for (int i = 0; i < 32; i++) b[i] = (unsigned char)(31 - i);
  CHECK(crc32c(0, b, 32) == 0x113FDB5Cu);  /* decrementing 1f..00 */
  CHECK(crc32c(0, "", 0) == 0);
  CHECK(tfrecord_masked_crc("123456789", 9) == 0xc78ab0e5u);
}

static void test_frame(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/hello.tfrecord", dir);
  FILE *f = fopen(path, "wb");
  CHECK(f && tfrecord_write(f, "hello", 5) == 0);
  if (f) fclose(f);
  static const unsigned char want[21] = {0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                         0x00, 0xea, 0xb2, 0x04, 0x3e, 0x68, 0x65,
                                         0x6c, 0x6c, 0x6f, 0xbb, 0x1f, 0x1c, 0x19};
  unsigned char got[64];
  f = fopen(path, "rb");
  size_t n = f ? fread(got, 1, sizeof got, f) : 0;
  if (f) fclose(f);
  CHECK(n == sizeof want && memcmp(got, want, sizeof want) == 0);
  unlink(path);
}

/* The reference file's events written by tb_events; returns the file's path (owned). */
static char *write_reference(const char *dir) {
  struct tb_events w;
  char err[256];
  CHECK_MSG(tb_events_open(&w, dir, ".test", 1700000000.25, err, sizeof err) == 0, "%s", err);
  if (!w.f) return NULL;
  struct tb_scalar v[2] = {{.tag = "actor/pg_loss", .value = 0.25f},
                           {.tag = "eval/acc", .value = -1.5f}};
  CHECK(tb_events_scalars(&w, 3, 1700000001.5, v, 2) == 0);
  const char *cells[4] = {"1+2=", "3", "\xc3\xbc", ""};
  CHECK(tb_events_text(&w, 4, 1700000002.0, "samples/responses", 2, 2, cells) == 0);
  char *path = strdup(w.path);
  tb_events_close(&w);
  return path;
}

static void test_file(const char *dir) {
  char *path = write_reference(dir);
  char host[256] = "", want_path[768];
  gethostname(host, sizeof host - 1);
  snprintf(want_path, sizeof want_path, "%s/events.out.tfevents.1700000000.%s.test", dir, host);
  CHECK_MSG(path && strcmp(path, want_path) == 0, "%s", path ? path : "(none)");
  unsigned char got[512];
  FILE *f = path ? fopen(path, "rb") : NULL;
  size_t n = f ? fread(got, 1, sizeof got, f) : 0;
  if (f) fclose(f);
  CHECK_MSG(n == sizeof want_file, "%zu bytes", n);
  for (size_t i = 0; i < n && i < sizeof want_file; i++)
    if (got[i] != want_file[i]) {
      CHECK_MSG(0, "byte %zu: 0x%02x, want 0x%02x", i, got[i], want_file[i]);
      break;
    }
  /* the same second and suffix again: the next second's name, the first file intact */
  char *again = write_reference(dir);
  snprintf(want_path, sizeof want_path, "%s/events.out.tfevents.1700000001.%s.test", dir, host);
  CHECK_MSG(again && strcmp(again, want_path) == 0, "%s", again ? again : "(none)");
  struct stat st;
  CHECK(path && stat(path, &st) == 0 && st.st_size == (off_t)sizeof want_file);
  if (path) unlink(path);
  if (again) unlink(again);
  free(path);
  free(again);
}

static void test_bad_dir(const char *dir) {
  char file[512], sub[600], err[1024] = "";
  snprintf(file, sizeof file, "%s/plain", dir);
  FILE *f = fopen(file, "w");
  if (f) fclose(f);
  snprintf(sub, sizeof sub, "%s/tb", file);  /* below a regular file: not creatable, even by root */
  struct tb_events w;
  CHECK(tb_events_open(&w, sub, ".test", 1700000000.0, err, sizeof err) == -1 && w.f == NULL);
  CHECK_MSG(strstr(err, sub) && strstr(err, "cannot create the directory"), "%s", err);
  unlink(file);
}

int main(void) {
  char dir[] = "/tmp/rlpt_test_tb_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  test_crc32c();
  test_frame(dir);
  test_file(dir);
  test_bad_dir(dir);
  rmdir(dir);
  return TEST_RESULT("test_tb_events");
}
