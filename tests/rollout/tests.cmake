# rollout/: sampling, the paged KV cache, the continuous-batching scheduler (toy LM), the
# engine on the real transformer (below), and their device variants (label gpu).
add_unit_test(test_sampling SOURCES rollout/test_sampling.c)
add_unit_test(test_kv_cache SOURCES rollout/test_kv_cache.c)
add_unit_test(test_generate SOURCES rollout/test_generate.c)

# Rollout engine on the real transformer (rollout/engine.c): greedy vs from-scratch argmax,
# logprobs vs model_forward, batch-composition invariance with preemption.
add_unit_test(test_rollout SOURCES rollout/test_rollout.c)
# In-flight weight updates (continue / recompute / abort) against runs on each weight set alone
# and model_forward over each whole sequence (rollout/test_inflight.c).
add_unit_test(test_inflight SOURCES rollout/test_inflight.c)

# The rollout engine's KV pool in device memory: store/gather/copy-on-write kernels
# against the host pool (exact), and generation on cuda against cpu.
add_unit_test(test_gpu_rollout SOURCES rollout/test_gpu_rollout.c LABELS gpu)
# Sampling on the device (rollout/sample_device.h): generation on cuda against cpu, greedy and
# top-k / top-p sampling, the same tokens (near ties checked) and logprobs within 1e-4.
add_unit_test(test_gpu_sample SOURCES rollout/test_gpu_sample.c LABELS gpu)

# Generation throughput against PyTorch KV-cached decoding (minutes; run by hand:
# ctest -L bench -R bench_generate -V).
add_unit_test(bench_generate SOURCES bench/bench_generate.c LABELS bench)
set_tests_properties(bench_generate PROPERTIES TIMEOUT 1800)

# The engine on a tensor-parallel model (model_create_forward_tp, 2 ranks as one engine)
# against the one-rank engine: the same greedy and sampled tokens, logprobs within 1e-5.
add_test_program(test_tp_rollout rollout/test_tp_rollout.c)
add_mpi_test(NAME test_tp_rollout EXE test_tp_rollout NUM_PROCS 2)
