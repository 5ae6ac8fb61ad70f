# Hugging Face model directories as initial weights: tokenizer.json loading and
# writing (io/hf_tokenizer.c) and [model] init = hf:DIR (src/model_import.c).
# Fixtures: tests/data/hf_tok_{a,b} and tests/ref/hf_tok_golden.json, written by
# tests/ref/hf_tok_ref.py with Hugging Face `tokenizers`.
add_unit_test(test_hf_tokenizer SOURCES test_hf_tokenizer.c LABELS unit golden)
# SmolLM2's tokenizer through tokenizer.json against tests/ref/bpe_golden*.json.
add_test(NAME test_hf_tokenizer_smollm2 COMMAND test_hf_tokenizer model)
set_tests_properties(test_hf_tokenizer_smollm2 PROPERTIES LABELS model ENVIRONMENT "${RLPT_TEST_ENV}"
  SKIP_RETURN_CODE 77)
# The commands with init = hf:DIR on a tiny model (rlpt init -> convert + the
# fixture's tokenizer): plan, generate --chat, a 1-step run on 2 ranks; bad input
# (no / malformed tokenizer.json, too many tokens, no config.json) exits 2 naming the file.
add_test(NAME hf_cli COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hf_cli.sh $<TARGET_FILE:rlpt>
         ${MPIEXEC_EXECUTABLE} ${RLPT_MPI_PREFLAGS})
set_tests_properties(hf_cli PROPERTIES LABELS mpi ENVIRONMENT "${RLPT_TEST_ENV}" TIMEOUT 120
  PASS_REGULAR_EXPRESSION "hf_cli: all checks passed")
# SmolLM2: GGUF -> rlpt convert -> HF directory; greedy chat completions of gguf: and hf: agree.
add_test(NAME hf_generate_smollm2 COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hf_generate.sh $<TARGET_FILE:rlpt>)
set_tests_properties(hf_generate_smollm2 PROPERTIES LABELS model ENVIRONMENT "${RLPT_TEST_ENV}"
  SKIP_RETURN_CODE 77 TIMEOUT 600 PASS_REGULAR_EXPRESSION "same greedy tokens and logprobs")
# One BOS per prompt, also when a chat template writes it itself (Llama 3 fixture).
add_unit_test(test_prompt_bos SOURCES test_prompt_bos.c LABELS unit)
