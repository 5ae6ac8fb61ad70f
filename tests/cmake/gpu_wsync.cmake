# The weight broadcast over NCCL ([run] weight_sync = auto, src/weight_sync.c) against the
# MPI path (weight_sync = mpi) and the CPU: gpu.cmake's gpu_grpo run with the cuda side run
# twice, whose metrics must agree to the bit but for wall times and rates (test_restart_cmp
# exact: the same fp32 weights arrive either way), and the NCCL run within test_gpu_grpo.c's
# tolerances of the cpu run. gpu_grpo_wsync: the separate layout (the train and the rollout
# rank broadcast between two GPUs; skipped where they share one); gpu_grpo_wsync_1: one
# colocated rank (the device-to-device copy of a one-rank communicator; any GPU machine).
# Label gpu; skipped (77) without a GPU. Emulated on a CPU: kernels/emu/check.sh BUILD rlpt.
# (Named to sort after e2e.cmake: it uses RLPT_E2E_ENV / RLPT_E2E_DECK.)
add_test(NAME gpu_grpo_wsync COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_grpo.sh
         $<TARGET_FILE:rlpt> $<TARGET_FILE:test_gpu_grpo> 4 ${RLPT_E2E_DECK} 60 8 algo.kl_coef=0.05)
add_test(NAME gpu_grpo_wsync_1 COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_grpo.sh
         $<TARGET_FILE:rlpt> $<TARGET_FILE:test_gpu_grpo> 1 ${RLPT_E2E_DECK} 60 8 algo.kl_coef=0.05
         ranks.layout=colocated ranks.controller=auto ranks.reward=auto ranks.rollout=auto
         ranks.train=auto)
set_tests_properties(gpu_grpo_wsync gpu_grpo_wsync_1 PROPERTIES LABELS gpu PROCESSORS 4
  ENVIRONMENT "${RLPT_E2E_ENV};RLPT_GPU_GRPO_WSYNC=$<TARGET_FILE:test_restart_cmp>"
  SKIP_RETURN_CODE 77 TIMEOUT 250 FAIL_REGULAR_EXPRESSION "GPU_GRPO_RUN_FAILED")
