# model/: the transformer forward/backward (golden + finite differences), SmolLM2 against
# PyTorch (label model: needs the GGUF, jobscripts/fetch-smollm2.sh; skips without it), and
# the model on the CUDA backend (label gpu).
add_unit_test(test_model_fd SOURCES model/test_model_fd.c)
# model_create_forward (rollout, scoring, eval): the full model's outputs bit for bit, an
# activation arena of two layer sets.
add_unit_test(test_model_forward SOURCES model/test_model_forward.c)
add_unit_test(test_model_golden SOURCES model/test_model_golden.c LABELS unit golden)
# LoRA adapters merged into their base (model/lora.h lora_merge, `rlpt convert`): the merged
# model's logprobs equal the adapted model's within 1e-5.
add_unit_test(test_lora_merge SOURCES model/test_lora_merge.c)
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
# The same under AddressSanitizer + UBSan: the shard maps' strided copies, the vocabulary
# slices' row offsets and the narrower q/att buffers stay inside their allocations (leak
# detection off: Open MPI's own allocations outlive MPI_Finalize).
if(TARGET rlpt_lib_asan)
  add_executable(test_tp_model_asan model/test_tp_model.c)
  target_link_libraries(test_tp_model_asan PRIVATE rlpt_lib_asan)
  target_include_directories(test_tp_model_asan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  add_mpi_test(NAME test_tp_model_asan EXE test_tp_model_asan NUM_PROCS 2 LABELS mpi asan)
  set_property(TEST test_tp_model_asan APPEND PROPERTY ENVIRONMENT
    "ASAN_OPTIONS=abort_on_error=1:detect_leaks=0;UBSAN_OPTIONS=print_stacktrace=1")
endif()
