# sandbox/: hostile programs contained (bubblewrap; skips where the machine cannot isolate).
add_unit_test(test_sandbox SOURCES sandbox/test_sandbox.c)
set_tests_properties(test_sandbox PROPERTIES TIMEOUT 60)
# Executions per second by pool size and isolation (label bench: figures only; README).
add_test_program(bench_sandbox bench/bench_sandbox.c)
add_test(NAME bench_sandbox COMMAND bench_sandbox 64)
set_tests_properties(bench_sandbox PROPERTIES LABELS bench TIMEOUT 600)
add_unit_test(test_sandbox_modes SOURCES sandbox/test_sandbox_modes.c)
set_tests_properties(test_sandbox_modes PROPERTIES TIMEOUT 30 PASS_REGULAR_EXPRESSION
  "WARNING: \\[sandbox\\] isolation = rlimits_only: model-written code runs WITHOUT namespaces.*test_sandbox_modes: all checks passed")
