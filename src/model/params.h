/* model/params.h: the model configuration and its parameter table.
 *
 * All parameters live in one flat fp32 buffer; the table gives each tensor its
 * Hugging Face name, [out, in] shape and offset (in floats) into that buffer.
 * Gradients, Adam moments, checkpoints, weight broadcast and import/export all
 * walk this table; nothing else knows tensor names. */
#ifndef RLPT_PARAMS_H
#define RLPT_PARAMS_H

#include <stddef.h>

struct config;

struct model_config {
  int vocab_size, dim, layers, heads, kv_heads, ffn_dim, max_seq;
  int head_dim;            /* dim / heads */
  double rope_theta, norm_eps, init_std;
  int tie_embeddings, qkv_bias, value_head;
  int lora_rank;           /* 0: no adapters (model/lora.h) */
  double lora_alpha;
  unsigned lora_targets;   /* bits of enum lora_target */
};

/* Per-layer tensor kinds, in table order inside a layer. */
enum param_kind {
  P_EMBED, P_ATTN_NORM, P_WQ, P_BQ, P_WK, P_BK, P_WV, P_BV, P_WO,
  P_FFN_NORM, P_WGATE, P_WUP, P_WDOWN, P_FINAL_NORM, P_LM_HEAD, P_SCORE,
  P_LORA_A, P_LORA_B  /* LoRA adapters (model/lora.h), after every other tensor */
};

struct param_entry {
  char name[96];        /* Hugging Face name, e.g. model.layers.3.self_attn.q_proj.weight */
  enum param_kind kind;
  int layer;            /* -1 for tensors outside the blocks */
  int rows, cols;       /* [out, in]; vectors have cols = 1 */
  size_t offset;        /* in floats, into the flat buffer */
  size_t numel;
  enum param_kind target; /* P_LORA_A / P_LORA_B: the projection adapted (P_WQ ... P_WDOWN) */
};

struct param_table {
  int n;
  struct param_entry *e;
  size_t total;          /* floats in the flat buffer */
  size_t trainable;      /* first trainable float: the adapters' offset with LoRA, else 0 */
};

/* Fill mc from the deck's [model] section; vocab_size comes from the tokenizer
 * when the deck says auto (pass it here). Returns 0, or -1 with a message in err. */
int model_config_from_deck(struct model_config *mc, const struct config *cfg, int tokenizer_vocab,
                           char *err, size_t errlen);
/* The largest size a model file may give any field (layers, dim, vocab_size, ...), as the
 * GGUF loader checks its metadata; and the most parameters a config may imply. */
#define MODEL_SIZE_MAX (1 << 30)
#define MODEL_PARAMS_MAX 1e12
/* The [model] lora_* keys into mc (model/lora.h); model_config_from_deck calls it, and so
 * does a model whose shape comes from a file. 0, or -1 with a message. */
int model_config_lora_from_deck(struct model_config *mc, const struct config *cfg, char *err,
                                size_t errlen);
/* Check shapes are consistent (every size in [1, MODEL_SIZE_MAX], dim % heads, heads %
 * kv_heads, even head_dim, at most MODEL_PARAMS_MAX parameters). */
int model_config_check(const struct model_config *mc, char *err, size_t errlen);

/* Build the table for mc (allocates e). Layout: embed, per layer {attn norm,
 * q[,bias], k[,bias], v[,bias], o, ffn norm, gate, up, down}, final norm,
 * lm_head (untied only), score (value head only); then with lora_rank > 0, per layer and
 * target (in enum lora_target order) lora_A [r, in] and lora_B [out, r], named as PEFT
 * does: base_model.model.<projection>.lora_A.weight. */
void param_table_build(struct param_table *t, const struct model_config *mc);
/* Tensor parallelism (model/tp.h): how a tensor is split over a TP group. Rows:
 * column-parallel q/k/v (by heads, kv heads split too; their biases), gate and up, and the
 * vocabulary of the embedding and lm_head; columns: row-parallel o and down; none: the
 * norms and the value head, replicated. */
enum param_split { SPLIT_NONE, SPLIT_ROWS, SPLIT_COLS };
enum param_split param_split(enum param_kind kind);
/* The table of one rank of a TP group of tp ranks: the same tensors and names, the split
 * dimension divided by tp (which must divide heads, kv_heads, ffn_dim and vocab_size),
 * offsets into that rank's own flat buffer. tp = 1 is param_table_build. */
void param_table_build_tp(struct param_table *t, const struct model_config *mc, int tp);
void param_table_free(struct param_table *t);
const struct param_entry *param_table_find(const struct param_table *t, const char *name);
/* Offset of (kind, layer), or (size_t)-1 when the model has no such tensor. */
size_t param_offset(const struct param_table *t, enum param_kind kind, int layer);
/* Parameter count without building a table. */
size_t model_param_count(const struct model_config *mc);

/* The model config as a JSON object string (malloc'd), and back. */
char *model_config_to_json(const struct model_config *mc);
int model_config_from_json(struct model_config *mc, const char *json, char *err, size_t errlen);

#endif
