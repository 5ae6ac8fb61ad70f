# cpu_gemm.c (rlpt's blocked GEMM) and OpenBLAS's, direct and through the CPU
# backend's matmul at 1 and 2 pool threads, against a double-precision product.
add_unit_test(test_cpu_gemm SOURCES test_cpu_gemm.c)

# The same under AddressSanitizer + UBSan (asan.cmake's library): the packing's
# overlapping vector stores must stay inside their buffers (rlpt's GEMM only).
if(TARGET rlpt_lib_asan)
  add_executable(test_cpu_gemm_asan test_cpu_gemm.c)
  target_link_libraries(test_cpu_gemm_asan PRIVATE rlpt_lib_asan)
  target_include_directories(test_cpu_gemm_asan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  add_test(NAME test_cpu_gemm_asan COMMAND test_cpu_gemm_asan --rlpt-only
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(test_cpu_gemm_asan PROPERTIES LABELS "unit;asan"
    ENVIRONMENT "${RLPT_TEST_ENV};ASAN_OPTIONS=abort_on_error=1:detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1"
    SKIP_RETURN_CODE ${RLPT_SKIP_CODE})
endif()
