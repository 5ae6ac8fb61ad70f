# model/: the transformer forward/backward (golden + finite differences), SmolLM2 against
# PyTorch (label model: needs the GGUF, jobscripts/fetch-smollm2.sh; skips without it), and
# the model on the CUDA backend (label gpu).
add_unit_test(test_model_fd SOURCES model/test_model_fd.c)
add_unit_test(test_model_golden SOURCES model/test_model_golden.c LABELS unit golden)
# SmolLM2-135M-Instruct forward, greedy completions and chat prompts against PyTorch.
add_unit_test(test_smollm2 SOURCES model/test_smollm2.c LABELS model)
add_unit_test(test_gpu_model SOURCES model/test_gpu_model.c LABELS gpu)
# test_gpu_select: the GPU each rank takes (comms_node_rank, device_use) and the ZeRO-1 slice
# collectives (nccl_reduce_slices / nccl_gather_slices) against MPI, on one rank and on
# two (the slices then need a GPU per rank).
add_test_program(test_gpu_select model/test_gpu_select.c)
add_mpi_test(NAME test_gpu_select_1 EXE test_gpu_select NUM_PROCS 1 LABELS gpu mpi)
add_mpi_test(NAME test_gpu_select_2 EXE test_gpu_select NUM_PROCS 2 LABELS gpu mpi)
# test_weights: the residency states and transitions of struct weights (model/weights.h) and
# the model's device path through them, on a stand-in device of host memory (no GPU).
add_unit_test(test_weights SOURCES model/test_weights.c)
# test_tp_model: the tensor-parallel model (model/tp.h) on 2 ranks against the one-rank model:
# forward logprobs/entropies and every gradient within 1e-5 relative, the shard maps exact.
add_test_program(test_tp_model model/test_tp_model.c)
add_mpi_test(NAME test_tp_model EXE test_tp_model NUM_PROCS 2)
