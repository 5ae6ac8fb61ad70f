#!/bin/sh
# monitor/test_report.sh: rlpt report rendered in headless Chromium (monitor/check_report.py):
#   the healthy e2e run (monitor_runs/healthy)   every plot has data, the file is under 1 MB
#                                                and references nothing external
#   the KL run (monitor_runs/lr)                 the same, and the findings are in the page
#   an SFT-only metrics file                     the checker must find the RL plots empty
# Skips (77) only when Chromium is missing.
#   monitor/test_report.sh RLPT RUNS_DIR SFT_ONLY.jsonl WORK_DIR
set -u
rlpt=$1 runs=$2 sft_only=$3 work=$4
chromium=$(command -v chromium || command -v chromium-browser) || { echo "chromium not found: skipped"; exit 77; }
here=$(dirname "$0")
rm -rf "$work"
mkdir -p "$work" || exit 1
"$rlpt" report "$runs/healthy" --out "$work/healthy.html" || { echo "REPORT_FAILED"; exit 1; }
/usr/bin/python3 "$here/check_report.py" "$chromium" "$work/healthy.html" 10 "$work"
echo "healthy check exit $?"
"$rlpt" report "$runs/lr" --out "$work/lr.html" || { echo "REPORT_FAILED"; exit 1; }
/usr/bin/python3 "$here/check_report.py" "$chromium" "$work/lr.html" 10 "$work"
echo "lr check exit $?"
grep -o "<b>KL explosion</b> \[kl_explosion\]" "$work/lr.html"
grep -c "checkpoints/step_00000020.h5" "$work/lr.html" | sed 's/^/deck references: /'
"$rlpt" report "$sft_only" --out "$work/sft_only.html" || { echo "REPORT_FAILED"; exit 1; }
/usr/bin/python3 "$here/check_report.py" "$chromium" "$work/sft_only.html" 10 "$work"
echo "sft-only check exit $?"
