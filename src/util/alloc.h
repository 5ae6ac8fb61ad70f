/* util/alloc.h: the checked allocator (llm.c's mallocCheck). For memory a rank cannot go
 * on without, where no collective error path is open (inside a step, a transfer, a
 * kernel's scratch): out of memory prints "rlpt: rank R (ROLE): out of memory: N bytes
 * at FILE:LINE" and aborts the job (util/error.h die_local). Setup code that can tell the
 * other ranks returns its error code through error_agree instead. A request of 0 bytes
 * gets a valid pointer, never NULL. */
#ifndef RLPT_ALLOC_H
#define RLPT_ALLOC_H

#include <stddef.h>

void *alloc_checked_malloc(size_t bytes, const char *file, int line);
void *alloc_checked_calloc(size_t n, size_t size, const char *file, int line);
void *alloc_checked_realloc(void *p, size_t bytes, const char *file, int line);

#define malloc_check(bytes) alloc_checked_malloc((bytes), __FILE__, __LINE__)
#define calloc_check(n, size) alloc_checked_calloc((n), (size), __FILE__, __LINE__)
#define realloc_check(p, bytes) alloc_checked_realloc((p), (bytes), __FILE__, __LINE__)

#endif
