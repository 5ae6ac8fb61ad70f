# Transformer core: CPU ops, model forward/backward (golden + finite differences),
# the init/score commands, and the training benchmark (label bench, not for CI).
add_unit_test(test_ops SOURCES test_ops.c)
add_unit_test(test_model_fd SOURCES test_model_fd.c)
add_unit_test(test_model_golden SOURCES test_model_golden.c LABELS unit golden)
# attention backward and AdamW: the same bits with 1 and 3 threads; a second backward
# after one forward recomputes the logits chunk the first one consumed
add_unit_test(test_train_threads SOURCES test_train_threads.c)

# rlpt init + rlpt score on a tiny deck: the output has n-1 logprobs per line.
set(MODEL_CLI_DECK "printf '[model]\\ndim = 16\\nlayers = 1\\nheads = 2\\nkv_heads = 1\\nffn_dim = 24\\nmax_seq = 64\\n' > cli_model.ini")
add_test(NAME model_cli_init_score COMMAND sh -c
  "${MODEL_CLI_DECK} && $<TARGET_FILE:rlpt> init cli_model.ini --out cli_model.h5 run.seed=3 && printf '{\"tokens\": [1, 2, 3, 4]}\\n\\n{\"tokens\": [5, 6]}\\n' > cli_in.jsonl && $<TARGET_FILE:rlpt> score --model cli_model.h5 --input cli_in.jsonl --output cli_out.jsonl && cat cli_out.jsonl"
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(model_cli_init_score PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "\\{\"logprobs\": \\[-[0-9.]+, -[0-9.]+, -[0-9.]+\\], \"entropy\": \\[[0-9.]+, [0-9.]+, [0-9.]+\\]\\}\n\\{\"logprobs\": \\[-[0-9.]+\\], \"entropy\": \\[[0-9.]+\\]\\}")
# A bad JSONL line is reported as FILE:LINE (exit 2, checked by the message).
add_test(NAME model_cli_score_bad_line COMMAND sh -c
  "${MODEL_CLI_DECK} && $<TARGET_FILE:rlpt> init cli_model.ini --out cli_model_bad.h5 && printf '{\"tokens\": [1, 2]}\\n{\"tokens\": [1, 2\\n' > cli_bad.jsonl && $<TARGET_FILE:rlpt> score --model cli_model_bad.h5 --input cli_bad.jsonl --output cli_bad_out.jsonl; echo \"exit $?\"; test ! -e cli_bad_out.jsonl && echo no-partial-output"
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(model_cli_score_bad_line PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "cli_bad.jsonl:2: not valid JSON\nexit 2\nno-partial-output")

# Training throughput against PyTorch (minutes; run by hand: ctest -L bench -V).
add_unit_test(bench_train SOURCES bench/bench_train.c LABELS bench)
set_tests_properties(bench_train PROPERTIES TIMEOUT 1800)
