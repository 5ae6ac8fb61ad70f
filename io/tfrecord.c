/* io/tfrecord.c: TFRecord framing (io/tfrecord.h). */
#include "io/tfrecord.h"

#include "io/crc32c.h"

static void put_le(unsigned char *out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) out[i] = (unsigned char)(v >> (8 * i));
}

uint32_t tfrecord_masked_crc(const void *p, size_t n) {
  uint32_t c = crc32c(0, p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

void tfrecord_header(uint64_t n, unsigned char out[TFRECORD_HEADER]) {
  put_le(out, n, 8);
  put_le(out + 8, tfrecord_masked_crc(out, 8), 4);
}

void tfrecord_footer(const void *data, size_t n, unsigned char out[TFRECORD_FOOTER]) {
  put_le(out, tfrecord_masked_crc(data, n), 4);
}

int tfrecord_write(FILE *f, const void *data, size_t n) {
  unsigned char head[TFRECORD_HEADER], foot[TFRECORD_FOOTER];
  tfrecord_header(n, head);
  tfrecord_footer(data, n, foot);
  if (fwrite(head, 1, sizeof head, f) != sizeof head || (n && fwrite(data, 1, n, f) != n) ||
      fwrite(foot, 1, sizeof foot, f) != sizeof foot)
    return -1;
  return fflush(f) == 0 ? 0 : -1;
}
