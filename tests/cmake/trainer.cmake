# The train ranks: SFT and RL steps, micro-batching, non-finite skip (src/trainer*.c),
# and the data-parallel all-reduce against a one-rank computation (mpi/allreduce.c).
add_unit_test(test_trainer SOURCES test_trainer.c)

add_executable(test_trainer_dp test_trainer_dp.c)
target_link_libraries(test_trainer_dp PRIVATE rlpt_lib)
target_include_directories(test_trainer_dp PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_mpi_test(NAME test_trainer_dp EXE test_trainer_dp NUM_PROCS 2 LABELS mpi)

add_executable(bench_allreduce bench/bench_allreduce.c)
target_link_libraries(bench_allreduce PRIVATE rlpt_lib)
add_mpi_test(NAME bench_allreduce EXE bench_allreduce NUM_PROCS 2 LABELS bench)
