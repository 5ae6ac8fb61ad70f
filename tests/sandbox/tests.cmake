# sandbox/: hostile programs contained (bubblewrap; skips where the machine cannot isolate).
add_unit_test(test_sandbox SOURCES sandbox/test_sandbox.c)
set_tests_properties(test_sandbox PROPERTIES TIMEOUT 60)
