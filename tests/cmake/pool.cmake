# The rank's persistent thread pool (src/thread_pool.c): partition, bit-equality
# with a serial loop, nested/concurrent use, passive idle, shutdown.
add_unit_test(test_thread_pool SOURCES test_thread_pool.c)
