# Hugging Face safetensors import/export (io/safetensors.h, io/hf_config.c) and
# `rlpt convert` between formats. Golden directory: tests/ref/st_golden, written
# by the reference `safetensors` library (tests/ref/st_ref.py).
add_unit_test(test_safetensors SOURCES test_safetensors.c LABELS unit golden)
add_unit_test(test_safetensors_fuzz SOURCES test_safetensors_fuzz.c)
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
