#!/bin/sh
# run/test_faults.sh: bad input and faults, tried as a user would (tests/run/tests.cmake).
#   run/test_faults.sh MODE RLPT TOOL DECK
# RLPT is the rlpt binary, TOOL tests/run/fault_tool, DECK tests/decks/e2e_tiny.ini;
# $RLPT_MPIEXEC ("mpiexec -n", NP appended), $RLPT_MPI_FLAGS and $RLPT_SOURCE_DIR come from
# CTest. Every mode prints FAULT_TEST_OK at the end, or FAULT_TEST_FAILED with the reason
# and the logs. Runs on several ranks check the exit code of the whole job (every rank)
# and that rlpt printed one message, not one per rank.
# Modes:
#   data_dev_zero   [data] train_path = /dev/zero (no newline ever): exit 2 naming the
#                   file, line 1 and [data] max_row_bytes, memory bounded (ulimit -v)
#   data_long_line  line 3 of a JSONL file over [data] max_row_bytes: exit 2 naming FILE:3
#   hf_layers       config.json with num_hidden_layers = 1e5 / 1e9: generate, eval and
#                   score exit 2 naming the key (no crash, no attempt to allocate it)
#   generate_crc    rlpt generate on a checkpoint with a flipped byte: exit 2, crc32 mismatch
#                   (as eval does); the intact checkpoint and its directory generate
#   score_keep      rlpt score on a bad input row keeps the existing output file intact
#   gguf_overlap    a GGUF whose tensors overlap: exit 2 naming the tensors
#   empty_deck      an empty deck (no bytes, comments only, a header only): check and a
#                   2-rank run exit 2 saying it is empty
#   group_size_1    group_size = 1 with a group-baseline estimator: exit 2 at deck time
#                   (check, and a 2-rank run); PPO and REINFORCE++ accept it
#   ckpt_dir        an unwritable [checkpoint] dir: exit 2 before the first SFT step, on 4
#                   ranks (1 train rank) and 2 colocated (2 train ranks, both write)
#   nonfinite       optim.eps = 0 makes parameters NaN: params_nonfinite in the JSONL, a
#                   console warning naming the key, exit 2 at the step boundary with no
#                   checkpoint; a healthy run reports params_nonfinite 0 and does not warn
#   watchdog        RLPT_TEST_STALL (run/progress.h) stalls the rollout (before it takes its
#                   prompts, in generation, in the weight sync), the reward and the train
#                   rank in turn: the watchdog
#                   names that rank, its role and stage (never one that waits for it); also
#                   with dynamic sampling, where the controller waits on the reward ranks
#   latest_full     DIR/latest.tmp on a full disk (/dev/full) when step 1 is checkpointed:
#                   on_error = abort: exit 2, no step_00000001.h5 left behind, no .tmp;
#                   on_error = continue: exit 0 and the end-of-run warning with the count
#   gen_utf8        rlpt generate --json on a byte-level BPE model: every line valid UTF-8
set -u
mode=$1 rlpt=$2 tool=$3 deck=$4
src=${RLPT_SOURCE_DIR:-$(dirname "$0")/../..}
. "$(dirname "$0")/../scratch.sh"
scratch rlpt_faults
fail() {
  echo "FAULT_TEST_FAILED: $*"
  for f in *.log; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done
  exit 1
}
CO="ranks.layout=colocated ranks.controller=auto ranks.reward=auto ranks.rollout=auto ranks.train=auto ranks.train_dp=2"
SHORT="sft.eval_prompts=4 eval.prompts=4 eval.samples=2 eval.k=2"
# mrun NP LOG args...: `rlpt args...` under mpirun; its exit status
mrun() {
  np=$1 log=$2
  shift 2
  # shellcheck disable=SC2086
  $RLPT_MPIEXEC "$np" $RLPT_MPI_FLAGS "$rlpt" "$@" > "$log" 2>&1
}
# expect RC WANT WHAT: the exit code RC is WANT
expect() { [ "$1" -eq "$2" ] || fail "$3: exit $1, want $2"; }
# has LOG REGEX WHAT: LOG matches REGEX
has() { grep -q -- "$2" "$1" || fail "$3: no '$2' in $1"; }
# one LOG WHAT: rlpt printed its message ("rlpt: ...") exactly once. Counted anywhere in a
# line, not only at its start: one rank's stderr can land in the middle of rank 0's stdout
# (the deck listing). "rlpt: WARNING" lines are not the message.
one() {
  n=$(grep -o 'rlpt: ' "$1" | wc -l)
  w=$(grep -o 'rlpt: WARNING' "$1" | wc -l)
  n=$((n - w))
  [ "$n" -eq 1 ] || fail "$2: $n lines 'rlpt:' in $1, want 1 (one message, not one per rank)"
}
# count PATTERN FILE: lines of FILE matching PATTERN (0 when FILE does not exist yet)
count() { c=$(grep -c "$1" "$2" 2>/dev/null); echo "${c:-0}"; }
# hf_dir DIR: a tiny Hugging Face directory (rlpt init -> convert, the hf_tok_a tokenizer)
hf_dir() {
  "$rlpt" init "$deck" model.vocab_size=608 model.max_seq=64 --out "$1.h5" > init.log 2>&1 ||
    fail "rlpt init"
  "$rlpt" convert "$1.h5" "$1" > convert.log 2>&1 || fail "rlpt convert"
  cp "$src/tests/data/hf_tok_a/tokenizer.json" "$src/tests/data/hf_tok_a/tokenizer_config.json" "$1/"
}

case $mode in
data_dev_zero)
  # 2 GB of address space is plenty for the tiny run and far below what reading
  # /dev/zero to its (missing) end would take
  (ulimit -v 2000000; mrun 2 zero.log run "$deck" $CO task.name=jsonl data.train_path=/dev/zero \
     data.verifier=arith log.metrics_path=zero.jsonl checkpoint.dir=ck)
  rc=$?
  cat zero.log
  expect $rc 2 "train_path = /dev/zero"
  has zero.log "/dev/zero:1: a line longer than 1048576 bytes (\[data\] max_row_bytes)" "/dev/zero"
  one zero.log "/dev/zero"
  ;;
data_long_line)
  i=0
  : > long.jsonl
  while [ $i -lt 2 ]; do echo "{\"prompt\": \"1+$i=\", \"answer\": \"$((i + 1))\"}" >> long.jsonl; i=$((i + 1)); done
  printf '{"prompt": "%5000s", "answer": "1"}\n' x >> long.jsonl
  echo '{"prompt": "2+2=", "answer": "4"}' >> long.jsonl
  mrun 2 long.log run "$deck" $CO task.name=jsonl data.train_path=long.jsonl data.verifier=arith \
    data.max_row_bytes=4096 log.metrics_path=long_m.jsonl checkpoint.dir=ck
  rc=$?
  cat long.log
  expect $rc 2 "a 5 KB line with max_row_bytes = 4096"
  has long.log "long.jsonl:3: a line longer than 4096 bytes (\[data\] max_row_bytes)" "long line"
  one long.log "long line"
  # the same file with a limit that fits: the rows load (the run gets past the data)
  mrun 2 long_ok.log check "$deck" task.name=jsonl data.train_path=long.jsonl data.max_row_bytes=8192
  expect $? 0 "rlpt check with max_row_bytes = 8192"
  ;;
hf_layers)
  hf_dir hfd
  printf '{"tokens": [1, 2, 3]}\n' > in.jsonl
  for n in 100000 1000000000; do
    rm -rf hfx && cp -r hfd hfx
    sed "s/\"num_hidden_layers\":[ \t]*2,/\"num_hidden_layers\": $n,/" hfd/config.json > hfx/config.json
    grep -q "\"num_hidden_layers\": $n," hfx/config.json || fail "could not edit config.json"
    for cmd in generate eval score; do
      case $cmd in
      generate) set -- generate --model hf:hfx --prompt "1+2=" --max-new-tokens 2 ;;
      eval) set -- eval "$deck" --model hf:hfx ;;
      score) set -- score --model hf:hfx --input in.jsonl --output out.jsonl ;;
      esac
      (ulimit -v 4000000; "$rlpt" "$@" > "$cmd.$n.log" 2>&1)
      rc=$?
      cat "$cmd.$n.log"
      expect $rc 2 "rlpt $cmd with num_hidden_layers = $n"
      has "$cmd.$n.log" "hfx/config.json: .*$n" "rlpt $cmd, num_hidden_layers = $n"
    done
  done
  ;;
generate_crc)
  mrun 2 run.log run "$deck" $CO sft.steps=2 run.steps=1 $SHORT log.metrics_path=m.jsonl \
    checkpoint.dir=ck || fail "the run that writes the checkpoint exited $?"
  cp ck/step_00000001.h5 bad.h5
  "$tool" flip bad.h5 /model/model.layers.0.mlp.down_proj.weight || fail "flip"
  "$rlpt" eval "$deck" --model bad.h5 > eval.log 2>&1
  expect $? 2 "rlpt eval on the flipped checkpoint"
  "$rlpt" generate --model bad.h5 --prompt "1+2=" --max-new-tokens 2 > gen.log 2>&1
  rc=$?
  cat gen.log
  expect $rc 2 "rlpt generate on the flipped checkpoint"
  has gen.log "bad.h5: dataset /model/model.layers.0.mlp.down_proj.weight: crc32 mismatch" "generate"
  one gen.log "generate"
  "$rlpt" generate --model ck/step_00000001.h5 --prompt "1+2=" --max-new-tokens 2 > good.log 2>&1 ||
    { cat good.log; fail "generate on the intact checkpoint exited $?"; }
  "$rlpt" generate --model ck --prompt "1+2=" --max-new-tokens 2 > dir.log 2>&1 ||
    { cat dir.log; fail "generate on the checkpoint directory exited $?"; }
  cmp good.log dir.log || fail "the directory's latest did not generate as the file"
  ;;
score_keep)
  "$rlpt" init "$deck" --out m.h5 > init.log 2>&1 || fail "rlpt init"
  printf '{"tokens": [1, 2, 3]}\n{"tokens": [4, 5]}\n' > good.jsonl
  "$rlpt" score --model m.h5 --input good.jsonl --output out.jsonl > s1.log 2>&1 || fail "score exited $?"
  cp out.jsonl before.jsonl
  printf '{"tokens": [1, 2, 3]}\n{"tokens": [4, \n' > bad.jsonl
  "$rlpt" score --model m.h5 --input bad.jsonl --output out.jsonl > s2.log 2>&1
  rc=$?
  cat s2.log
  expect $rc 2 "score of a bad row"
  has s2.log "bad.jsonl:2: not valid JSON" "score"
  [ -f out.jsonl ] || fail "rlpt score deleted the existing out.jsonl"
  cmp before.jsonl out.jsonl || fail "rlpt score changed the existing out.jsonl"
  [ -z "$(ls -a | grep 'out\.jsonl.\+')" ] || fail "a temporary file is left: $(ls -a)"
  # a good run still replaces it
  printf '{"tokens": [7, 8, 9, 10]}\n' > good2.jsonl
  "$rlpt" score --model m.h5 --input good2.jsonl --output out.jsonl > s3.log 2>&1 || fail "score exited $?"
  [ "$(wc -l < out.jsonl)" -eq 1 ] || fail "out.jsonl was not replaced"
  ;;
gguf_overlap)
  "$tool" gguf_overlap ov.gguf || fail "could not write ov.gguf"
  "$rlpt" generate --model gguf:ov.gguf --prompt a --max-new-tokens 1 > ov.log 2>&1
  rc=$?
  cat ov.log
  expect $rc 2 "a GGUF whose tensors overlap"
  has ov.log "ov.gguf: tensor 'blk.0.attn_norm.weight'.*overlaps tensor 'token_embd.weight'" "overlap"
  ;;
empty_deck)
  : > empty.ini
  printf '# a deck with comments only\n\n; and blank lines\n' > comments.ini
  printf '[run]\n\n[model]\n' > headers.ini
  for d in empty comments headers; do
    "$rlpt" check $d.ini > $d.log 2>&1
    rc=$?
    cat $d.log
    expect $rc 2 "rlpt check $d.ini"
    has $d.log "$d.ini: the deck is empty" "check $d.ini"
  done
  mrun 2 run.log run empty.ini $CO
  rc=$?
  cat run.log
  expect $rc 2 "rlpt run of an empty deck on 2 ranks"
  has run.log "empty.ini: the deck is empty" "run"
  one run.log "run"
  # overrides alone do not make a deck
  "$rlpt" check empty.ini run.steps=3 > over.log 2>&1
  expect $? 2 "rlpt check of an empty deck with an override"
  ;;
group_size_1)
  for a in "algo.name=grpo" "algo.name=rloo" "algo.name=dr_grpo" "algo.name=dapo" \
           "algo.adv_estimator=reinforce_pp_baseline"; do
    "$rlpt" check "$deck" algo.group_size=1 "$a" > g.log 2>&1
    rc=$?
    cat g.log
    expect $rc 2 "rlpt check with group_size = 1 and $a"
    has g.log "\[algo\] group_size: .*group_size = 1.*advantage" "$a"
  done
  for a in "algo.name=ppo" "algo.name=reinforce_pp"; do
    "$rlpt" check "$deck" algo.group_size=1 "$a" > ok.log 2>&1 || { cat ok.log; fail "$a with group_size = 1 refused"; }
  done
  # an RL-free deck does not care
  "$rlpt" check "$deck" algo.group_size=1 run.steps=0 > sft.log 2>&1 || fail "SFT-only deck refused"
  mrun 2 run.log run "$deck" $CO algo.group_size=1 algo.prompts_per_step=16
  rc=$?
  cat run.log
  expect $rc 2 "rlpt run with group_size = 1 on 2 ranks"
  has run.log "override 'algo.group_size=1': \[algo\] group_size" "run"
  one run.log "run"
  ;;
ckpt_dir)
  mrun 4 sep.log run "$deck" sft.steps=50 checkpoint.dir=/dev/null/ck log.metrics_path=sep.jsonl
  rc=$?
  cat sep.log
  expect $rc 2 "unwritable checkpoint dir, 4 ranks"
  has sep.log "\[checkpoint\] dir = /dev/null/ck: cannot create the directory: Not a directory" "4 ranks"
  one sep.log "4 ranks"
  grep -q '"phase":"sft"' sep.jsonl 2>/dev/null && fail "SFT ran before the checkpoint directory was checked"
  mrun 2 co.log run "$deck" $CO sft.steps=50 checkpoint.dir=/dev/null/ck log.metrics_path=co.jsonl
  rc=$?
  cat co.log
  expect $rc 2 "unwritable checkpoint dir, 2 colocated train ranks"
  one co.log "colocated"
  grep -q '"phase":"sft"' co.jsonl 2>/dev/null && fail "SFT ran before the checkpoint directory was checked"
  ;;
nonfinite)
  mrun 4 nf.log run "$deck" sft.steps=3 run.steps=3 optim.eps=0 $SHORT log.metrics_path=nf.jsonl \
    checkpoint.dir=ck
  rc=$?
  cat nf.log
  expect $rc 2 "optim.eps = 0"
  grep -q '"params_nonfinite":[1-9]' nf.jsonl || fail "no params_nonfinite > 0 in the metrics"
  has nf.log "rlpt: WARNING: .*parameters are NaN or Inf after the update" "console warning"
  has nf.log "\[optim\] eps" "the message names the key"
  [ -z "$(ls ck 2>/dev/null)" ] || fail "a checkpoint was written: $(ls ck)"
  # untied embeddings: the rows of tokens no SFT example uses get 0/0 at the first SFT
  # update; SFT stops within a step of it (its agreement runs one step behind)
  mrun 2 nfs.log run "$deck" $CO sft.steps=20 run.steps=2 optim.eps=0 model.tie_embeddings=false \
    $SHORT log.metrics_path=nfs.jsonl checkpoint.dir=ck3
  rc=$?
  cat nfs.log
  expect $rc 2 "optim.eps = 0 during SFT"
  has nfs.log "rlpt: run: SFT step [12]: parameters are NaN or Inf" "SFT stop"
  [ "$(grep -c '^rlpt: run:' nfs.log)" -eq 1 ] || fail "SFT stop: not one stop message"
  grep -q '"step":1,.*"phase":"sft".*"params_nonfinite":[1-9]' nfs.jsonl || fail "SFT step 1 does not count them"
  # a healthy run reports 0
  mrun 2 ok.log run "$deck" $CO sft.steps=2 run.steps=1 $SHORT log.metrics_path=ok.jsonl \
    checkpoint.dir=ck2 || fail "a healthy run exited $?"
  grep -q '"params_nonfinite":0' ok.jsonl || fail "no params_nonfinite 0 in a healthy run"
  grep -q 'WARNING: .*NaN' ok.log && fail "a healthy run warned"
  ;;
watchdog)
  # RLPT_TEST_STALL (run/progress.h) stops one role at one point of RL step 4; rank 1 is
  # the reward, rank 2 the rollout, rank 3 the train rank (4 ranks, separate layout). The
  # watchdog must name the stalled rank and its stage, never one that waits for it.
  for c in "rollout:prompts 2 rollout" \
           "rollout:generate 2 rollout generation" \
           "rollout:sync 2 rollout the weight sync" \
           "reward:score 1 reward reward scoring" \
           "train:train 3 train training"; do
    set -- $c
    point=$1 rank=$2 role=$3
    shift 3
    stage="$*"
    log=wd.$(echo "$point" | tr : _).log
    RLPT_TEST_STALL=$point:4 mrun 4 "$log" run "$deck" sft.steps=0 run.steps=6 \
      run.phase_timeout_s=2 log.metrics_path=wd.jsonl checkpoint.dir=ck
    rc=$?
    grep "watchdog\|RLPT_TEST_STALL" "$log"
    [ $rc -ne 0 ] || fail "$point: the job exited 0"
    if [ "$point" = rollout:prompts ]; then
      has "$log" "watchdog: rl step 4: rank 2 (rollout) did not take the prompts of the step" "stall at $point"
    else
      has "$log" "watchdog: rl step 4: rank $rank ($role) did not finish $stage" "stall at $point"
    fi
  done
  # dynamic sampling: the controller waits for the reward ranks' kept groups, but a stalled
  # rollout is still the one named
  RLPT_TEST_STALL=rollout:generate:2 mrun 4 ds.log run "$src/tests/decks/dynsamp_tiny.ini" \
    sft.steps=0 run.steps=3 run.phase_timeout_s=2 log.metrics_path=ds.jsonl checkpoint.dir=ck2
  rc=$?
  grep "watchdog" ds.log
  [ $rc -ne 0 ] || fail "dynamic sampling: the job exited 0"
  has ds.log "watchdog: rl step 2: rank 2 (rollout) did not finish generation" "dynamic sampling"
  ;;
latest_full)
  # the step file itself fits; DIR/latest.tmp (written before either rename) does not
  mkdir ck
  ln -s /dev/full ck/latest.tmp
  mrun 4 abort.log run "$deck" sft.steps=2 run.steps=2 checkpoint.every=1 $SHORT log.metrics_path=a.jsonl \
    checkpoint.dir=ck
  rc=$?
  cat abort.log
  ls -la ck
  expect $rc 2 "latest.tmp on a full disk, on_error = abort"
  has abort.log "checkpoint step 1 not written" "abort"
  [ -e ck/step_00000001.h5 ] && fail "step_00000001.h5 left behind although the message says not written"
  [ -z "$(ls -a ck | grep '\.tmp$')" ] || fail "a temporary file is left: $(ls -a ck)"
  grep -q '"step":2,.*"phase":"rl"' a.jsonl && fail "the run went on after the failed checkpoint"
  rm -rf ck && mkdir ck
  ln -s /dev/full ck/latest.tmp
  mrun 4 cont.log run "$deck" sft.steps=2 run.steps=3 checkpoint.every=1 checkpoint.on_error=continue \
    $SHORT log.metrics_path=c.jsonl checkpoint.dir=ck
  rc=$?
  cat cont.log
  ls -la ck
  expect $rc 0 "latest.tmp on a full disk, on_error = continue"
  [ -e ck/step_00000001.h5 ] && fail "step_00000001.h5 left behind although the message says not written"
  [ -f ck/step_00000003.h5 ] && [ "$(cat ck/latest)" = step_00000003.h5 ] || fail "the later checkpoints were not written"
  tail -3 cont.log | grep -q "rlpt: WARNING: 1 of 3 checkpoints could not be written" ||
    fail "no end-of-run warning with the count of failed checkpoints"
  ;;
gen_utf8)
  hf_dir hfd
  "$rlpt" generate --model hf:hfd --prompt "1+2=" -n 64 --max-new-tokens 6 --seed 3 --json > g.jsonl 2> g.log ||
    { cat g.log; fail "generate exited $?"; }
  "$tool" utf8 g.jsonl || fail "generate --json wrote invalid UTF-8"
  [ "$(wc -l < g.jsonl)" -eq 64 ] || fail "not 64 lines"
  ;;
*)
  echo "unknown mode $mode"; exit 2 ;;
esac
echo "FAULT_TEST_OK $mode"
