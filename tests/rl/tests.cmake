# rl/: the algorithm math (the formulas of src/rl/README.md against PyTorch golden files),
# dynamic sampling, samples and the experience buffer, rewards and the reward model.
add_unit_test(test_algo SOURCES rl/test_algo.c)
add_unit_test(test_algo_golden SOURCES rl/test_algo_golden.c LABELS unit golden)
# veRL's low_var_kl and agg_loss "seq-mean-token-sum-norm" (tests/ref/verl_ref.py, 1e-7)
add_unit_test(test_verl_names SOURCES rl/test_verl_names.c LABELS unit golden)
add_unit_test(test_dynsamp SOURCES rl/test_dynsamp.c)
add_unit_test(test_difficulty SOURCES rl/test_difficulty.c)
add_unit_test(test_self_consistency SOURCES rl/test_self_consistency.c)
add_unit_test(test_experience SOURCES rl/test_experience.c)
add_unit_test(test_reward SOURCES rl/test_reward.c)

# The reward-model component ([reward] rm_path, rm_alpha; src/rl/reward_model.c):
#   test_rm            scores against the PyTorch golden values, packed vs one-at-a-time forwards,
#                      a checkpoint's PPO critic as the RM, load errors, the rm_alpha mixing formula
#   rm_run_4           `rlpt init` (value_head = true) makes a reward model (fixture), then a 4-rank
#                      run of tests/decks/rm_tiny.ini (2 GRPO steps) with rm_alpha = 0.5; every RL
#                      line of its metrics JSONL has reward_parts.rm and reward_mean =
#                      0.5 * reward_parts.correct + 0.5 * reward_parts.rm (test_rm --metrics)
#   rm_run_ckpt_4      the same with a PPO checkpoint directory (fixture rm_ppo_ckpt) as rm_path: its critic
#   rm_reward_check    rlpt reward-check loads the RM and prints its score rows
#   rm_bad_*           rm_alpha < 1 without rm_path, a missing rm_path (rlpt check or reward-check,
#                      and rlpt run),
#                      an RM without a value head, with another vocabulary or a shorter max_seq:
#                      exit 2 with a message naming the key

add_unit_test(test_rm SOURCES rl/test_rm.c LABELS "unit;golden")

set(RLPT_RM_DECK ${CMAKE_CURRENT_SOURCE_DIR}/decks/rm_tiny.ini)
string(REPLACE ";" " " RLPT_RM_MPI "${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 ${RLPT_MPI_PREFLAGS}")

# The reward models: with a value head, without one, another vocabulary, a shorter max_seq.
add_test(NAME rm_init_models
  COMMAND sh -c "set -e; \"$0\" init \"$1\" --out rm_tiny_rm.h5 model.value_head=true run.seed=5; \
                 \"$0\" init \"$1\" --out rm_tiny_novalue.h5; \
                 \"$0\" init \"$1\" --out rm_tiny_vocab.h5 model.value_head=true model.vocab_size=300; \
                 \"$0\" init \"$1\" --out rm_tiny_short.h5 model.value_head=true model.max_seq=8"
          $<TARGET_FILE:rlpt> ${RLPT_RM_DECK}
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(rm_init_models PROPERTIES LABELS unit FIXTURES_SETUP rm_models ENVIRONMENT "${RLPT_TEST_ENV}")

add_test(NAME rm_run_4
  COMMAND sh -c "${RLPT_RM_MPI} \"$0\" run \"$1\" reward.rm_path=rm_tiny_rm.h5 reward.rm_alpha=0.5 \
                 log.metrics_path=rm_run_metrics.jsonl checkpoint.dir=rm_run_ckpt && \"$2\" --metrics rm_run_metrics.jsonl 0.5"
          $<TARGET_FILE:rlpt> ${RLPT_RM_DECK} $<TARGET_FILE:test_rm>
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(rm_run_4 PROPERTIES LABELS mpi FIXTURES_REQUIRED rm_models PROCESSORS 4 TIMEOUT 120
  ENVIRONMENT "${RLPT_TEST_ENV}" PASS_REGULAR_EXPRESSION "reward model: rm_tiny_rm.h5 \\(/model, [0-9]+ parameters\\) on 1 reward rank\\(s\\); reward = 0.5 \\* rule \\+ 0.5 \\* rm.*test_rm --metrics: all checks passed"
  FAIL_REGULAR_EXPRESSION "CHECK failed|CHECK_NEAR failed")

# rm_check_bad(NAME CMD REGEX ARGS...): `rlpt CMD rm_tiny.ini ARGS...` exits 2 printing REGEX.
# The file check is the deck's (rlpt check); rm_alpha < 1 without rm_path is
# config_reward_check's (deck/config_check.c), run by reward_init (rlpt run, rlpt
# reward-check) and rlpt check but not by the deck parse, since test_config's schema
# round-trip sets every float key without the strings.
function(rm_check_bad name cmd regex)
  add_test(NAME rm_bad_${name}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/decks/run_check.sh $<TARGET_FILE:rlpt> 2 ${cmd} ${RLPT_RM_DECK} ${ARGN}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(rm_bad_${name} PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
    PASS_REGULAR_EXPRESSION "${regex}" FAIL_REGULAR_EXPRESSION "WRONG_EXIT")
endfunction()
rm_check_bad(alpha_check reward-check "\\[reward\\] rm_alpha = 0.5 mixes in a reward model, but \\[reward\\] rm_path is empty"
  reward.rm_alpha=0.5)
rm_check_bad(missing_check check "override 'reward.rm_path=rm_nope.h5': \\[reward\\] rm_path: cannot read the reward model 'rm_nope.h5': No such file"
  reward.rm_path=rm_nope.h5 reward.rm_alpha=0.5)

# rm_run_bad(NAME REGEX ARGS...): `mpirun -np 4 rlpt run rm_tiny.ini ARGS...` exits 2 printing REGEX
# (RLPT_MESSAGES counts the lines rlpt printed).
function(rm_run_bad name regex)
  add_test(NAME rm_bad_${name}
    COMMAND sh -c "${RLPT_RM_MPI} \"$0\" run \"$@\" > out.rm_${name}.log 2>&1; rc=$?; cat out.rm_${name}.log; \
                   echo RLPT_MESSAGES=$(grep -c '^rlpt:' out.rm_${name}.log); [ $rc -eq 2 ] || echo RUN_WRONG_EXIT $rc"
            $<TARGET_FILE:rlpt> ${RLPT_RM_DECK} log.metrics_path=rm_bad_${name}.jsonl checkpoint.dir=rm_bad_${name}_ckpt ${ARGN}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(rm_bad_${name} PROPERTIES LABELS mpi FIXTURES_REQUIRED rm_models PROCESSORS 4 TIMEOUT 60
    ENVIRONMENT "${RLPT_TEST_ENV}" PASS_REGULAR_EXPRESSION "${regex}" FAIL_REGULAR_EXPRESSION "RUN_WRONG_EXIT")
endfunction()
rm_run_bad(alpha_run "rlpt: run: \\[reward\\] rm_alpha = 0.5 mixes in a reward model, but \\[reward\\] rm_path is empty.*RLPT_MESSAGES=1"
  reward.rm_alpha=0.5)
rm_run_bad(missing_run "\\[reward\\] rm_path: cannot read the reward model 'rm_nope.h5'.*RLPT_MESSAGES=1"
  reward.rm_path=rm_nope.h5)
rm_run_bad(novalue "rlpt: run: \\[reward\\] rm_path: the model in 'rm_tiny_novalue.h5' has no value head.*RLPT_MESSAGES=1"
  reward.rm_path=rm_tiny_novalue.h5 reward.rm_alpha=0.5)
rm_run_bad(vocab "rlpt: run: \\[reward\\] rm_path: the reward model in 'rm_tiny_vocab.h5' has vocab_size 300, the policy [0-9]+: it must share the policy's tokenizer.*RLPT_MESSAGES=1"
  reward.rm_path=rm_tiny_vocab.h5 reward.rm_alpha=0.5)
rm_run_bad(max_seq "rlpt: run: \\[reward\\] rm_path: the reward model in 'rm_tiny_short.h5' has max_seq 8, shorter than the policy's \\[model\\] max_seq = 12.*RLPT_MESSAGES=1"
  reward.rm_path=rm_tiny_short.h5)

# rlpt reward-check with a reward model: it is loaded and its scores of the reference and the
# wrong answers get their own `rm` rows.
add_test(NAME rm_reward_check
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/decks/run_check.sh $<TARGET_FILE:rlpt> 0 reward-check ${RLPT_RM_DECK}
          --prompts 8 reward.rm_path=rm_tiny_rm.h5 reward.rm_alpha=0.5
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(rm_reward_check PROPERTIES LABELS unit FIXTURES_REQUIRED rm_models ENVIRONMENT "${RLPT_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "reward model rm_tiny_rm.h5 \\(/model, [0-9]+ parameters\\), rm_alpha 0.5.*reference +rm +-?[0-9.]+ .*garbage +rm +-?[0-9.]+ .*reward-check: ok"
  FAIL_REGULAR_EXPRESSION "WRONG_EXIT")

# A PPO checkpoint directory as the reward model: its /model has no value head, so the critic
# (/critic) of the checkpoint `latest` names scores (fixture: a 2-step PPO run of the deck).
add_test(NAME rm_ppo_ckpt
  COMMAND sh -c "rm -rf rm_ppo_ckpt; ${RLPT_RM_MPI} \"$0\" run \"$1\" algo.name=ppo checkpoint.dir=rm_ppo_ckpt \
                 log.metrics_path=rm_ppo_metrics.jsonl"
          $<TARGET_FILE:rlpt> ${RLPT_RM_DECK}
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(rm_ppo_ckpt PROPERTIES LABELS mpi FIXTURES_SETUP rm_ppo PROCESSORS 4 TIMEOUT 120
  ENVIRONMENT "${RLPT_TEST_ENV}")
add_test(NAME rm_run_ckpt_4
  COMMAND sh -c "${RLPT_RM_MPI} \"$0\" run \"$1\" reward.rm_path=rm_ppo_ckpt reward.rm_alpha=0.5 \
                 log.metrics_path=rm_ckpt_metrics.jsonl checkpoint.dir=rm_ckpt_run_ckpt && \"$2\" --metrics rm_ckpt_metrics.jsonl 0.5"
          $<TARGET_FILE:rlpt> ${RLPT_RM_DECK} $<TARGET_FILE:test_rm>
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(rm_run_ckpt_4 PROPERTIES LABELS mpi FIXTURES_REQUIRED rm_ppo PROCESSORS 4 TIMEOUT 120
  ENVIRONMENT "${RLPT_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "reward model: rm_ppo_ckpt/step_00000002.h5 \\(/critic, [0-9]+ parameters\\).*test_rm --metrics: all checks passed"
  FAIL_REGULAR_EXPRESSION "CHECK failed|CHECK_NEAR failed")

# [reward] command (src/rl/reward_command.h) through `rlpt reward-score`: a Python worker
# matches the exact verifier; crashing, hanging and garbling workers are counted errors
# (reward 0, named, bounded by command_timeout_s); a missing program is refused.
add_test(NAME reward_command
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rl/reward_command.sh $<TARGET_FILE:rlpt>
          ${CMAKE_CURRENT_SOURCE_DIR}/decks/reward_cmd.ini
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reward_command PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}" TIMEOUT 120)
