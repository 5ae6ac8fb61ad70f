# util/: the counter-based RNG (Philox against its published vectors, keyed streams).
add_unit_test(test_rng SOURCES util/test_rng.c)
