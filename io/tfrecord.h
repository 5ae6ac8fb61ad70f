/* io/tfrecord.h: TFRecord framing, the container of TensorBoard event files. A record
 * is
 *   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes |
 *   length bytes of data          | uint32 masked CRC-32C of the data
 * where masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (TensorFlow's
 * tsl/lib/hash/crc32c.h Mask), all little-endian. */
#ifndef RLPT_TFRECORD_H
#define RLPT_TFRECORD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TFRECORD_HEADER 12 /* length + its CRC */
#define TFRECORD_FOOTER 4  /* the data's CRC */

/* The masked CRC-32C of n bytes. */
uint32_t tfrecord_masked_crc(const void *p, size_t n);
/* The 12 header bytes of a record of n data bytes, and the 4 footer bytes of data. */
void tfrecord_header(uint64_t n, unsigned char out[TFRECORD_HEADER]);
void tfrecord_footer(const void *data, size_t n, unsigned char out[TFRECORD_FOOTER]);
/* Append one record (header, data, footer) to f and flush it to the kernel, so a crash
 * of the process loses nothing written before. Returns 0, or -1 (errno set). */
int tfrecord_write(FILE *f, const void *data, size_t n);

#endif
