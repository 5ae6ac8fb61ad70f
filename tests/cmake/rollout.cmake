# Rollout engine on the real transformer (rollout.c): greedy vs from-scratch argmax,
# logprobs vs model_forward, batch-composition invariance with preemption.
add_unit_test(test_rollout SOURCES test_rollout.c)
# The CPU forward ops give a row the same bits in any batch (GEMV vs GEMM, decode step
# vs full attention, paged vs contiguous keys, 1 vs 2 threads).
add_unit_test(test_rowinv SOURCES test_rowinv.c)

# rlpt init writes a tiny model (fixture), rlpt generate samples from it: one JSON
# object per sample with every field, and the same samples again for the same seed.
set(GEN_CLI_DECK "printf '[model]\\ndim = 32\\nlayers = 2\\nheads = 4\\nkv_heads = 2\\nffn_dim = 48\\nmax_seq = 64\\ninit_std = 0.2\\n' > gen_cli.ini")
add_test(NAME generate_cli_init COMMAND sh -c
  "${GEN_CLI_DECK} && $<TARGET_FILE:rlpt> init gen_cli.ini --out gen_cli.h5 run.seed=5"
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(generate_cli_init PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  FIXTURES_SETUP gen_cli_model)
set(GEN_CLI_RUN "$<TARGET_FILE:rlpt> generate --model gen_cli.h5 --prompt '12+34=' -n 3 --max-new-tokens 8 --seed 9 --json")
add_test(NAME generate_cli_json COMMAND sh -c
  "${GEN_CLI_RUN} > gen_a.jsonl && ${GEN_CLI_RUN} > gen_b.jsonl && cmp gen_a.jsonl gen_b.jsonl && wc -l < gen_a.jsonl && head -1 gen_a.jsonl"
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(generate_cli_json PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  FIXTURES_REQUIRED gen_cli_model
  PASS_REGULAR_EXPRESSION "^3\n\\{\"prompt\":\"12\\+34=\",\"prompt_tokens\":\\[17,18,11,19,20,29\\],\"text\":\"[^\"]*\",\"tokens\":\\[[0-9,]+\\],\"logprobs\":\\[-[0-9.e,-]+\\],\"finish_reason\":\"(eos|length)\"\\}\n$")
# Greedy from the text interface: finish reason and logprobs printed per sample.
add_test(NAME generate_cli_greedy COMMAND $<TARGET_FILE:rlpt> generate --model gen_cli.h5
  --prompt "abc" --temperature 0 -n 2 --max-new-tokens 4 WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(generate_cli_greedy PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  FIXTURES_REQUIRED gen_cli_model
  PASS_REGULAR_EXPRESSION "prompt: abc \\(3 tokens\\)\n\\[0\\] finish=(eos|length) tokens=[1-4] logprob=-[0-9.]+\n    text: .*\n    logprobs:( -[0-9.]+)+\n\\[1\\]")
# Bad input: a missing model file, a bad option value, a prompt too long for max_seq: exit 2.
add_test(NAME generate_cli_bad COMMAND sh -c
  "$<TARGET_FILE:rlpt> generate --model no_such.h5 --prompt x; echo \"exit $?\"; $<TARGET_FILE:rlpt> generate --model gen_cli.h5 --prompt x --top-p 2; echo \"exit $?\"; $<TARGET_FILE:rlpt> generate --model gen_cli.h5 --prompt x --max-new-tokens 100; echo \"exit $?\""
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(generate_cli_bad PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  FIXTURES_REQUIRED gen_cli_model
  PASS_REGULAR_EXPRESSION "no_such.h5.*\nexit 2\n.*--top-p '2'.*\nexit 2\n.*max_seq = 64\nexit 2\n")

# Generation throughput against PyTorch KV-cached decoding (minutes; run by hand:
# ctest -L bench -R bench_generate -V).
add_unit_test(bench_generate SOURCES bench/bench_generate.c LABELS bench)
set_tests_properties(bench_generate PROPERTIES TIMEOUT 1800)
