// emu_cub.h: CUB's stable segmented radix sort (descending), as std::stable_sort per segment.
#pragma once
#include <algorithm>
#include <numeric>
#include <vector>
namespace cub {
struct DeviceSegmentedRadixSort {
  static cudaError_t SortPairsDescending(void *tmp, size_t &bytes, const double *kin, double *kout,
                                         const int *vin, int *vout, int n, int nseg, const int *b,
                                         const int *e, int = 0, int = 64, cudaStream_t = 0) {
    if (!tmp) { bytes = 16; return cudaSuccess; }
    (void)n;
    for (int s = 0; s < nseg; s++) {
      std::vector<int> o(e[s] - b[s]);
      std::iota(o.begin(), o.end(), b[s]);
      std::stable_sort(o.begin(), o.end(), [&](int x, int y) { return kin[x] > kin[y]; });
      for (size_t i = 0; i < o.size(); i++) { kout[b[s] + i] = kin[o[i]]; vout[b[s] + i] = vin[o[i]]; }
    }
    return cudaSuccess;
  }
};
}
