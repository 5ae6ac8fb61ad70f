#!/bin/sh
# run/test_monitoring.sh: short real runs of tests/decks/e2e_tiny.ini that write the
# TensorBoard event files and the Prometheus textfile, for run/tb_check.py and
# run/prom_check.py (tests/run/tests.cmake).
#   run/test_monitoring.sh run RLPT DECK DIR       30 SFT + 4 GRPO steps (KL on), evals every
#                                                  2 steps, samples every 2: DIR/tb, DIR/rlpt.prom,
#                                                  DIR/m.jsonl, DIR/s.jsonl
#   run/test_monitoring.sh restart RLPT DECK DIR   30 SFT + 6 GRPO steps with checkpoints every 2,
#                                                  then the same deck resumed from step 2's
#                                                  checkpoint: steps 3..6 logged twice, in two
#                                                  event files of DIR/tb
# $RLPT_MPIEXEC ("mpiexec -n"; NP is appended) and $RLPT_MPI_FLAGS come from CTest.
set -u
mode=$1 rlpt=$2 deck=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
# run LOG [args...]: rlpt run of the deck on 4 ranks
run() {
  log=$1
  shift
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" sft.steps=30 algo.kl_coef=0.05 \
    eval.every=2 eval.prompts=16 log.metrics_path=m.jsonl log.tensorboard_dir=tb "$@" > "$log" 2>&1 \
    || { tail -20 "$log"; echo "MONITORING_RUN_FAILED: $log"; exit 1; }
}
case $mode in
  run)
    run run.log run.steps=4 log.prometheus_path=rlpt.prom log.samples_path=s.jsonl \
      log.samples_every=2 checkpoint.dir=ck
    ls tb ;;
  restart)
    run first.log run.steps=6 checkpoint.every=2 checkpoint.keep_last=10 checkpoint.dir=ck
    run again.log run.steps=6 checkpoint.every=2 checkpoint.keep_last=10 checkpoint.dir=ck \
      run.restart=ck/step_00000002.h5
    ls tb ;;
  *) echo "usage: $0 run|restart RLPT DECK DIR"; exit 2 ;;
esac
echo MONITORING_RUN_OK
