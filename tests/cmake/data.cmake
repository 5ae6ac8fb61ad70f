# data.cmake: JSONL reader, datasets ([task] name = jsonl) and the rlpt commands on
# dataset decks (tests/decks/data_*.ini, tests/data/*.jsonl).
add_unit_test(test_jsonl SOURCES test_jsonl.c)
add_unit_test(test_dataset SOURCES test_dataset.c)

set(RLPT_DATA_DIR ${CMAKE_CURRENT_SOURCE_DIR}/data)
set(RLPT_DATA_DECKS ${CMAKE_CURRENT_SOURCE_DIR}/decks)
# data_cmd_test(NAME WANT_RC PASS_REGEX ARGS...): `rlpt ARGS...` must exit WANT_RC and print PASS_REGEX.
function(data_cmd_test name want regex)
  add_test(NAME ${name}
    COMMAND sh ${RLPT_DATA_DECKS}/run_check.sh $<TARGET_FILE:rlpt> ${want} ${ARGN}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
    PASS_REGULAR_EXPRESSION "${regex}" FAIL_REGULAR_EXPRESSION "WRONG_EXIT")
endfunction()

set(GSM_TRAIN data.train_path=${RLPT_DATA_DIR}/gsm_tiny.jsonl)
data_cmd_test(data_check_gsm 0 "prompt_template = Solve: \\{prompt\\}"
  check ${RLPT_DATA_DECKS}/data_gsm.ini ${GSM_TRAIN})
data_cmd_test(data_check_bad_template 2 "data_bad_template.ini:8: \\[data\\] prompt_template: .* has no \\{prompt\\}"
  check ${RLPT_DATA_DECKS}/data_bad_template.ini ${GSM_TRAIN})
# every reference answer of both splits must get reward 1 through the math verifier
data_cmd_test(data_reward_check_gsm_train 0
  "16 train prompts.*reference +correct +1.0000 +1.0000 +1.0000 +1.000.*reward-check: ok"
  reward-check ${RLPT_DATA_DECKS}/data_gsm.ini ${GSM_TRAIN})
data_cmd_test(data_reward_check_gsm_eval 0
  "4 held-out prompts.*reference +correct +1.0000 +1.0000 +1.0000 +1.000.*off_by_one +correct +0.0000 +0.0000 +0.0000.*reward-check: ok"
  reward-check ${RLPT_DATA_DECKS}/data_gsm.ini ${GSM_TRAIN} --split eval)
# broken rows: exit 2 naming FILE:LINE, or (on_bad_line = skip) the count of skipped lines
data_cmd_test(data_reward_check_bad_json 2 "bad_json.jsonl:3: invalid JSON at column 19"
  reward-check ${RLPT_DATA_DECKS}/data_gsm.ini data.train_path=${RLPT_DATA_DIR}/bad_json.jsonl data.prompt_key=prompt)
data_cmd_test(data_reward_check_bad_missing 2 "bad_missing.jsonl:3: key 'answer' is missing"
  reward-check ${RLPT_DATA_DECKS}/data_gsm.ini data.train_path=${RLPT_DATA_DIR}/bad_missing.jsonl data.prompt_key=prompt)
data_cmd_test(data_reward_check_skip 0 "skipped 1 of 4 lines of .*bad_json.jsonl \\(first: .*bad_json.jsonl:3: "
  reward-check ${RLPT_DATA_DECKS}/data_gsm.ini data.train_path=${RLPT_DATA_DIR}/bad_json.jsonl data.prompt_key=prompt
  data.on_bad_line=skip)
data_cmd_test(data_reward_check_too_long 2 "gsm_tiny.jsonl:1: the prompt takes [0-9]+ tokens .* leaves 16"
  reward-check ${RLPT_DATA_DECKS}/data_gsm.ini ${GSM_TRAIN} model.max_seq=80 rollout.max_new_tokens=64)
data_cmd_test(data_reward_check_no_file 2 "\\[data\\] train_path: cannot read '.*nonexistent.jsonl'"
  reward-check ${RLPT_DATA_DECKS}/data_gsm.ini data.train_path=${RLPT_DATA_DIR}/nonexistent.jsonl)
data_cmd_test(data_check_no_file 2 "\\[data\\] train_path: cannot read '.*nonexistent.jsonl': No such file"
  check ${RLPT_DATA_DECKS}/data_gsm.ini data.train_path=${RLPT_DATA_DIR}/nonexistent.jsonl)
# the whole run (SFT, GRPO steps, evals) served from dataset rows
add_mpi_test(NAME data_run_tiny EXE rlpt NUM_PROCS 4
  ARGS run ${RLPT_DATA_DECKS}/data_run_tiny.ini ${GSM_TRAIN} LABELS mpi)
set_tests_properties(data_run_tiny PROPERTIES
  PASS_REGULAR_EXPRESSION "step 2/2 rl \\| reward [0-9.]+ .*eval \\(rl, step 2\\): greedy pass@1 [0-9.]+ on 4 held-out prompts.*summary: greedy pass@1")
