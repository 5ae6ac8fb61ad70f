# The input deck: parser unit test, one negative test per class of deck error (each must name
# the file and line and exit 2), the MPI broadcast, and inputs/README.md up to date.

add_unit_test(test_config SOURCES deck/test_config.c)
# The presets behind [algo] name (src/deck/presets.c).
add_unit_test(test_presets SOURCES deck/test_presets.c)
add_test_program(test_config_mpi deck/test_config_mpi.c)
add_mpi_test(NAME test_config_mpi_3 EXE test_config_mpi NUM_PROCS 3 ARGS
  ${CMAKE_CURRENT_SOURCE_DIR}/decks/good.ini ${CMAKE_CURRENT_SOURCE_DIR}/decks/bad_heads.ini)

set(RLPT_DECKS ${CMAKE_CURRENT_SOURCE_DIR}/decks)

# deck_test(NAME want_rc regex args...): `rlpt args...` must exit want_rc and print regex.
function(deck_test name want regex)
  add_test(NAME deck_${name}
    COMMAND sh ${RLPT_DECKS}/run_check.sh $<TARGET_FILE:rlpt> ${want} ${ARGN}
    WORKING_DIRECTORY ${RLPT_DECKS})
  set_tests_properties(deck_${name} PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "${regex}" FAIL_REGULAR_EXPRESSION "WRONG_EXIT")
endfunction()

deck_test(bad_section 2 "bad_section.ini:4: \\[modle\\]: unknown section.*did you mean \\[model\\]" check bad_section.ini)
deck_test(bad_key 2 "bad_key.ini:5: \\[model\\] dimm: unknown key.*did you mean 'dim'" check bad_key.ini)
deck_test(bad_key_section 2 "bad_key_section.ini:5: \\[sft\\] layers: unknown key.*did you mean \\[model\\] layers" check bad_key_section.ini)
deck_test(bad_dup 2 "bad_dup.ini:4: \\[model\\] dim: duplicate key \\(first set on line 2\\)" check bad_dup.ini)
deck_test(bad_type 2 "bad_type.ini:2: \\[model\\] layers: expected an integer, got 'four'" check bad_type.ini)
deck_test(bad_junk 2 "bad_junk.ini:3: \\[model\\] dim: trailing junk 'x' after the integer 12" check bad_junk.ini)
deck_test(bad_range 2 "bad_range.ini:3: \\[algo\\] group_size: 0 is out of range \\[1, 100000\\] samples" check bad_range.ini)
deck_test(bad_enum 2 "bad_enum.ini:2: \\[run\\] mode: 'sycn' is not one of sync\\|colocate_async\\|separate_async.*did you mean 'sync'" check bad_enum.ini)
deck_test(bad_bool 2 "bad_bool.ini:2: \\[model\\] tie_embeddings: expected a bool.*got 'maybe'" check bad_bool.ini)
deck_test(bad_list 2 "bad_list.ini:3: \\[sft\\] target_band: item 2 of the list .*expected a number, got 'abc'" check bad_list.ini)
deck_test(bad_list_range 2 "bad_list_range.ini:2: \\[sft\\] target_band: item 2 .*1.5 is out of range \\[0, 1\\] fraction" check bad_list_range.ini)
deck_test(bad_line 2 "bad_line.ini:3: unparsable line 'this line is not ini'" check bad_line.ini)
deck_test(bad_header 2 "bad_header.ini:1: unparsable line '\\[model'" check bad_header.ini)
deck_test(bad_heads 2 "bad_heads.ini:4: \\[model\\] heads: model.heads \\(6\\) must be divisible by model.kv_heads \\(4\\)" check bad_heads.ini)
deck_test(bad_eval_k 2 "bad_eval_k.ini:3: \\[eval\\] k: eval.k \\(4\\) must not exceed eval.samples \\(2\\)" check bad_eval_k.ini)
deck_test(bad_outside 2 "bad_outside.ini:1: seed: key outside of any section" check bad_outside.ini)
deck_test(bad_float 2 "bad_float.ini:2: \\[optim\\] lr: expected a finite number, got 'nan'" check bad_float.ini)
deck_test(bad_int_float 2 "bad_int_float.ini:2: \\[model\\] vocab_size: expected an integer or 'auto', got '1e6' \\(write it as 1000000\\)" check bad_int_float.ini)
deck_test(bad_auto 2 "bad_auto.ini:2: \\[ranks\\] train: -1 is out of range \\[1, 1e7\\] ranks \\(or auto\\)" check bad_auto.ini)
deck_test(missing_file 2 "does_not_exist.ini: cannot read the deck: No such file" check does_not_exist.ini)
deck_test(bad_override 2 "override 'algo.group_size=0': \\[algo\\] group_size: 0 is out of range \\[1, 100000\\]" check good.ini algo.group_size=0)
deck_test(bad_override_key 2 "override 'algo.group_sise=4': \\[algo\\] group_sise: unknown key.*did you mean 'group_size'" check good.ini algo.group_sise=4)
deck_test(bad_override_cross 2 "override 'model.kv_heads=3': \\[model\\] kv_heads: model.heads \\(4\\) must be divisible by model.kv_heads \\(3\\)" check good.ini model.kv_heads=3)
deck_test(good 0 "\\[model\\].*kv_heads = 2 +# deck:14.*group_size = 4 +# override" check good.ini algo.group_size=4)
# LoRA (model/lora.h): what it is not built for is refused at deck time, naming the key.
deck_test(lora_targets_bad 2 "\\[model\\] lora_targets: unknown projection 'qq'" check e2e_tiny.ini model.lora_rank=4 model.lora_targets=q,qq)
deck_test(lora_tp 2 "LoRA is built and tested for unsplit models" check e2e_tiny.ini model.lora_rank=4 ranks.train_tp=2)
deck_test(lora_cuda 2 "LoRA is built and tested for the CPU backend" check e2e_tiny.ini model.lora_rank=4 run.device=cuda)
deck_test(lora_zero 2 "LoRA is built and tested for replicated AdamW state" check e2e_tiny.ini model.lora_rank=4 optim.zero=1)
deck_test(lora_ppo 2 "LoRA is built and tested for SFT and the critic-free" check e2e_tiny.ini model.lora_rank=4 algo.name=ppo)
deck_test(lora_async 2 "LoRA is built and tested for run.mode = sync" check e2e_tiny.ini model.lora_rank=4 run.mode=colocate_async ranks.layout=colocated)
deck_test(lora_alpha_unread 2 "\\[model\\] lora_alpha: is read only with LoRA adapters" check e2e_tiny.ini model.lora_alpha=8)
deck_test(lora_good 0 "lora_rank = 4 +# override" check e2e_tiny.ini model.lora_rank=4 model.lora_targets=all)

# inputs/README.md is `rlpt deck-help` verbatim.
add_test(NAME deck_help_up_to_date
  COMMAND sh -c "\"$1\" deck-help | diff -u \"$2\" - || { echo 'inputs/README.md is stale: regenerate it with `rlpt deck-help > inputs/README.md` and commit it'; exit 1; }"
          sh $<TARGET_FILE:rlpt> ${CMAKE_SOURCE_DIR}/inputs/README.md)
set_tests_properties(deck_help_up_to_date PROPERTIES LABELS unit)

# Every shipped deck is valid.
file(GLOB RLPT_INPUT_DECKS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/inputs/*.ini)
# The RLHF pair reads files the other decks' runs write: the preference set (fixture
# pref_data, tests/run) and the reward model (fixture rm_models, tests/rl) stand in.
set(RLPT_INPUT_NEEDS_rm_train data.pref_path=${CMAKE_CURRENT_BINARY_DIR}/pref_arith.jsonl)
set(RLPT_INPUT_FIXTURE_rm_train pref_data)
set(RLPT_INPUT_NEEDS_dpo_arith data.pref_path=${CMAKE_CURRENT_BINARY_DIR}/pref_arith.jsonl)
set(RLPT_INPUT_FIXTURE_dpo_arith pref_data)
set(RLPT_INPUT_NEEDS_rlhf_ppo reward.rm_path=${CMAKE_CURRENT_BINARY_DIR}/rm_tiny_rm.h5)
set(RLPT_INPUT_FIXTURE_rlhf_ppo rm_models)
foreach(deck ${RLPT_INPUT_DECKS})
  get_filename_component(stem ${deck} NAME_WE)
  deck_test(input_${stem} 0 "\\[ranks\\]" check ${deck} ${RLPT_INPUT_NEEDS_${stem}})
  if(RLPT_INPUT_FIXTURE_${stem})
    set_tests_properties(deck_input_${stem} PROPERTIES FIXTURES_REQUIRED ${RLPT_INPUT_FIXTURE_${stem}})
  endif()
endforeach()

# The shipped example decks beyond the quickstart: `rlpt check` must accept
# inputs/countdown.ini (DAPO: dynamic sampling, clip-higher, overlong shaping) and
# inputs/ppo_arith.ini (PPO with a critic), and print the resolved algorithm so
# a preset that silently changed would show up in the output.

function(deck_extra_test name deck regex)
  add_test(NAME decks_extra_${name}
    COMMAND $<TARGET_FILE:rlpt> check ${CMAKE_SOURCE_DIR}/inputs/${deck}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(decks_extra_${name} PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "${regex}")
endfunction()

deck_extra_test(countdown countdown.ini
  "name = dapo.*clip_high = 0.28.*dynamic_sampling = true.*overlong_buffer = 6")
deck_extra_test(ppo_arith ppo_arith.ini
  "name = ppo.*adv_estimator = gae.*whiten_adv = true")

# rlpt check runs the reward's checks too: rm_alpha < 1 without rm_path exits 2 (as rlpt run does).
add_test(NAME deck_check_rm_alpha
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/decks/run_check.sh $<TARGET_FILE:rlpt> 2 check
          ${CMAKE_CURRENT_SOURCE_DIR}/decks/rm_tiny.ini reward.rm_alpha=0.5)
set_tests_properties(deck_check_rm_alpha PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "rlpt: [^\n]*rm_tiny.ini: \\[reward\\] rm_alpha = 0.5 mixes in a reward model, but \\[reward\\] rm_path is empty"
  FAIL_REGULAR_EXPRESSION "WRONG_EXIT")

# `rlpt plan`: the plan arithmetic against hand-computed numbers, and the plan command
# on the decks.
add_unit_test(test_plan SOURCES deck/test_plan.c)
# `rlpt plan --simulate` (deck/simulate.h): each schedule's timeline against one worked out
# by hand, the calibration reader on a small metrics file.
add_unit_test(test_simulate SOURCES deck/test_simulate.c ARGS ${CMAKE_SOURCE_DIR}/tests/data/sim_metrics.jsonl)

# plan_test(NAME WANT_RC REGEX ARGS...): `rlpt plan ARGS...` (run in the source
# tree) must exit WANT_RC and print REGEX.
function(plan_test name want regex)
  add_test(NAME plan_${name}
    COMMAND sh -c "\"$0\" plan \"$@\"; rc=$?; [ $rc -eq ${want} ] || echo \"PLAN_WRONG_EXIT $rc, want ${want}\""
            $<TARGET_FILE:rlpt> ${ARGN}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(plan_${name} PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
    PASS_REGULAR_EXPRESSION "${regex}" FAIL_REGULAR_EXPRESSION "PLAN_WRONG_EXIT")
endfunction()

plan_test(quickstart_4 0 "rank +0 +controller.*rank +3 +train.*plan: OK"
  inputs/quickstart.ini --world 4)
plan_test(quickstart_3 2 "layout needs 4 ranks = controller 1 \\+ reward 1 \\+ rollout 1 \\+ train 1; the job has 3 \\(mpirun -np 3\\)"
  inputs/quickstart.ini --world 3)
plan_test(llama70b_1000 0 "ranks 8-743 +rollout \\(736 = 92 instances x rollout_tp 8\\).*70553706496 parameters.*plan: OK \\(every role fits device_memory_gb\\)"
  inputs/llama70b_1000gpu.ini --world 1000)
plan_test(llama70b_999 2 "the layout needs 1000 ranks.*the job has 999"
  inputs/llama70b_1000gpu.ini --world 999)
plan_test(train_oom 2 "does not fit:.train rank needs [0-9.]+ GB .* > \\[ranks\\] device_memory_gb = 40; lower \\[ranks\\] micro_batch_seqs \\(4\\)"
  tests/decks/plan_train_oom.ini --world 1000)
plan_test(simulate 0 "simulate \\(150 RL steps; calibration tests/data/sim_metrics.jsonl: 2 steps.*sync +0.2778 steps/s.*separate_async \\(D = 1\\) +0.3836 steps/s.*free-running \\(buffer 1\\)"
  inputs/quickstart.ini --world 4 --simulate tests/data/sim_metrics.jsonl)
plan_test(simulate_split 0 "at half the threads: 2 steps.*colocate_async +0.3"
  inputs/quickstart.ini --world 4 --simulate tests/data/sim_metrics.jsonl --split tests/data/sim_metrics.jsonl)
plan_test(split_no_simulate 2 "--split needs --simulate"
  inputs/quickstart.ini --world 4 --split tests/data/sim_metrics.jsonl)
plan_test(simulate_deck_70b 0 "costs from deck: 256 steps.*separate_async \\(D = 1\\) +0.01[0-9]* steps/s +4[0-9.]* steps/h +1\\.[5-7][0-9]x sync"
  inputs/llama70b_1000gpu.ini --world 1000 --simulate deck)
plan_test(simulate_deck_unset 2 "\\[simulate\\] gen_tokens_per_s is 0"
  inputs/quickstart.ini --world 4 --simulate deck)
plan_test(simulate_no_world 2 "--simulate needs --world N"
  inputs/quickstart.ini --simulate tests/data/sim_metrics.jsonl)
plan_test(override 2 "train_tp = 3 must divide \\[model\\] heads = 4"
  inputs/quickstart.ini --world 6 ranks.train_tp=3 ranks.train=auto)

# The real thing: 4 ranks under mpirun print the live map (hosts) and pass.
add_mpi_test(NAME plan_mpi_quickstart_4 EXE rlpt NUM_PROCS 4
  ARGS plan ${CMAKE_SOURCE_DIR}/inputs/quickstart.ini)
set_tests_properties(plan_mpi_quickstart_4 PROPERTIES
  PASS_REGULAR_EXPRESSION "plan: OK.*rank +3 +[^ ]+ +train +train dp 0 tp 0 pp 0")
add_mpi_test(NAME plan_mpi_quickstart_3 EXE rlpt NUM_PROCS 3
  ARGS plan ${CMAKE_SOURCE_DIR}/inputs/quickstart.ini)
set_tests_properties(plan_mpi_quickstart_3 PROPERTIES
  PASS_REGULAR_EXPRESSION "the job has 3 \\(mpirun -np 3\\)")

# Colocated on 2 ranks (TP 2 train and rollout): accepted; the 256 MiB KV pool
# does not fit a 0.02 GB device and plan says which key to lower.
plan_test(colocated_2 0 "ranks 0-1 +2 workers: rollout\\+reward\\+train \\(rank 0 also runs the controller\\).*plan: OK"
  inputs/quickstart.ini --world 2 ranks.layout=colocated ranks.controller=auto ranks.reward=auto
  ranks.rollout=auto ranks.train=auto ranks.train_tp=2 ranks.rollout_tp=2)
plan_test(colocated_2_pool 2 "colocated worker rank: weights 1.5 MB \\+ \\[rollout\\] kv_cache_mb = 256 MiB \\+ train = 279.8 MB > \\[ranks\\] device_memory_gb = 0.02; lower kv_cache_mb"
  inputs/quickstart.ini --world 2 ranks.layout=colocated ranks.controller=auto ranks.reward=auto
  ranks.rollout=auto ranks.train=auto ranks.train_tp=2 ranks.rollout_tp=2 ranks.device_memory_gb=0.02)

# Keys of the code sandbox and of [reward] command are refused where nothing reads them.
deck_test(sandbox_without_code 2 "\\[sandbox\\] timeout_s: \\[sandbox\\] runs the code task's programs"
  check good.ini sandbox.timeout_s=3)
deck_test(code_score_without_code 2 "\\[data\\] code_score: needs \\[data\\] verifier = code"
  check good.ini data.code_score=all)
deck_test(command_keys_without_command 2 "\\[reward\\] command_workers: applies to \\[reward\\] command workers"
  check good.ini reward.command_workers=4)
