# env/: multi-turn rollouts with tools.
#   test_tool_call  the tool-call parser (well-formed, malformed JSON, unknown tool,
#                   unterminated), the calculator against hand-computed values and its errors,
#                   the episode hook's tool turns, max_turns and counters
add_unit_test(test_tool_call SOURCES env/test_tool_call.c)
