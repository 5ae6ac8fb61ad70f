# One GRPO step of inputs/smollm2_arith.ini on SmolLM2-135M-Instruct ([model]
# init = gguf:PATH, BPE tokenizer, chat-form arith prompts, math verifier).
# Label model: needs the GGUF (jobscripts/fetch-smollm2.sh), skips (77) without it.
add_test(NAME smollm2_grpo_step
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/smollm2_run.sh $<TARGET_FILE:rlpt> ${MPIEXEC_EXECUTABLE}
          ${RLPT_MPI_PREFLAGS})
set_tests_properties(smollm2_grpo_step PROPERTIES LABELS model ENVIRONMENT "${RLPT_TEST_ENV}"
  SKIP_RETURN_CODE 77 TIMEOUT 600
  PASS_REGULAR_EXPRESSION "step 1/1 rl [^\n]*\n(.*\n)?[{].*\"step\": *1[,}]")
