/* io/crc32.h: CRC-32 checksums of tensors that are spread over ranks.
 *
 * The checksum is zlib's CRC-32 (the polynomial of gzip, PNG and Python's
 * zlib.crc32), computed over the little-endian bytes of a full logical tensor
 * in row-major order, so `zlib.crc32(h5py_dataset[()].tobytes())` reproduces it.
 *
 * Each rank checksums the rows it holds; the pieces are joined with
 * crc32_combine in row order by one MPI_Allreduce with a non-commutative
 * user operation. That works the same for replicated tensors (each rank takes
 * a share of the rows) and for sharded ones, costs O(log P) messages of a few
 * bytes per tensor, and checks on the way that the row ranges tile the tensor
 * (no gap, no overlap) in rank order. */
#ifndef RLPT_CRC32_H
#define RLPT_CRC32_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* CRC-32 of n bytes, continuing from crc (start with 0). */
uint32_t crc32_bytes(uint32_t crc, const void *p, size_t n);
/* CRC of A||B from crc(A), crc(B) and the length of B in bytes. */
uint32_t crc32_join(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* One rank's piece of one tensor: rows [row0, row_end) of it, their CRC and
 * byte count, and flags. Pieces with no rows (CRC_PART_EMPTY) are neutral. */
#define CRC_PART_EMPTY 1u      /* this rank holds no rows of the tensor */
#define CRC_PART_NONFINITE 2u  /* a NaN or Inf among the values */
#define CRC_PART_BADTILE 4u    /* the row ranges leave a gap or overlap */
struct crc_part {
  uint64_t row0, row_end, bytes;
  uint32_t crc, flags;
};

/* The piece for rows [row0, row0 + nrows) of a float tensor whose rows hold
 * `cols` values each, p pointing at the first of those rows. Also checks that
 * every value is finite. */
void crc_part_floats(struct crc_part *out, const float *p, uint64_t row0, uint64_t nrows,
                     uint64_t cols);
/* Collective over comm: joins n pieces per rank (tensor i of every rank) into
 * the whole tensor's piece, in place, on every rank. Returns MPI_SUCCESS or the
 * MPI error. */
int crc_parts_allreduce(struct crc_part *parts, int n, MPI_Comm comm);

#endif
