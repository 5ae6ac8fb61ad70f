# HDF5 checkpoints: the layer on one rank, collective writes/reads across rank
# counts, corruption and mismatch messages (API and `rlpt convert`), h5py
# readability, and the write/read throughput benchmark (label bench).
add_unit_test(test_ckpt SOURCES test_ckpt.c)

# Written by 2 ranks, read back on 3 and on 1 (the file is layout-independent).
add_executable(test_ckpt_mpi test_ckpt_mpi.c)
target_link_libraries(test_ckpt_mpi PRIVATE rlpt_lib)
target_include_directories(test_ckpt_mpi PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_mpi_test(NAME test_ckpt_mpi_write_2 EXE test_ckpt_mpi NUM_PROCS 2 ARGS write ckpt_mpi)
add_mpi_test(NAME test_ckpt_mpi_read_3 EXE test_ckpt_mpi NUM_PROCS 3 ARGS read ckpt_mpi)
add_mpi_test(NAME test_ckpt_mpi_write_3 EXE test_ckpt_mpi NUM_PROCS 3 ARGS write ckpt_mpi3)
add_test(NAME test_ckpt_mpi_read_1 COMMAND test_ckpt_mpi read ckpt_mpi
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(test_ckpt_mpi_write_2 PROPERTIES FIXTURES_SETUP ckpt_mpi)
set_tests_properties(test_ckpt_mpi_read_3 PROPERTIES FIXTURES_REQUIRED ckpt_mpi)
set_tests_properties(test_ckpt_mpi_read_1 PROPERTIES FIXTURES_REQUIRED ckpt_mpi LABELS "unit;mpi"
  ENVIRONMENT "${RLPT_TEST_ENV}")

# Corrupt, truncated, incomplete and mismatched files: a message naming the file
# and dataset, code 2. It leaves ckpt_good.h5 and ckpt_flipped.h5 for the CLI tests.
add_unit_test(test_ckpt_corrupt SOURCES test_ckpt_corrupt.c)
set_tests_properties(test_ckpt_corrupt PROPERTIES FIXTURES_SETUP ckpt_files)

# rlpt convert: a good checkpoint becomes a model file that `rlpt score` reads ...
add_test(NAME ckpt_cli_convert COMMAND sh -c
  "rm -f ckpt_conv.h5 && $<TARGET_FILE:rlpt> convert ckpt_good.h5 --out ckpt_conv.h5 && printf '{\"tokens\": [1, 2, 3]}\\n' > ckpt_conv_in.jsonl && $<TARGET_FILE:rlpt> score --model ckpt_conv.h5 --input ckpt_conv_in.jsonl --output ckpt_conv_out.jsonl && cat ckpt_conv_out.jsonl"
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(ckpt_cli_convert PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  FIXTURES_REQUIRED ckpt_files
  PASS_REGULAR_EXPRESSION "wrote ckpt_conv.h5 from ckpt_good.h5 \\(step 42.*\\{\"logprobs\": \\[-[0-9.]+, -[0-9.]+\\]")
# ... and a corrupt one exits 2 naming the file and dataset, with no output file.
add_test(NAME ckpt_cli_convert_corrupt COMMAND sh -c
  "rm -f ckpt_conv_bad.h5; $<TARGET_FILE:rlpt> convert ckpt_flipped.h5 --out ckpt_conv_bad.h5; echo \"exit $?\"; test ! -e ckpt_conv_bad.h5 && echo no-output"
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(ckpt_cli_convert_corrupt PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  FIXTURES_REQUIRED ckpt_files
  PASS_REGULAR_EXPRESSION "ckpt_flipped.h5: dataset /model/model.layers.0.mlp.down_proj.weight: crc32 mismatch[^\n]*\nexit 2\nno-output")

# h5py finds every tensor under its HF name with its shape and the zlib CRC (skips without h5py).
add_test(NAME ckpt_h5py COMMAND sh -c
  "/usr/bin/python3 -c 'import h5py' 2>/dev/null || { echo 'h5py not available: skipped'; exit 77; }; /usr/bin/python3 \"$0\" ckpt_good.h5"
  ${CMAKE_CURRENT_SOURCE_DIR}/ref/ckpt_h5py_check.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(ckpt_h5py PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  FIXTURES_REQUIRED ckpt_files SKIP_RETURN_CODE 77)

# Write/read MB/s for the SmolLM2-135M shape with Adam state, against fwrite+fsync.
add_executable(bench_ckpt bench/bench_ckpt.c)
target_link_libraries(bench_ckpt PRIVATE rlpt_lib)
add_mpi_test(NAME bench_ckpt EXE bench_ckpt NUM_PROCS 2 LABELS bench)
set_tests_properties(bench_ckpt PROPERTIES TIMEOUT 1800)
