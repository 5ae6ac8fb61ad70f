# GEMM shapes of the SmolLM2-135M training step: cblas_sgemm GFLOP/s per shape
# (label bench, run by hand: ctest -L bench -R bench_gemm -V).
add_unit_test(bench_gemm SOURCES bench/bench_gemm.c LABELS bench)
set_tests_properties(bench_gemm PROPERTIES TIMEOUT 600)
