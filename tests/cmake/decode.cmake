# The row-invariant product (cpu_rowdot.c) against the scalar statement of its
# summation order, bit for bit, on every kernel path and 1 and 2 threads.
add_unit_test(test_rowdot SOURCES test_rowdot.c)
