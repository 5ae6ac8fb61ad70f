#!/bin/sh
# run/test_restart.sh: checkpoint restarts of `rlpt run` (tests/run/tests.cmake).
#   run/test_restart.sh MODE RLPT CMP DECK [section.key=value ...]
# $RLPT_MPIEXEC ("mpiexec -n" + NP is appended) and $RLPT_MPI_FLAGS come from CTest;
# $RESTART_NP (default 4) sets the ranks of the exact runs, the overrides the layout.
# Modes:
#   exact    4 ranks: [run] steps straight vs stop_after = 3, then --restart latest:
#            identical metrics JSONL but wall times (test_restart_cmp exact)
#   boundary SIGUSR1 after the last SFT step, during the (long) post-SFT eval: checkpoint at
#            the SFT -> RL boundary (step 0), exit 0; the restart's metrics equal the
#            straight run's (exact)
#   sft      SIGUSR1 during a long SFT phase: the job stops at the next SFT step with a
#            checkpoint of it (exit 0, no post-SFT eval); the restart continues SFT at the
#            following step and the whole file equals the straight run's (exact)
#   sft_every [sft] checkpoint_every = 10 on an SFT-only run of 25 SFT steps: the last
#            checkpoint holds SFT step 20; a restart from it with RL steps continues SFT
#            at 21 and the whole file equals a straight run's (exact)
#   sft_rejection as sft_every with [sft] source = rejection: the restart from inside SFT is
#            refused (exit 2, one message: the round's kept samples are not checkpointed)
#   layout   save with 1 train rank (4 ranks), resume with train_dp = 2 (5 ranks):
#            every field within rtol 1e-4 + atol 1e-6 of the straight run
#   switch   as exact, but the straight run and the first half add the overrides in
#            $RESTART_FIRST and the restart those in $RESTART_THEN (e.g. optim.zero=1 then
#            optim.zero=0): every field within rtol 1e-4 + atol 1e-6 of the straight run
#   preempt  SIGUSR1 to mpirun while RL steps run: exit 0, the stop message, `latest`;
#            the restart continues at the next step with no step logged twice
#   kill     kill -9 of the whole job while a checkpoint is being written (its .tmp
#            exists): `latest` still names a complete checkpoint and a restart works
#   free_kill the free-running async schedule (pass its overrides), 16 RL steps: kill -9
#            while the train rank stalls at batch 11 (RLPT_TEST_STALL), the checkpoint of
#            step 8 holding the scored groups the job had generated, untrained (batch 9, or 9-10);
#            the restart trains each batch once, the restored ones with the first run's
#            responses (taken from the checkpoint, not regenerated), every batch with the
#            straight run's prompts
#            (run/free_restart_check.py)
#   mismatch a deck whose model differs from the checkpoint's: exit 2 naming the field
#   fallback `latest` names a damaged file: warning, the newest valid one is used
#   requeue  jobscripts/slurm/requeue.sbatch with stand-in srun/scontrol: signal, requeue, resume
#   double   two SIGUSR1 during a long post-SFT eval: immediate non-zero exit, no
#            checkpoint; `latest` is intact
set -u
mode=$1 rlpt=$2 cmp=$3 deck=$4
shift 4
np_=${RESTART_NP:-4}  # ranks of the exact / boundary / layout runs (before the layout change)
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_restart
fail() { echo "RESTART_TEST_FAILED: $*"; for f in *.log; do echo "== $f"; tail -15 "$f"; done; exit 1; }
# run NP LOG [args...]: rlpt run of the deck under mpirun, output to LOG; returns its status
run() {
  np=$1 log=$2
  shift 2
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC "$np" $RLPT_MPI_FLAGS "$rlpt" run "$deck" "$@" > "$log" 2>&1
}
# killjob PID: kill -9 mpirun PID and its ranks (Open MPI puts each rank in a process group
# of its own, so they are found as its children), then reap it
killjob() { kill -9 $(ps -o pid= --ppid "$1") "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# count PATTERN FILE: lines of FILE matching PATTERN (0 when FILE does not exist yet)
count() { c=$(grep -c "$1" "$2" 2>/dev/null); echo "${c:-0}"; }
# steps FILE: the RL step numbers of the training lines of a metrics file, in order
steps() { grep '"phase":"rl"' "$1" | grep -v '"eval_pass@1"' | sed 's/^{"step":\([0-9]*\),.*/\1/' | tr '\n' ' '; }

case $mode in
exact)
  run "$np_" full.log log.metrics_path=full.jsonl checkpoint.dir=ckA "$@" || fail "straight run exited $?"
  run "$np_" half1.log log.metrics_path=part.jsonl checkpoint.dir=ckB run.stop_after=3 "$@" || fail "first half exited $?"
  grep -q "stop_after after RL step 3: checkpoint ckB/step_00000003.h5 written" half1.log || fail "no stop message"
  run "$np_" half2.log log.metrics_path=part.jsonl checkpoint.dir=ckB --restart latest "$@" || fail "restart exited $?"
  grep "^restart:" half2.log
  grep -q "continuing with RL step 4 of" half2.log || fail "restart did not say what it restored"
  "$cmp" full.jsonl part.jsonl exact
  ;;
boundary)
  # SIGUSR1 once the last SFT step is logged, while the post-SFT eval (100000 greedy prompts)
  # runs: the job finishes the eval, checkpoints at the SFT -> RL boundary (step 0) and
  # exits 0; the restart starts RL from it, and the whole file equals the straight run's.
  long="sft.eval_prompts=100000"
  run "$np_" full.log log.metrics_path=full.jsonl checkpoint.dir=ckA $long "$@" || fail "straight run exited $?"
  S=$(count '"phase":"sft"' full.jsonl)
  S=$((S - 1))  # the post-SFT eval line is an sft line too
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" log.metrics_path=part.jsonl checkpoint.dir=ckB \
    $long "$@" > half1.log 2>&1 &
  pid=$!
  n=0
  while [ "$(count '"phase":"sft"' part.jsonl)" -lt "$S" ] && [ $n -lt 1200 ]; do
    sleep 0.05; n=$((n + 1))
  done
  kill -USR1 $pid
  wait $pid || fail "first half exited $?"
  grep "SIGUSR1 after SFT (boundary), RL step 0" half1.log || fail "no stop at the SFT -> RL boundary"
  run "$np_" half2.log log.metrics_path=part.jsonl checkpoint.dir=ckB --restart latest $long "$@" ||
    fail "restart exited $?"
  grep "^restart:" half2.log
  grep -q "phase sft done" half2.log || fail "restart did not resume at the boundary"
  "$cmp" full.jsonl part.jsonl exact
  ;;
sft)
  # SIGUSR1 while a long SFT phase runs: the job stops at the next SFT step, checkpoints it
  # (step_00000000.h5: RL step 0, SFT step K) and exits 0 without the post-SFT eval; the
  # restart continues SFT at step K + 1 and the whole file equals the straight run's.
  S=400
  run "$np_" full.log log.metrics_path=full.jsonl checkpoint.dir=ckA sft.steps=$S "$@" ||
    fail "straight run exited $?"
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" log.metrics_path=part.jsonl checkpoint.dir=ckB \
    sft.steps=$S "$@" > half1.log 2>&1 &
  pid=$!
  n=0
  while [ "$(count '"phase":"sft"' part.jsonl)" -lt 3 ] && [ $n -lt 600 ]; do
    sleep 0.02; n=$((n + 1))
  done
  kill -USR1 $pid
  wait $pid || fail "first half exited $?"
  grep "rlpt: run: SIGUSR1 after SFT step" half1.log || fail "no stop message naming the SFT step"
  k=$(sed -n 's/.*SIGUSR1 after SFT step \([0-9]*\) of .*/\1/p' half1.log)
  [ -n "$k" ] && [ "$k" -lt $S ] || fail "SFT was not stopped early (step '$k' of $S)"
  [ "$(count '"phase":"sft"' part.jsonl)" -eq "$k" ] || fail "part.jsonl has not $k SFT lines"
  [ "$(cat ckB/latest)" = step_00000000.h5 ] || fail "latest is $(cat ckB/latest)"
  echo "stopped after SFT step $k of $S"
  run "$np_" half2.log log.metrics_path=part.jsonl checkpoint.dir=ckB --restart latest sft.steps=$S "$@" ||
    fail "restart exited $?"
  grep "^restart:" half2.log
  grep -q "phase sft, step $k of $S done; continuing SFT with step $((k + 1))" half2.log ||
    fail "restart did not continue SFT at step $((k + 1))"
  "$cmp" full.jsonl part.jsonl exact
  ;;
sft_every)
  run "$np_" full.log log.metrics_path=full.jsonl checkpoint.dir=ckA sft.steps=25 "$@" ||
    fail "straight run exited $?"
  run "$np_" half1.log log.metrics_path=part.jsonl checkpoint.dir=ckB sft.steps=25 run.steps=0 \
    sft.checkpoint_every=10 "$@" || fail "the SFT-only run exited $?"
  [ "$(cat ckB/latest)" = step_00000000.h5 ] || fail "no SFT checkpoint (latest: $(cat ckB/latest 2>/dev/null))"
  run "$np_" half2.log log.metrics_path=part.jsonl checkpoint.dir=ckB sft.steps=25 --restart latest \
    "$@" || fail "restart exited $?"
  grep "^restart:" half2.log
  grep -q "phase sft, step 20 of 25 done; continuing SFT with step 21" half2.log ||
    fail "restart did not continue SFT at step 21"
  "$cmp" full.jsonl part.jsonl exact
  ;;
sft_rejection)
  rej="sft.source=rejection sft.rejection_rounds=2 sft.rejection_prompts=32 sft.rejection_samples=2"
  # shellcheck disable=SC2086
  run "$np_" half1.log log.metrics_path=part.jsonl checkpoint.dir=ckB sft.steps=25 run.steps=0 \
    sft.checkpoint_every=10 $rej "$@" || fail "the SFT-only run exited $?"
  # shellcheck disable=SC2086
  run "$np_" half2.log log.metrics_path=part.jsonl checkpoint.dir=ckB sft.steps=25 --restart latest $rej "$@"
  rc=$?
  [ $rc -eq 2 ] || fail "restart inside rejection SFT exited $rc, want 2"
  [ "$(grep -c '^rlpt:' half2.log)" -eq 1 ] || fail "want one message"
  grep "^rlpt:" half2.log
  grep -q "stopped inside rejection-sampling SFT" half2.log || fail "message does not say why"
  ;;
layout)
  run "$np_" full.log log.metrics_path=full.jsonl checkpoint.dir=ckA "$@" || fail "straight run exited $?"
  run "$np_" half1.log log.metrics_path=part.jsonl checkpoint.dir=ckB run.stop_after=3 "$@" || fail "first half exited $?"
  run 5 half2.log log.metrics_path=part.jsonl checkpoint.dir=ckB --restart latest ranks.train=2 \
    ranks.train_dp=2 "$@" || fail "restart on 2 train ranks exited $?"
  grep "^restart:" half2.log
  grep -q "on 2 train rank(s)" half2.log || fail "restart did not run on 2 train ranks"
  "$cmp" full.jsonl part.jsonl 1e-4 1e-6 4
  ;;
switch)
  # shellcheck disable=SC2086
  run "$np_" full.log log.metrics_path=full.jsonl checkpoint.dir=ckA ${RESTART_FIRST:-} "$@" ||
    fail "straight run ($RESTART_FIRST) exited $?"
  # shellcheck disable=SC2086
  run "$np_" half1.log log.metrics_path=part.jsonl checkpoint.dir=ckB run.stop_after=3 \
    ${RESTART_FIRST:-} "$@" || fail "first half ($RESTART_FIRST) exited $?"
  grep -q "stop_after after RL step 3: checkpoint ckB/step_00000003.h5 written" half1.log || fail "no stop message"
  # shellcheck disable=SC2086
  run "$np_" half2.log log.metrics_path=part.jsonl checkpoint.dir=ckB --restart latest \
    ${RESTART_THEN:-} "$@" || fail "restart ($RESTART_THEN) exited $?"
  grep "^restart:" half2.log
  grep -q "continuing with RL step 4 of" half2.log || fail "restart did not say what it restored"
  "$cmp" full.jsonl part.jsonl 1e-4 1e-6 4
  ;;
preempt)
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" log.metrics_path=m.jsonl checkpoint.dir=ck \
    run.steps=100000 "$@" > pre.log 2>&1 &
  pid=$!
  n=0
  while [ "$(count '"phase":"rl"' m.jsonl)" -lt 3 ] && [ $n -lt 600 ]; do
    sleep 0.1; n=$((n + 1))
  done
  kill -USR1 $pid
  wait $pid
  rc=$?
  [ $rc -eq 0 ] || fail "preempted run exited $rc"
  grep "rlpt: run: SIGUSR1 after RL step" pre.log || fail "no preemption message"
  [ -f ck/latest ] || fail "no ck/latest"
  last=$(sed 's/^step_0*\([0-9]*\)\.h5$/\1/' ck/latest)
  echo "checkpoint of step $last; logged: $(steps m.jsonl)"
  run 4 post.log log.metrics_path=m.jsonl checkpoint.dir=ck run.steps=100000 --restart latest \
    run.stop_after=$((last + 2)) "$@" || fail "restart exited $?"
  want=""
  i=1
  while [ $i -le $((last + 2)) ]; do want="$want$i "; i=$((i + 1)); done
  got=$(steps m.jsonl)
  echo "steps after the restart: $got"
  [ "$got" = "$want" ] || fail "steps $got, want $want"
  ;;
kill)
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" log.metrics_path=m.jsonl checkpoint.dir=ck \
    run.steps=100000 checkpoint.every=1 "$@" > k.log 2>&1 &
  pid=$!
  n=0
  # the second checkpoint's write: one complete checkpoint exists before it
  while ! ls ck/step_*.h5.tmp 2>/dev/null | grep -qv step_00000001; do
    sleep 0.002; n=$((n + 1))
    [ $n -lt 20000 ] || { killjob $pid; fail "never saw a checkpoint being written"; }
  done
  killjob $pid
  echo "killed during the write of $(ls ck/*.tmp); latest -> $(cat ck/latest)"
  ls ck
  tmp=$(ls ck/*.tmp | sed 's|ck/||; s|\.tmp$||')
  [ "$(cat ck/latest)" != "$tmp" ] || fail "latest names the checkpoint being written"
  [ -f "ck/$(cat ck/latest)" ] || fail "latest names a missing file"
  last=$(sed 's/^step_0*\([0-9]*\)\.h5$/\1/' ck/latest)
  run 4 post.log log.metrics_path=m.jsonl checkpoint.dir=ck run.steps=100000 --restart latest \
    run.stop_after=$((last + 1)) "$@" || fail "restart exited $?"
  grep "^restart:" post.log
  grep -q "continuing with RL step $((last + 1)) of" post.log || fail "restart did not continue at $((last + 1))"
  want=""
  i=1
  while [ $i -le $((last + 1)) ]; do want="$want$i "; i=$((i + 1)); done
  got=$(steps m.jsonl)
  echo "steps after the restart: $got"
  [ "$got" = "$want" ] || fail "steps $got, want $want (a step logged twice or lost)"
  ;;
free_kill)
  # 16 passes over each batch: training outlasts generation, so the rollout rank has the
  # batch after the one trained done (in the buffer) at every step boundary
  logs="log.samples_every=1 log.samples_groups=0 run.steps=16 eval.every=0 algo.ppo_epochs=16"
  run 4 s0.log log.metrics_path=m0.jsonl log.samples_path=s0.jsonl $logs "$@" || fail "straight run exited $?"
  # shellcheck disable=SC2086
  RLPT_TEST_STALL=train:train:11 $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" log.metrics_path=m.jsonl \
    log.samples_path=s1.jsonl checkpoint.dir=ck checkpoint.every=4 $logs "$@" > k.log 2>&1 &
  pid=$!
  n=0
  while ! grep -q "RLPT_TEST_STALL: stalling" k.log; do
    sleep 0.01; n=$((n + 1))
    [ $n -lt 6000 ] || { killjob $pid; fail "the train rank never stalled at batch 11"; }
  done
  killjob $pid
  [ "$(cat ck/latest)" = step_00000008.h5 ] || fail "latest is $(cat ck/latest), want step_00000008.h5"
  run 4 post.log log.metrics_path=m.jsonl log.samples_path=s2.jsonl checkpoint.dir=ck checkpoint.every=4 \
    --restart latest $logs "$@" || fail "restart exited $?"
  grep "^restart:\|free-running" post.log
  resume=$(sed -n "s/.*restart: .* restored from the checkpoint's buffer, generation resumes at batch \([0-9]*\)$/\1/p" post.log)
  [ -n "$resume" ] || fail "the restart did not say what it restored"
  [ "$(steps m.jsonl)" = "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 " ] || fail "steps $(steps m.jsonl)"
  /usr/bin/python3 "$RLPT_SOURCE_DIR/tests/run/free_restart_check.py" s0.jsonl s1.jsonl s2.jsonl 8 16 "$resume" ||
    fail "free-running restart check"
  ;;
mismatch)
  # a checkpoint whose model differs from the deck: exit 2 naming the field, nothing run
  run 4 a.log log.metrics_path=m.jsonl checkpoint.dir=ck run.stop_after=1 "$@" || fail "first run exited $?"
  run 4 b.log log.metrics_path=m.jsonl checkpoint.dir=ck --restart latest model.ffn_dim=96 "$@"
  rc=$?
  grep "^rlpt:" b.log
  [ $rc -eq 2 ] || fail "restart with another model exited $rc, want 2"
  grep -q "ffn_dim is 128 in the checkpoint, 96 in the deck" b.log || fail "the message does not name ffn_dim"
  ;;
double)
  # two signals: the second exits every rank at once, without a checkpoint. A first run leaves
  # step 2's checkpoint; a second one in the same directory gets both signals during its
  # long post-SFT eval (100000 greedy prompts), where the first alone waits for the SFT -> RL
  # boundary; `latest` must still name step 2 and a restart from it must work.
  run 4 a.log log.metrics_path=m.jsonl checkpoint.dir=ck run.stop_after=2 "$@" || fail "first run exited $?"
  S=$(grep -c '"phase":"sft"' m.jsonl)
  S=$((S - 1))
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "$rlpt" run "$deck" log.metrics_path=d.jsonl checkpoint.dir=ck \
    sft.eval_prompts=100000 "$@" > d.log 2>&1 &
  pid=$!
  n=0
  while [ "$(count '"phase":"sft"' d.jsonl)" -lt "$S" ] && [ $n -lt 1200 ]; do
    sleep 0.05; n=$((n + 1))
  done
  kill -USR1 $pid
  sleep 0.5
  kill -USR1 $pid
  wait $pid
  rc=$?
  [ $rc -ne 0 ] || fail "a run sent two signals exited 0"
  grep -q "rlpt: second signal: exiting now without a checkpoint" d.log || fail "no second-signal message"
  ls ck
  [ "$(cat ck/latest)" = step_00000002.h5 ] || fail "latest moved to $(cat ck/latest)"
  run 4 post.log log.metrics_path=m.jsonl checkpoint.dir=ck --restart latest "$@" || fail "restart exited $?"
  grep -q "continuing with RL step 3 of" post.log || fail "restart did not continue at step 3"
  ;;
requeue)
  # jobscripts/slurm/requeue.sbatch with stand-ins for srun (mpirun on this machine, without
  # run.sbatch's UCX settings) and scontrol (records the requeue): SIGUSR1 to the batch shell
  # reaches every rank through srun, the job exits 0 and asks to be requeued; the second
  # submission restarts from `latest` and the steps continue.
  mkdir bin
  cat > bin/srun <<EOS
#!/bin/sh
while case \$1 in --*) true ;; *) false ;; esac; do shift; done
unset OMPI_MCA_pml OMPI_MCA_btl UCX_TLS
exec $RLPT_MPIEXEC 4 $RLPT_MPI_FLAGS "\$@"
EOS
  printf '#!/bin/sh\necho "scontrol $*" >> %s/requeued\n' "$dir" > bin/scontrol
  chmod +x bin/srun bin/scontrol
  export PATH="$dir/bin:$PATH" SLURM_JOB_ID=4242 SLURM_NTASKS=4 SLURM_JOB_NUM_NODES=1
  export SLURM_SUBMIT_DIR="$dir" RLPT_ROOT="$RLPT_SOURCE_DIR" RLPT="$rlpt"
  bash "$RLPT_SOURCE_DIR/jobscripts/slurm/requeue.sbatch" "$deck" log.metrics_path=m.jsonl \
    checkpoint.dir=ck run.steps=100000 "$@" > job1.log 2>&1 &
  pid=$!
  n=0
  while [ "$(count '"phase":"rl"' m.jsonl)" -lt 3 ] && [ $n -lt 600 ]; do
    sleep 0.1; n=$((n + 1))
  done
  kill -USR1 $pid
  wait $pid
  rc=$?
  [ $rc -eq 0 ] || fail "the preempted job exited $rc"
  grep "requeue.sbatch: SIGUSR1" job1.log || fail "the batch shell did not forward the signal"
  grep -q "scontrol requeue 4242" requeued || fail "the job did not requeue itself"
  last=$(sed 's/^step_0*\([0-9]*\)\.h5$/\1/' ck/latest)
  bash "$RLPT_SOURCE_DIR/jobscripts/slurm/requeue.sbatch" "$deck" log.metrics_path=m.jsonl \
    checkpoint.dir=ck run.steps=100000 run.stop_after=$((last + 1)) "$@" > job2.log 2>&1 ||
    fail "the requeued job exited $?"
  grep "requeue.sbatch: restarting from ck/step_" job2.log || fail "the requeued job did not restart"
  grep -q "continuing with RL step $((last + 1)) of" job2.log || fail "it did not continue at $((last + 1))"
  ;;
fallback)
  # `latest` names a damaged file: the restart warns, takes the newest valid checkpoint
  # (step 2), cuts the metrics back to it and logs steps 3.. once each
  run 4 a.log log.metrics_path=m.jsonl checkpoint.dir=ck checkpoint.every=1 run.stop_after=3 "$@" ||
    fail "first run exited $?"
  [ "$(cat ck/latest)" = step_00000003.h5 ] || fail "latest is $(cat ck/latest)"
  head -c 2000 ck/step_00000003.h5 > ck/cut && mv ck/cut ck/step_00000003.h5
  run 4 b.log log.metrics_path=m.jsonl checkpoint.dir=ck checkpoint.every=1 --restart latest \
    run.stop_after=4 "$@" || fail "restart exited $?"
  grep "^rlpt:\|^restart:" b.log
  grep -q "warning" b.log || fail "no warning about the damaged checkpoint"
  grep -q "continuing with RL step 3 of" b.log || fail "did not fall back to step 2"
  got=$(steps m.jsonl)
  [ "$got" = "1 2 3 4 " ] || fail "steps $got, want 1 2 3 4"
  ;;
*)
  echo "unknown mode $mode"; exit 2 ;;
esac
