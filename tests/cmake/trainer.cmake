# The train ranks: SFT and RL steps, micro-batching, non-finite skip (src/trainer*.c),
# and the data-parallel all-reduce against a one-rank computation (mpi/allreduce.c).
add_unit_test(test_trainer SOURCES test_trainer.c)
