# Review fixes (shared loaders and checks): CLI tests of the behaviour they keep or add.
#   clean_convert_token_ids  rlpt convert --tokenizer DIR writes DIR's eos id (config.json,
#                            read by the one hf_token_ids) into generation_config.json
set(RLPT_CLEAN_DIR ${CMAKE_CURRENT_BINARY_DIR}/clean_work)
file(MAKE_DIRECTORY ${RLPT_CLEAN_DIR})
set(RLPT_CLEAN_DECK ${CMAKE_CURRENT_SOURCE_DIR}/decks/e2e_tiny.ini)

# clean_cli_test(NAME REGEX SCRIPT ARGS...): sh -c SCRIPT with $0 = rlpt, then EXIT=code.
function(clean_cli_test name regex script)
  add_test(NAME clean_${name}
    COMMAND sh -c "${script}; echo EXIT=$?" $<TARGET_FILE:rlpt> ${ARGN}
    WORKING_DIRECTORY ${RLPT_CLEAN_DIR})
  set_tests_properties(clean_${name} PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}" TIMEOUT 30
    PASS_REGULAR_EXPRESSION "${regex}")
endfunction()

clean_cli_test(convert_token_ids "\"eos_token_id\":[ \t]*4[^\n]*\nEXIT=0"
  "rm -rf tok_out && \"$0\" init \"$1\" --out tok.h5 >/dev/null && \"$0\" convert tok.h5 tok_out --tokenizer \"$2\" >/dev/null && tr -d '\\n' < tok_out/generation_config.json && echo"
  ${RLPT_CLEAN_DECK} ${CMAKE_CURRENT_SOURCE_DIR}/data/hf_tok_b)

# rlpt check runs the reward's checks too: rm_alpha < 1 without rm_path exits 2 (as rlpt run does).
add_test(NAME clean_check_rm_alpha
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/decks/run_check.sh $<TARGET_FILE:rlpt> 2 check
          ${CMAKE_CURRENT_SOURCE_DIR}/decks/rm_tiny.ini reward.rm_alpha=0.5)
set_tests_properties(clean_check_rm_alpha PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "rlpt: [^\n]*rm_tiny.ini: \\[reward\\] rm_alpha = 0.5 mixes in a reward model, but \\[reward\\] rm_path is empty"
  FAIL_REGULAR_EXPRESSION "WRONG_EXIT")

# DAPO dynamic sampling, every step empty (correct_weight 0, no overlong shaping: every reward 0, so
# every group is filtered; no SFT): no update, but one LR-schedule step per RL step
# (src/roles.c train_part): the last checkpoint's trainer_step = [run] steps = 3.
add_executable(test_clean_lr test_clean_lr.c)
target_link_libraries(test_clean_lr PRIVATE rlpt_lib)
target_include_directories(test_clean_lr PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
string(REPLACE ";" " " RLPT_CLEAN_MPI "${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 ${RLPT_MPI_PREFLAGS}")
add_test(NAME clean_dynsamp_empty_lr
  COMMAND sh -c "rm -rf ds_empty && mkdir ds_empty && cd ds_empty && \
                 ${RLPT_CLEAN_MPI} \"$0\" run \"$1\" sft.steps=0 run.steps=3 reward.correct_weight=0 algo.overlong_buffer=0 \
                 optim.schedule=linear checkpoint.every=3 checkpoint.dir=ck log.metrics_path=m.jsonl \
                 > run.log 2>&1 || { cat run.log; echo EMPTY_RUN_FAILED; exit 1; }; \"$2\" ck 3"
          $<TARGET_FILE:rlpt> ${CMAKE_CURRENT_SOURCE_DIR}/decks/dynsamp_tiny.ini $<TARGET_FILE:test_clean_lr>
  WORKING_DIRECTORY ${RLPT_CLEAN_DIR})
set_tests_properties(clean_dynsamp_empty_lr PROPERTIES LABELS "mpi" ENVIRONMENT "${RLPT_TEST_ENV}"
  PROCESSORS 4 TIMEOUT 60 FAIL_REGULAR_EXPRESSION "EMPTY_RUN_FAILED|CHECK failed")

# rlpt eval --model hf:DIR (model_source.h): a tiny HF directory (rlpt init -> convert + the
# hf_tok_a tokenizer) is evaluated with its own tokenizer (601 ids, not the deck's 98).
clean_cli_test(eval_hf "model hfe \\(safetensors directory\\)[^\n]*tokenizer: the model's \\(601 ids\\).*\"eval_pass@1\":[^\n]*\nEXIT=0"
  "rm -rf hfe && \"$0\" init \"$1\" model.vocab_size=601 model.max_seq=64 --out hfe.h5 >/dev/null && \"$0\" convert hfe.h5 hfe >/dev/null && cp \"$2\"/tokenizer.json \"$2\"/tokenizer_config.json hfe/ && \"$0\" eval \"$1\" --model hf:hfe --json 2>&1"
  ${RLPT_CLEAN_DECK} ${CMAKE_CURRENT_SOURCE_DIR}/data/hf_tok_a)

# rlpt score --model hf:DIR and --model FILE.h5 give the same scores (the HF
# directory is rlpt convert's fp32 export of the same weights: bit-identical).
clean_cli_test(score_hf "same-scores\nEXIT=0"
  "rm -rf hfs && \"$0\" init \"$1\" --out hfs.h5 >/dev/null && \"$0\" convert hfs.h5 hfs >/dev/null && printf '{\"tokens\": [1, 2, 3, 4]}\\n{\"tokens\": [5, 6]}\\n' > hfs_in.jsonl && \"$0\" score --model hfs.h5 --input hfs_in.jsonl --output hfs_a.jsonl && \"$0\" score --model hf:hfs --input hfs_in.jsonl --output hfs_b.jsonl && cmp hfs_a.jsonl hfs_b.jsonl && echo same-scores"
  ${RLPT_CLEAN_DECK})
