# The shipped example decks beyond the quickstart: `rlpt check` must accept
# inputs/countdown.ini (DAPO: dynamic sampling, clip-higher, overlong shaping) and
# inputs/ppo_arith.ini (PPO with a critic), and print the resolved algorithm so
# a preset that silently changed would show up in the output.

function(deck_extra_test name deck regex)
  add_test(NAME decks_extra_${name}
    COMMAND $<TARGET_FILE:rlpt> check ${CMAKE_SOURCE_DIR}/inputs/${deck}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(decks_extra_${name} PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "${regex}")
endfunction()

deck_extra_test(countdown countdown.ini
  "name = dapo.*clip_high = 0.28.*dynamic_sampling = true.*overlong_buffer = 6")
deck_extra_test(ppo_arith ppo_arith.ini
  "name = ppo.*adv_estimator = gae.*whiten_adv = true")
