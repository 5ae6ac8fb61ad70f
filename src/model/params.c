/* model/params.c: model configuration and the Hugging Face parameter table. */
#include "model/params.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "model/lora.h"

int model_config_check(const struct model_config *mc, char *err, size_t errlen) {
  if (mc->vocab_size < 1 || mc->dim < 1 || mc->layers < 1 || mc->heads < 1 || mc->kv_heads < 1 ||
      mc->ffn_dim < 1 || mc->max_seq < 2) {
    snprintf(err, errlen, "model sizes must be positive (vocab_size %d, dim %d, layers %d, heads %d, "
             "kv_heads %d, ffn_dim %d, max_seq %d)", mc->vocab_size, mc->dim, mc->layers, mc->heads,
             mc->kv_heads, mc->ffn_dim, mc->max_seq);
    return -1;
  }
  const int sizes[7] = {mc->vocab_size, mc->dim, mc->layers, mc->heads, mc->kv_heads, mc->ffn_dim,
                        mc->max_seq};
  static const char *names[7] = {"vocab_size", "dim", "layers", "heads", "kv_heads", "ffn_dim",
                                 "max_seq"};
  for (int i = 0; i < 7; i++)
    if (sizes[i] > MODEL_SIZE_MAX) {
      snprintf(err, errlen, "model %s = %d is larger than %d", names[i], sizes[i], MODEL_SIZE_MAX);
      return -1;
    }
  /* the parameter count in double: no overflow, checked before any table is built */
  double d = mc->dim, kvd = d / mc->heads * mc->kv_heads;
  double per_layer = 2 * d * d + 2 * kvd * d + 3 * d * mc->ffn_dim + 2 * d + (mc->qkv_bias ? d + 2 * kvd : 0);
  double params = (double)mc->vocab_size * d * (mc->tie_embeddings ? 1 : 2) + mc->layers * per_layer + d;
  if (params > MODEL_PARAMS_MAX) {
    snprintf(err, errlen, "the model config implies %.3g parameters (layers %d, dim %d, ffn_dim %d, "
             "vocab_size %d), more than %.0e", params, mc->layers, mc->dim, mc->ffn_dim,
             mc->vocab_size, MODEL_PARAMS_MAX);
    return -1;
  }
  if (mc->dim % mc->heads) {
    snprintf(err, errlen, "[model] dim = %d does not divide by heads = %d", mc->dim, mc->heads);
    return -1;
  }
  if (mc->heads % mc->kv_heads) {
    snprintf(err, errlen, "[model] heads = %d does not divide by kv_heads = %d", mc->heads, mc->kv_heads);
    return -1;
  }
  if ((mc->dim / mc->heads) % 2) {
    snprintf(err, errlen, "[model] head size dim/heads = %d must be even for RoPE", mc->dim / mc->heads);
    return -1;
  }
  return 0;
}

int model_config_from_deck(struct model_config *mc, const struct config *cfg, int tokenizer_vocab,
                           char *err, size_t errlen) {
  memset(mc, 0, sizeof *mc);
  mc->vocab_size = cfg->model.vocab_size < 0 ? tokenizer_vocab : (int)cfg->model.vocab_size;
  mc->dim = (int)cfg->model.dim;
  mc->layers = (int)cfg->model.layers;
  mc->heads = (int)cfg->model.heads;
  mc->kv_heads = (int)cfg->model.kv_heads;
  mc->ffn_dim = (int)cfg->model.ffn_dim;
  mc->max_seq = (int)cfg->model.max_seq;
  mc->rope_theta = cfg->model.rope_theta;
  mc->norm_eps = cfg->model.norm_eps;
  mc->init_std = cfg->model.init_std;
  mc->tie_embeddings = cfg->model.tie_embeddings;
  mc->qkv_bias = cfg->model.qkv_bias;
  mc->value_head = cfg->model.value_head;
  if (mc->vocab_size < 1) {
    snprintf(err, errlen, "[model] vocab_size = auto but no tokenizer gave a vocabulary size");
    return -1;
  }
  if (model_config_check(mc, err, errlen)) return -1;
  mc->head_dim = mc->dim / mc->heads;
  return model_config_lora_from_deck(mc, cfg, err, errlen);
}

int model_config_lora_from_deck(struct model_config *mc, const struct config *cfg, char *err,
                                size_t errlen) {
  mc->lora_rank = (int)cfg->model.lora_rank;
  mc->lora_alpha = cfg->model.lora_alpha;
  mc->lora_targets = 0;
  if (mc->lora_rank > 0 && lora_targets_parse(cfg->model.lora_targets, &mc->lora_targets, err, errlen))
    return -1;
  return 0;
}

/* Appends one entry; with t->e == NULL it only counts. */
static void add(struct param_table *t, enum param_kind kind, int layer, int rows, int cols,
                const char *fmt) {
  if (t->e) {
    struct param_entry *p = &t->e[t->n];
    if (layer >= 0) snprintf(p->name, sizeof p->name, fmt, layer);
    else snprintf(p->name, sizeof p->name, "%s", fmt);
    p->kind = kind;
    p->layer = layer;
    p->rows = rows;
    p->cols = cols;
    p->offset = t->total;
    p->numel = (size_t)rows * cols;
    p->target = kind;
  }
  t->n++;
  t->total += (size_t)rows * cols;
}

/* The adapters of every targeted projection (model/lora.h), layer by layer. */
static void walk_lora(struct param_table *t, const struct model_config *mc, int tp) {
  static const enum param_kind kinds[LORA_NTARGETS] = {P_WQ, P_WK, P_WV, P_WO, P_WGATE, P_WUP,
                                                       P_WDOWN};
  int hd = mc->dim / mc->heads, kvd = hd * mc->kv_heads / tp, qd = mc->dim / tp, C = mc->dim;
  int F = mc->ffn_dim / tp, r = mc->lora_rank;
  const int outs[LORA_NTARGETS] = {qd, kvd, kvd, C, F, F, C};
  const int ins[LORA_NTARGETS] = {C, C, C, qd, C, C, F};
  char fmt[128];
  for (int l = 0; l < mc->layers; l++)
    for (int g = 0; g < LORA_NTARGETS; g++) {
      if (!(mc->lora_targets >> g & 1)) continue;
      for (int b = 0; b < 2; b++) {
        snprintf(fmt, sizeof fmt, "base_model.model.model.layers.%%d.%s.%s.lora_%c.weight",
                 lora_target_module(g), lora_target_proj(g), b ? 'B' : 'A');
        add(t, b ? P_LORA_B : P_LORA_A, l, b ? outs[g] : r, b ? r : ins[g], fmt);
        if (t->e) t->e[t->n - 1].target = kinds[g];
      }
    }
}

/* The table of one rank of a tensor-parallel group of tp ranks (1: the whole model): the
 * split dimension of each tensor (param_split) divided by tp. */
static void walk(struct param_table *t, const struct model_config *mc, int tp) {
  int hd = mc->dim / mc->heads, kvd = hd * mc->kv_heads / tp, qd = mc->dim / tp;
  int F = mc->ffn_dim / tp, V = mc->vocab_size / tp;
  add(t, P_EMBED, -1, V, mc->dim, "model.embed_tokens.weight");
  for (int l = 0; l < mc->layers; l++) {
    add(t, P_ATTN_NORM, l, mc->dim, 1, "model.layers.%d.input_layernorm.weight");
    add(t, P_WQ, l, qd, mc->dim, "model.layers.%d.self_attn.q_proj.weight");
    if (mc->qkv_bias) add(t, P_BQ, l, qd, 1, "model.layers.%d.self_attn.q_proj.bias");
    add(t, P_WK, l, kvd, mc->dim, "model.layers.%d.self_attn.k_proj.weight");
    if (mc->qkv_bias) add(t, P_BK, l, kvd, 1, "model.layers.%d.self_attn.k_proj.bias");
    add(t, P_WV, l, kvd, mc->dim, "model.layers.%d.self_attn.v_proj.weight");
    if (mc->qkv_bias) add(t, P_BV, l, kvd, 1, "model.layers.%d.self_attn.v_proj.bias");
    add(t, P_WO, l, mc->dim, qd, "model.layers.%d.self_attn.o_proj.weight");
    add(t, P_FFN_NORM, l, mc->dim, 1, "model.layers.%d.post_attention_layernorm.weight");
    add(t, P_WGATE, l, F, mc->dim, "model.layers.%d.mlp.gate_proj.weight");
    add(t, P_WUP, l, F, mc->dim, "model.layers.%d.mlp.up_proj.weight");
    add(t, P_WDOWN, l, mc->dim, F, "model.layers.%d.mlp.down_proj.weight");
  }
  add(t, P_FINAL_NORM, -1, mc->dim, 1, "model.norm.weight");
  if (!mc->tie_embeddings) add(t, P_LM_HEAD, -1, V, mc->dim, "lm_head.weight");
  if (mc->value_head) add(t, P_SCORE, -1, 1, mc->dim, "score.weight");
  t->trainable = mc->lora_rank > 0 ? t->total : 0;
  if (mc->lora_rank > 0) walk_lora(t, mc, tp);
}

enum param_split param_split(enum param_kind kind) {
  switch (kind) {
  case P_EMBED: case P_LM_HEAD: case P_WQ: case P_BQ: case P_WK: case P_BK: case P_WV: case P_BV:
  case P_WGATE: case P_WUP:
    return SPLIT_ROWS;
  case P_WO: case P_WDOWN:
    return SPLIT_COLS;
  default:
    return SPLIT_NONE;
  }
}

void param_table_build_tp(struct param_table *t, const struct model_config *mc, int tp) {
  struct param_table count = {0};
  walk(&count, mc, tp);
  t->n = 0;
  t->total = 0;
  t->e = calloc((size_t)count.n, sizeof *t->e);
  if (!t->e) {
    fprintf(stderr, "rlpt: out of memory building the parameter table\n");
    exit(1);
  }
  walk(t, mc, tp);
}

void param_table_build(struct param_table *t, const struct model_config *mc) {
  param_table_build_tp(t, mc, 1);
}

void param_table_free(struct param_table *t) {
  free(t->e);
  memset(t, 0, sizeof *t);
}

size_t model_param_count(const struct model_config *mc) {
  struct param_table count = {0};
  walk(&count, mc, 1);
  return count.total;
}

const struct param_entry *param_table_find(const struct param_table *t, const char *name) {
  for (int i = 0; i < t->n; i++)
    if (!strcmp(t->e[i].name, name)) return &t->e[i];
  return NULL;
}

size_t param_offset(const struct param_table *t, enum param_kind kind, int layer) {
  for (int i = 0; i < t->n; i++)
    if (t->e[i].kind == kind && t->e[i].layer == layer) return t->e[i].offset;
  return (size_t)-1;
}

char *model_config_to_json(const struct model_config *mc) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "vocab_size", mc->vocab_size);
  cJSON_AddNumberToObject(o, "dim", mc->dim);
  cJSON_AddNumberToObject(o, "layers", mc->layers);
  cJSON_AddNumberToObject(o, "heads", mc->heads);
  cJSON_AddNumberToObject(o, "kv_heads", mc->kv_heads);
  cJSON_AddNumberToObject(o, "ffn_dim", mc->ffn_dim);
  cJSON_AddNumberToObject(o, "max_seq", mc->max_seq);
  cJSON_AddNumberToObject(o, "rope_theta", mc->rope_theta);
  cJSON_AddNumberToObject(o, "norm_eps", mc->norm_eps);
  cJSON_AddNumberToObject(o, "init_std", mc->init_std);
  cJSON_AddBoolToObject(o, "tie_embeddings", mc->tie_embeddings);
  cJSON_AddBoolToObject(o, "qkv_bias", mc->qkv_bias);
  cJSON_AddBoolToObject(o, "value_head", mc->value_head);
  if (mc->lora_rank > 0) {
    cJSON_AddNumberToObject(o, "lora_rank", mc->lora_rank);
    cJSON_AddNumberToObject(o, "lora_alpha", mc->lora_alpha);
    cJSON_AddNumberToObject(o, "lora_targets", mc->lora_targets);
  }
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

static int json_num(const cJSON *o, const char *key, double *out, char *err, size_t errlen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsBool(v)) *out = cJSON_IsTrue(v);
  else if (cJSON_IsNumber(v)) *out = v->valuedouble;
  else {
    snprintf(err, errlen, "model config JSON lacks a numeric '%s'", key);
    return -1;
  }
  return 0;
}

int model_config_from_json(struct model_config *mc, const char *json, char *err, size_t errlen) {
  cJSON *o = cJSON_Parse(json);
  if (!cJSON_IsObject(o)) {
    snprintf(err, errlen, "model config is not a JSON object");
    cJSON_Delete(o);
    return -1;
  }
  static const char *ints[] = {"vocab_size", "dim", "layers", "heads", "kv_heads", "ffn_dim",
                               "max_seq", "tie_embeddings", "qkv_bias", "value_head"};
  int *dst[] = {&mc->vocab_size, &mc->dim, &mc->layers, &mc->heads, &mc->kv_heads, &mc->ffn_dim,
                &mc->max_seq, &mc->tie_embeddings, &mc->qkv_bias, &mc->value_head};
  double v;
  memset(mc, 0, sizeof *mc);
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    if (json_num(o, ints[i], &v, err, errlen)) goto fail;
    *dst[i] = (int)v;
  }
  if (json_num(o, "rope_theta", &mc->rope_theta, err, errlen) ||
      json_num(o, "norm_eps", &mc->norm_eps, err, errlen) ||
      json_num(o, "init_std", &mc->init_std, err, errlen))
    goto fail;
  if (cJSON_GetObjectItemCaseSensitive(o, "lora_rank")) { /* absent: a model without adapters */
    if (json_num(o, "lora_rank", &v, err, errlen) ||
        json_num(o, "lora_alpha", &mc->lora_alpha, err, errlen))
      goto fail;
    mc->lora_rank = (int)v;
    if (json_num(o, "lora_targets", &v, err, errlen)) goto fail;
    mc->lora_targets = (unsigned)v;
  }
  cJSON_Delete(o);
  if (model_config_check(mc, err, errlen)) return -1;
  mc->head_dim = mc->dim / mc->heads;
  return 0;
fail:
  cJSON_Delete(o);
  return -1;
}
