# `rlpt eval` (src/cmd_eval.c): the run's held-out eval alone.
#   eval_matches_run   a short run's final eval line == rlpt eval on its checkpoint, 1 rank and
#                      3 ranks (tests/test_eval.sh; label e2e)
#   eval_*             bad inputs: exit 2 with one message (missing model, vocabulary smaller
#                      than the tokenizer's, max_seq too short, no held-out set, not HDF5,
#                      missing --model), and a model file whose shape is not the deck's is
#                      evaluated as the file says, with a note (the file's config wins)
# Model files for the bad-input tests come from `rlpt init` in a fixture.

string(REPLACE ";" " " RLPT_EVAL_FLAGS "${RLPT_MPI_PREFLAGS}")
set(RLPT_EVAL_ENV "${RLPT_TEST_ENV};RLPT_MPIEXEC=${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG};RLPT_MPI_FLAGS=${RLPT_EVAL_FLAGS}")
set(RLPT_EVAL_DECK ${CMAKE_CURRENT_SOURCE_DIR}/decks/e2e_tiny.ini)
set(RLPT_EVAL_DIR ${CMAKE_CURRENT_BINARY_DIR}/eval_work)
file(MAKE_DIRECTORY ${RLPT_EVAL_DIR})

add_test(NAME eval_matches_run
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_eval.sh $<TARGET_FILE:rlpt> ${RLPT_EVAL_DECK}
  WORKING_DIRECTORY ${RLPT_EVAL_DIR})
set_tests_properties(eval_matches_run PROPERTIES LABELS "e2e;mpi" ENVIRONMENT "${RLPT_EVAL_ENV}"
  PROCESSORS 4 TIMEOUT 120 PASS_REGULAR_EXPRESSION "EVAL_TEST_OK" FAIL_REGULAR_EXPRESSION "EVAL_TEST_FAILED")

# The fixture's model files: dim 64 (the deck says 48), vocabulary 50, max_seq 6.
add_test(NAME eval_models_init
  COMMAND sh -c "\"$0\" init \"$1\" model.dim=64 --out eval_d64.h5 && \"$0\" init \"$1\" model.vocab_size=50 --out eval_v50.h5 && \"$0\" init \"$1\" model.max_seq=6 --out eval_s6.h5"
          $<TARGET_FILE:rlpt> ${RLPT_EVAL_DECK}
  WORKING_DIRECTORY ${RLPT_EVAL_DIR})
set_tests_properties(eval_models_init PROPERTIES LABELS unit FIXTURES_SETUP eval_models TIMEOUT 30)

# eval_cli_test(NAME REGEX args...): `rlpt eval args` (one process) prints REGEX, then EXIT=code.
function(eval_cli_test name regex)
  add_test(NAME eval_${name}
    COMMAND sh -c "\"$0\" eval \"$@\" 2>&1; echo EXIT=$?" $<TARGET_FILE:rlpt> ${ARGN}
    WORKING_DIRECTORY ${RLPT_EVAL_DIR})
  set_tests_properties(eval_${name} PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}" TIMEOUT 30
    FIXTURES_REQUIRED eval_models PASS_REGULAR_EXPRESSION "${regex}")
endfunction()

eval_cli_test(missing_model "rlpt: eval: --model eval_nope.h5: no such file or directory\nEXIT=2"
  ${RLPT_EVAL_DECK} --model eval_nope.h5)
eval_cli_test(vocab_mismatch "the model's vocabulary \\(50\\) is smaller than the deck's tokenizer's \\(98 ids\\).*EXIT=2"
  ${RLPT_EVAL_DECK} --model eval_v50.h5)
eval_cli_test(max_seq_short "eval_s6.h5: the held-out prompt '[0-9]\\+[0-9]=' takes 5 tokens but the model's max_seq - \\[rollout\\] max_new_tokens = 6 - 3 leaves 3\nEXIT=2"
  ${RLPT_EVAL_DECK} --model eval_s6.h5)
# 1-digit addition has 100 problems: a 0.001 share holds none of them out.
eval_cli_test(no_eval_set "the task has no held-out problem for eval prompt 0 of 64.*no eval set\nEXIT=2"
  ${RLPT_EVAL_DECK} --model eval_d64.h5 task.heldout_frac=0.001)
eval_cli_test(not_hdf5 "rlpt: eval: [^ ]*e2e_tiny.ini: not an HDF5 model/checkpoint, GGUF file or safetensors directory[^\n]*\nEXIT=2"
  ${RLPT_EVAL_DECK} --model ${RLPT_EVAL_DECK})
eval_cli_test(no_model "rlpt: eval: DECK and --model are required.*EXIT=2" ${RLPT_EVAL_DECK})
eval_cli_test(bad_output "rlpt: eval: --output /nonexistent-dir/e.jsonl: cannot open for appending\nEXIT=2"
  ${RLPT_EVAL_DECK} --model eval_d64.h5 --output /nonexistent-dir/e.jsonl)
# The file's shape wins over the deck's [model]: an untrained dim-64 model, evaluated as such.
eval_cli_test(file_config_wins "model eval_d64.h5 \\(model file\\): [0-9]+ parameters \\(vocab 98, dim 64.*note: the deck's \\[model\\] section describes another model.*\"phase\":\"sft\".*\"eval_pass@1\":0[,.].*\nEXIT=0"
  ${RLPT_EVAL_DECK} --model eval_d64.h5 --json)
