# kernels/: the CUDA backend, every op against the CPU op. Label gpu; each test exits 77
# (CTest: skipped) without the CUDA backend or without a device, so a CPU-only CI shows
# them as skipped.
add_unit_test(test_gpu_ops SOURCES kernels/test_gpu_ops.c LABELS gpu)
# GEMM / attention / training-step figures on the GPU (run by jobscripts/device-check.sh).
add_unit_test(bench_gpu SOURCES bench/bench_gpu.c LABELS bench)

# What kernels/test_gpu_ops.c leaves out:
#   test_gpu_shapes  every op against the CPU op at the edge shapes (one row, rows past the
#                    column sums' chunks, head sizes 8/48/80, vocabularies 1/50/32000, ...);
#   test_gpu_edge    the check macros' messages and hints and the backend's argument checks
#                    (run without a device too), the cuBLASLt plan cache past 128 shapes,
#                    misaligned operands, bf16 rounding at ties, infinities and NaNs;
# Emulated on a CPU: kernels/emu/check.sh BUILD shapes edge.
add_unit_test(test_gpu_shapes SOURCES kernels/test_gpu_shapes.c LABELS gpu)
add_unit_test(test_gpu_edge SOURCES kernels/test_gpu_edge.c LABELS gpu)

# [model] dtype = bf16 on the CUDA backend (cuda_backend_bf16): its products against
# host references, and the whole model in bf16 against the CPU fp32 model (tolerances in
# the test's header). Label gpu; exits 77 (CTest: skipped) without the CUDA backend or
# without a device. Emulated on a CPU: kernels/emu/check.sh BUILD bf16 grpo16. (Named
# to sort after e2e.cmake and gpu.cmake: it uses RLPT_E2E_ENV / RLPT_E2E_DECK.)
add_unit_test(test_gpu_bf16 SOURCES kernels/test_gpu_bf16.c LABELS gpu)
