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
# [run] device = cuda on a machine without a usable GPU: every train and rollout rank
# refuses with the reason (rank 3 is the train rank of this 4-rank layout) and the run
# exits 2. Skipped (77) where `rlpt version` reports a visible GPU (the deck is valid).
add_test(NAME gpu_device_cuda_refused
  COMMAND sh -c "\"$0\" version | grep -q 'gpus: *[1-9]' && exit 77; \
                 $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS \"$0\" run \"$@\" > out.device_cuda.log 2>&1; rc=$?; \
                 cat out.device_cuda.log; [ $rc -eq 2 ] || echo RUN_WRONG_EXIT $rc"
          $<TARGET_FILE:rlpt> ${RLPT_E2E_DECK} run.device=cuda log.metrics_path=device_cuda.jsonl
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(gpu_device_cuda_refused PROPERTIES LABELS e2e ENVIRONMENT "${RLPT_E2E_ENV}"
  PROCESSORS 4 SKIP_RETURN_CODE 77 TIMEOUT 60 FAIL_REGULAR_EXPRESSION "RUN_WRONG_EXIT"
  PASS_REGULAR_EXPRESSION "rank 3: \\[run\\] device = cuda: (no CUDA device is visible|this rlpt was built without)")
