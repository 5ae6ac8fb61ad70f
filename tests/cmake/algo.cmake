# Optimizer and RL algorithm math (src/optim.c, src/algo*.c).
add_unit_test(test_optim SOURCES test_optim.c LABELS unit golden)
add_unit_test(test_algo SOURCES test_algo.c)
add_unit_test(test_algo_golden SOURCES test_algo_golden.c LABELS unit golden)
