/* cpu/simd.h: what the CPU kernels' AVX2 paths share: the run-time check that picks
 * them (cpu_have_avx2: AVX2 and FMA both there) and the target attribute they are
 * compiled with (CPU_AVX2, x86-64 GCC and Clang only). Elsewhere, and on CPUs without
 * both, the plain loops run. */
#ifndef RLPT_CPU_SIMD_H
#define RLPT_CPU_SIMD_H

static inline int cpu_have_avx2(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return 0;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CPU_AVX2 __attribute__((target("avx2,fma")))
#endif

#endif
