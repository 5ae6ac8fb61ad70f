/* io/crc32.c: CRC-32 of distributed tensors (see crc32.h). The byte-level CRC is
 * zlib's (linked through HDF5, whose deflate filter needs it): a well-kept,
 * fast implementation with crc32_combine, so nothing here is hand-rolled but
 * the row bookkeeping. */
#include "io/crc32.h"

#include <math.h>
#include <zlib.h>

uint32_t crc32_bytes(uint32_t crc, const void *p, size_t n) {
  return (uint32_t)crc32_z(crc, (const Bytef *)p, (z_size_t)n);
}

/* z_off_t is off_t: 64 bits on the LP64 systems rlpt runs on (tensors > 2 GiB). */
_Static_assert(sizeof(z_off_t) >= 8, "crc32_combine needs a 64-bit z_off_t");

uint32_t crc32_join(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  return (uint32_t)crc32_combine(crc_a, crc_b, (z_off_t)len_b);
}

void crc_part_floats(struct crc_part *out, const float *p, uint64_t row0, uint64_t nrows,
                     uint64_t cols) {
  uint64_t n = nrows * cols;
  out->row0 = row0;
  out->row_end = row0 + nrows;
  out->bytes = n * sizeof(float);
  out->flags = nrows ? 0u : CRC_PART_EMPTY;
  out->crc = nrows ? crc32_bytes(0, p, (size_t)out->bytes) : 0u;
  /* One pass with an accumulator the compiler can vectorise: x*0 is 0 for
   * finite x and NaN for NaN or Inf. */
  float acc = 0.0f;
  for (uint64_t i = 0; i < n; i++) acc += p[i] * 0.0f;
  if (acc != 0.0f) out->flags |= CRC_PART_NONFINITE;
}

/* a (lower ranks) followed by b (higher ranks) -> b. */
static void join_parts(const struct crc_part *a, struct crc_part *b) {
  if (a->flags & CRC_PART_EMPTY) return;
  if (b->flags & CRC_PART_EMPTY) {
    *b = *a;
    return;
  }
  uint32_t bad = a->row_end != b->row0 ? CRC_PART_BADTILE : 0u;
  b->crc = crc32_join(a->crc, b->crc, b->bytes);
  b->flags |= a->flags | bad;
  b->row0 = a->row0;
  b->bytes += a->bytes;
}

/* MPI reduction: inout = in (op) inout, where `in` comes from lower ranks. */
static void join_op(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  const struct crc_part *a = in;
  struct crc_part *b = inout;
  for (int i = 0; i < *len; i++) join_parts(&a[i], &b[i]);
}

int crc_parts_allreduce(struct crc_part *parts, int n, MPI_Comm comm) {
  MPI_Datatype type;
  MPI_Op op;
  int rc = MPI_Type_contiguous((int)sizeof(struct crc_part), MPI_BYTE, &type);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Type_commit(&type);
  rc = MPI_Op_create(join_op, 0 /* not commutative: rank order is row order */, &op);
  if (rc == MPI_SUCCESS) {
    rc = MPI_Allreduce(MPI_IN_PLACE, parts, n, type, op, comm);
    MPI_Op_free(&op);
  }
  MPI_Type_free(&type);
  return rc;
}
