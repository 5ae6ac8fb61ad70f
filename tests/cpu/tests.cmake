# cpu/: the CPU backend: ops, GEMM, row-invariant products, the thread pool, the fast exp.
add_unit_test(test_ops SOURCES cpu/test_ops.c)
# attention backward and AdamW: the same bits with 1 and 3 threads; a second backward
# after one forward recomputes the logits chunk the first one consumed
add_unit_test(test_train_threads SOURCES cpu/test_train_threads.c)
add_unit_test(test_fastmath SOURCES cpu/test_fastmath.c)

# The rank's persistent thread pool (src/cpu/thread_pool.c): partition, bit-equality
# with a serial loop, nested/concurrent use, passive idle, shutdown.
add_unit_test(test_thread_pool SOURCES cpu/test_thread_pool.c)

# cpu/gemm.c (rlpt's blocked GEMM) and OpenBLAS's, direct and through the CPU
# backend's matmul at 1 and 2 pool threads, against a double-precision product.
add_unit_test(test_cpu_gemm SOURCES cpu/test_cpu_gemm.c)

# The same under AddressSanitizer + UBSan (asan.cmake's library): the packing's
# overlapping vector stores must stay inside their buffers (rlpt's GEMM only).
if(TARGET rlpt_lib_asan)
  add_executable(test_cpu_gemm_asan cpu/test_cpu_gemm.c)
  target_link_libraries(test_cpu_gemm_asan PRIVATE rlpt_lib_asan)
  target_include_directories(test_cpu_gemm_asan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  add_test(NAME test_cpu_gemm_asan COMMAND test_cpu_gemm_asan --rlpt-only
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(test_cpu_gemm_asan PROPERTIES LABELS "unit;asan"
    ENVIRONMENT "${RLPT_TEST_ENV};ASAN_OPTIONS=abort_on_error=1:detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1"
    SKIP_RETURN_CODE ${RLPT_SKIP_CODE})
endif()

# The row-invariant product (cpu/rowinv.c) against the scalar statement of its
# summation order, bit for bit, on every kernel path and 1 and 2 threads.
add_unit_test(test_rowinv SOURCES cpu/test_rowinv.c)

# The bandwidth a batch-1 decode step's weight products get (SmolLM2-135M shapes) beside
# plain reads of the same bytes, one and four streams per thread (seconds; run by hand:
# ctest -L bench -R bench_rowinv -V).
add_unit_test(bench_rowinv SOURCES bench/bench_rowinv.c LABELS bench)

# The CPU forward ops give a row the same bits in any batch (GEMV vs GEMM, decode step
# vs full attention, paged vs contiguous keys, 1 vs 2 threads).
add_unit_test(test_batch_invariance SOURCES cpu/test_batch_invariance.c)

# GEMM shapes of the SmolLM2-135M training step: cblas_sgemm GFLOP/s per shape
# (label bench, run by hand: ctest -L bench -R bench_gemm -V).
add_unit_test(bench_gemm SOURCES bench/bench_gemm.c LABELS bench)
set_tests_properties(bench_gemm PROPERTIES TIMEOUT 600)

# Training throughput against PyTorch (minutes; run by hand: ctest -L bench -V).
add_unit_test(bench_train SOURCES bench/bench_train.c LABELS bench)
set_tests_properties(bench_train PROPERTIES TIMEOUT 1800)
