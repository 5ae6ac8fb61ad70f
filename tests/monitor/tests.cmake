# monitor/: watching a run. test_doctor writes a synthetic run per finding kind (and healthy
# ones) with the run's own JSONL writer, checks the doctor finds exactly that kind, that the
# running job's watcher finds it at the same step, the reader's restart and FILE:LINE rules,
# the SVG gaps and the playbook's deck keys; it leaves the files for the CLI tests below.
add_unit_test(test_doctor SOURCES monitor/test_doctor.c)
set_tests_properties(test_doctor PROPERTIES FIXTURES_SETUP monitor_files)

# rlpt doctor on those files: exit 0 and "healthy" on the healthy run; --json parses and
# holds exactly the scenario's finding, exit 1 (doctor_json_<scenario>).
set(RLPT_DOCTOR_DATA ${CMAKE_CURRENT_BINARY_DIR}/monitor_data)
add_test(NAME doctor_cli_healthy COMMAND sh -c "\"$0\" doctor \"$1\"/monitor_healthy.jsonl; echo \"exit $?\""
  $<TARGET_FILE:rlpt> ${RLPT_DOCTOR_DATA})
set_tests_properties(doctor_cli_healthy PROPERTIES LABELS unit FIXTURES_REQUIRED monitor_files
  PASS_REGULAR_EXPRESSION "doctor: healthy: none of the [0-9]+ checks found anything\nexit 0\n")
foreach(pair reward_hacking:reward_hacking kl:kl_explosion entropy:entropy_collapse
        throughput:throughput_decline nonfinite:nonfinite drop:drop_ratio lag:lag
        clip_high:clip_high clip_low:clip_low logprob:logprob_mismatch loss_zero:loss_zero
        too_easy:task_too_easy too_hard:task_too_hard sft_band:sft_band healthy_on_policy:none)
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 scen)
  list(GET pair 1 kind)
  set(want_rc 1)
  if(kind STREQUAL "none")
    set(want_rc 0)
  endif()
  add_test(NAME doctor_json_${scen} COMMAND sh -c
    "\"$0\" doctor \"$2\"/monitor_${scen}.jsonl --json > \"$2\"/doctor_${scen}.json; echo \"exit $?\"; \"$1\" json \"$2\"/doctor_${scen}.json ${kind}"
    $<TARGET_FILE:rlpt> $<TARGET_FILE:test_doctor> ${RLPT_DOCTOR_DATA})
  set_tests_properties(doctor_json_${scen} PROPERTIES LABELS unit FIXTURES_REQUIRED monitor_files
    PASS_REGULAR_EXPRESSION "^exit ${want_rc}\ntest_doctor json: all checks passed")
endforeach()

# Bad input: one message naming the file (and the line), exit 2; the same from rlpt report.
function(doctor_bad_test name regex)
  add_test(NAME doctor_bad_${name} COMMAND sh -c "cd \"$1\" && shift && \"$0\" \"$@\"; echo \"exit $?\""
    $<TARGET_FILE:rlpt> ${RLPT_DOCTOR_DATA} ${ARGN})
  set_tests_properties(doctor_bad_${name} PROPERTIES LABELS unit FIXTURES_REQUIRED monitor_files
    PASS_REGULAR_EXPRESSION "^${regex}\nexit 2\n$")
endfunction()
doctor_bad_test(json "rlpt: doctor: monitor_bad_json.jsonl:3: invalid JSON at column [0-9]+[^\n]*"
  doctor monitor_bad_json.jsonl)
doctor_bad_test(type "rlpt: doctor: monitor_bad_type.jsonl:2: \"kl\" is a string, expected a number or null"
  doctor monitor_bad_type.jsonl)
doctor_bad_test(phase "rlpt: doctor: monitor_bad_phase.jsonl:1: \"phase\" is missing, expected \"sft\" or \"rl\""
  doctor monitor_bad_phase.jsonl --json)
doctor_bad_test(empty "rlpt: doctor: monitor_empty.jsonl: no metrics lines \\(an empty file\\)"
  doctor monitor_empty.jsonl)
doctor_bad_test(missing "rlpt: doctor: no_such_run: No such file or directory" doctor no_such_run)
doctor_bad_test(no_metrics "rlpt: doctor: \\.: no metrics file \\./metrics\\.jsonl \\(No such file or directory. the path is the default \\[log\\] metrics_path\\)"
  doctor .)
doctor_bad_test(band "rlpt: doctor: --band '0.7,0.2': expected LO,HI with 0 <= LO <= HI <= 1"
  doctor monitor_healthy.jsonl --band 0.7,0.2)
doctor_bad_test(report "rlpt: report: monitor_bad_type.jsonl:2: \"kl\" is a string, expected a number or null"
  report monitor_bad_type.jsonl --out bad.html)

# Real runs of the e2e deck (label e2e; monitor/test_doctor_run.sh): healthy as it is, the
# KL finding with optim.lr=1e-2 and a reference (algo.kl_coef=0.001: the deck has none), on
# the console and from rlpt doctor, and the deck read from a console log. The healthy run
# stays in monitor_runs/healthy for the report test.
add_test(NAME doctor_e2e_runs COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/monitor/test_doctor_run.sh
  $<TARGET_FILE:rlpt> $<TARGET_FILE:test_doctor> ${RLPT_E2E_DECK} ${CMAKE_CURRENT_BINARY_DIR}/monitor_runs)
set_tests_properties(doctor_e2e_runs PROPERTIES LABELS e2e ENVIRONMENT "${RLPT_E2E_ENV}" PROCESSORS 4
  TIMEOUT 170 FIXTURES_SETUP monitor_runs FAIL_REGULAR_EXPRESSION "RUN_FAILED"
  PASS_REGULAR_EXPRESSION "doctor: healthy: [^\n]*\nhealthy exit 0\ntest_doctor json: all checks passed\ndoctor: step [0-9]+: KL explosion: kl [^\n]*\n.*\\[kl_explosion\\] KL explosion[^\n]*\n.*lr exit 1\ntest_doctor json: all checks passed\ndoctor: post-SFT greedy pass@1 [0-9.]+ \\(eval at step 0\\)\\; band \\[0, 1\\], the deck's \\[sft\\] target_band \\([^\n]*console/run.log\\)")

# rlpt report in headless Chromium (monitor/test_report.sh, monitor/check_report.py): every
# plot of the real runs' reports has data, each file is under 1 MB with no external
# reference, the KL run's findings are in the page; the checker finds the 8 RL plots of an
# SFT-only file empty (so it can fail). Skips only without Chromium.
add_test(NAME report_chromium COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/monitor/test_report.sh
  $<TARGET_FILE:rlpt> ${CMAKE_CURRENT_BINARY_DIR}/monitor_runs ${RLPT_DOCTOR_DATA}/monitor_sft_only.jsonl
  ${CMAKE_CURRENT_BINARY_DIR}/monitor_report)
set_tests_properties(report_chromium PROPERTIES LABELS e2e FIXTURES_REQUIRED "monitor_runs;monitor_files"
  SKIP_RETURN_CODE 77 TIMEOUT 300 FAIL_REGULAR_EXPRESSION "REPORT_FAILED|REPORT_FILE_BAD|Traceback"
  PASS_REGULAR_EXPRESSION "0 of 10 plots empty\nhealthy check exit 0\n.*0 of 10 plots empty\nlr check exit 0\n<b>KL explosion</b> \\[kl_explosion\\]\ndeck references: [1-9].*EMPTY.*8 of 10 plots empty\nsft-only check exit 1\n")
