# CUDA backend: every op against the CPU op, a composed layer forward/backward, and
# NCCL against MPI. Label gpu; each test exits 77 (CTest: skipped) without the
# CUDA backend or without a device, so a CPU-only CI shows them as skipped.
add_unit_test(test_gpu_ops SOURCES test_gpu_ops.c LABELS gpu)
add_unit_test(test_gpu_model SOURCES test_gpu_model.c LABELS gpu)
# The rollout engine's KV pool in device memory: store/gather/copy-on-write kernels
# against the host pool (exact), and generation on cuda against cpu.
add_unit_test(test_gpu_rollout SOURCES test_gpu_rollout.c LABELS gpu)
# Sampling on the device (sample_device.h): generation on cuda against cpu, greedy and
# top-k / top-p sampling, the same tokens (near ties checked) and logprobs within 1e-4.
add_unit_test(test_gpu_sample SOURCES test_gpu_sample.c LABELS gpu)
add_executable(test_nccl test_nccl.c)
target_link_libraries(test_nccl PRIVATE rlpt_lib)
target_include_directories(test_nccl PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_mpi_test(NAME test_nccl EXE test_nccl NUM_PROCS 2 LABELS gpu mpi)
# one rank: the NCCL path on a single-GPU machine, where the 2-rank test skips
add_mpi_test(NAME test_nccl_1 EXE test_nccl NUM_PROCS 1 LABELS gpu mpi)
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
# A short GRPO run of the e2e deck (60 SFT + 8 GRPO steps, KL on) with run.device=cuda
# against the same run with run.device=cpu: per-step reward, entropy, kl and grad norm
# within test_gpu_grpo.c's tolerances. Skipped (77) where `rlpt version` sees no GPU.
add_executable(test_gpu_grpo test_gpu_grpo.c)
target_link_libraries(test_gpu_grpo PRIVATE rlpt_lib)
target_include_directories(test_gpu_grpo PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME gpu_grpo COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_grpo.sh $<TARGET_FILE:rlpt>
         $<TARGET_FILE:test_gpu_grpo> 4 ${RLPT_E2E_DECK} 60 8 algo.kl_coef=0.05)
set_tests_properties(gpu_grpo PROPERTIES LABELS gpu ENVIRONMENT "${RLPT_E2E_ENV}" PROCESSORS 4
  SKIP_RETURN_CODE 77 TIMEOUT 170 FAIL_REGULAR_EXPRESSION "GPU_GRPO_RUN_FAILED")
# rlpt generate and rlpt score with --device cuda against --device cpu on the rollout
# fixture's model (tests/cmake/rollout.cmake): the same greedy and seeded-sampled tokens,
# and every score number within 1e-4 relative. Skipped (77) without a GPU.
add_test(NAME gpu_generate_score COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_cli.sh
         $<TARGET_FILE:rlpt> gen_cli.h5 WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(gpu_generate_score PROPERTIES LABELS gpu ENVIRONMENT "${RLPT_TEST_ENV}"
  FIXTURES_REQUIRED gen_cli_model SKIP_RETURN_CODE 77 TIMEOUT 60)
