# Restarts and preemption of `rlpt run` (label e2e; tests/test_restart.sh, deck
# tests/decks/restart_tiny.ini: 40 SFT + 6 GRPO steps of a tiny model, ~3 s a run):
#   restart_exact     stop after RL step 3 + --restart latest == the straight run, bit for bit
#                     (4 ranks separate; restart_exact_colocated: 2 ranks colocated, train_dp 2)
#   restart_boundary  SIGUSR1 during SFT: checkpoint at the SFT -> RL boundary; restart == straight
#   restart_layout    saved on 1 train rank, resumed on train_dp = 2: within rtol 1e-4 + atol 1e-6
#   restart_preempt   SIGUSR1 to mpirun mid-RL: exit 0, `latest`, the steps continue
#   restart_kill      kill -9 while a checkpoint is written: `latest` names the previous one
#   restart_mismatch  a deck with another model: exit 2 naming the field
#   restart_double    a second SIGUSR1 exits at once without a checkpoint; `latest` intact
#   restart_fallback  `latest` names a damaged file: warning, the previous checkpoint is used
#   restart_requeue   requeue.sbatch (stand-in srun = mpirun): signal forwarded, requeue, resume
# and the job scripts refuse to run outside Slurm.

add_executable(test_restart_cmp test_restart_cmp.c)
target_link_libraries(test_restart_cmp PRIVATE rlpt_lib)
target_include_directories(test_restart_cmp PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})

string(REPLACE ";" " " RLPT_RESTART_FLAGS "${RLPT_MPI_PREFLAGS}")
set(RLPT_RESTART_ENV "${RLPT_TEST_ENV};RLPT_MPIEXEC=${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG};RLPT_MPI_FLAGS=${RLPT_RESTART_FLAGS}")

foreach(mode exact boundary layout preempt kill mismatch double requeue fallback)
  set(np 4)
  if(mode STREQUAL layout)
    set(np 5)
  endif()
  add_test(NAME restart_${mode}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_restart.sh ${mode} $<TARGET_FILE:rlpt>
            $<TARGET_FILE:test_restart_cmp> ${CMAKE_CURRENT_SOURCE_DIR}/decks/restart_tiny.ini)
  set_tests_properties(restart_${mode} PROPERTIES LABELS "e2e;mpi" ENVIRONMENT "${RLPT_RESTART_ENV}"
    PROCESSORS ${np} TIMEOUT 90 FAIL_REGULAR_EXPRESSION "RESTART_TEST_FAILED|CHECK failed")
endforeach()

# The same exact restart in the colocated layout on 2 ranks (train_dp = 2: the DP all-reduce
# and the local inbox in the restarted run).
add_test(NAME restart_exact_colocated
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_restart.sh exact $<TARGET_FILE:rlpt>
          $<TARGET_FILE:test_restart_cmp> ${CMAKE_CURRENT_SOURCE_DIR}/decks/restart_tiny.ini
          ranks.layout=colocated ranks.controller=auto ranks.reward=auto ranks.rollout=auto
          ranks.train=auto ranks.train_dp=2)
set_tests_properties(restart_exact_colocated PROPERTIES LABELS "e2e;mpi"
  ENVIRONMENT "${RLPT_RESTART_ENV};RESTART_NP=2" PROCESSORS 2 TIMEOUT 90
  FAIL_REGULAR_EXPRESSION "RESTART_TEST_FAILED|CHECK failed")

# The Slurm job scripts fail early, with a message, outside an allocation.
foreach(script run requeue)
  add_test(NAME slurm_${script}_outside
    COMMAND env -u SLURM_JOB_ID -u SLURM_NTASKS bash ${CMAKE_SOURCE_DIR}/jobscripts/slurm/${script}.sbatch
            ${CMAKE_CURRENT_SOURCE_DIR}/decks/restart_tiny.ini)
  set_tests_properties(slurm_${script}_outside PROPERTIES LABELS unit WILL_FAIL TRUE)
  add_test(NAME slurm_${script}_outside_message
    COMMAND sh -c "env -u SLURM_JOB_ID -u SLURM_NTASKS bash \"$0\" \"$1\" 2>&1; true"
            ${CMAKE_SOURCE_DIR}/jobscripts/slurm/${script}.sbatch ${CMAKE_CURRENT_SOURCE_DIR}/decks/restart_tiny.ini)
  set_tests_properties(slurm_${script}_outside_message PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "not inside a Slurm job")
endforeach()

# PPO: the critic's weights and AdamW moments are in the checkpoint, so its restart is
# bit-exact too.
add_test(NAME restart_exact_ppo
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_restart.sh exact $<TARGET_FILE:rlpt>
          $<TARGET_FILE:test_restart_cmp> ${CMAKE_CURRENT_SOURCE_DIR}/decks/restart_tiny.ini
          algo.name=ppo)
set_tests_properties(restart_exact_ppo PROPERTIES LABELS "e2e;mpi" ENVIRONMENT "${RLPT_RESTART_ENV}"
  PROCESSORS 4 TIMEOUT 90 FAIL_REGULAR_EXPRESSION "RESTART_TEST_FAILED|CHECK failed")
