# tasks.cmake: tests of rng, tokenizer, tasks, verifiers and rewards.
add_unit_test(test_rng SOURCES test_rng.c)
add_unit_test(test_tokenizer SOURCES test_tokenizer.c)
add_unit_test(test_verify_math SOURCES test_verify_math.c)
add_unit_test(test_verify_countdown SOURCES test_verify_countdown.c)
add_unit_test(test_tasks SOURCES test_tasks.c)
