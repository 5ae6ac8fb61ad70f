# CUDA backend: every op against the CPU op, a composed layer forward/backward, and
# NCCL against MPI. Label gpu; each test exits 77 (CTest: skipped) without the
# CUDA backend or without a device, so a CPU-only CI shows them as skipped.
add_unit_test(test_gpu_ops SOURCES test_gpu_ops.c LABELS gpu)
add_unit_test(test_gpu_model SOURCES test_gpu_model.c LABELS gpu)
add_executable(test_nccl test_nccl.c)
target_link_libraries(test_nccl PRIVATE rlpt_lib)
target_include_directories(test_nccl PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_mpi_test(NAME test_nccl EXE test_nccl NUM_PROCS 2 LABELS gpu mpi)
# GEMM / attention / training-step figures on the GPU (run by jobscripts/device-check.sh).
add_unit_test(bench_gpu SOURCES bench/bench_gpu.c LABELS bench)
