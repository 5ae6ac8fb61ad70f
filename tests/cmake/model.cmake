# Transformer core: CPU ops, model forward/backward (golden + finite differences), benchmark.
add_unit_test(test_ops SOURCES test_ops.c)
add_unit_test(test_model_fd SOURCES test_model_fd.c)
add_unit_test(test_model_golden SOURCES test_model_golden.c LABELS unit golden)
