/* train/test_zero_shard.c: the ZeRO-1 split of a flat buffer (src/train/zero.h).
 * For every n in [0, 400] and a few large ones, and 1..9 ranks: the slices tile
 * [0, n) in rank order (every float owned once, no gap, no overlap), every
 * boundary but n is a multiple of ZERO_ALIGN, no slice is longer than
 * ceil(ceil(n / ZERO_ALIGN) / P) * ZERO_ALIGN (what `rlpt plan` charges, n / P,
 * up to one alignment block), and n < P * ZERO_ALIGN leaves some ranks empty. */
#include <stdio.h>

#include "testutil.h"
#include "train/zero.h"

/* Returns the number of violations for (n, P). */
static int check_split(long n, int size) {
  int bad = 0;
  long next = 0, blocks = (n + ZERO_ALIGN - 1) / ZERO_ALIGN;
  long max_len = (blocks + size - 1) / size * ZERO_ALIGN;
  for (int r = 0; r < size; r++) {
    long lo, hi;
    zero_shard(n, r, size, &lo, &hi);
    bad += lo != next;                       /* contiguous, in rank order, no overlap */
    bad += hi < lo;
    bad += lo != n && lo % ZERO_ALIGN != 0;  /* aligned starts */
    bad += hi != n && hi % ZERO_ALIGN != 0;
    bad += hi - lo > max_len;
    next = hi;
  }
  bad += next != n;                          /* covers [0, n) */
  return bad;
}

int main(void) {
  int bad = 0, cases = 0;
  for (int size = 1; size <= 9; size++) {
    for (long n = 0; n <= 400; n++, cases++) bad += check_split(n, size);
    long big[] = {134515008L, 1L << 31, 3000000017L};  /* SmolLM2-135M; past an int */
    for (int i = 0; i < 3; i++, cases++) bad += check_split(big[i], size);
  }
  printf("zero_shard: %d (n, P) cases, %d violations\n", cases, bad);
  CHECK(bad == 0);
  /* n < P * ZERO_ALIGN: 20 floats over 4 ranks are 2 blocks (16 + 4), ranks 0 and 2 empty */
  long lo, hi;
  zero_shard(20, 0, 4, &lo, &hi);
  CHECK(lo == 0 && hi == 0);
  zero_shard(20, 1, 4, &lo, &hi);
  CHECK(lo == 0 && hi == 16);
  zero_shard(20, 3, 4, &lo, &hi);
  CHECK(lo == 16 && hi == 20);
  zero_shard(5, 0, 2, &lo, &hi);  /* one block: the last rank owns it */
  CHECK(lo == 0 && hi == 0);
  /* one rank owns everything */
  zero_shard(1000, 0, 1, &lo, &hi);
  CHECK(lo == 0 && hi == 1000);
  /* two ranks split 1000 floats (63 blocks) as 31 and 32 blocks: 496 + 504 */
  zero_shard(1000, 0, 2, &lo, &hi);
  CHECK(lo == 0 && hi == 496);
  return TEST_RESULT("test_zero_shard");
}
