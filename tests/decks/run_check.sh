#!/bin/sh
# run_check.sh RLPT WANT_RC ARGS...: run `RLPT ARGS...`, pass its output through, and print
# WRONG_EXIT when its exit code is not WANT_RC (the test's FAIL_REGULAR_EXPRESSION).
exe=$1
want=$2
shift 2
"$exe" "$@"
rc=$?
if [ "$rc" -ne "$want" ]; then
  echo "WRONG_EXIT: '$exe $*' exited $rc, expected $want"
  exit 1
fi
exit 0
