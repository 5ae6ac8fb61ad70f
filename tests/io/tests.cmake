# HDF5 checkpoints: the layer on one rank, collective writes/reads across rank
# counts, corruption and mismatch messages (API and `rlpt convert`), h5py
# readability, and the write/read throughput benchmark (label bench).
add_unit_test(test_ckpt SOURCES io/test_ckpt.c)

# Written by 2 ranks, read back on 3 and on 1 (the file is layout-independent).
add_test_program(test_ckpt_mpi io/test_ckpt_mpi.c)
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
add_unit_test(test_ckpt_corrupt SOURCES io/test_ckpt_corrupt.c)
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
add_test_program(bench_ckpt bench/bench_ckpt.c)
add_mpi_test(NAME bench_ckpt EXE bench_ckpt NUM_PROCS 2 LABELS bench)
set_tests_properties(bench_ckpt PROPERTIES TIMEOUT 1800)

# Real models: GGUF reader and dequantization, byte-level BPE, chat templates,
# SmolLM2-135M-Instruct against PyTorch. Tests labelled `model` need the GGUF
# (jobscripts/fetch-smollm2.sh or RLPT_SMOLLM2_GGUF) and skip (77) without it.
add_unit_test(test_gguf SOURCES io/test_gguf.c LABELS unit golden)
add_unit_test(test_gguf_fuzz SOURCES io/test_gguf_fuzz.c)

# Hugging Face safetensors import/export (io/safetensors.h, io/hf_config.c) and
# `rlpt convert` between formats. Golden directory: tests/ref/st_golden, written
# by the reference `safetensors` library (tests/ref/st_ref.py).
add_unit_test(test_safetensors SOURCES io/test_safetensors.c LABELS unit golden)
add_unit_test(test_safetensors_fuzz SOURCES io/test_safetensors_fuzz.c)
# rlpt convert: model.h5 -> HF dir (fp32) -> model.h5 scores identically; a bf16
# export converts back; an unrecognised input file exits 2 with one message.
add_test(NAME st_cli_convert COMMAND sh -c
  "set -e; rm -rf st_cli && mkdir st_cli && cd st_cli && $<TARGET_FILE:rlpt> init ${CMAKE_SOURCE_DIR}/tests/decks/e2e_tiny.ini --out m.h5 model.qkv_bias=true >/dev/null && $<TARGET_FILE:rlpt> convert m.h5 hf && $<TARGET_FILE:rlpt> convert hf back.h5 && $<TARGET_FILE:rlpt> convert m.h5 hf16 --dtype bf16 --shard-mb 1 && $<TARGET_FILE:rlpt> convert hf16 back16.h5 && printf '{\"tokens\": [1, 2, 3, 4]}\\n' > in.jsonl && $<TARGET_FILE:rlpt> score --model m.h5 --input in.jsonl --output a.jsonl && $<TARGET_FILE:rlpt> score --model back.h5 --input in.jsonl --output b.jsonl && cmp a.jsonl b.jsonl && echo same-scores")
set_tests_properties(st_cli_convert PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "same-scores")
add_test(NAME st_cli_convert_bad COMMAND sh -c
  "printf 'not a model' > st_bad.bin; $<TARGET_FILE:rlpt> convert st_bad.bin st_bad_out.h5; echo \"exit $?\"; test ! -e st_bad_out.h5 && echo no-output")
set_tests_properties(st_cli_convert_bad PROPERTIES LABELS unit ENVIRONMENT "${RLPT_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "st_bad.bin: not an HDF5 model.*exit 2.*no-output")
set_tests_properties(st_cli_convert PROPERTIES FIXTURES_SETUP st_cli_files)
# The reference `safetensors` library reads what rlpt wrote (F32 exactly, BF16 equal to
# torch's rounding). Skips (77) when the package is not importable; see tests/ref/st_ref.py
# for the pip --target install and PYTHONPATH.
add_test(NAME st_ref_check COMMAND sh -c
  "/usr/bin/python3 -c 'import safetensors, h5py' 2>/dev/null || { echo 'safetensors not importable: skipped'; exit 77; }; cd st_cli && /usr/bin/python3 \"$0\" check hf m.h5 && /usr/bin/python3 \"$0\" check hf16 m.h5"
  ${CMAKE_CURRENT_SOURCE_DIR}/ref/st_ref.py)
set_tests_properties(st_ref_check PROPERTIES LABELS golden ENVIRONMENT "${RLPT_TEST_ENV}"
  FIXTURES_REQUIRED st_cli_files SKIP_RETURN_CODE 77)

add_unit_test(test_jsonl SOURCES io/test_jsonl.c)

# The fuzz-style tests under AddressSanitizer + UBSan: hostile files must never read out of bounds.
if(TARGET rlpt_lib_asan)
  foreach(t test_gguf_fuzz test_safetensors_fuzz)
    add_executable(${t}_asan io/${t}.c)
    target_link_libraries(${t}_asan PRIVATE rlpt_lib_asan)
    target_include_directories(${t}_asan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    add_test(NAME ${t}_asan COMMAND ${t}_asan WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    set_tests_properties(${t}_asan PROPERTIES LABELS "unit;asan"
      ENVIRONMENT "${RLPT_TEST_ENV};ASAN_OPTIONS=abort_on_error=1:detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1"
      SKIP_RETURN_CODE ${RLPT_SKIP_CODE})
  endforeach()
endif()

# TensorBoard event files (io/tb_events.h): CRC-32C against RFC 3720's vectors, TFRecord
# framing and a whole event file byte for byte against TensorBoard's own Python writer,
# names that never overwrite, an uncreatable directory's message.
add_unit_test(test_tb_events SOURCES io/test_tb_events.c)
