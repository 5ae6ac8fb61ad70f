# Hugging Face model directories as initial weights: tokenizer.json loading and
# writing (io/hf_tokenizer.c) and [model] init = hf:DIR (src/model_import.c).
# Fixtures: tests/data/hf_tok_{a,b} and tests/ref/hf_tok_golden.json, written by
# tests/ref/hf_tok_ref.py with Hugging Face `tokenizers`.
add_unit_test(test_hf_tokenizer SOURCES test_hf_tokenizer.c LABELS unit golden)
# SmolLM2's tokenizer through tokenizer.json against tests/ref/bpe_golden*.json.
add_test(NAME test_hf_tokenizer_smollm2 COMMAND test_hf_tokenizer model)
set_tests_properties(test_hf_tokenizer_smollm2 PROPERTIES LABELS model ENVIRONMENT "${RLPT_TEST_ENV}"
  SKIP_RETURN_CODE 77)
