# Rank roles, communicators and `rlpt plan`: the layout cases under MPI at world
# sizes 1, 2, 4 and 5 (every rank must agree on each verdict), the plan
# arithmetic against hand-computed numbers, and the plan command on the decks.

add_unit_test(test_plan SOURCES test_plan.c)

add_executable(test_roles test_roles.c)
target_link_libraries(test_roles PRIVATE rlpt_lib)
target_include_directories(test_roles PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
foreach(np 1 2 4 5)
  add_mpi_test(NAME test_roles_${np} EXE test_roles NUM_PROCS ${np})
endforeach()

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
