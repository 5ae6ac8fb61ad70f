/* model/import.h: [model] init = gguf:PATH | hf:DIR for a run: the model config
 * and the tokenizer come from the GGUF file or the Hugging Face directory
 * (config.json, safetensors, tokenizer.json), the train ranks load its weights.
 *
 * Config merge (the user-friendly way): a shape key the deck leaves at its
 * schema default (vocab_size auto, dim, layers, heads, kv_heads, ffn_dim,
 * rope_theta, norm_eps, tie_embeddings, qkv_bias) is taken from the file; a key
 * set to another value that disagrees with the file is an error naming the key.
 * max_seq is a length limit, not a shape: the deck's value is used and must not
 * exceed the file's context_length (RoPE has no learned positions). */
#ifndef RLPT_MODEL_IMPORT_H
#define RLPT_MODEL_IMPORT_H

#include <stddef.h>

#include "deck/config.h"
#include "model/model.h"
#include "tasks/chat.h"
#include "tokenizer/tokenizer.h"

/* 1 when the deck's [model] init is gguf:PATH; hf:DIR; either of them. */
int model_import_is_gguf(const struct config *cfg);
int model_import_is_hf(const struct config *cfg);
int model_import_is_file(const struct config *cfg);

/* The model config of the deck's gguf:PATH / hf:DIR merged as above (the file's
 * header / config.json and safetensors headers only: no weights, no tokenizer).
 * Returns 0, or 2 with a message naming the file or the key. */
int model_import_config(const struct config *cfg, struct model_config *mc, char *err,
                        size_t errlen);

/* Model config (merged as above) and the BPE tokenizer of the deck's
 * gguf:PATH (its tokenizer.ggml.* metadata) or hf:DIR (tokenizer.json and the
 * config files, io/hf_tokenizer.h). When the file says prompts start without
 * BOS (GGUF add_bos_token = false: SmolLM2, Qwen2; HF: see hf_tokenizer.h) the
 * tokenizer's bos_id is set to -1; [model] unknown_bytes = drop sets
 * tokenizer_bpe_drop_unknown. The tokenizer must have an EOS and no more
 * tokens than the model's vocabulary. Returns 0, or 2 with a message naming
 * the file or the key. */
int model_import_setup(const struct config *cfg, struct model_config *mc, struct tokenizer *tok,
                       char *err, size_t errlen);

/* The tokenizer and model config a deck describes: model_import_setup for gguf:/hf:,
 * else the built-in character tokenizer and the [model] keys. On error tok is still
 * a valid (character) tokenizer to free. 0, or 2 with a message. */
int model_import_or_deck(const struct config *cfg, struct model_config *mc, struct tokenizer *tok,
                         char *err, size_t errlen);

/* The BPE tokenizer of init ("gguf:PATH" or "hf:DIR") for a model of config mc: the
 * tokenizer half of model_import_setup (BOS off when the file says so, [model]
 * unknown_bytes, the EOS and vocabulary checks). 0, or 2 with a message. */
int model_import_tokenizer(const struct config *cfg, const char *init, const struct model_config *mc,
                           struct tokenizer *tok, char *err, size_t errlen);

/* The weights of init ("gguf:PATH" or "hf:DIR") into m->params; the file's
 * tensors must be m's. Returns 0, or 2 with a message. */
int model_import_params(struct model *m, const char *init, char *err, size_t errlen);

/* The chat template (ChatML / Llama 3, tasks/chat.h) of init's model: GGUF
 * tokenizer.chat_template, or the directory's (hf_tokenizer.h). 0, or 2. */
int model_import_chat_template(const char *init, struct chat_template *ct, char *err,
                               size_t errlen);

#endif
