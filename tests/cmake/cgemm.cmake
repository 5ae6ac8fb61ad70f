# cpu_gemm.c (rlpt's blocked GEMM) and OpenBLAS's, direct and through the CPU
# backend's matmul at 1 and 2 pool threads, against a double-precision product.
add_unit_test(test_cpu_gemm SOURCES test_cpu_gemm.c)
