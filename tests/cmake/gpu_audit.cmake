# CUDA backend, what test_gpu_ops.c leaves out (issue 9's audit of every kernel):
#   test_gpu_shapes  every op against the CPU op at the edge shapes (one row, rows past the
#                    column sums' chunks, head sizes 8/48/80, vocabularies 1/50/32000, ...);
#   test_gpu_edge    the check macros' messages and hints and the backend's argument checks
#                    (run without a device too), the cuBLASLt plan cache past 128 shapes,
#                    misaligned operands, bf16 rounding at ties, infinities and NaNs;
#   test_gpu_select  the GPU each rank takes (device_select_local) and the ZeRO-1 slice
#                    collectives (nccl_reduce_slices / nccl_gather_slices) against MPI, on
#                    one rank and on two (the slices then need a GPU per rank).
# Label gpu; each exits 77 (CTest: skipped) without the CUDA backend or without a device.
# Emulated on a CPU: kernels/emu/check.sh BUILD audit.
add_unit_test(test_gpu_shapes SOURCES test_gpu_shapes.c LABELS gpu)
add_unit_test(test_gpu_edge SOURCES test_gpu_edge.c LABELS gpu)
add_executable(test_gpu_select test_gpu_select.c)
target_link_libraries(test_gpu_select PRIVATE rlpt_lib)
target_include_directories(test_gpu_select PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_mpi_test(NAME test_gpu_select_1 EXE test_gpu_select NUM_PROCS 1 LABELS gpu mpi)
add_mpi_test(NAME test_gpu_select_2 EXE test_gpu_select NUM_PROCS 2 LABELS gpu mpi)
