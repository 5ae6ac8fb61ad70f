# DAPO dynamic sampling ([algo] dynamic_sampling, src/dynsamp.c):
#   test_dynsamp          the keep/stop/select bookkeeping on hand-made reward vectors
#   dynsamp_run_on        rlpt run of tests/decks/dynsamp_tiny.ini (4 ranks, 40 SFT + 6 DAPO steps,
#                         ~4 s): groups_filtered > 0 on some step, consistent gen_rounds /
#                         groups_trained, and no trained group with all-equal rewards (samples log)
#   dynsamp_run_off       the same deck with dynamic_sampling = false: groups_filtered 0, one round,
#                         and the samples log does hold all-equal groups (the check can fail)
#   dynsamp_run_colocated dynsamp_run_on on 2 colocated ranks with train_dp = 2: kept groups land at
#                         slots whose reward and train ranks cross (deadlocked before the (d, j)
#                         transfer order), and a step that keeps 1 group leaves a DP rank empty
#   restart_exact_dynsamp stop after RL step 3 + --restart latest == the straight run, bit for bit,
#                         with resampling rounds (their prompts are a function of step and round)
add_unit_test(test_dynsamp SOURCES test_dynsamp.c)

add_executable(test_dynsamp_run test_dynsamp_run.c)
target_link_libraries(test_dynsamp_run PRIVATE rlpt_lib)
target_include_directories(test_dynsamp_run PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})

string(REPLACE ";" " " RLPT_DS_FLAGS "${RLPT_MPI_PREFLAGS}")
set(RLPT_DS_DECK ${CMAKE_CURRENT_SOURCE_DIR}/decks/dynsamp_tiny.ini)
set(RLPT_DS_COLOCATED ranks.layout=colocated ranks.controller=auto ranks.reward=auto ranks.rollout=auto
  ranks.train=auto ranks.train_dp=2)
foreach(mode on off colocated)
  set(ds true)
  set(np 4)
  set(check ${mode})
  set(extra "")
  if(mode STREQUAL off)
    set(ds false)
  elseif(mode STREQUAL colocated)
    set(np 2)
    set(check on_dp)
    string(REPLACE ";" " " extra "${RLPT_DS_COLOCATED}")
  endif()
  add_test(NAME dynsamp_run_${mode}
    COMMAND sh -c "rm -rf ds_${mode} && mkdir ds_${mode} && cd ds_${mode} && \
                   ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${RLPT_DS_FLAGS} \"$0\" run \"$1\" \
                   algo.dynamic_sampling=${ds} log.metrics_path=m.jsonl log.samples_path=s.jsonl log.samples_every=1 \
                   checkpoint.dir=ck ${extra} > run.log 2>&1 || { cat run.log; echo DYNSAMP_RUN_FAILED; exit 1; }; \
                   grep WARNING run.log; \"$2\" m.jsonl s.jsonl ${check} 2 2"
            $<TARGET_FILE:rlpt> ${RLPT_DS_DECK} $<TARGET_FILE:test_dynsamp_run>
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(dynsamp_run_${mode} PROPERTIES LABELS "e2e;mpi" ENVIRONMENT "${RLPT_TEST_ENV}"
    PROCESSORS ${np} TIMEOUT 90 FAIL_REGULAR_EXPRESSION "DYNSAMP_RUN_FAILED|CHECK failed")
endforeach()

add_test(NAME restart_exact_dynsamp
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_restart.sh exact $<TARGET_FILE:rlpt>
          $<TARGET_FILE:test_restart_cmp> ${RLPT_DS_DECK}
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(restart_exact_dynsamp PROPERTIES LABELS "e2e;mpi"
  ENVIRONMENT "${RLPT_TEST_ENV};RLPT_MPIEXEC=${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG};RLPT_MPI_FLAGS=${RLPT_DS_FLAGS}"
  PROCESSORS 4 TIMEOUT 90 FAIL_REGULAR_EXPRESSION "RESTART_TEST_FAILED|CHECK failed")

# dynsamp_run_none: rewards that are constant (correct_weight 0, no overlong penalty): every
# group of the 3 rounds is dropped, the 2 steps make no update (weight_version stays 0, the
# trainer's metrics null), the metrics say so and the console warns once.
add_test(NAME dynsamp_run_none
  COMMAND sh -c "rm -rf ds_none && mkdir ds_none && cd ds_none && \
                 ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 ${RLPT_DS_FLAGS} \"$0\" run \"$1\" run.steps=2 \
                 reward.correct_weight=0 algo.overlong_penalty=0 log.metrics_path=m.jsonl checkpoint.dir=ck \
                 > run.log 2>&1 || { cat run.log; echo DYNSAMP_RUN_FAILED; exit 1; }; \
                 echo none=$(grep -c '\"weight_version\":0,\"phase\":\"rl\".*\"grad_norm\":null.*\"groups_filtered\":6,\"gen_rounds\":3,\"groups_trained\":0,' m.jsonl) \
                      warned=$(grep -c 'kept 0 of 2 groups after 3 generation rounds.*no update this step' run.log)"
          $<TARGET_FILE:rlpt> ${RLPT_DS_DECK}
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(dynsamp_run_none PROPERTIES LABELS "e2e;mpi" ENVIRONMENT "${RLPT_TEST_ENV}"
  PROCESSORS 4 TIMEOUT 90 PASS_REGULAR_EXPRESSION "none=2 warned=1" FAIL_REGULAR_EXPRESSION "DYNSAMP_RUN_FAILED")
