# tasks/: the built-in tasks, verifiers, chat templates, JSONL datasets ([task] name = jsonl)
# and `rlpt reward-check` on them (tests/decks/tasks_*.ini, data_*.ini, tests/data/*.jsonl).
add_unit_test(test_verify_math SOURCES tasks/test_verify_math.c)
add_unit_test(test_verify_countdown SOURCES tasks/test_verify_countdown.c)
add_unit_test(test_tasks SOURCES tasks/test_tasks.c)
add_unit_test(test_chat SOURCES tasks/test_chat.c)
# One BOS per prompt, also when a chat template writes it itself (Llama 3 fixture).
add_unit_test(test_prompt_bos SOURCES tasks/test_prompt_bos.c LABELS unit)
add_unit_test(test_dataset SOURCES tasks/test_dataset.c)

# rlpt reward-check on small decks: references must score, wrong answers must not;
# with correct_weight = 0 the command must print its warning (and exit 3).
function(add_reward_check_test name)
  add_test(NAME ${name} COMMAND $<TARGET_FILE:rlpt> reward-check ${ARGN}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}")
endfunction()
add_reward_check_test(reward_check_arith ${CMAKE_CURRENT_SOURCE_DIR}/decks/tasks_arith.ini --prompts 300)
set_tests_properties(reward_check_arith PROPERTIES PASS_REGULAR_EXPRESSION "reward-check: ok")
add_reward_check_test(reward_check_countdown ${CMAKE_CURRENT_SOURCE_DIR}/decks/tasks_countdown.ini
  --prompts 300 --split eval)
set_tests_properties(reward_check_countdown PROPERTIES PASS_REGULAR_EXPRESSION "reward-check: ok")
add_reward_check_test(reward_check_miswired ${CMAKE_CURRENT_SOURCE_DIR}/decks/tasks_arith.ini
  --prompts 20 reward.correct_weight=0 reward.format_weight=0 reward.length_weight=0 algo.overlong_buffer=0)
set_tests_properties(reward_check_miswired PROPERTIES
  PASS_REGULAR_EXPRESSION "WARNING: the verifier gives the reference answers no reward")
add_reward_check_test(reward_check_miswired_exit ${CMAKE_CURRENT_SOURCE_DIR}/decks/tasks_arith.ini
  --prompts 20 reward.correct_weight=0 reward.format_weight=0 reward.length_weight=0 algo.overlong_buffer=0)
set_tests_properties(reward_check_miswired_exit PROPERTIES WILL_FAIL TRUE)
add_reward_check_test(reward_check_bad_tags ${CMAKE_CURRENT_SOURCE_DIR}/decks/tasks_arith.ini
  reward.format_tags=answer)
set_tests_properties(reward_check_bad_tags PROPERTIES PASS_REGULAR_EXPRESSION "\\[reward\\] format_tags")

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
# Preference pairs for dpo / ipo / rm ([data] pref_path; src/tasks/preference.c).
add_unit_test(test_preference SOURCES tasks/test_preference.c)

# The code task ([data] verifier = code; src/tasks/code.h) through `rlpt reward-score` on 8
# HumanEval problems from the cache (skips without network): canonical solutions 1.0,
# empty / wrong / exit(0) programs 0.
add_test(NAME code_reward_score
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tasks/code_reward_score.sh $<TARGET_FILE:rlpt>
          ${CMAKE_CURRENT_SOURCE_DIR}/decks/code_score.ini ${CMAKE_SOURCE_DIR}/jobscripts/fetch-humaneval.sh
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(code_reward_score PROPERTIES LABELS e2e ENVIRONMENT "${RLPT_TEST_ENV}"
  SKIP_RETURN_CODE ${RLPT_SKIP_CODE} TIMEOUT 120)
# MBPP-style rows without network: the share of asserts passed, all-or-nothing, a bad row.
add_test(NAME code_mbpp_score
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tasks/code_mbpp_score.sh $<TARGET_FILE:rlpt>
          ${CMAKE_CURRENT_SOURCE_DIR}/decks/code_score.ini
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(code_mbpp_score PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}" TIMEOUT 60)
