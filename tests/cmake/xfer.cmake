# The data between roles: samples and the versioned buffer, the wire format and
# transfers, polite MPI waits, per-step metrics.
add_unit_test(test_experience SOURCES test_experience.c)
add_unit_test(test_metrics SOURCES test_metrics.c)

add_executable(test_xfer test_xfer.c)
target_link_libraries(test_xfer PRIVATE rlpt_lib)
target_include_directories(test_xfer PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_mpi_test(NAME test_xfer EXE test_xfer NUM_PROCS 3 LABELS mpi)

add_executable(bench_wait bench/bench_wait.c)
target_link_libraries(bench_wait PRIVATE rlpt_lib)
add_mpi_test(NAME bench_wait EXE bench_wait NUM_PROCS 4 ARGS 0.3 LABELS bench)
