/* util/huge_alloc.c: see util/huge_alloc.h. */
#include "util/huge_alloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

float *huge_floats(size_t n) {
  size_t bytes = (sizeof(float) * (n ? n : 1) + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  float *p = aligned_alloc(HUGE_PAGE, bytes);
  if (!p) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE); /* advice: failure leaves 4 KiB pages, nothing else */
#endif
  memset(p, 0, bytes);
  return p;
}
