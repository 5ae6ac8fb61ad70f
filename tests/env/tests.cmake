# env/: multi-turn rollouts with tools.
#   test_tool_call  the tool-call parser (well-formed, malformed JSON, unknown tool,
#                   unterminated), the calculator against hand-computed values and its errors,
#                   the episode hook's tool turns, max_turns and counters
add_unit_test(test_tool_call SOURCES env/test_tool_call.c)
#   test_env_rollout  tool turns appended on the rollout engine's KV cache: masks, sampled
#                   logprobs == a from-scratch forward (1e-5), no recompute, preemption,
#                   batch-size and prefix-sharing invariance
add_unit_test(test_env_rollout SOURCES env/test_env_rollout.c)
#   test_env_train  tool tokens get no gradient: garbage tool logprobs change nothing, the
#                   unmasked batch does; a masked tail == the responses cut before it (1e-6)
add_unit_test(test_env_train SOURCES env/test_env_train.c)
#   test_python_tool  the python tool in the sandbox: stdout, errors, a killed endless loop,
#                   output cut at ENV_CONTENT_MAX (skips where the sandbox cannot isolate)
add_unit_test(test_python_tool SOURCES env/test_python_tool.c)
#   test_command_tool  the command tool with a Python worker: the built-in calculator's tool
#                   turns from a Python calculator on the same expressions; the request's
#                   episode (prompt, response so far, turn, id); a crash, a hang and garbage
#                   each a named error turn counted in tool_errors within seconds, the next
#                   call answered by a fresh worker; a missing program refused (2)
add_unit_test(test_command_tool SOURCES env/test_command_tool.c)

# The multi-turn e2e (label e2e): tests/decks/e2e_tools.ini on inputs/make_mul_tools.sh's
# products of two 2-digit numbers. 300 SFT steps on demonstrations that call the calculator
# (tool responses masked) leave the final answer mostly miscopied from the tool's response
# (held-out sampled pass@1 0.094); 45 GRPO steps with the calculator in the loop, checked by
# run/test_e2e.c (every metric, logprob_diff_max <= 1e-5 with tool tokens in the sequences, acc
# rise over thirds, held-out sampled pass@1 gain). Measured on the 2-core VM (2026-12-02, seed
# 1): acc 0.144 -> 0.158 (+0.014), sampled pass@1 0.094 -> 0.133 (+0.039), greedy 0.078 ->
# 0.188; 80 steps: +0.034 and +0.047. The learning is slow and the bars are low (+0.005): the
# sign-flipped run falls to 0 (-0.023, -0.125) and must fail them.
add_test(NAME env_mul_data COMMAND sh ${CMAKE_SOURCE_DIR}/inputs/make_mul_tools.sh
  ${CMAKE_CURRENT_BINARY_DIR}/mul_tools.jsonl 2000 1)
set_tests_properties(env_mul_data PROPERTIES LABELS e2e FIXTURES_SETUP env_mul_data)
set(RLPT_TOOLS_DECK ${CMAKE_CURRENT_SOURCE_DIR}/decks/e2e_tools.ini)
string(REPLACE ";" " " RLPT_TOOLS_FLAGS "${RLPT_MPI_PREFLAGS}")
set(RLPT_TOOLS_ENV "${RLPT_TEST_ENV};RLPT_MPIEXEC=${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG};RLPT_MPI_FLAGS=${RLPT_TOOLS_FLAGS}")
foreach(flip 1 -1)
  set(name e2e_tools_4)
  if(flip STREQUAL -1)
    set(name e2e_tools_sign_flip_4)
  endif()
  add_test(NAME ${name}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/run/test_e2e.sh $<TARGET_FILE:rlpt> $<TARGET_FILE:test_e2e>
            4 ${RLPT_TOOLS_DECK} 300 45 0.005 0.005 data.train_path=${CMAKE_CURRENT_BINARY_DIR}/mul_tools.jsonl
            reward.correct_weight=${flip})
  set_tests_properties(${name} PROPERTIES LABELS e2e ENVIRONMENT "${RLPT_TOOLS_ENV}" PROCESSORS 4
    TIMEOUT 240 FIXTURES_REQUIRED env_mul_data)
endforeach()
set_tests_properties(e2e_tools_sign_flip_4 PROPERTIES
  PASS_REGULAR_EXPRESSION "CHECK failed: a1 - a0 >= min_rise.*CHECK failed: samp_rl - samp_sft >= min_gain"
  FAIL_REGULAR_EXPRESSION "E2E_RUN_FAILED")

# Bad [env] decks exit 2 with one message naming the key: rlpt check (the deck's checks) and,
# for the python tool without a working sandbox, rlpt run (the rollout ranks probe it).
function(env_bad_deck name regex)
  add_test(NAME env_bad_${name} COMMAND sh -c "\"$0\" check \"$@\" 2>&1 > /dev/null; echo \"exit $?\""
           $<TARGET_FILE:rlpt> ${RLPT_TOOLS_DECK} data.train_path=mul_tools.jsonl ${ARGN})
  set_tests_properties(env_bad_${name} PROPERTIES LABELS unit PASS_REGULAR_EXPRESSION "${regex}[^\n]*\nexit 2"
    FIXTURES_REQUIRED env_mul_data)
endfunction()
env_bad_deck(unknown_tool "\\[env\\] tools: unknown tool 'search' \\(known: calculator, python, command\\)" env.tools=calculator,search)
env_bad_deck(command_empty "\\[env\\] tools lists command, but \\[env\\] command is empty" env.tools=calculator,command)
env_bad_deck(command_unlisted "\\[env\\] command is set, but \\[env\\] tools does not list command" "env.command=python3 w.py")
env_bad_deck(command_timeout "\\[env\\] command_timeout_s applies to the command tool" env.command_timeout_s=3)
env_bad_deck(max_turns "\\[env\\] max_turns: 0 is out of range \\[1, 1000\\]" env.max_turns=0)
env_bad_deck(disabled "\\[env\\] max_turns is set, but \\[env\\] enabled = false: it would do nothing" env.enabled=false)
env_bad_deck(cuda "multi-turn rollouts run on the CPU rollout engine only" run.device=cuda)
env_bad_deck(async "multi-turn rollouts run in mode = sync" run.mode=separate_async)
env_bad_deck(reinforce_pp "REINFORCE\\+\\+'s return restarts after a masked token" algo.adv_estimator=reinforce_pp)
env_bad_deck(sandbox_keys "\\[sandbox\\] timeout_s: \\[sandbox\\] runs the code task's programs and the python tool" sandbox.timeout_s=3)
add_test(NAME env_bad_python_sandbox
  COMMAND sh -c "$RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS \"$0\" run \"$@\" > out.env_bad_python.log 2>&1; echo \"exit $?\"; grep -o 'rlpt: run: rank.*' out.env_bad_python.log"
          $<TARGET_FILE:rlpt> ${RLPT_TOOLS_DECK} data.train_path=mul_tools.jsonl env.tools=python
          sandbox.interpreter=/nonexistent/python9 sft.steps=0)
set_tests_properties(env_bad_python_sandbox PROPERTIES LABELS e2e ENVIRONMENT "${RLPT_TOOLS_ENV}"
  PROCESSORS 4 FIXTURES_REQUIRED env_mul_data TIMEOUT 60
  PASS_REGULAR_EXPRESSION "exit 2\nrlpt: run: rank [0-9]+: \\[env\\] tools = python: the python tool needs the sandbox: \\[sandbox\\] interpreter: '/nonexistent/python9' is not an executable")

#   test_smollm2_tools  (label model) SmolLM2-135M-Instruct runs a tool-calling episode in its
#                   ChatML template: the forced call is finished, parsed and run, the tool turn
#                   appended masked, generation continues; logprobs vs a from-scratch forward
add_unit_test(test_smollm2_tools SOURCES env/test_smollm2_tools.c LABELS model)

# [env] command in a run (env/command_run.sh): the tools deck's demonstrations calling
# "pycalc", 60 SFT + 2 GRPO steps on 4 ranks with a Python calculator behind [env] command
# (its tool turns == the calculator's), then a crashing worker (every call an error turn,
# the run completes), then a missing program (exit 2).
add_test(NAME e2e_env_command_run_4
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/env/command_run.sh $<TARGET_FILE:rlpt> ${RLPT_TOOLS_DECK}
          ${CMAKE_CURRENT_BINARY_DIR}/mul_tools.jsonl
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(e2e_env_command_run_4 PROPERTIES LABELS e2e ENVIRONMENT "${RLPT_TOOLS_ENV}" PROCESSORS 4
  TIMEOUT 120 FIXTURES_REQUIRED env_mul_data)
