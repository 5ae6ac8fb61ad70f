# mpi/: rank roles and communicators (every rank must agree on each layout verdict, at
# world sizes 1, 2, 4 and 5), the wire format and transfers between roles, polite
# waits, and NCCL against MPI (label gpu).
add_test_program(test_roles mpi/test_roles.c)
foreach(np 1 2 4 5)
  add_mpi_test(NAME test_roles_${np} EXE test_roles NUM_PROCS ${np})
endforeach()

add_test_program(test_xfer mpi/test_xfer.c)
add_mpi_test(NAME test_xfer EXE test_xfer NUM_PROCS 3 LABELS mpi)

add_test_program(bench_wait bench/bench_wait.c)
add_mpi_test(NAME bench_wait EXE bench_wait NUM_PROCS 4 ARGS 0.3 LABELS bench)

add_test_program(test_nccl mpi/test_nccl.c)
add_mpi_test(NAME test_nccl EXE test_nccl NUM_PROCS 2 LABELS gpu mpi)
# one rank: the NCCL path on a single-GPU machine, where the 2-rank test skips
add_mpi_test(NAME test_nccl_1 EXE test_nccl NUM_PROCS 1 LABELS gpu mpi)
