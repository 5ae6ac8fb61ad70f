# [model] dtype = bf16 on the CUDA backend (cuda_backend_bf16): its products against
# host references, and the whole model in bf16 against the CPU fp32 model (tolerances in
# the test's header). Label gpu; exits 77 (CTest: skipped) without the CUDA backend or
# without a device. Emulated on a CPU: kernels/emu/check.sh BUILD bf16.
add_unit_test(test_gpu_bf16 SOURCES test_gpu_bf16.c LABELS gpu)
