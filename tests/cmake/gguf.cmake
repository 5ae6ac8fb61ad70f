# Real models: GGUF reader and dequantization, byte-level BPE, chat templates,
# SmolLM2-135M-Instruct against PyTorch. Tests labelled `model` need the GGUF
# (jobscripts/fetch-smollm2.sh or RLPT_SMOLLM2_GGUF) and skip (77) without it.
add_unit_test(test_gguf SOURCES test_gguf.c LABELS unit golden)
add_unit_test(test_gguf_fuzz SOURCES test_gguf_fuzz.c)
add_unit_test(test_bpe SOURCES test_bpe.c)
add_unit_test(test_chat SOURCES test_chat.c)
# SmolLM2's vocabulary against Hugging Face tokenizers (tests/ref/bpe_golden.json).
add_test(NAME test_bpe_smollm2 COMMAND test_bpe model WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(test_bpe_smollm2 PROPERTIES LABELS model ENVIRONMENT "${RLPT_TEST_ENV}"
  SKIP_RETURN_CODE ${RLPT_SKIP_CODE})
# SmolLM2-135M-Instruct forward, greedy completions and chat prompts against PyTorch.
add_unit_test(test_smollm2 SOURCES test_smollm2.c LABELS model)
