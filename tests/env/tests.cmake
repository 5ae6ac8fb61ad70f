# env/: multi-turn rollouts with tools.
#   test_tool_call  the tool-call parser (well-formed, malformed JSON, unknown tool,
#                   unterminated), the calculator against hand-computed values and its errors,
#                   the episode hook's tool turns, max_turns and counters
add_unit_test(test_tool_call SOURCES env/test_tool_call.c)
#   test_env_rollout  tool turns appended on the rollout engine's KV cache: masks, sampled
#                   logprobs == a from-scratch forward (1e-5), no recompute, preemption and
#                   batch-size invariance
add_unit_test(test_env_rollout SOURCES env/test_env_rollout.c)
#   test_env_train  tool tokens get no gradient: garbage tool logprobs change nothing, the
#                   unmasked batch does; a masked tail == the responses cut before it (1e-6)
add_unit_test(test_env_train SOURCES env/test_env_train.c)
