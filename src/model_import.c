/* model_import.c: [model] init = gguf:PATH for a run (model_import.h): the model
 * config merged from the file and the deck, the file's BPE tokenizer on every
 * rank, and the weights for the train ranks. */
#include "model_import.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "tokenizer_bpe.h"

int model_import_is_gguf(const struct config *cfg) {
  return !strncmp(cfg->model.init, "gguf:", 5);
}

/* One integer shape key: default -> the file's value, else it must agree. */
static int merge_int(const char *key, long deck, long def, int file, int *out, const char *path,
                     char *err, size_t errlen) {
  if (deck == def || deck == file) {
    *out = file;
    return 0;
  }
  snprintf(err, errlen, "[model] %s = %ld but %s has %d (leave the key out to take the file's)",
           key, deck, path, file);
  return 2;
}

static int merge_flt(const char *key, double deck, double def, double file, double *out,
                     const char *path, char *err, size_t errlen) {
  if (deck == def || fabs(deck - file) <= 1e-6 * fabs(file)) {
    *out = file;
    return 0;
  }
  snprintf(err, errlen, "[model] %s = %g but %s has %g (leave the key out to take the file's)",
           key, deck, path, file);
  return 2;
}

static int merge_config(const struct config *cfg, const struct model_config *fmc,
                        struct model_config *mc, const char *path, char *err, size_t errlen) {
  struct config def;
  config_defaults(&def);
  const struct config *d = &def;
  *mc = *fmc;
  int rc = merge_int("vocab_size", cfg->model.vocab_size, d->model.vocab_size, fmc->vocab_size,
                     &mc->vocab_size, path, err, errlen);
  if (!rc) rc = merge_int("dim", cfg->model.dim, d->model.dim, fmc->dim, &mc->dim, path, err, errlen);
  if (!rc) rc = merge_int("layers", cfg->model.layers, d->model.layers, fmc->layers, &mc->layers, path,
                          err, errlen);
  if (!rc) rc = merge_int("heads", cfg->model.heads, d->model.heads, fmc->heads, &mc->heads, path, err,
                          errlen);
  if (!rc) rc = merge_int("kv_heads", cfg->model.kv_heads, d->model.kv_heads, fmc->kv_heads,
                          &mc->kv_heads, path, err, errlen);
  if (!rc) rc = merge_int("ffn_dim", cfg->model.ffn_dim, d->model.ffn_dim, fmc->ffn_dim, &mc->ffn_dim,
                          path, err, errlen);
  if (!rc) rc = merge_int("tie_embeddings", cfg->model.tie_embeddings, d->model.tie_embeddings,
                          fmc->tie_embeddings, &mc->tie_embeddings, path, err, errlen);
  if (!rc) rc = merge_int("qkv_bias", cfg->model.qkv_bias, d->model.qkv_bias, fmc->qkv_bias,
                          &mc->qkv_bias, path, err, errlen);
  if (!rc) rc = merge_flt("rope_theta", cfg->model.rope_theta, d->model.rope_theta, fmc->rope_theta,
                          &mc->rope_theta, path, err, errlen);
  if (!rc) rc = merge_flt("norm_eps", cfg->model.norm_eps, d->model.norm_eps, fmc->norm_eps,
                          &mc->norm_eps, path, err, errlen);
  if (rc) return rc;
  if (cfg->model.max_seq > fmc->max_seq) {
    snprintf(err, errlen, "[model] max_seq = %ld exceeds %s's context_length %d", cfg->model.max_seq,
             path, fmc->max_seq);
    return 2;
  }
  mc->max_seq = (int)cfg->model.max_seq;
  mc->init_std = cfg->model.init_std;
  mc->value_head = cfg->model.value_head;
  mc->head_dim = mc->dim / mc->heads;
  return 0;
}

/* tokenizer.ggml.add_bos_token, default true (llama.cpp's default for BPE vocabularies). */
static int adds_bos(const struct gguf_file *f) {
  const struct gguf_kv *kv = gguf_find_kv(f, "tokenizer.ggml.add_bos_token");
  return !kv || kv->type != GGUF_BOOL || kv->val[0] != 0;
}

int model_import_gguf_setup(const struct config *cfg, struct model_config *mc,
                            struct tokenizer *tok, char *err, size_t errlen) {
  const char *path = cfg->model.init + 5;
  struct gguf_file f;
  struct model_config fmc;
  char msg[768];
  if (gguf_open(&f, path, msg, sizeof msg)) {
    snprintf(err, errlen, "[model] init = gguf:%s: %s", path, msg);
    return 2;
  }
  int rc = 0;
  if (gguf_model_config(&f, &fmc, msg, sizeof msg)) rc = 2;
  if (!rc) rc = merge_config(cfg, &fmc, mc, path, err, errlen);
  else snprintf(err, errlen, "[model] init = gguf:%s: %s", path, msg);
  if (!rc && tokenizer_bpe_from_gguf(tok, &f, msg, sizeof msg)) {
    snprintf(err, errlen, "[model] init = gguf:%s: tokenizer: %s", path, msg);
    rc = 2;
  }
  if (!rc && !adds_bos(&f)) tok->bos_id = -1;
  if (!rc && tok->eos_id < 0) {
    snprintf(err, errlen, "[model] init = gguf:%s: the tokenizer has no EOS token", path);
    tokenizer_free(tok);
    rc = 2;
  }
  gguf_close(&f);
  return rc;
}

int model_import_gguf_params(struct model *m, const char *path, char *err, size_t errlen) {
  struct model_config fmc;
  struct param_table table;
  float *params = NULL;
  char msg[768];
  if (gguf_load_model(path, &fmc, &table, &params, msg, sizeof msg)) {
    snprintf(err, errlen, "[model] init = gguf:%s: %s", path, msg);
    return 2;
  }
  int same = table.n == m->table.n && table.total == m->table.total;
  for (int i = 0; same && i < table.n; i++)
    same = !strcmp(table.e[i].name, m->table.e[i].name) && table.e[i].offset == m->table.e[i].offset &&
           table.e[i].numel == m->table.e[i].numel;
  if (same) memcpy(m->params, params, sizeof(float) * table.total);
  else
    snprintf(err, errlen, "[model] init = gguf:%s: the file's tensors (%zu parameters) do not match "
             "the run's model (%zu)", path, table.total, m->table.total);
  free(params);
  param_table_free(&table);
  return same ? 0 : 2;
}
