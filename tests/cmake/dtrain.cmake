# The trainer's update on the device (src/trainer_device.c) against the host update:
# params, AdamW moments and grad norm over 5 SFT steps (clipping, a skipped non-finite
# step, host copies rewritten as by a restart). Label gpu; exits 77 (skipped) without
# the CUDA backend or a device; the 2-rank run (NCCL average against the MPI sum)
# also without one device per rank.
add_unit_test(test_gpu_trainer SOURCES test_gpu_trainer.c LABELS gpu)
add_mpi_test(NAME test_gpu_trainer_dp EXE test_gpu_trainer NUM_PROCS 2 LABELS gpu mpi)
# ZeRO-1 on both sides (optim_zero.c on the host, sliced NCCL reduce/gather on the device)
add_mpi_test(NAME test_gpu_trainer_zero EXE test_gpu_trainer NUM_PROCS 2 ARGS optim.zero=1
             LABELS gpu mpi)
