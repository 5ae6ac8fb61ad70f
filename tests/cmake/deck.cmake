# The input deck: parser unit test, one negative test per class of deck error (each must name
# the file and line and exit 2), the MPI broadcast, and inputs/README.md up to date.

add_unit_test(test_config SOURCES test_config.c)
add_executable(test_config_mpi test_config_mpi.c)
target_link_libraries(test_config_mpi PRIVATE rlpt_lib)
target_include_directories(test_config_mpi PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
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

# inputs/README.md is `rlpt deck-help` verbatim.
add_test(NAME deck_help_up_to_date
  COMMAND sh -c "\"$1\" deck-help | diff -u \"$2\" - || { echo 'inputs/README.md is stale: regenerate it with `rlpt deck-help > inputs/README.md` and commit it'; exit 1; }"
          sh $<TARGET_FILE:rlpt> ${CMAKE_SOURCE_DIR}/inputs/README.md)
set_tests_properties(deck_help_up_to_date PROPERTIES LABELS unit)

# Every shipped deck is valid.
file(GLOB RLPT_INPUT_DECKS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/inputs/*.ini)
foreach(deck ${RLPT_INPUT_DECKS})
  get_filename_component(stem ${deck} NAME_WE)
  deck_test(input_${stem} 0 "\\[ranks\\]" check ${deck})
endforeach()
