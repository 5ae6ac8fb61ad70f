# [model] dtype = bf16 on the CUDA backend (cuda_backend_bf16): its products against
# host references, and the whole model in bf16 against the CPU fp32 model (tolerances in
# the test's header). Label gpu; exits 77 (CTest: skipped) without the CUDA backend or
# without a device. Emulated on a CPU: kernels/emu/check.sh BUILD bf16 grpo16. (Named
# to sort after e2e.cmake and gpu.cmake: it uses RLPT_E2E_ENV / RLPT_E2E_DECK.)
add_unit_test(test_gpu_bf16 SOURCES test_gpu_bf16.c LABELS gpu)
# gpu.cmake's gpu_grpo run (60 SFT + 8 GRPO steps, KL on) with the cuda side in bf16
# against the cpu run in fp32, within test_gpu_grpo.c's bf16 tolerances.
add_test(NAME gpu_grpo_bf16 COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_grpo.sh
         $<TARGET_FILE:rlpt> $<TARGET_FILE:test_gpu_grpo> 4 ${RLPT_E2E_DECK} 60 8 algo.kl_coef=0.05)
set_tests_properties(gpu_grpo_bf16 PROPERTIES LABELS gpu
  ENVIRONMENT "${RLPT_E2E_ENV};RLPT_GPU_GRPO_DTYPE=bf16" PROCESSORS 4
  SKIP_RETURN_CODE 77 TIMEOUT 170 FAIL_REGULAR_EXPRESSION "GPU_GRPO_RUN_FAILED")
