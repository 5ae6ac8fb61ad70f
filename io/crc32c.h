/* io/crc32c.h: CRC-32C (Castagnoli, the iSCSI polynomial of RFC 3720), the checksum
 * of TFRecord framing (io/tfrecord.h). Neither zlib nor any Debian 12 C library
 * offers it (`apt-cache search crc32c` finds only a Python module), so it is a
 * small table-driven implementation here; RFC 3720 B.4's vectors test it. */
#ifndef RLPT_CRC32C_H
#define RLPT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes, continuing from crc (start with 0): crc32c(0, "123456789", 9)
 * is 0xE3069283. */
uint32_t crc32c(uint32_t crc, const void *p, size_t n);

#endif
