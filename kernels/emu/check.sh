#!/usr/bin/env bash
# check.sh: run the GPU tests with the CUDA kernels executed on the CPU (emu.h), for
# machines without a GPU. It checks indexing, bounds, barrier use and numerics
# against the CPU backend; it cannot check speed, races that no fiber order exposes,
# or the real cuBLASLt/CUB (replaced by reference versions).
#   ops, model: test_gpu_ops and test_gpu_model (model: test_gpu_rollout too, the rollout
#               engine with its KV pool in device memory, and test_gpu_sample, its sampling
#               on the device: cuda vs cpu tokens), each in three fiber orders (in
#               order, shuffled, and with no cuBLASLt algorithm: the GEMM fallback);
#   bf16:       test_gpu_bf16 ([model] dtype = bf16: mixed-precision products and
#               model against the CPU fp32 model), in the same three orders;
#   shapes, edge: test_gpu_shapes (every op at the edge shapes test_gpu_ops leaves out) and
#               test_gpu_edge (the check macros' messages, the GEMM plan cache, misaligned
#               operands, bf16 rounding at its edges), in the same three orders;
#   select:     test_gpu_select (the GPU each rank takes; ZeRO-1 slices vs MPI) on 1 and 2 ranks;
#   nccl:       test_nccl (NCCL against MPI: world, ncclCommSplit groups, a communicator
#               made over a sub-communicator) on 1, 2, 3 and 4 ranks (NCCL emulated over
#               MPI: emu_rt.cpp);
#   trainer:    test_gpu_trainer (the trainer's device update against the host one) on
#               one rank, on two, and on two with ZeRO-1;
#   rlpt:       rlpt itself linked with the emulated kernels (the emulated runtime
#               reports EMU_DEVICES = 4 devices, one per rank), so `[run] device = cuda`
#               runs end to end: tests/run/test_gpu_grpo.sh (a short GRPO run, cuda vs cpu
#               metrics, and the weight broadcast over NCCL vs run.weight_sync = mpi: the
#               same metrics to the bit) on the separate 4-rank layout and on one
#               colocated rank, and tests/cli/test_gpu_cli.sh (generate / score --device cuda vs cpu);
#   pref:       rlpt with the emulated kernels: tests/run/test_gpu_pref.sh (3 DPO and 3
#               reward-model steps, cuda vs cpu; about a minute);
#   grpo16:     the rlpt GRPO run with the cuda side in [model] dtype = bf16, NCCL vs MPI
#               weight sync too (not in the default set: about ten minutes more);
#   bench:      bench_gpu --quick (tiny shapes: the benchmark's code, not its figures).
# Needs a CUDA-configured build for librlpt.a and the CUDA headers:
#   cmake -S . -B build-cuda -DRLPT_CUDA=ON && cmake --build build-cuda --target rlpt_lib
# Usage: kernels/emu/check.sh [build-dir [ops|model|bf16|shapes|edge|select|nccl|trainer|rlpt|pref|grpo16|bench ...]]
# (default build-cuda, all but grpo16). ops + model + bf16 take a few minutes, nccl and
# trainer one, rlpt about fifteen.
set -euo pipefail
EMU="$(cd "$(dirname "$0")" && pwd)"
R="$(cd "$EMU/../.." && pwd)"
B="$(cd "${1:-$R/build-cuda}" && pwd)"
shift || true
what="${*:-ops model bf16 shapes edge select nccl trainer rlpt pref bench}"
W="$B/emu"
mkdir -p "$W"
cd "$W"
CUDA_INC="${CUDA_HOME:-/usr/local/cuda}/include"
INC="-I$R/src -I$R -I$R/tests -I$CUDA_INC -I$EMU"
CXX="g++ -std=c++17 -O1 -g -w -DRLPT_HAVE_CUDA=1 $INC"
CC="mpicc -std=c11 -O1 -g -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DRLPT_HAVE_CUDA=1 $INC"
objs=()
for cu in "$R"/kernels/*.cu; do
  f=$(basename "$cu" .cu)
  # kernel<<<grid, block[, smem]>>>(args) -> EMU_LAUNCH(kernel, grid, block[, smem])(args)
  { echo '#include "emu.h"'
    sed -E -e 's|#include <cuda_bf16.h>||' -e 's|#include <cub/[^>]*>|#include "emu_cub.h"|' \
      -e 's|extern __shared__ float smem\[\];|float *smem = emu_smem;|' \
      -e 's/([A-Za-z_0-9]+(<[A-Za-z_0-9 ]+>)?)<<<(.*)>>>\(/EMU_LAUNCH(\1, \3)(/' "$cu"; } \
      > "$f.emu.cpp"
  $CXX -c "$f.emu.cpp" -o "$f.o"
  objs+=("$f.o")
done
$CXX -DOMPI_SKIP_MPICXX $(mpicc --showme:compile) -c "$EMU/emu_rt.cpp" -o emu_rt.o
for c in "$R"/kernels/*.c; do
  $CC -c "$c" -o "$(basename "$c" .c).o"
  objs+=("$(basename "$c" .c).o")
done
LIBS="$B/librlpt.a $B/librlpt_tbproto.a $(pkg-config --libs inih libcjson libpcre2-8 libprotobuf-c) -lhdf5 -lopenblas -lz -lm -lpthread -lstdc++"
HDF5_LIB="$(dirname "$(find /usr/lib -name 'libhdf5.so' -path '*openmpi*' | head -1)")"
rc=0
for t in kernels/test_gpu_ops model/test_gpu_model rollout/test_gpu_rollout rollout/test_gpu_sample \
         kernels/test_gpu_bf16 kernels/test_gpu_shapes kernels/test_gpu_edge; do
  src=$t
  t=${src#*/}
  stage=${t#test_gpu_}
  [ "$stage" = rollout ] && stage=model # the rollout engine's device KV pool: a model stage test
  [ "$stage" = sample ] && stage=model  # the rollout engine's device sampling: also the model's
  case " $what " in *" $stage "*) ;; *) continue ;; esac
  $CC -c "$R/tests/$src.c" -o "$t.o"
  mpicc -o "emu_$t" "$t.o" "${objs[@]}" emu_rt.o -L"$HDF5_LIB" $LIBS
  # EMU_NO_ALGO=1: the naive cuBLASLt offers no algorithm, so every GEMM takes the fallback
  for order in 0 2 nofb; do
    echo "== $t (emulated kernels, $order)"
    if [ $order = nofb ]; then env EMU_NO_ALGO=1 "./emu_$t" > "emu_$t.$order.log" 2>&1 || rc=1
    else EMU_ORDER=$order "./emu_$t" > "emu_$t.$order.log" 2>&1 || rc=1; fi
    tail -3 "emu_$t.$order.log"
  done
done
troot=""
[ "$(id -u)" = 0 ] && troot=--allow-run-as-root
if [[ " $what " == *" nccl "* ]]; then
  $CC -c "$R/tests/mpi/test_nccl.c" -o test_nccl.o
  mpicc -o emu_test_nccl test_nccl.o "${objs[@]}" emu_rt.o -L"$HDF5_LIB" $LIBS
  for np in 1 2 3 4; do
    echo "== test_nccl on $np rank(s) (NCCL emulated over MPI)"
    EMU_DEVICES=$np OMPI_MCA_mpi_yield_when_idle=1 mpiexec -n $np --oversubscribe $troot \
      -x EMU_DEVICES ./emu_test_nccl > "emu_test_nccl.$np.log" 2>&1 || rc=1
    grep -E 'CHECK|test_nccl' "emu_test_nccl.$np.log" || true
  done
fi
if [[ " $what " == *" select "* ]]; then
  $CC -c "$R/tests/model/test_gpu_select.c" -o test_gpu_select.o
  mpicc -o emu_test_gpu_select test_gpu_select.o "${objs[@]}" emu_rt.o -L"$HDF5_LIB" $LIBS
  sroot=""
  [ "$(id -u)" = 0 ] && sroot=--allow-run-as-root
  for np in 1 2; do
    echo "== test_gpu_select on $np rank(s) (NCCL emulated over MPI)"
    EMU_DEVICES=$np OMPI_MCA_mpi_yield_when_idle=1 mpiexec -n $np --oversubscribe $sroot \
      -x EMU_DEVICES ./emu_test_gpu_select > "emu_test_gpu_select.$np.log" 2>&1 || rc=1
    grep -E 'CHECK|test_gpu_select' "emu_test_gpu_select.$np.log" || true
  done
fi
if [[ " $what " == *" trainer "* ]]; then
  $CC -c "$R/tests/train/test_gpu_trainer.c" -o test_gpu_trainer.o
  mpicc -o emu_test_gpu_trainer test_gpu_trainer.o "${objs[@]}" emu_rt.o -L"$HDF5_LIB" $LIBS
  for run in 1 2 "2 optim.zero=1"; do
    set -- $run
    np=$1
    shift
    echo "== test_gpu_trainer on $np rank(s) $* (emulated kernels)"
    EMU_DEVICES=$np OMPI_MCA_mpi_yield_when_idle=1 OPENBLAS_NUM_THREADS=1 mpiexec -n $np \
      --oversubscribe $troot -x EMU_DEVICES ./emu_test_gpu_trainer "$@" \
      > "emu_test_gpu_trainer.$np$#.log" 2>&1 || rc=1
    grep -E '^(step|after)|CHECK|test_gpu_trainer' "emu_test_gpu_trainer.$np$#.log" || true
  done
fi
if [[ " $what " == *" rlpt "* || " $what " == *" grpo16 "* || " $what " == *" pref "* ]]; then
  $CC -DRLPT_VERSION='"emu"' -c "$R/src/cli/main.c" -o main.o
  mpicc -o emu_rlpt main.o "${objs[@]}" emu_rt.o -L"$HDF5_LIB" $LIBS
  $CC -c "$R/tests/run/test_gpu_grpo.c" -o test_gpu_grpo.o
  mpicc -o emu_test_gpu_grpo test_gpu_grpo.o $(pkg-config --libs libcjson) -lm
  $CC -c "$R/tests/run/test_restart_cmp.c" -o test_restart_cmp.o
  mpicc -o emu_test_restart_cmp test_restart_cmp.o $(pkg-config --libs libcjson) -lm
  root=""
  [ "$(id -u)" = 0 ] && root=--allow-run-as-root
  export RLPT_MPIEXEC="${RLPT_MPIEXEC:-mpiexec -n}" RLPT_MPI_FLAGS="${RLPT_MPI_FLAGS:---oversubscribe $root}"
  # one emulated device per rank (the weight broadcast takes NCCL only then), and the
  # NCCL vs MPI weight sync check of run/test_gpu_grpo.sh
  export OMPI_MCA_mpi_yield_when_idle=1 OPENBLAS_NUM_THREADS=1 RLPT_SOURCE_DIR="$R" EMU_DEVICES=4
  export RLPT_GPU_GRPO_WSYNC="$W/emu_test_restart_cmp"
fi
# gpu.cmake's gpu_grpo run with smaller batches (the emulated kernels are ~1000x slower):
# emu_grpo [NP SFT_STEPS RL_STEPS [overrides...]] (default 4 ranks, 40 SFT + 4 RL steps)
emu_grpo() {
  np=${1:-4} sft=${2:-40} rl=${3:-4}
  shift $(($# < 3 ? $# : 3))
  sh "$R/tests/run/test_gpu_grpo.sh" "$W/emu_rlpt" "$W/emu_test_gpu_grpo" "$np" \
    "$R/tests/decks/e2e_tiny.ini" "$sft" "$rl" algo.kl_coef=0.05 sft.batch_size=16 \
    algo.prompts_per_step=8 eval.prompts=16 sft.eval_prompts=16 "$@"
}
GREP_GRPO='^(run.device|weight sync|[0-9]+ lines compared|line [0-9]+:|mean|test_gpu_grpo|GPU_GRPO|.*CHECK failed)'
if [[ " $what " == *" rlpt "* ]]; then
  echo "== run/test_gpu_grpo.sh (emulated kernels)"
  emu_grpo > emu_gpu_grpo.log 2>&1 || rc=1
  grep -E "$GREP_GRPO" emu_gpu_grpo.log || true
  # (an entropy bonus: the untrained policy earns no reward, and the RL steps must still move
  # the weights that the sync carries)
  echo "== run/test_gpu_grpo.sh on one colocated rank, 10 SFT + 2 RL steps (emulated kernels)"
  emu_grpo 1 10 2 ranks.layout=colocated ranks.controller=auto ranks.reward=auto ranks.rollout=auto \
    ranks.train=auto algo.entropy_coef=0.01 > emu_gpu_grpo_c1.log 2>&1 || rc=1
  grep -E "$GREP_GRPO" emu_gpu_grpo_c1.log || true
  echo "== cli/test_gpu_cli.sh (emulated kernels)"
  printf '[model]\ndim = 32\nlayers = 2\nheads = 4\nkv_heads = 2\nffn_dim = 48\nmax_seq = 64\ninit_std = 0.2\n' \
    > emu_cli.ini
  ./emu_rlpt init emu_cli.ini --out emu_cli.h5 run.seed=5 > /dev/null
  sh "$R/tests/cli/test_gpu_cli.sh" "$W/emu_rlpt" emu_cli.h5 > emu_gpu_cli.log 2>&1 || rc=1
  tail -12 emu_gpu_cli.log
fi
if [[ " $what " == *" pref "* ]]; then
  # preference steps (DPO, reward model): 3 steps each, cuda vs cpu, on the shipped pairs
  echo "== run/test_gpu_pref.sh (emulated kernels)"
  $CC -c "$R/tests/run/test_pref_run.c" -o test_pref_run.o
  mpicc -o emu_test_pref_run test_pref_run.o $(pkg-config --libs libcjson) -lm
  sh "$R/inputs/make_pref_arith.sh" emu_pref.jsonl
  RLPT_MPI_FLAGS="$RLPT_MPI_FLAGS -x EMU_DEVICES" sh "$R/tests/run/test_gpu_pref.sh" "$W/emu_rlpt" \
    "$W/emu_test_pref_run" 4 "$R/tests/decks/dpo_tiny.ini" "$W/emu_pref.jsonl" 3 1e-4 algo.prompts_per_step=8 \
    eval.prompts=4 eval.samples=1 eval.k=1 > emu_gpu_pref.log 2>&1 || rc=1
  grep -E 'test_pref_run|GPU_PREF|CHECK' emu_gpu_pref.log || true
fi
if [[ " $what " == *" grpo16 "* ]]; then
  echo "== run/test_gpu_grpo.sh, cuda side in bf16 (emulated kernels)"
  RLPT_GPU_GRPO_DTYPE=bf16 emu_grpo > emu_gpu_grpo16.log 2>&1 || rc=1
  grep -E "$GREP_GRPO|^(gpu dtype|step [0-9]+ +[a-z_]+ +cpu)" emu_gpu_grpo16.log || true
fi
if [[ " $what " == *" bench "* ]]; then
  $CC -c "$R/tests/bench/bench_gpu.c" -o bench_gpu.o
  mpicc -o emu_bench_gpu bench_gpu.o "${objs[@]}" emu_rt.o -L"$HDF5_LIB" $LIBS
  echo "== bench_gpu --quick (emulated kernels: the benchmark's own code, not its timings)"
  ./emu_bench_gpu --quick > emu_bench_gpu.log 2>&1 || rc=1
  cat emu_bench_gpu.log
fi
[ $rc = 0 ] && echo "emulated GPU tests: all passed" || echo "emulated GPU tests: FAILED"
exit $rc
