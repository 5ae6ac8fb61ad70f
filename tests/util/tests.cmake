# util/: the counter-based RNG (Philox against its published vectors, keyed streams).
add_unit_test(test_rng SOURCES util/test_rng.c)
# util/atomic_file.c: write a temporary, rename it over the file only when complete.
add_unit_test(test_atomic_file SOURCES util/test_atomic_file.c)
