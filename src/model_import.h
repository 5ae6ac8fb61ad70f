/* model_import.h: [model] init = gguf:PATH for a run: the model config and the
 * tokenizer come from the GGUF file, the train ranks load its weights.
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

#include "config.h"
#include "model.h"
#include "tokenizer.h"

/* 1 when the deck's [model] init is gguf:PATH. */
int model_import_is_gguf(const struct config *cfg);

/* Model config (merged as above) and the BPE tokenizer of the deck's gguf:PATH.
 * When the file says tokenizer.ggml.add_bos_token = false (SmolLM2, Qwen2) the
 * tokenizer's bos_id is set to -1: prompts then start without a BOS token.
 * Returns 0, or 2 with a message naming the file or the key. */
int model_import_gguf_setup(const struct config *cfg, struct model_config *mc,
                            struct tokenizer *tok, char *err, size_t errlen);

/* The GGUF weights into m->params; the file's config must equal m's shape.
 * Returns 0, or 2 with a message. */
int model_import_gguf_params(struct model *m, const char *path, char *err, size_t errlen);

#endif
