/* io/crc32c.c: table-driven CRC-32C (io/crc32c.h), one byte per lookup. The 256-entry
 * table of the reflected polynomial 0x82F63B78 is built once, on first use. */
#include "io/crc32c.h"

#include <pthread.h>

#define CRC32C_POLY 0x82F63B78u /* 0x1EDC6F41 bit-reversed */

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1u ? (c >> 1) ^ CRC32C_POLY : c >> 1;
    table[i] = c;
  }
}

uint32_t crc32c(uint32_t crc, const void *p, size_t n) {
  pthread_once(&table_once, build_table);
  const unsigned char *b = p;
  crc = ~crc;
  for (size_t i = 0; i < n; i++) crc = table[(crc ^ b[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}
