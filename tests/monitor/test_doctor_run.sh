#!/bin/sh
# monitor/test_doctor_run.sh: rlpt doctor on real runs of the e2e deck (60 SFT + 20 GRPO
# steps on 4 ranks, as tests/run/tests.cmake runs it):
#   the deck as it is          healthy: exit 0, no finding in --json
#   optim.lr=1e-2 algo.kl_coef=0.001
#                              the KL finding, on the console as the run goes and from
#                              rlpt doctor afterwards (exit 1); the deck sets kl_coef = 0,
#                              so KL is logged only with a reference (the default 0.001)
#   no checkpoint, a console log beside the metrics
#                              the deck (and its band) from the log
#   monitor/test_doctor_run.sh RLPT CHECKER DECK OUT_DIR   (OUT_DIR/healthy stays for the report test)
# The launcher comes from $RLPT_MPIEXEC and $RLPT_MPI_FLAGS (tests/run/tests.cmake).
set -u
rlpt=$1 checker=$2 deck=$3 out=$4
rm -rf "$out"
mkdir -p "$out/healthy" "$out/lr" "$out/console" || exit 1
run() {
  dir=$1
  shift
  # shellcheck disable=SC2086
  (cd "$dir" && $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" sft.steps=60 run.steps=20 "$@" \
    > run.log 2>&1) || { echo "RUN_FAILED in $dir"; tail -20 "$dir/run.log"; exit 1; }
}
run "$out/healthy"
"$rlpt" doctor "$out/healthy"
echo "healthy exit $?"
"$rlpt" doctor "$out/healthy" --json > "$out/healthy.json"
"$checker" json "$out/healthy.json" none
run "$out/lr" optim.lr=1e-2 algo.kl_coef=0.001
grep '^doctor: step' "$out/lr/run.log"
"$rlpt" doctor "$out/lr"
"$rlpt" doctor "$out/lr" --json > "$out/lr.json"
echo "lr exit $?"
"$checker" json-has "$out/lr.json" kl_explosion
cp "$out/healthy/metrics.jsonl" "$out/healthy/run.log" "$out/console/"
"$rlpt" doctor "$out/console" | grep "target_band"
