# The row-invariant product (cpu_rowdot.c) against the scalar statement of its
# summation order, bit for bit, on every kernel path and 1 and 2 threads.
add_unit_test(test_rowdot SOURCES test_rowdot.c)

# The bandwidth a batch-1 decode step's weight products get (SmolLM2-135M shapes) beside
# plain reads of the same bytes, one and four streams per thread (seconds; run by hand:
# ctest -L bench -R bench_rowdot -V).
add_unit_test(bench_rowdot SOURCES bench/bench_rowdot.c LABELS bench)
