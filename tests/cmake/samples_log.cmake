# [log] samples_path: a short run writes the trained samples of steps 2 and 4 (2 groups of
# 8 each) with their text, reward parts and per-token advantages.
string(REPLACE ";" " " RLPT_SL_FLAGS "${RLPT_MPI_PREFLAGS}")
add_test(NAME samples_log_written
  COMMAND sh -c "rm -f sl.jsonl; ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 ${RLPT_SL_FLAGS} \"$0\" run \"$1\" \
                 run.steps=4 sft.steps=10 log.samples_path=sl.jsonl log.samples_every=2 \
                 log.metrics_path=sl_metrics.jsonl checkpoint.dir=sl_ckpt > sl.log 2>&1 || { cat sl.log; exit 1; }; \
                 echo lines=$(grep -c '\"advantages\":\\[' sl.jsonl) step2=$(grep -c '\"step\":2,' sl.jsonl) step4=$(grep -c '\"step\":4,' sl.jsonl)"
          $<TARGET_FILE:rlpt> ${CMAKE_CURRENT_SOURCE_DIR}/decks/e2e_tiny.ini
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(samples_log_written PROPERTIES LABELS "e2e;mpi" ENVIRONMENT "${RLPT_TEST_ENV}"
  PROCESSORS 4 TIMEOUT 120 PASS_REGULAR_EXPRESSION "lines=32 step2=16 step4=16")
