# The train ranks: SFT and RL steps, micro-batching, non-finite skip (src/trainer*.c),
# and the data-parallel all-reduce against a one-rank computation (mpi/allreduce.c).
add_unit_test(test_trainer SOURCES train/test_trainer.c)

add_test_program(test_trainer_dp train/test_trainer_dp.c)
add_mpi_test(NAME test_trainer_dp EXE test_trainer_dp NUM_PROCS 2 LABELS mpi)

# test_tp_shards: a train_tp = 2 trainer holds its shard only (weights, gradients, moments,
# reference: sizes from the model's dimensions), moves tensors through one tensor's scratch,
# and its per-tensor init gathers back to the one-rank weights bit for bit.
add_test_program(test_tp_shards train/test_tp_shards.c)
add_mpi_test(NAME test_tp_shards EXE test_tp_shards NUM_PROCS 2 LABELS mpi)

add_test_program(bench_allreduce bench/bench_allreduce.c)
add_mpi_test(NAME bench_allreduce EXE bench_allreduce NUM_PROCS 2 LABELS bench)

add_unit_test(test_optim SOURCES train/test_optim.c LABELS unit golden)

# ZeRO-1 ([optim] zero = 1, src/train/zero.c): the AdamW moments sharded over the DP train ranks.
#   test_zero_shard        the split of the flat buffer: tiles [0, n), aligned, balanced, n < P
#   test_zero_mpi          2 ranks (test_zero_mpi_3: 3): bucketed reduce-scatter / all-gather; zero = 1 == zero = 0
#                          (SFT, GRPO, PPO critic: loss, grad_norm, params, m, v within 1e-6
#                          relative), m and v of shard size, the non-finite skip on both ranks
#   restart_exact_zero     run/test_restart.sh exact with zero = 1, colocated on 2 ranks (train_dp 2):
#                          stop after RL step 3 + --restart latest == the straight run, bit for bit
#                          (restart_exact_zero_ppo: the critic's sharded moments too)
#   restart_zero_1to0 / _0to1  run/test_restart.sh switch: a checkpoint written with zero = 1
#                          resumed with zero = 0 and the reverse (the format holds full m and
#                          v): within rtol 1e-4 + atol 1e-6
add_unit_test(test_zero_shard SOURCES train/test_zero_shard.c)

add_test_program(test_zero_mpi train/test_zero_mpi.c)
add_mpi_test(NAME test_zero_mpi EXE test_zero_mpi NUM_PROCS 2 LABELS mpi)

# The restart tests reuse restart.cmake's script, comparison tool and deck; the mpiexec
# environment as there (built here too: the area files are included in any order).
string(REPLACE ";" " " RLPT_ZERO_FLAGS "${RLPT_MPI_PREFLAGS}")
set(RLPT_ZERO_ENV "${RLPT_TEST_ENV};RLPT_MPIEXEC=${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG};RLPT_MPI_FLAGS=${RLPT_ZERO_FLAGS}")
set(RLPT_ZERO_COLOCATED ranks.layout=colocated ranks.controller=auto ranks.reward=auto
    ranks.rollout=auto ranks.train=auto ranks.train_dp=2 optim.zero=1)
foreach(algo grpo ppo)
  set(name restart_exact_zero)
  if(algo STREQUAL ppo)
    set(name restart_exact_zero_ppo)
  endif()
  add_test(NAME ${name}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/run/test_restart.sh exact $<TARGET_FILE:rlpt>
            $<TARGET_FILE:test_restart_cmp> ${CMAKE_CURRENT_SOURCE_DIR}/decks/restart_tiny.ini
            ${RLPT_ZERO_COLOCATED} algo.name=${algo})
  set_tests_properties(${name} PROPERTIES LABELS "e2e;mpi"
    ENVIRONMENT "${RLPT_ZERO_ENV};RESTART_NP=2" PROCESSORS 2 TIMEOUT 90
    FAIL_REGULAR_EXPRESSION "RESTART_TEST_FAILED|CHECK failed")
endforeach()

list(REMOVE_ITEM RLPT_ZERO_COLOCATED optim.zero=1)
foreach(pair "1;0" "0;1")
  list(GET pair 0 za)
  list(GET pair 1 zb)
  add_test(NAME restart_zero_${za}to${zb}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/run/test_restart.sh switch $<TARGET_FILE:rlpt>
            $<TARGET_FILE:test_restart_cmp> ${CMAKE_CURRENT_SOURCE_DIR}/decks/restart_tiny.ini
            ${RLPT_ZERO_COLOCATED} algo.name=ppo)
  set_tests_properties(restart_zero_${za}to${zb} PROPERTIES LABELS "e2e;mpi"
    ENVIRONMENT "${RLPT_ZERO_ENV};RESTART_NP=2;RESTART_FIRST=optim.zero=${za};RESTART_THEN=optim.zero=${zb}"
    PROCESSORS 2 TIMEOUT 90 FAIL_REGULAR_EXPRESSION "RESTART_TEST_FAILED|CHECK failed")
endforeach()

# An odd rank count: shards of unequal length, 3-way sums.
add_mpi_test(NAME test_zero_mpi_3 EXE test_zero_mpi NUM_PROCS 3 LABELS mpi)

# The trainer's update on the device (src/train/device_update.c) against the host update:
# params, AdamW moments and grad norm over 5 SFT steps (clipping, a skipped non-finite
# step, host copies rewritten as by a restart). Label gpu; exits 77 (skipped) without
# the CUDA backend or a device; the 2-rank run (NCCL average against the MPI sum)
# also without one device per rank.
add_unit_test(test_gpu_trainer SOURCES train/test_gpu_trainer.c LABELS gpu)
add_mpi_test(NAME test_gpu_trainer_dp EXE test_gpu_trainer NUM_PROCS 2 LABELS gpu mpi)
# ZeRO-1 on both sides (train/zero.c on the host, sliced NCCL reduce/gather on the device)
add_mpi_test(NAME test_gpu_trainer_zero EXE test_gpu_trainer NUM_PROCS 2 ARGS optim.zero=1
             LABELS gpu mpi)

# Preference steps (src/train/pref_step.c): DPO, IPO and the Bradley-Terry reward model
# through the whole model against PyTorch (tests/ref/pref_ref.py -> golden_pref.h5): loss,
# rewards and d loss / d token within 1e-5, parameter gradients within 1e-3 relative,
# micro-batching, log 2 at policy = reference, the head-only reward model.
add_unit_test(test_pref_step SOURCES train/test_pref_step.c LABELS unit golden)
