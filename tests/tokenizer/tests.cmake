# tokenizer/: the character tokenizer, byte-level BPE (tests/ref/bpe_golden*.json from
# Hugging Face tokenizers), tokenizer.json loading and writing (io/hf_tokenizer.c).
add_unit_test(test_tokenizer SOURCES tokenizer/test_tokenizer.c)
add_unit_test(test_bpe SOURCES tokenizer/test_bpe.c)
# SmolLM2's vocabulary against Hugging Face tokenizers (tests/ref/bpe_golden.json).
add_test(NAME test_bpe_smollm2 COMMAND test_bpe model WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(test_bpe_smollm2 PROPERTIES LABELS model ENVIRONMENT "${RLPT_TEST_ENV}"
  SKIP_RETURN_CODE ${RLPT_SKIP_CODE})
# Fixtures: tests/data/hf_tok_{a,b} and tests/ref/hf_tok_golden.json, written by
# tests/ref/hf_tok_ref.py with Hugging Face `tokenizers`.
add_unit_test(test_hf_tokenizer SOURCES tokenizer/test_hf_tokenizer.c LABELS unit golden)
# SmolLM2's tokenizer through tokenizer.json against tests/ref/bpe_golden*.json.
add_test(NAME test_hf_tokenizer_smollm2 COMMAND test_hf_tokenizer model)
set_tests_properties(test_hf_tokenizer_smollm2 PROPERTIES LABELS model ENVIRONMENT "${RLPT_TEST_ENV}"
  SKIP_RETURN_CODE 77)
