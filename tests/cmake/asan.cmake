# AddressSanitizer + UBSan variant of the fuzz-style tests: hostile GGUF and safetensors
# files (truncated, lying lengths, offsets past the end) must never read out of bounds.
# The library is built a second time with the sanitizers (host code only, no CUDA).
if(NOT RLPT_ASAN AND CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  add_library(rlpt_lib_asan STATIC ${RLPT_SOURCES})
  target_include_directories(rlpt_lib_asan PUBLIC
    $<TARGET_PROPERTY:rlpt_lib,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_definitions(rlpt_lib_asan PUBLIC RLPT_VERSION="${PROJECT_VERSION}"
    ${HDF5_C_DEFINITIONS})
  set(RLPT_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_compile_options(rlpt_lib_asan PUBLIC ${RLPT_SAN_FLAGS})
  # The sanitizer build changes GCC's flow analysis (spurious -Wformat-truncation);
  # the warnings gate is the normal build.
  target_compile_options(rlpt_lib_asan PRIVATE -Wno-error)
  target_link_options(rlpt_lib_asan PUBLIC ${RLPT_SAN_FLAGS})
  target_link_libraries(rlpt_lib_asan PUBLIC MPI::MPI_C ${HDF5_C_LIBRARIES} ${BLAS_LIBRARIES}
    PkgConfig::INIH PkgConfig::CJSON PkgConfig::PCRE2 ${MATH_LIBRARY})
  foreach(t test_gguf_fuzz test_safetensors_fuzz)
    add_executable(${t}_asan ${t}.c)
    target_link_libraries(${t}_asan PRIVATE rlpt_lib_asan)
    target_include_directories(${t}_asan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    add_test(NAME ${t}_asan COMMAND ${t}_asan WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    set_tests_properties(${t}_asan PROPERTIES LABELS "unit;asan"
      ENVIRONMENT "${RLPT_TEST_ENV};ASAN_OPTIONS=abort_on_error=1:detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1"
      SKIP_RETURN_CODE ${RLPT_SKIP_CODE})
  endforeach()
endif()
