# Rollout engine: sampling, paged KV cache, continuous-batching scheduler (toy LM).
add_unit_test(test_sampling SOURCES test_sampling.c)
add_unit_test(test_kv_cache SOURCES test_kv_cache.c)
add_unit_test(test_generate SOURCES test_generate.c)
