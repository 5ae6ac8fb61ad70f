# tasks.cmake: tests of rng, tokenizer, tasks, verifiers and rewards.
add_unit_test(test_rng SOURCES test_rng.c)
add_unit_test(test_tokenizer SOURCES test_tokenizer.c)
add_unit_test(test_verify_math SOURCES test_verify_math.c)
add_unit_test(test_verify_countdown SOURCES test_verify_countdown.c)
add_unit_test(test_tasks SOURCES test_tasks.c)
add_unit_test(test_reward SOURCES test_reward.c)

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
