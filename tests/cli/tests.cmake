# cli/: the commands beside `rlpt run`: init, score, generate, convert, eval on the
# formats users bring (rlpt HDF5, Hugging Face directories, GGUF).
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

# rlpt generate and rlpt score with --device cuda against --device cpu on the rollout
# fixture's model (tests/cli/tests.cmake: generate_cli_init): the same greedy and seeded-sampled tokens,
# and every score number within 1e-4 relative. Skipped (77) without a GPU.
add_test(NAME gpu_generate_score COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_gpu_cli.sh
         $<TARGET_FILE:rlpt> gen_cli.h5 WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(gpu_generate_score PROPERTIES LABELS gpu ENVIRONMENT "${RLPT_TEST_ENV}"
  FIXTURES_REQUIRED gen_cli_model SKIP_RETURN_CODE 77 TIMEOUT 60)

# Hugging Face model directories as initial weights: tokenizer.json loading and
# writing (io/hf_tokenizer.c) and [model] init = hf:DIR (src/model/import.c).
# Fixtures: tests/data/hf_tok_{a,b} and tests/ref/hf_tok_golden.json, written by
# tests/ref/hf_tok_ref.py with Hugging Face `tokenizers`.
# The commands with init = hf:DIR on a tiny model (rlpt init -> convert + the
# fixture's tokenizer): plan, generate --chat, a 1-step run on 2 ranks; bad input
# (no / malformed tokenizer.json, too many tokens, no config.json) exits 2 naming the file.
add_test(NAME hf_cli COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/hf_cli.sh $<TARGET_FILE:rlpt>
         ${MPIEXEC_EXECUTABLE} ${RLPT_MPI_PREFLAGS})
set_tests_properties(hf_cli PROPERTIES LABELS mpi ENVIRONMENT "${RLPT_TEST_ENV}" TIMEOUT 120
  PASS_REGULAR_EXPRESSION "hf_cli: all checks passed")
# SmolLM2: GGUF -> rlpt convert -> HF directory; greedy chat completions of gguf: and hf: agree.
add_test(NAME hf_generate_smollm2 COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/hf_generate.sh $<TARGET_FILE:rlpt>)
set_tests_properties(hf_generate_smollm2 PROPERTIES LABELS model ENVIRONMENT "${RLPT_TEST_ENV}"
  SKIP_RETURN_CODE 77 TIMEOUT 600 PASS_REGULAR_EXPRESSION "same greedy tokens and logprobs")

set(RLPT_CLI_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli_work)
file(MAKE_DIRECTORY ${RLPT_CLI_DIR})
set(RLPT_CLI_DECK ${CMAKE_CURRENT_SOURCE_DIR}/decks/e2e_tiny.ini)

# cli_test(NAME REGEX SCRIPT ARGS...): sh -c SCRIPT with $0 = rlpt, then EXIT=code.
function(cli_test name regex script)
  add_test(NAME cli_${name}
    COMMAND sh -c "${script}; echo EXIT=$?" $<TARGET_FILE:rlpt> ${ARGN}
    WORKING_DIRECTORY ${RLPT_CLI_DIR})
  set_tests_properties(cli_${name} PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}" TIMEOUT 30
    PASS_REGULAR_EXPRESSION "${regex}")
endfunction()

# rlpt convert --tokenizer DIR writes DIR's eos id (config.json, read by the one
# hf_token_ids) into generation_config.json.
cli_test(convert_token_ids "\"eos_token_id\":[ \t]*4[^\n]*\nEXIT=0"
  "rm -rf tok_out && \"$0\" init \"$1\" --out tok.h5 >/dev/null && \"$0\" convert tok.h5 tok_out --tokenizer \"$2\" >/dev/null && tr -d '\\n' < tok_out/generation_config.json && echo"
  ${RLPT_CLI_DECK} ${CMAKE_CURRENT_SOURCE_DIR}/data/hf_tok_b)

# rlpt eval --model hf:DIR (model/source.h): a tiny HF directory (rlpt init -> convert + the
# hf_tok_a tokenizer) is evaluated with its own tokenizer (601 ids, not the deck's 98).
cli_test(eval_hf "model hfe \\(safetensors directory\\)[^\n]*tokenizer: the model's \\(601 ids\\).*\"eval_pass@1\":[^\n]*\nEXIT=0"
  "rm -rf hfe && \"$0\" init \"$1\" model.vocab_size=601 model.max_seq=64 --out hfe.h5 >/dev/null && \"$0\" convert hfe.h5 hfe >/dev/null && cp \"$2\"/tokenizer.json \"$2\"/tokenizer_config.json hfe/ && \"$0\" eval \"$1\" --model hf:hfe --json 2>&1"
  ${RLPT_CLI_DECK} ${CMAKE_CURRENT_SOURCE_DIR}/data/hf_tok_a)

# rlpt score --model hf:DIR and --model FILE.h5 give the same scores (the HF
# directory is rlpt convert's fp32 export of the same weights: bit-identical).
cli_test(score_hf "same-scores\nEXIT=0"
  "rm -rf hfs && \"$0\" init \"$1\" --out hfs.h5 >/dev/null && \"$0\" convert hfs.h5 hfs >/dev/null && printf '{\"tokens\": [1, 2, 3, 4]}\\n{\"tokens\": [5, 6]}\\n' > hfs_in.jsonl && \"$0\" score --model hfs.h5 --input hfs_in.jsonl --output hfs_a.jsonl && \"$0\" score --model hf:hfs --input hfs_in.jsonl --output hfs_b.jsonl && cmp hfs_a.jsonl hfs_b.jsonl && echo same-scores"
  ${RLPT_CLI_DECK})
