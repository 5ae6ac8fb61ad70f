# Real models: GGUF reader and dequantization, byte-level BPE, chat templates,
# SmolLM2-135M-Instruct against PyTorch. Tests labelled `model` need the GGUF
# (jobscripts/fetch-smollm2.sh or RLPT_SMOLLM2_GGUF) and skip (77) without it.
add_unit_test(test_gguf SOURCES test_gguf.c LABELS unit golden)
add_unit_test(test_gguf_fuzz SOURCES test_gguf_fuzz.c)
