/* util/alloc.c: the checked allocator (util/alloc.h). */
#include "util/alloc.h"

#include <stdint.h>
#include <stdlib.h>

#include "util/error.h"

static void *checked(void *p, size_t bytes, const char *file, int line) {
  if (!p) die_local("out of memory: %zu bytes at %s:%d", bytes, file, line);
  return p;
}

void *alloc_checked_malloc(size_t bytes, const char *file, int line) {
  return checked(malloc(bytes ? bytes : 1), bytes, file, line);
}

void *alloc_checked_calloc(size_t n, size_t size, const char *file, int line) {
  if (size && n > SIZE_MAX / size) die_local("out of memory: %zu x %zu bytes at %s:%d", n, size, file, line);
  return checked(calloc(n ? n : 1, size ? size : 1), n * size, file, line);
}

void *alloc_checked_realloc(void *p, size_t bytes, const char *file, int line) {
  return checked(realloc(p, bytes ? bytes : 1), bytes, file, line);
}
