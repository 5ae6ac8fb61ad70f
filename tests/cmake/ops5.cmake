# CPU op kernels' math helpers: the vectorised exp (src/fastmath.h) against expf.
add_unit_test(test_fastmath SOURCES test_fastmath.c)
